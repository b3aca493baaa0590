/** PostgreSQL's spelling of what differs between the engines (see `Dialect`). */
import type { Dialect } from "../dialect.js"
import { join, raw, sql } from "../statement.js"

/** SQLSTATEs after which a PostgreSQL transaction is simply run again. */
const retryable = new Set(["40P01", "40001"])

const sqlState = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const cause: unknown = "cause" in error ? error.cause : undefined
  if (typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string") return cause.code
  return undefined
}

/** Whether a failure is a deadlock or a serialization failure, after which the transaction runs again. */
export const isRetryable = (error: unknown): boolean => {
  const state = sqlState(error)
  return state !== undefined && retryable.has(state)
}

const numbered: Array<string> = []
const placeholder = (n: number): string => numbered[n] ??= `$${n}`

export const pg: Dialect = {
  name: "pg",
  placeholder,
  texts: new WeakMap(),
  C: raw(` COLLATE "C"`),
  forUpdate: raw(" FOR UPDATE"),
  skipLocked: raw(" FOR UPDATE SKIP LOCKED"),
  orderedJoin: raw("JOIN"),
  indexedBy: () => raw(""),
  probe: (table, alias, on) =>
    raw(`CROSS JOIN LATERAL (SELECT * FROM ${table} ${alias} WHERE ${on} OFFSET 0) AS ${alias}`),
  rowsTables: (columns, rows) => {
    // One typed array per column: the server parses a handful of parameters instead of thousands.
    // Each array is read through a sub-select, so the planner never sees its length: a plan made
    // for the values at hand would cost the same as the generic one, and the server keeps the
    // generic plan of a prepared text instead of planning it again on every run (a unit group's
    // joint read: ~300 µs of server CPU planned each time, ~100 µs run from its generic plan).
    const arrays = columns.map(([, type], i) => sql`(SELECT CAST(${rows.map((row) => row[i] ?? null)} AS ${raw(type)}[]))`)
    return [sql`unnest(${join(arrays, ", ")}) AS ${raw(`k(${columns.map(([name]) => name).join(", ")})`)}`]
  },
  contains: (haystack, needle) => sql`strpos(${raw(haystack)}, ${needle}) > 0`,
  transactionLock: (key) => sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`,
  migrationLock: (schema) => [
    sql`SELECT pg_advisory_xact_lock(hashtext(${`deixis/migrations/${schema ?? ""}`}))`,
    ...(schema === undefined ? [] : [raw(`CREATE SCHEMA IF NOT EXISTS "${schema}"`)])
  ],
  indexExists: (name) => sql`SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ${name}`,
  jsonSetString: (json, member, value) =>
    sql`jsonb_set(${raw(json)}::jsonb, ${raw(`'{${member}}'`)}, to_jsonb(${value(raw(`(${json}::jsonb ->> '${member}')`))}))::text`,
  readTogether: (reads) =>
    sql`SELECT ${join(reads.map((read, i) => sql`(SELECT COALESCE(json_agg(x), '[]') FROM (${read}) AS x) AS ${raw(`r${i}`)}`), ", ")}`,
  poolFunction: true,
  pooled: true,
  rowid: false,
  topicIndexesPartial: false,
  ddl: { big: "BIGINT", int: "INTEGER", small: "SMALLINT", C: ` COLLATE "C"`, noRowid: "" },
  pgOnly: (statements) => statements,
  sqliteOnly: () => []
}
