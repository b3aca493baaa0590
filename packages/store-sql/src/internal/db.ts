/**
 * The thin layer every store here runs its SQL through: one query text per shape written with
 * `?` placeholders (numbered for PostgreSQL), a write transaction that takes the database's
 * write lock up front, and the conversion of driver failures to the ports' errors.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import { groupCommit } from "./groupCommit.js"
import { clientFor } from "./readConnection.js"

export type Dialect = "sqlite" | "pg"

/** A scalar bound to a placeholder. */
export type Scalar = string | number | null

/** A value bound to a placeholder: what both drivers accept (arrays on PostgreSQL only). */
export type Param = Scalar | ReadonlyArray<Scalar>

export type Row = { readonly [column: string]: unknown }

export interface Db {
  readonly dialect: Dialect
  readonly sql: SqlClient.SqlClient
  /** Runs one statement written with `?` placeholders; returns its rows (RETURNING included). */
  readonly query: (text: string, params?: ReadonlyArray<Param>) => Effect.Effect<ReadonlyArray<Row>, SqlError>
  /**
   * A write transaction. SQLite: `BEGIN IMMEDIATE`, so the write lock is taken before any
   * read and two processes never deadlock upgrading a read lock; writes that arrive together
   * share one such transaction, a savepoint each (see groupCommit.ts). PostgreSQL: `BEGIN` (row and
   * advisory locks are taken by the statements), retried on deadlock or serialization failure.
   */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  /** ` COLLATE "C"` on PostgreSQL, so text orders by code point as SQLite's BINARY does. */
  readonly C: string
}

/** `?` → `$1, $2, …` (queries here never contain a literal `?`), remembered per text by the Db that owns it. */
const makeToPg = () => {
  const numbered = new Map<string, string>()
  return (text: string): string => {
    const known = numbered.get(text)
    if (known !== undefined) return known
    let n = 0
    const out = text.replace(/\?/g, () => `$${++n}`)
    if (numbered.size < 10_000) numbered.set(text, out)
    return out
  }
}

/** SQLSTATEs after which a PostgreSQL transaction is simply run again. */
const retryable = new Set(["40P01", "40001"])

const sqlState = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const cause: unknown = "cause" in error ? error.cause : undefined
  if (typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string") return cause.code
  return undefined
}

export const isRetryable = (error: unknown): boolean => {
  const state = sqlState(error)
  return state !== undefined && retryable.has(state)
}

export const makeDb = (sql: SqlClient.SqlClient): Db => {
  const dialect: Dialect = sql.onDialectOrElse({ orElse: () => "sqlite" as const, pg: () => "pg" as const })
  const toPg = makeToPg()
  // Inside a transaction a statement runs on the transaction's connection directly: @effect/sql's
  // statement layer (a span and the connection's acquirer per statement, about four times the
  // cost of a small SQLite statement itself) is paid once, by the transaction, not by each of
  // its statements. Outside one, every statement takes the acquirer (SQLite's single connection
  // is shared; PostgreSQL's pool lends one).
  // Outside a transaction, SQLite reads on its read connection (see readConnection.ts).
  const clientOf = clientFor(sql)
  const run = (text: string, params: ReadonlyArray<Param>) =>
    Effect.withFiberRuntime<ReadonlyArray<Row>, SqlError>((fiber) => {
      const transaction = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
      return Option.isSome(transaction)
        ? transaction.value[0].execute(text, params, undefined)
        : clientOf(text).unsafe<Row>(text, params)
    })
  const query = dialect === "pg"
    ? (text: string, params: ReadonlyArray<Param> = []) => run(toPg(text), params)
    : (text: string, params: ReadonlyArray<Param> = []) => run(text, params)
  const transaction = dialect === "pg"
    ? <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      sql.withTransaction(effect).pipe(
        // A failed COMMIT is a defect in @effect/sql; here it is a failure like any other.
        Effect.catchSomeDefect((defect) => defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none()),
        Effect.retry({ while: (e) => isRetryable(e), schedule: Schedule.exponential("5 millis"), times: 8 })
      )
    : groupCommit(sql, makeImmediate(sql))
  return { dialect, sql, query, transaction, C: dialect === "pg" ? ` COLLATE "C"` : "" }
}

