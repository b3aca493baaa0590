/**
 * The SQLite engine of one database file in this process: the writer thread (sqliteWriter.ts)
 * with the `SqlClient` over it, and the main thread's read-only connection
 * (readConnection.ts). One engine per file per process: layers over the same file share it
 * (the file's one write connection, so one group commit queue and one transaction at a time),
 * and it closes with the last of them. As an `SqlEngine` (engine.ts): group commit on the
 * writer, reads outside transactions on the read connection, and the write bodies of units
 * of work and context batches as one call to the writer thread (sqliteProcedures.ts).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as path from "node:path"
import * as WritePriority from "../WritePriority.js"
import { tracker } from "./availability.js"
import { type EngineShape, SqlEngine } from "./engine.js"
import { groupCommit } from "./groupCommit.js"
import { SettingsConflict, SqlStoreError } from "./stores.js"
import { router } from "./readConnection.js"
import type { Row } from "./statement.js"
import * as sqliteClient from "./sqliteClient.js"
import * as sqliteWriter from "./sqliteWriter.js"

/** What the engine is opened with. */
export interface EngineOptions {
  readonly filename: string
  readonly busyTimeout: number
  /** `NORMAL` or `FULL`. */
  readonly synchronous: string
}

/**
 * Bytes of WAL frames written between two checkpoints of the writer thread (sqliteWorker.ts;
 * SQLite's automatic checkpoint defaults to 1,000 pages and then runs after every commit):
 * 32 MiB, some 3,000 recorded updates — the WAL file grows to that, twice that at most.
 */
export const checkpointBytes = 32 * 1024 * 1024

/** The engine of one file (internal: tests reach the writer thread through it). */
export interface SqliteEngineShape {
  readonly filename: string
  readonly writer: sqliteWriter.Writer
  /** The write client: every statement runs on the writer thread. */
  readonly client: SqliteClient.SqliteClient
  /** The read-only connection on this thread; none for a database in memory. */
  readonly reader: SqlClient.SqlClient | undefined
  /**
   * The connection that runs a statement in place, when it is a read (`reader`'s own): the
   * engine's `execute` uses it; none for a database in memory.
   */
  readonly readConnection: ((text: string) => Connection | undefined) | undefined
  /** The engine the stores over `client` use. */
  readonly engine: EngineShape
}

export class SqliteEngine extends Context.Tag("@deixis/store-sql/internal/SqliteEngine")<SqliteEngine, SqliteEngineShape>() {}

/** A database that lives in memory (or behind a URI): one connection, no read connection, never shared. */
const inMemory = (filename: string): boolean => filename === "" || filename === ":memory:" || filename.startsWith("file:")

const open = (options: EngineOptions): Effect.Effect<SqliteEngineShape, SqlError, Scope.Scope> =>
  Effect.gen(function*() {
    const memory = inMemory(options.filename)
    const writer = yield* sqliteWriter.make({
      filename: options.filename,
      memory,
      busyTimeout: options.busyTimeout,
      synchronous: options.synchronous,
      checkpointBytes
    })
    const client = yield* sqliteClient.fromConnection(writer, { filename: options.filename })
    let reader: SqlClient.SqlClient | undefined
    let readConnection: SqliteEngineShape["readConnection"]
    let readAll: EngineShape["readAll"]
    let clientFor: EngineShape["clientFor"] = () => client
    if (!memory) {
      // Opened once the writer has put the file in WAL mode.
      const readOptions = { filename: options.filename, readonly: true, disableWAL: true }
      const connection = yield* sqliteClient.makeConnection(readOptions)
      const read = yield* sqliteClient.fromConnection(connection, readOptions)
      yield* Effect.all([read.unsafe(`PRAGMA busy_timeout = ${options.busyTimeout}`), read.unsafe(`PRAGMA cache_size = -65536`)], {
        discard: true
      })
      reader = read
      const route = router(client, read)
      clientFor = route
      // A read runs on the read connection in place: better-sqlite3 is synchronous and nothing
      // else holds that connection, so the client's permit and per-statement span are only cost.
      readConnection = (text) => route(text) === read ? connection.connection : undefined
      // A batch's reads (a unit group's loads): in place together, one snapshot, one step.
      readAll = (statements) =>
        statements.every(({ text }) => route(text) === read)
          ? connection.readAll(statements)
          : Effect.forEach(statements, ({ params, text }) => client.unsafe<Row>(text, params))
    }
    const engine: EngineShape = {
      client,
      availability: tracker(),
      transaction: groupCommit(client),
      clientFor,
      execute: readConnection === undefined ? undefined : (text, params) => {
        const connection = readConnection(text)
        return connection === undefined ? client.unsafe<Row>(text, params) : connection.execute(text, params, undefined)
      },
      readAll,
      call: (name, argument) => Effect.map(urgentCall(writer, name, argument), (ok) => ok === true),
      body: (name, argument) => urgentCall(writer, name, argument) as Effect.Effect<any, SqlError>
    }
    return { filename: options.filename, writer, client, reader, readConnection, engine }
  }).pipe(Effect.provide(Reactivity.layer))

