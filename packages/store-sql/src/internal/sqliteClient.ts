/**
 * The SQLite engine's `SqlClient`: `@effect/sql-sqlite-node`'s client (the same better-sqlite3
 * connection behind a one-permit semaphore, the same `SqliteClient` service), with a cheaper
 * statement path. That client keeps its prepared statements in an Effect `Cache` (with a
 * time to live), whose lookup is about fifteen effect steps per statement — more than a small
 * SQLite statement itself costs, and a one-message write runs about ten. Here a statement is
 * one step: a plain `Map` of prepared statements (bounded, oldest out first), run in place.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import Sqlite from "better-sqlite3"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { preparedCache } from "./sqlitePrepared.js"


export interface Options {
  readonly filename: string
  readonly readonly?: boolean | undefined
  readonly disableWAL?: boolean | undefined
}

const failed = (cause: unknown, message: string) => new SqlError({ cause, message })

/** A connection to `options.filename` in this thread, with the statement path below (closed with the scope). */
export const makeConnection = (options: Options): Effect.Effect<LocalConnection, never, Scope.Scope> =>
  Effect.gen(function*() {
    const db = new Sqlite(options.filename, { readonly: options.readonly ?? false })
    yield* Effect.addFinalizer(() => Effect.sync(() => db.close()))
    if (options.disableWAL !== true) db.pragma("journal_mode = WAL")

    const { prepare, clear: forgetPrepared } = preparedCache(db)

    /** Runs a statement in one step: its rows (a reader), the run's result (`raw`), or nothing. */
    const run = (
      statement: () => Sqlite.Statement,
      params: ReadonlyArray<unknown>,
      raw: boolean
    ): Effect.Effect<ReadonlyArray<any>, SqlError> =>
      Effect.withFiberRuntime((fiber) => {
        let s: Sqlite.Statement
        try {
          s = statement()
        } catch (cause) {
          return Effect.fail(failed(cause, "Failed to prepare statement"))
        }
        try {
          if (Context.get(fiber.currentContext, Client.SafeIntegers)) s.safeIntegers(true)
          if (s.reader) return Effect.succeed(s.all(...params))
          const result = s.run(...params)
          return Effect.succeed(raw ? result as any : [])
        } catch (cause) {
          return Effect.fail(failed(cause, "Failed to execute statement"))
        }
      })

    const connection: Connection = {
      execute: (text, params, transformRows) => {
        const rows = run(() => prepare(text), params, false)
        return transformRows ? Effect.map(rows, transformRows) : rows
      },
      executeRaw: (text, params) => run(() => prepare(text), params, true),
      executeValues: (text, params) =>
        Effect.try({
          try: () => {
            const s = prepare(text)
            if (!s.reader) {
              s.run(...params)
              return []
            }
            s.raw(true)
            try {
              return s.all(...params) as Array<any>
            } finally {
              s.raw(false)
            }
          },
          catch: (cause) => failed(cause, "Failed to execute statement")
        }),
      executeUnprepared: (text, params, transformRows) => {
        const rows = run(() => db.prepare(text), params ?? [], false)
        return transformRows ? Effect.map(rows, transformRows) : rows
      },
      executeStream: () => Effect.dieMessage("executeStream not implemented") as any
    }
    // Statements run together in one read transaction: one snapshot, and the pages the first one
    // brought stay in the connection's cache for the others (a statement on its own is a
    // transaction of its own, and after another connection's commit one starts with an empty cache).
    let control: { readonly begin: Sqlite.Statement; readonly commit: Sqlite.Statement } | undefined
    const readAll: LocalConnection["readAll"] = (statements) =>
      Effect.withFiberRuntime((fiber) => {
        const safe = Context.get(fiber.currentContext, Client.SafeIntegers)
        const own = statements.length > 1 && !db.inTransaction
        const out: Array<ReadonlyArray<any>> = []
        try {
          if (own) {
            control ??= { begin: db.prepare("BEGIN"), commit: db.prepare("COMMIT") }
            control.begin.run()
          }
          for (const { params, text } of statements) {
            let s: Sqlite.Statement
            try {
              s = prepare(text)
            } catch (cause) {
              return Effect.fail(failed(cause, "Failed to prepare statement"))
            }
            if (safe) s.safeIntegers(true)
            if (s.reader) out.push(s.all(...params))
            else {
              s.run(...params)
              out.push([])
            }
          }
          return Effect.succeed(out)
        } catch (cause) {
          return Effect.fail(failed(cause, "Failed to execute statement"))
        } finally {
          if (own && db.inTransaction) control!.commit.run()
        }
      })

    return {
      connection,
      readAll,
      export: Effect.try({ try: () => db.serialize(), catch: (cause) => failed(cause, "Failed to export database") }),
      backup: (destination: string) =>
        Effect.tryPromise({ try: () => db.backup(destination), catch: (cause) => failed(cause, "Failed to backup database") }),
      loadExtension: (path: string) =>
        Effect.try({
          try: () => {
            db.loadExtension(path)
            forgetPrepared()
          },
          catch: (cause) => failed(cause, "Failed to load extension")
        })
    }
  })

