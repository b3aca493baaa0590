/**
 * The SQLite engine's client (internal/sqliteClient.ts): what `@effect/sql-sqlite-node`'s client
 * does, with its prepared statements in a bounded `Map` — failures typed, the `SqliteClient` tag
 * provided, safe integers honoured, statements evicted and prepared again without a wrong row.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as path from "node:path"
import * as Sqlite from "../src/Sqlite.js"
import { tempDir } from "./helpers.js"

const client = Effect.gen(function*() {
  const filename = path.join(yield* tempDir, "client.db")
  const context = yield* Layer.build(Sqlite.layerClient({ filename }))
  return { sql: Context.get(context, SqlClient.SqlClient), sqlite: Context.get(context, SqliteClient.SqliteClient) }
})

describe("SQLite client", () => {
  it.scoped("a statement that does not prepare, or fails as it runs, is a typed SqlError; the client goes on", () =>
    Effect.gen(function*() {
      const { sql } = yield* client
      yield* sql`CREATE TABLE t (k TEXT PRIMARY KEY)`
      const bad = yield* Effect.exit(sql.unsafe("SELEC nothing"))
      assert.isTrue(Exit.isFailure(bad) && bad.cause._tag === "Fail" && bad.cause.error instanceof SqlError)
      assert.strictEqual(Exit.isFailure(bad) && bad.cause._tag === "Fail" ? bad.cause.error.message : "", "Failed to prepare statement")
      yield* sql`INSERT INTO t (k) VALUES ('a')`
      const duplicate = yield* Effect.exit(sql`INSERT INTO t (k) VALUES ('a')`)
      assert.isTrue(Exit.isFailure(duplicate) && duplicate.cause._tag === "Fail" && duplicate.cause.error instanceof SqlError)
      assert.deepStrictEqual(yield* sql`SELECT k FROM t`, [{ k: "a" }])
    }))

  it.scoped("the SqliteClient tag is the same client: its export is the database file's bytes", () =>
    Effect.gen(function*() {
      const { sql, sqlite } = yield* client
      yield* sql`CREATE TABLE t (k TEXT)`
      const bytes = yield* sqlite.export
      // Every SQLite database file starts with this header.
      assert.strictEqual(new TextDecoder().decode(bytes.slice(0, 15)), "SQLite format 3")
      assert.deepStrictEqual(yield* sqlite`SELECT count(*) AS n FROM t`, [{ n: 0 }])
    }))

  it.scoped("with SafeIntegers an integer beyond 2^53 comes back exact, as a bigint", () =>
    Effect.gen(function*() {
      const { sql } = yield* client
      const rows = yield* sql`SELECT 9007199254740993 AS n`.pipe(Effect.provideService(SqlClient.SafeIntegers, true))
      assert.strictEqual(rows[0]?.["n"], 9007199254740993n)
    }))

  it.scoped("more statement texts than the cache holds: the oldest are prepared again, every answer its own", () =>
    Effect.gen(function*() {
      const { sql } = yield* client
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < 700; i++) {
          const rows = yield* sql.unsafe<{ readonly n: number; readonly m: number }>(`SELECT ${i} AS n, ? AS m`, [i * 2])
          assert.deepStrictEqual(rows, [{ n: i, m: i * 2 }])
        }
      }
    }))
})
