/** SQLite's spelling of what differs between the engines (see `Dialect`). */
import type { Dialect } from "../dialect.js"
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
  indexExists: (name) => sql`SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ${name}`,
  jsonSetString: (json, member, value) =>
    sql`json_set(${raw(json)}, ${raw(`'$.${member}'`)}, ${value(raw(`json_extract(${json}, '$.${member}')`))})`,
  readTogether: undefined,
  poolFunction: false,
  pooled: false,
  rowid: true,
  topicIndexesPartial: true,
  ddl: { big: "INTEGER", int: "INTEGER", small: "INTEGER", C: "", noRowid: " WITHOUT ROWID" },
  pgOnly: () => [],
  sqliteOnly: (statements) => statements
}
