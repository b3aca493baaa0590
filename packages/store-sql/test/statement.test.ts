/**
 * The one statement builder: placeholders numbered as the statement is compiled, per dialect,
 * and a template of parameters compiled once per call site.
 */
import { assert, describe, it } from "@effect/vitest"
import BetterSqlite from "better-sqlite3"
import { pg } from "../src/internal/dialect/pg.js"
import { sqlite } from "../src/internal/dialect/sqlite.js"
import { and, compile, empty, join, limit, list, raw, sql, tuples } from "../src/internal/statement.js"

const byChat = (chatId: string, topic: string) => sql`SELECT 1 FROM t WHERE chat_id = ${chatId} AND topic = ${topic}`

describe("statement builder", () => {
  it("PostgreSQL numbers placeholders in order across nested parts; SQLite writes ? for each, the same parameters in the same order", () => {
    const part = (n: number) => sql`SELECT ${n} AS n WHERE x IN ${list(["a", "b"])}`
    const statement = sql`${join([part(1), part(2)], " UNION ALL ")} ORDER BY n${pg.C} LIMIT ${10}`
    const onPg = compile(pg, statement)
    assert.strictEqual(onPg.text, `SELECT $1 AS n WHERE x IN ($2, $3) UNION ALL SELECT $4 AS n WHERE x IN ($5, $6) ORDER BY n COLLATE "C" LIMIT $7`)
    assert.deepStrictEqual(onPg.params, [1, "a", "b", 2, "a", "b", 10])
    const onSqlite = compile(sqlite, sql`${join([part(1), part(2)], " UNION ALL ")} ORDER BY n${sqlite.C} LIMIT ${10}`)
    assert.strictEqual(onSqlite.text, `SELECT ? AS n WHERE x IN (?, ?) UNION ALL SELECT ? AS n WHERE x IN (?, ?) ORDER BY n LIMIT ?`)
    assert.deepStrictEqual(onSqlite.params, onPg.params)
  })

  it("a question mark in SQL text stays as written (nothing rewrites ?), and a value is never spliced into the text", () => {
    const compiled = compile(pg, sql`SELECT body::jsonb ? 'key' FROM t WHERE a = ${"x' OR '1'='1"}`)
    assert.strictEqual(compiled.text, `SELECT body::jsonb ? 'key' FROM t WHERE a = $1`)
    assert.deepStrictEqual(compiled.params, ["x' OR '1'='1"])
  })

  it("a template of parameters is compiled once per call site: every call gets the same text, with its own parameters", () => {
    const a = compile(pg, byChat("c1", "t1"))
    const b = compile(pg, byChat("c2", "t2"))
    assert.strictEqual(a.text, "SELECT 1 FROM t WHERE chat_id = $1 AND topic = $2")
    assert.strictEqual(b.text, a.text)
    assert.deepStrictEqual([a.params, b.params], [["c1", "t1"], ["c2", "t2"]])
    assert.isTrue(pg.texts.has(byChat("c3", "t3").strings), "the text is kept per template")
    assert.strictEqual(compile(sqlite, byChat("c1", "t1")).text, "SELECT 1 FROM t WHERE chat_id = ? AND topic = ?")
  })

  it("an array is one parameter (PostgreSQL binds it whole); rows, empty parts and conditions compile as written", () => {
    const compiled = compile(pg, sql`SELECT * FROM unnest(CAST(${["a", "b"]} AS TEXT[])) WHERE ${and([])}${empty} AND ${and([raw("x"), sql`y = ${1}`])}`)
    assert.strictEqual(compiled.text, `SELECT * FROM unnest(CAST($1 AS TEXT[])) WHERE 1=1 AND (x AND y = $2)`)
    assert.deepStrictEqual(compiled.params, [["a", "b"], 1])
    assert.strictEqual(compile(sqlite, sql`VALUES ${tuples([[1, "a"], [2, "b"]])}`).text, "VALUES (?, ?), (?, ?)")
  })

  it("rows compile as the rows listed one by one, whatever their count and width, on both dialects", () => {
    for (const count of [1, 2, 3, 16, 257]) {
      for (const width of [1, 2, 7]) {
        const rows = Array.from({ length: count }, (_, r) => Array.from({ length: width }, (_, c) => (c % 2 === 0 ? r * 10 + c : `v${r}.${c}`)))
        for (const dialect of [pg, sqlite]) {
          const together = compile(dialect, sql`VALUES ${tuples(rows)} WHERE x IN ${list(rows.map((r) => r[0]!))}`)
          const oneByOne = compile(dialect, sql`VALUES ${join(rows.map(list), ", ")} WHERE x IN ${list(rows.map((r) => r[0]!))}`)
          assert.deepStrictEqual(together, oneByOne)
        }
      }
    }
    // Rows of different widths, or none at all, as listed.
    assert.strictEqual(compile(pg, tuples([[1, 2], [3]])).text, "($1, $2), ($3)")
    assert.strictEqual(compile(pg, sql`VALUES ${tuples([])}`).text, "VALUES ")
  })

  it("rows passed in bulk: one unnest statement on PostgreSQL, power-of-two VALUES chunks on SQLite", () => {
    const rows = Array.from({ length: 5 }, (_, i): [string, number] => [`c${i}`, i])
    const columns = [["chat_id", "TEXT"], ["n", "INTEGER"]] as const
    const onPg = pg.rowsTables(columns, rows).map((k) => compile(pg, sql`SELECT * FROM ${k}`))
    assert.strictEqual(onPg.length, 1)
    assert.strictEqual(onPg[0]!.text, "SELECT * FROM unnest((SELECT CAST($1 AS TEXT[])), (SELECT CAST($2 AS INTEGER[]))) AS k(chat_id, n)")
    assert.deepStrictEqual(onPg[0]!.params, [rows.map((r) => r[0]), rows.map((r) => r[1])])
    const onSqlite = sqlite.rowsTables(columns, rows).map((k) => compile(sqlite, sql`SELECT * FROM ${k}`))
    assert.deepStrictEqual(onSqlite.map((c) => c.params.length / 2), [4, 1])
    assert.deepStrictEqual(onSqlite.flatMap((c) => c.params), rows.flat())
  })

  it("limit binds its count behind a CAST on both dialects; one prepared SQLite statement applies each count it is run with", () => {
    assert.strictEqual(compile(pg, sql`SELECT 1 ${limit(3)}`).text, "SELECT 1 LIMIT CAST($1 AS INTEGER)")
    const compiled = compile(sqlite, sql`SELECT column1 AS n FROM (VALUES (1), (2), (3)) ORDER BY n ${limit(3)}`)
    assert.strictEqual(compiled.text, "SELECT column1 AS n FROM (VALUES (1), (2), (3)) ORDER BY n LIMIT CAST(? AS INTEGER)")
    const db = new BetterSqlite(":memory:")
    try {
      const statement = db.prepare(compiled.text)
      assert.deepStrictEqual([0, 2, 1, 3, -1].map((n) => statement.all(n).length), [0, 2, 1, 3, 3])
    } finally {
      db.close()
    }
  })
})
