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
import { writeLock } from "./groupCommit.js"
import { observed } from "./availability.js"
import { clientFor } from "./readConnection.js"
import { compile, Fragment, type Param, type Scalar } from "./statement.js"
import { escalate, gated, optimisticRead } from "./unitState.js"

export type { ColumnType, Dialect } from "./dialect.js"
export { isRetryable } from "./dialect/pg.js"
export type { Param, Scalar } from "./statement.js"

export type Row = { readonly [column: string]: unknown }

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
   * Runs `statement` over `rows` passed in bulk as the table `k` (see `Dialect.rowsTables`: one
   * statement on PostgreSQL, a few on SQLite); returns every row it returns.
   */
  readonly bulk: (
    columns: ReadonlyArray<readonly [name: string, type: ColumnType]>,
    rows: ReadonlyArray<ReadonlyArray<Scalar>>,
    statement: (from: Fragment) => Fragment
  ) => Effect.Effect<ReadonlyArray<Row>, SqlError>
}

/** The dialect of an `SqlClient`. */
export const dialectOf = (sql: SqlClient.SqlClient): Dialect =>
  sql.onDialectOrElse({ orElse: () => sqlite, pg: () => pg })

export const makeDb = (sql: SqlClient.SqlClient): Db => {
  const dialect = dialectOf(sql)
  // Inside a transaction a statement runs on the transaction's connection directly: @effect/sql's
  // statement layer (a span and the connection's acquirer per statement, about four times the
  // cost of a small SQLite statement itself) is paid once, by the transaction, not by each of
  // its statements. Outside one, every statement takes the acquirer (SQLite's single connection
  // is shared; PostgreSQL's pool lends one).
  // Outside a transaction, SQLite reads on its read connection (see readConnection.ts).
  const clientOf = clientFor(sql)
  // A write outside a transaction takes its file's write lock in this process, as transactions do (see groupCommit.ts).
  const runOutside = (client: SqlClient.SqlClient, text: string, params: ReadonlyArray<Param>) =>
    client === sql ? writeLock(sql, sql.unsafe<Row>(text, params)) : client.unsafe<Row>(text, params)
  // Every statement and write transaction tells the database's health (see availability.ts).
  const query = (statement: Fragment) =>
    observed(sql, false, Effect.withFiberRuntime<ReadonlyArray<Row>, SqlError>((fiber) => {
      const { params, text } = compile(dialect, statement)
      const transaction = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
      if (Option.isSome(transaction)) return transaction.value[0].execute(text, params, undefined)
      // In an optimistic unit (see unitState.ts) only the reads a store planned for run; anything
      // else would run outside the unit's one write.
      const unit = gated(fiber.currentContext, sql, fiber.getFiberRef(optimisticRead))
      return unit === undefined ? runOutside(clientOf(text), text, params) : escalate(unit, "a statement the unit cannot defer")
    }))
  const transaction = dialect.transaction(sql)
  return withQuery({
    dialect,
    sql,
    transaction: (effect) =>
      Effect.withFiberRuntime((fiber) => {
        const unit = Option.isNone(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))
          ? gated(fiber.currentContext, sql, false)
          : undefined
        return unit === undefined ? observed(sql, true, transaction(effect)) : escalate(unit, "a transaction in an optimistic unit")
      })
  }, query)
}

/** A Db whose statements all run through `query` (`run` and `bulk` included). */
export const withQuery = (
  db: Pick<Db, "dialect" | "sql" | "transaction">,
  query: Db["query"]
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
  return { dialect: db.dialect, sql: db.sql, transaction: db.transaction, query, run, bulk }
}

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

// -----------------------------------------------------------------------------
// Row readers: drivers differ (PostgreSQL returns BIGINT as a string, SQLite has no booleans).
// -----------------------------------------------------------------------------

export const num = (value: unknown): number =>
  typeof value === "number" ? value : typeof value === "string" || typeof value === "bigint" ? Number(value) : Number.NaN

export const numOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : num(value))

export const str = (value: unknown): string => (typeof value === "string" ? value : String(value))

export const strOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : str(value))

export const bool = (value: unknown): boolean => value === true || value === 1 || value === "1" || value === "t"

/** The topic column: '' stands for "no topic" (ids are never empty), so it can be indexed and compared. */
export const topicKey = (topic: string | null): string => topic ?? ""

export const topicOf = (key: unknown): string | null => {
  const s = str(key)
  return s === "" ? null : s
}

/** Splits `items` into chunks whose placeholders stay well under both engines' limits. */
export const chunks = <A>(items: ReadonlyArray<A>, width: number): ReadonlyArray<ReadonlyArray<A>> => {
  const size = Math.max(1, Math.floor(4000 / width))
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