const makeImmediate = (sql: SqlClient.SqlClient) => {
  const run = SqlClient.makeWithTransaction({
    transactionTag: SqlClient.TransactionConnection,
    spanAttributes: [["db.system.name", "sqlite"]],
    acquireConnection: Effect.flatMap(
      Scope.make(),
      (scope) => Effect.map(Scope.extend(sql.reserve, scope), (conn) => [scope, conn] as const)
    ),
    begin: (conn) => Effect.asVoid(conn.executeUnprepared("BEGIN IMMEDIATE", [], undefined)),
    savepoint: (conn, id) => Effect.asVoid(conn.executeUnprepared(`SAVEPOINT effect_sql_${id}`, [], undefined)),
    commit: (conn) => Effect.asVoid(conn.executeUnprepared("COMMIT", [], undefined)),
    rollback: (conn) => Effect.asVoid(conn.executeUnprepared("ROLLBACK", [], undefined)),
    rollbackSavepoint: (conn, id) =>
      Effect.asVoid(conn.executeUnprepared(`ROLLBACK TO SAVEPOINT effect_sql_${id}`, [], undefined))
  })
  return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
    run(effect).pipe(
      Effect.catchSomeDefect((defect) => defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none())
    )
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

/** `(?, ?, …)` for `n` values. */
export const marks = (n: number): string => {
  let out = "("
  for (let i = 0; i < n; i++) out += i === 0 ? "?" : ", ?"
  return out + ")"
}

/** Rows of `width` placeholders each: `(?, ?), (?, ?)`. */
export const tuples = (rows: number, width: number): string => {
  const one = marks(width)
  let out = ""
  for (let i = 0; i < rows; i++) out += i === 0 ? one : ", " + one
  return out
}

/** The SQL type of a column of rows passed in bulk (see {@link rowsTables}). */
export type ColumnType = "TEXT" | "INTEGER" | "BIGINT"

/** Row counts of the SQLite chunks: powers of two, so a table is written with a handful of statement texts. */
const chunkRows = (n: number): ReadonlyArray<number> => {
  const out: Array<number> = []
  let left = n
  for (let size = 256; size >= 1; size /= 2) {
    while (left >= size) {
      out.push(size)
      left -= size
    }
  }
  return out
}

/**
 * `rows` as a table `k(columns…)` to read from: on PostgreSQL one statement binding one typed
 * array per column (`unnest`), so the server parses a handful of parameters instead of
 * thousands; on SQLite multi-row `VALUES` in chunks of 256, 128, …, 1 rows, so a table is
 * written with a few statement texts (each prepared once) whatever the batch size.
 */
export const rowsTables = (
  dialect: Dialect,
  columns: ReadonlyArray<readonly [name: string, type: ColumnType]>,
  rows: ReadonlyArray<ReadonlyArray<Scalar>>
): ReadonlyArray<{ readonly from: string; readonly params: ReadonlyArray<Param> }> => {
  if (dialect === "pg") {
    return [{
      from: `unnest(${columns.map(([, type]) => `CAST(? AS ${type}[])`).join(", ")}) AS k(${
        columns.map(([name]) => name).join(", ")
      })`,
      params: columns.map((_, i) => rows.map((row) => row[i] ?? null))
    }]
  }
  const names = columns.map(([name], i) => `column${i + 1} AS ${name}`).join(", ")
  const out: Array<{ from: string; params: ReadonlyArray<Param> }> = []
  let at = 0
  for (const size of chunkRows(rows.length)) {
    const params: Array<Param> = []
    for (let i = at; i < at + size; i++) for (const v of rows[i]!) params.push(v)
    out.push({ from: `(SELECT ${names} FROM (VALUES ${tuples(size, columns.length)})) AS k`, params })
    at += size
  }
  return out
}

/** Splits `items` into chunks whose placeholders stay well under both engines' limits. */
export const chunks = <A>(items: ReadonlyArray<A>, width: number): ReadonlyArray<ReadonlyArray<A>> => {
  const size = Math.max(1, Math.floor(4000 / width))
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
