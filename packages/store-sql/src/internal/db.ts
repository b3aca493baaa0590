/**
 * The thin layer every store here runs its SQL through: statements built with the one builder
 * (`statement.ts`) and compiled for the database's dialect (`dialect/*.ts`), the engine's write
 * transaction, and the conversion of driver failures to the ports' errors.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ColumnType, Dialect } from "./dialect.js"
import { pg } from "./dialect/pg.js"
import { sqlite } from "./dialect/sqlite.js"
import { type EngineShape, type Procedure, SqlEngine } from "./engine.js"
import { groupCommit } from "./groupCommit.js"
import { observed, tracker } from "./availability.js"
import { type Bodies, bodies, type Body, type InboxBody } from "./inbox.js"
import * as pgEngine from "./pgEngine.js"
import { compile, Fragment, join, type Param, type Row, type Scalar } from "./statement.js"
import { escalate, gated, jointRead, optimisticRead } from "./unitState.js"

export type { ColumnType, Dialect } from "./dialect.js"
export { isRetryable } from "./dialect/pg.js"
export type { Param, Row, Scalar } from "./statement.js"

export interface Db {
  readonly dialect: Dialect
  readonly sql: SqlClient.SqlClient
  /** Runs one statement; returns its rows (RETURNING included). */
  readonly query: (statement: Fragment) => Effect.Effect<ReadonlyArray<Row>, SqlError>
  /** `query` of a `sql` template written in place: ``db.run`SELECT … WHERE chat_id = ${id}` ``. */
  readonly run: (strings: TemplateStringsArray, ...values: Array<Param | Fragment>) => Effect.Effect<ReadonlyArray<Row>, SqlError>
  /**
   * A write transaction. SQLite: `BEGIN IMMEDIATE`, so the write lock is taken before any
   * read and two processes never deadlock upgrading a read lock; writes that arrive together
   * share one such transaction, a savepoint each (see groupCommit.ts). PostgreSQL: `BEGIN` (row and
   * advisory locks are taken by the statements), retried on deadlock or serialization failure.
   */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  /**
   * A write body as one call to the engine (see `EngineShape.call`), outside any transaction:
   * true once written, false when what it read has moved. Undefined where the engine has none
   * (a SQLite client not built by this package's layer): units of work then run locked.
   */
  readonly call: ((name: Procedure, argument: object) => Effect.Effect<boolean, SqlError>) | undefined
  /**
   * Runs a write body of the update inbox (inbox.ts) in a transaction: whole in the engine where
   * it can (SQLite's writer thread), else driven statement by statement here; inside a caller's
   * transaction, as a savepoint of it.
   */
  readonly body: <N extends InboxBody>(name: N, argument: Bodies[N]["argument"]) => Effect.Effect<Bodies[N]["result"], SqlError>
  /**
   * Runs `statement` over `rows` passed in bulk as the table `k` (see `Dialect.rowsTables`: one
   * statement on PostgreSQL, a few on SQLite); returns every row it returns.
   */
  readonly bulk: (
    columns: ReadonlyArray<readonly [name: string, type: ColumnType]>,
    rows: ReadonlyArray<ReadonlyArray<Scalar>>,
    statement: (from: Fragment) => Fragment
  ) => Effect.Effect<ReadonlyArray<Row>, SqlError>
  /**
   * Several `bulk` reads, each one's rows (none for a read without keys): a unit group's first
   * read goes with the other window's (`jointRead`, unitState.ts); else in one statement where the
   * dialect can (PostgreSQL's `readTogether`); else, outside a transaction where the engine can
   * (SQLite's read connection), every statement in one step on one snapshot; else one after the other.
   */
  readonly bulkReads: (reads: ReadonlyArray<BulkRead>) => Effect.Effect<ReadonlyArray<ReadonlyArray<Row>>, SqlError>
}

/** One read of `Db.bulkReads`: `statement` over `rows` passed in bulk as the table `k`. */
export interface BulkRead {
  readonly columns: ReadonlyArray<readonly [name: string, type: ColumnType]>
  readonly rows: ReadonlyArray<ReadonlyArray<Scalar>>
  readonly statement: (from: Fragment) => Fragment
}

/** The dialect of an `SqlClient`. */
export const dialectOf = (sql: SqlClient.SqlClient): Dialect =>
  sql.onDialectOrElse({ orElse: () => sqlite, pg: () => pg })