// A call to the writer thread, urgent when its fiber's writes are (`WritePriority`).
const urgentCall = (writer: sqliteWriter.Writer, name: Parameters<sqliteWriter.Writer["call"]>[0], argument: unknown) =>
  Effect.withFiberRuntime<unknown, SqlError>((fiber) => writer.call(name, argument, fiber.getFiberRef(WritePriority.urgent)))

interface Shared {
  users: number
  /** What the engine was opened with: every layer over the file gets these, or fails. */
  readonly options: EngineOptions
  readonly scope: Scope.CloseableScope
  readonly engine: Deferred.Deferred<SqliteEngineShape, SqlError>
}

/** The open engines of files in this process (the one registry: one writer thread per file). */
const engines = new Map<string, Shared>()

/** The files with an open engine in this process (for tests: engines are bounded by the open layers). */
export const openFiles = (): ReadonlyArray<string> => [...engines.keys()]

/** The first setting of `requested` that differs from the engine's `open` one. */
const conflict = (filename: string, open: EngineOptions, requested: EngineOptions): SqlStoreError | undefined => {
  const differs = (setting: SettingsConflict["setting"], open: string, requested: string) =>
    new SqlStoreError({
      message: `SQLite database ${filename} is open in this process with ${setting}=${open}; a layer over it asked for ` +
        `${setting}=${requested} (layers over one file share its settings)`,
      conflict: new SettingsConflict({ filename, setting, open, requested })
    })
  if (open.synchronous.toUpperCase() !== requested.synchronous.toUpperCase()) {
    return differs("synchronous", open.synchronous.toLowerCase(), requested.synchronous.toLowerCase())
  }
  if (open.busyTimeout !== requested.busyTimeout) return differs("busy_timeout", String(open.busyTimeout), String(requested.busyTimeout))
  return undefined
}

/**
 * The engine of `options.filename` for the scope: the file's shared one, opened by the first
 * user. A later user asking for other settings than the file is open with fails with
 * `SqlStoreError` with a `SettingsConflict` (the writer thread's `synchronous` and the connections' busy
 * timeout are the file's, not a layer's).
 */
export const make = (options: EngineOptions): Effect.Effect<SqliteEngineShape, SqlError | SqlStoreError, Scope.Scope> => {
  if (inMemory(options.filename)) return open(options)
  const file = path.resolve(options.filename)
  return Effect.acquireRelease(
    Effect.suspend((): Effect.Effect<Shared, SqlStoreError> => {
      const known = engines.get(file)
      if (known !== undefined) {
        const differs = conflict(file, known.options, options)
        if (differs !== undefined) return Effect.fail(differs)
        known.users++
        return Effect.succeed(known)
      }
      const entry: Shared = { users: 1, options, scope: Effect.runSync(Scope.make()), engine: Effect.runSync(Deferred.make()) }
      engines.set(file, entry)
      return Scope.extend(open(options), entry.scope).pipe(
        Effect.exit,
        Effect.flatMap((exit) => Deferred.done(entry.engine, exit)),
        Effect.as(entry)
      )
    }).pipe(Effect.uninterruptible),
    (entry) =>
      Effect.suspend(() => {
        if (--entry.users > 0) return Effect.void
        if (engines.get(file) === entry) engines.delete(file)
        return Scope.close(entry.scope, Exit.void)
      })
  ).pipe(Effect.flatMap((entry) => Deferred.await(entry.engine)))
}

/** The engine's clients as a context: `SqlClient` and `SqliteClient` (the same write client), and the engine. */
export const context = (
  engine: SqliteEngineShape
): Context.Context<SqlClient.SqlClient | SqliteClient.SqliteClient | SqliteEngine | SqlEngine> =>
  Context.make(SqliteEngine, engine).pipe(
    Context.add(SqlEngine, engine.engine),
    Context.add(SqliteClient.SqliteClient, engine.client),
    Context.add(SqlClient.SqlClient, engine.client)
  )
