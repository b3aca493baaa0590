/** SQLite's spelling of what differs between the engines (see `Dialect`). */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import type { Dialect } from "../dialect.js"
import { groupCommit } from "../groupCommit.js"
import { empty, type Fragment, raw, sql, tuples } from "../statement.js"

/** Row counts of the chunks: powers of two, so a table is written with a handful of statement texts. */
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
 * A write transaction that takes the write lock up front (`BEGIN IMMEDIATE`), so two processes
 * never deadlock upgrading a read lock.
 */
const immediate = (client: SqlClient.SqlClient) => {
  const run = SqlClient.makeWithTransaction({
    transactionTag: SqlClient.TransactionConnection,
    spanAttributes: [["db.system.name", "sqlite"]],
    acquireConnection: Effect.flatMap(
      Scope.make(),
      (scope) => Effect.map(Scope.extend(client.reserve, scope), (conn) => [scope, conn] as const)
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

export const sqlite: Dialect = {
  name: "sqlite",
  placeholder: () => "?",
  texts: new WeakMap(),
  C: empty,
  forUpdate: empty,
  skipLocked: empty,
  orderedJoin: raw("CROSS JOIN"),
  indexedBy: (index) => raw(` INDEXED BY ${index}`),
  probe: (table, alias, on) => raw(`CROSS JOIN ${table} ${alias} ON ${on}`),
  rowsTables: (columns, rows) => {
    const names = raw(columns.map(([name], i) => `column${i + 1} AS ${name}`).join(", "))
    const out: Array<Fragment> = []
    let at = 0
    for (const size of chunkRows(rows.length)) {
      out.push(sql`(SELECT ${names} FROM (VALUES ${tuples(rows.slice(at, at + size))})) AS k`)
      at += size
    }
    return out
  },
  contains: (haystack, needle) => sql`instr(${raw(haystack)}, ${needle}) > 0`,
  transactionLock: () => undefined,
  migrationLock: () => [],
  jsonSetString: (json, member, value) =>
    sql`json_set(${raw(json)}, ${raw(`'$.${member}'`)}, ${value(raw(`json_extract(${json}, '$.${member}')`))})`,
  readTogether: undefined,
  applyFunction: false,
  poolFunction: false,
  pooled: false,
  rowid: true,
  ddl: { big: "INTEGER", int: "INTEGER", small: "INTEGER", C: "", noRowid: " WITHOUT ROWID" },
  pgOnly: () => [],
  // Writes that arrive together share one such transaction, a savepoint each (see groupCommit.ts).
  transaction: (client) => groupCommit(client, immediate(client))
}