/**
 * The engine of a client that came without one: PostgreSQL's is all in the client; a SQLite
 * client built elsewhere (not by `layerClient`) gets group commit, and no read connection nor
 * writer thread.
 */
const engineWithout = (sql: SqlClient.SqlClient): EngineShape =>
  dialectOf(sql).name === "pg"
    ? pgEngine.make(sql)
    : { client: sql, availability: tracker(), transaction: groupCommit(sql), clientFor: () => sql, call: undefined, body: undefined }

/** The `Db` over the `SqlClient` in context, with the engine its layer provided (see engine.ts). */
export const dbOf: Effect.Effect<Db, never, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const engine = yield* Effect.serviceOption(SqlEngine)
  return makeDb(sql, Option.isSome(engine) && engine.value.client === sql ? engine.value : undefined)
})

export const makeDb = (sql: SqlClient.SqlClient, engine: EngineShape = engineWithout(sql)): Db => {
  const dialect = dialectOf(sql)
  // Inside a transaction a statement runs on the transaction's connection directly: @effect/sql's
  // statement layer (a span and the connection's acquirer per statement, about four times the
  // cost of a small SQLite statement itself) is paid once, by the transaction, not by each of
  // its statements. Outside one, every statement takes the acquirer (SQLite's single connection
  // is shared; PostgreSQL's pool lends one).
  // Outside a transaction, the engine's own way when it has one (SQLite: a read on its read
  // connection in place; PostgreSQL: a prepared statement on its pool), else its client for the text.
  const clientOf = engine.clientFor
  const health = engine.availability
  const runOutside = engine.execute ?? ((text: string, params: ReadonlyArray<Param>) => clientOf(text).unsafe<Row>(text, params))
  // Every statement and write tells the database's health (see availability.ts).
  const query = (statement: Fragment) =>
    observed(health, false, Effect.withFiberRuntime<ReadonlyArray<Row>, SqlError>((fiber) => {
      const { params, text } = compile(dialect, statement)
      const transaction = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
      if (Option.isSome(transaction)) return transaction.value[0].execute(text, params, undefined)
      // In an optimistic unit (see unitState.ts) only the reads a store planned for run; anything
      // else would run outside the unit's one write.
      const unit = gated(fiber, sql, fiber.getFiberRef(optimisticRead))
      return unit === undefined ? runOutside(text, params) : escalate(unit, "a statement the unit cannot defer")
    }))
  const transaction = engine.transaction
  const inTransaction: Db["transaction"] = (effect) =>
    Effect.withFiberRuntime((fiber) => {
      const unit = Option.isNone(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))
        ? gated(fiber, sql, false)
        : undefined
      return unit === undefined ? observed(health, true, transaction(effect)) : escalate(unit, "a transaction in an optimistic unit")
    })
  /** A body driven here: each statement it yields run in turn, its rows given back (a fresh generator per attempt). */
  const drive = <A>(make: () => Body<A>): Effect.Effect<A, SqlError> =>
    Effect.suspend(() => {
      const body = make()
      const step = (rows: ReadonlyArray<Row> | undefined): Effect.Effect<A, SqlError> => {
        const next = rows === undefined ? body.next() : body.next(rows)
        return next.done ? Effect.succeed(next.value) : Effect.flatMap(query(next.value), step)
      }
      return step(undefined)
    })
  const whole = engine.body
  const body: Db["body"] = (name, argument) =>
    Effect.withFiberRuntime((fiber) => {
      const alone = whole !== undefined && Option.isNone(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)) &&
        gated(fiber, sql, false) === undefined
      return alone
        ? observed(health, true, whole(name, argument))
        : inTransaction(drive(() => bodies[name](dialect, argument) as Body<Bodies[typeof name]["result"]>))
    })
  const call = engine.call
  // Reads in one step where the engine has a way (SQLite: its read connection, one snapshot),
  // outside a transaction and any optimistic unit's gate (its planned reads run outside it).
  const readAll = engine.readAll
  const reads = readAll === undefined ? undefined : (statements: ReadonlyArray<Fragment>) =>
    Effect.withFiberRuntime<ReadonlyArray<ReadonlyArray<Row>>, SqlError>((fiber) =>
      Option.isNone(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)) &&
        gated(fiber, sql, fiber.getFiberRef(optimisticRead)) === undefined
        ? observed(health, false, readAll(statements.map((statement) => compile(dialect, statement))))
        : Effect.forEach(statements, query)
    )
  return withQuery({
    dialect,
    sql,
    call: call === undefined ? undefined : (name, argument) => observed(health, true, call(name, argument)),
    body,
    transaction: inTransaction
  }, query, reads)
}

