/**
 * Test layers over real engines: a SQLite file in a fresh temp dir, and a PostgreSQL schema
 * of its own (created by the migrations, dropped when the layer is released) at
 * DEIXIS_TEST_PG_URL (set by the shared global setup: the run's server, or an embedded one when nothing
 * answers on the default address). An unreachable server fails the tests that need it; nothing is skipped.
 * Built from the engines' own entry points (`Sqlite`, `Pg`); the root's layers load them lazily.
 */
import type { HistoryItem } from "@deixis/chathistory/HistoryItem"
import type { ChatSnapshot, PoolQuery } from "@deixis/core/ContextStore"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Pg from "../src/Pg.js"
import * as Sqlite from "../src/Sqlite.js"
import type { Db } from "../src/internal/db.js"
import * as SqlStore from "../src/SqlStore.js"
import { sql } from "../src/internal/statement.js"
import { pgUrl as testPgUrl } from "deixis-test-support/pg"

export const pgUrl = testPgUrl()

let counter = 0
/** A schema name no other run or test uses. */
export const freshSchema = () =>
  `deixis_test_${Date.now().toString(36)}_${process.pid}_${++counter}_${Math.random().toString(36).slice(2, 6)}`

/** A fresh temp dir, removed with everything in it when the scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "deixis-store-sql-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

export const makeTempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "deixis-store-sql-"))

type Overrides = Partial<SqlStore.RetentionOptions>

/** Every store in a SQLite file of a fresh temp dir. */
export const sqliteLayer = (overrides: Overrides = {}): Layer.Layer<SqlStore.Stores, SqlStore.SqlStoreError> =>
  Layer.unwrapScoped(Effect.map(tempDir, (dir) =>
    Sqlite.layer({ filename: path.join(dir, "deixis.db"), sweep_interval: 0, ...overrides })))

/** Drops `schema` when the layer is released (after the stores, before the pool closes). */
const dropSchemaOnRelease = (schema: string) =>
  Layer.scopedDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.addFinalizer(() => Effect.orDie(sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)))))

/** Every store in a fresh PostgreSQL schema, dropped afterwards. */
export const pgLayer = (
  overrides: Overrides = {},
  schema: string = freshSchema()
): Layer.Layer<SqlStore.Stores, SqlStore.SqlStoreError> =>
  SqlStore.layerStores({ schema, sweep_interval: 0, ...overrides }).pipe(
    Layer.provide(Layer.provideMerge(dropSchemaOnRelease(schema), Pg.layerClient({ url: pgUrl, schema, max_connections: 4 })))
  )

/** Every store in a SQLite file, with the SqlClient too, for tests that count rows. */
export const sqliteLayerWithClient = (
  overrides: Overrides = {}
): Layer.Layer<SqlStore.Stores | SqlClient.SqlClient, SqlStore.SqlStoreError> =>
  Layer.unwrapScoped(Effect.map(tempDir, (dir) =>
    SqlStore.layerStores({ sweep_interval: 0, ...overrides }).pipe(
      Layer.provideMerge(Sqlite.layerClient({ filename: path.join(dir, "deixis.db") }))
    )))

/** Every store in a fresh PostgreSQL schema, with the SqlClient too. */
export const pgLayerWithClient = (
  overrides: Overrides = {},
  schema: string = freshSchema()
): Layer.Layer<SqlStore.Stores | SqlClient.SqlClient, SqlStore.SqlStoreError> =>
  SqlStore.layerStores({ schema, sweep_interval: 0, ...overrides }).pipe(
    Layer.provideMerge(Layer.provideMerge(dropSchemaOnRelease(schema), Pg.layerClient({ url: pgUrl, schema, max_connections: 4 })))
  )

/** The time the cache tests' events and pools run at. */
export const T0 = Date.parse("2026-11-25T10:00:00Z")

/** History item `id` of `chat`: a user's message in topic 1, sent at `T0 + id` seconds. */
export const item = (chat: string, id: number): HistoryItem => ({
  channel: "telegram",
  kind: "inbound_user",
  chat_id: chat,
  topic_id: "1",
  chat_type: "supergroup",
  message_id: String(id),
  reply_to_message_id: null,
  bot_response_id: null,
  sent_at: T0 + id * 1000,
  sender: { user_id: "7", username: null, nickname: "A", is_bot: false, display_ref: "A" },
  text: `message ${id}`,
  quote: null,
  attachments: []
})

/** A pool query in topic 1 of `chat` (sender 7, links preferred, the sender's own taken), with `over` on top. */
export const poolQuery = (chat: string, over: Partial<PoolQuery> = {}): PoolQuery => ({
  chat_id: chat,
  topic_id: "1",
  current_message_id: "1000",
  reply_to_message_id: null,
  sender_user_id: "7",
  kinds: undefined,
  prefer_kinds: ["link"],
  include_owned: true,
  active_only: false,
  now: T0,
  limits: { chain_depth: 8, recent_objects: 8, recent_per_kind: 4, recent_messages: 4, owned: 4, fallback_active: 16 },
  ...over
})

/**
 * A chat's messages and objects (a memory store's snapshot) written straight into the tables,
 * in the columns every schema version since 4 has: the data of an older database to upgrade.
 */
export const writeSnapshotRows = (db: Db, chat: string, written: ChatSnapshot) =>
  Effect.gen(function*() {
    for (const m of written.messages) {
      yield* db.query(
        sql`INSERT INTO deixis_messages (chat_id, id_len, message_id, topic, reply_len, reply_to, sender, from_bot, sent_at) VALUES (${chat}, ${m.message_id.length}, ${m.message_id}, ${m.topic_id ?? ""}, ${m.reply_to_message_id?.length ?? null}, ${m.reply_to_message_id}, ${m.sender_user_id}, ${0}, ${m.sent_at})`)
    }
    for (const [i, o] of written.objects.entries()) {
      yield* db.query(
        sql`INSERT INTO deixis_objects (chat_id, object_id, seq, kind, topic, source_message_id, created_by, active_until, since, body) VALUES (${chat}, ${o.object_id}, ${i + 1}, ${o.kind}, ${o.topic_id ?? ""}, ${o.source_message_id}, ${o.created_by_user_id ?? null}, ${o.active_until}, ${o.active_until ?? o.created_at}, ${JSON.stringify(o)})`)
    }
  })