/** {@link make} as a layer of both tags, as `@effect/sql-sqlite-node`'s `layer`. */
export const layer = (options: Options): Layer.Layer<SqliteClient.SqliteClient | Client.SqlClient> =>
  Layer.scopedContext(
    Effect.map(make(options), (client) => Context.make(SqliteClient.SqliteClient, client).pipe(Context.add(Client.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))

/**
 * A `SqliteClient` over `options.filename`, as `@effect/sql-sqlite-node`'s `make` builds it
 * (one connection, taken by a transaction for its whole length), with the statement path above.
 */
export const make = (
  options: Options
): Effect.Effect<SqliteClient.SqliteClient, never, Scope.Scope | Reactivity.Reactivity> =>
  Effect.flatMap(makeConnection(options), (conn) => fromConnection(conn, options))

/** What a `SqliteClient` runs on: a connection, and the database-wide operations of its tag. */
export interface SqliteConnection {
  readonly connection: Connection
  readonly export: Effect.Effect<Uint8Array, SqlError>
  readonly backup: (destination: string) => Effect.Effect<void, SqlError>
  readonly loadExtension: (path: string) => Effect.Effect<void, SqlError>
}

/** A connection in this thread (`makeConnection`): statements also run in place together. */
export interface LocalConnection extends SqliteConnection {
  /** Statements run in place together, in one transaction of their own (see `makeConnection`); each one's rows. */
  readonly readAll: (
    statements: ReadonlyArray<{ readonly text: string; readonly params: ReadonlyArray<unknown> }>
  ) => Effect.Effect<ReadonlyArray<ReadonlyArray<any>>, SqlError>
}

/** A `SqliteClient` over one connection (in this thread, or the writer thread's, see sqliteWriter.ts). */
export const fromConnection = (
  conn: SqliteConnection,
  options: Options
): Effect.Effect<SqliteClient.SqliteClient, never, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const semaphore = yield* Effect.makeSemaphore(1)
    const acquirer = semaphore.withPermits(1)(Effect.succeed(conn.connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(semaphore.take(1)),
          Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
        ),
        conn.connection
      )
    )
    const client = yield* Client.make({
      acquirer,
      compiler: Statement.makeCompilerSqlite(),
      transactionAcquirer,
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    const config: SqliteClient.SqliteClientConfig = options
    return Object.assign(client, {
      [SqliteClient.TypeId]: SqliteClient.TypeId,
      config,
      export: Effect.flatMap(acquirer, () => conn.export),
      backup: (destination: string) => Effect.flatMap(acquirer, () => conn.backup(destination)),
      loadExtension: (path: string) => Effect.flatMap(acquirer, () => conn.loadExtension(path))
    }) as unknown as SqliteClient.SqliteClient
  })