/** A Db whose statements all run through `query` (`run` and `bulk` included). */
export const withQuery = (
  db: Pick<Db, "dialect" | "sql" | "transaction" | "call" | "body">,
  query: Db["query"],
  /** Statements run in one step (see `Db.bulkReads`); without, one after the other through `query`. */
  reads?: (statements: ReadonlyArray<Fragment>) => Effect.Effect<ReadonlyArray<ReadonlyArray<Row>>, SqlError>
): Db => {
  const bulk: Db["bulk"] = (columns, rows, statement) => {
    if (rows.length === 0) return Effect.succeed([])
    const tables = db.dialect.rowsTables(columns, rows)
    // One table (every batch of up to 256 rows on SQLite, any batch on PostgreSQL): one statement, no loop.
    return tables.length === 1
      ? query(statement(tables[0]!))
      : Effect.map(Effect.forEach(tables, (k) => query(statement(k))), (results) => results.flat())
  }
  const run: Db["run"] = (strings, ...values) => query(new Fragment(strings, values))
  // Each read's statements, one per chunk of its keys.
  const partsOf = (r: BulkRead) => db.dialect.rowsTables(r.columns, r.rows).map(r.statement)
  // Every read in one step, on one snapshot (the engine's `reads`), each read's chunks joined again.
  const inOneStep = (wanted: ReadonlyArray<BulkRead>, oneStep: NonNullable<typeof reads>) => {
    const parts = wanted.map(partsOf)
    return Effect.map(oneStep(parts.flat()), (results) => {
      let at = 0
      return parts.map((part) => {
        const rows = part.length === 1 ? results[at]! : results.slice(at, at + part.length).flat()
        at += part.length
        return rows
      })
    })
  }
  const bulkReads: Db["bulkReads"] = (all) =>
    Effect.withFiberRuntime((fiber) => {
      const wanted = all.filter((r) => r.rows.length > 0)
      if (wanted.length === 0) return Effect.succeed(all.map(() => []))
      const together = db.dialect.readTogether
      const statements = () => wanted.map((r) => join(partsOf(r), "\nUNION ALL\n"))
      // A unit group's first read, in the same statement as the other window's (unitState.ts).
      const run = fiber.getFiberRef(jointRead)?.first(statements()) ??
        (together !== undefined && wanted.length > 1
          ? queryTogether({ query }, together, statements())
          : reads === undefined
          ? Effect.forEach(wanted, (r) => bulk(r.columns, r.rows, r.statement))
          : inOneStep(wanted, reads))
      return Effect.map(run, (results) => {
        let at = 0
        return all.map((r) => (r.rows.length === 0 ? [] : results[at++]!))
      })
    })
  return { dialect: db.dialect, sql: db.sql, transaction: db.transaction, call: db.call, body: db.body, query, run, bulk, bulkReads }
}

/**
 * Read statements as one where the dialect can (`Dialect.readTogether`: PostgreSQL), each one's
 * rows given back in order.
 */
export const queryTogether = (
  db: Pick<Db, "query">,
  together: NonNullable<Dialect["readTogether"]>,
  reads: ReadonlyArray<Fragment>
): Effect.Effect<ReadonlyArray<ReadonlyArray<Row>>, SqlError> =>
  Effect.map(db.query(together(reads)), (rows) =>
    reads.map((_, i) => {
      const part = rows[0]?.[`r${i}`]
      return Array.isArray(part) ? part as ReadonlyArray<Row> : []
    }))

/** A short, secret-free description of a driver failure. */
export const describe = (error: unknown): string => {
  if (error instanceof SqlError) {
    const cause: unknown = error.cause
    const detail = cause instanceof Error ? cause.message : typeof cause === "string" ? cause : undefined
    return detail === undefined ? error.message : `${error.message}: ${detail}`
  }
  if (Cause.isCause(error)) return Cause.pretty(error)
  return error instanceof Error ? error.message : String(error)
}

// Row readers and chunks live with the statement builder (a leaf module the writer thread imports too).
export { bool, chunks, num, numOrNull, str, strOrNull, topicKey, topicOf } from "./statement.js"
