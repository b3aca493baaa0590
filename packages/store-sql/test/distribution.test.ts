/**
 * The schema's distribution on a sharded PostgreSQL (Citus), checked against the catalog of a
 * real migrated schema: every table is classified in internal/distribution.ts, and every table
 * distributed by a column has its primary key and every unique index leading with that column
 * (Citus enforces uniqueness per shard only when the distribution column is part of the key).
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { distribution, distributionColumn } from "../src/internal/distribution.js"
import * as Pg from "../src/Pg.js"
import * as SqlStore from "../src/SqlStore.js"
import { freshSchema, pgUrl } from "./helpers.js"

const schema = freshSchema()

const migrated = Layer.scopedDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* Effect.addFinalizer(() => Effect.orDie(sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)))
  yield* SqlStore.migrateSchema(schema)
})).pipe(Layer.provideMerge(Pg.layerClient({ url: pgUrl, schema, max_connections: 2 })))

/** Every unique index of the schema (the primary keys included), with its columns in order. */
const uniqueIndexes = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ table: string; index: string; primary: boolean; columns: Array<string> }>`
    SELECT t.relname AS table, i.relname AS index, x.indisprimary AS primary,
      array(
        SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
        ORDER BY k.n
      )::text[] AS columns
    FROM pg_index x
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_namespace s ON s.oid = t.relnamespace
    WHERE s.nspname = ${schema} AND x.indisunique
    ORDER BY t.relname, i.relname`)

describe("distribution on a sharded PostgreSQL", () => {
  it.layer(migrated, { timeout: 60_000 })((it) => {
    it.effect("every table of the migrated schema is classified: by chat_id, by another key, or a reference table", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const tables = yield* sql<{ table_name: string }>`
          SELECT table_name FROM information_schema.tables WHERE table_schema = ${schema} AND table_type = 'BASE TABLE'`
        assert.isAbove(tables.length, 0)
        // A new table fails here until internal/distribution.ts says how it distributes.
        const unclassified = tables.map((t) => t.table_name).filter((name) => distribution[name] === undefined)
        assert.deepStrictEqual(unclassified, [])
      }))

    it.effect("every distributed table's primary key and unique indexes lead with its distribution column", () =>
      Effect.gen(function*() {
        const indexes = yield* uniqueIndexes
        const offending = indexes.filter((ix) => {
          const d = distribution[ix.table]
          const column = d === undefined ? undefined : distributionColumn(d)
          return column !== undefined && ix.columns[0] !== column
        }).map((ix) => `${ix.table}.${ix.index} (${ix.columns.join(", ")})`)
        assert.deepStrictEqual(offending, [])
        // Every distributed table has a primary key: its rows are found by it on one node.
        const keyed = new Set(indexes.filter((ix) => ix.primary).map((ix) => ix.table))
        const tables = new Set(indexes.map((ix) => ix.table))
        const withoutKey = Object.entries(distribution)
          .filter(([name, d]) => tables.has(name) && distributionColumn(d) !== undefined && !keyed.has(name))
          .map(([name]) => name)
        assert.deepStrictEqual(withoutKey, [])
        // The chat-distributed tables are the ones the chats' data lives in.
        assert.includeMembers(
          indexes.filter((ix) => ix.primary && distribution[ix.table]?._tag === "chat").map((ix) => ix.table),
          ["deixis_chats", "deixis_messages", "deixis_objects", "deixis_history", "deixis_conversation_state"]
        )
      }))
  })
})
