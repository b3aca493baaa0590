/**
 * What the SQL adapters add to the ports' contracts: position order, migrations, settings.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { ContextEventBatch } from "@deixis/core/ContextEvent"
import { ContextStore, makeMemory } from "@deixis/core/ContextStore"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import * as SqlClient from "@effect/sql/SqlClient"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as path from "node:path"
import { makeSqlUpdateInbox } from "../src/internal/botStores.js"
import { makeSqlContextStore } from "../src/internal/contextStore.js"
import { makeSqlHistoryStore } from "../src/internal/historyStore.js"
import { makeDb } from "../src/internal/db.js"
import { migrate, migrations } from "../src/internal/migrations.js"
import * as SqlStore from "../src/SqlStore.js"
import { freshSchema, item, pgLayer, pgUrl, poolQuery, sqliteLayer, tempDir, writeSnapshotRows } from "./helpers.js"
import { sql } from "../src/internal/statement.js"

/** Keys as the environment spells them (`DEIXIS_PG_URL`). */
const env = (map: Map<string, string>) => ConfigProvider.fromMap(map, { pathDelim: "_" })

const allVersions = migrations.map((m) => m.version).sort((a, b) => a - b)

const T0 = Date.parse("2026-11-22T10:00:00Z")
const decode = Schema.decodeUnknownSync(ContextEventBatch)

const ordering = (name: string, stores: Layer.Layer<SqlStore.Stores, SqlStore.SqlStoreError>) =>
  layer(stores)(`${name}: position order`, (it) => {
    it.effect("recent messages in the pool are the newest by position, not the last to arrive", () =>
      Effect.gen(function*() {
        const store = yield* ContextStore
        const chat = `order-${name}`
        // Arrival: 10, 12, 9, 11, 100, 8 — position: 8 9 10 11 12 100.
        yield* store.apply(
          decode([10, 12, 9, 11, 100, 8].map((id) => ({ type: "message_observed", chat_id: chat, message_id: id, topic_id: 1 }))),
          { now: T0, ttl: TtlPolicy.defaultPolicy }
        )
        const pool = yield* store.pool({
          chat_id: chat,
          topic_id: "1",
          current_message_id: "101",
          reply_to_message_id: null,
          sender_user_id: null,
          kinds: undefined,
          prefer_kinds: [],
          include_owned: false,
          active_only: false,
          now: T0,
          limits: { chain_depth: 8, recent_objects: 4, recent_per_kind: 4, recent_messages: 3, owned: 4, fallback_active: 16 }
        })
        assert.deepStrictEqual(pool.entries.map((e) => e.object.source_message_id), ["100", "12", "11"])
        assert.deepStrictEqual((yield* store.snapshot(chat)).messages.map((m) => m.message_id), ["8", "9", "10", "11", "12", "100"])
      }))

    it.effect("history reads by position whatever the arrival order", () =>
      Effect.gen(function*() {
        const history = yield* HistoryStore
        const chat = `order-history-${name}`
        for (const id of ["10", "2", "9", "1"]) {
          yield* history.append({
            channel: "telegram",
            kind: "inbound_user",
            chat_id: chat,
            topic_id: null,
            chat_type: "group",
            message_id: id,
            reply_to_message_id: null,
            bot_response_id: null,
            sent_at: T0,
            sender: { user_id: "1", username: null, nickname: "A", is_bot: false, display_ref: "A" },
            text: id,
            quote: null,
            attachments: []
          })
        }
        const recent = yield* history.recent({ chat_id: chat, topic_id: null }, 3)
        assert.deepStrictEqual(recent.map((e) => e.item.message_id), ["2", "9", "10"])
      }))
  })

ordering("sqlite", sqliteLayer())
ordering("postgres", pgLayer())

describe("migrations", () => {
  it.effect("the PostgreSQL server at DEIXIS_TEST_PG_URL is reachable (these tests fail, never skip, without it)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ one: number }>`SELECT 1 AS one`
      assert.strictEqual(rows[0]?.one, 1)
    }).pipe(Effect.provide(SqlStore.layerPgClient({ url: pgUrl }))))

  it.scoped("SQLite: a second run applies nothing, and the schema is at the latest version", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const client = SqlStore.layerSqliteClient({ filename: path.join(dir, "m.db") })
      const [first, second, versions] = yield* Effect.gen(function*() {
        const first = yield* SqlStore.migrateSchema()
        const second = yield* SqlStore.migrateSchema()
        const sql = yield* SqlClient.SqlClient
        const versions = yield* sql<{ version: number }>`SELECT version FROM deixis_migrations ORDER BY version`
        return [first, second, versions.map((r) => Number(r.version))] as const
      }).pipe(Effect.provide(client))
      assert.deepStrictEqual(first, allVersions)
      assert.deepStrictEqual(second, [])
      assert.deepStrictEqual(versions, allVersions)
    }))

  it.scoped("PostgreSQL: migrations racing from several pools apply each version exactly once", () =>
    Effect.gen(function*() {
      const schema = freshSchema()
      const run = SqlStore.migrateSchema(schema).pipe(
        Effect.provide(SqlStore.layerPgClient({ url: pgUrl, schema, max_connections: 1 }))
      )
      yield* Effect.addFinalizer(() =>
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(
          Effect.provide(SqlStore.layerPgClient({ url: pgUrl })),
          Effect.orDie
        )
      )
      const results = yield* Effect.all([run, run, run, run], { concurrency: "unbounded" })
      assert.deepStrictEqual(results.flat().sort((a, b) => a - b), allVersions)
      const again = yield* run
      assert.deepStrictEqual(again, [])
    }))

  it.effect("an invalid schema name is refused before it reaches SQL", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(SqlStore.layerPg({ url: pgUrl, schema: "x\"; DROP TABLE y; --" })).pipe(Effect.scoped))
      assert.strictEqual(error._tag, "SqlStoreError")
    }))
})

describe("settings", () => {
  it.scoped("SQLite runs in WAL mode with the busy timeout and synchronous=NORMAL by default", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pragmas = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const mode = yield* sql.unsafe<{ journal_mode: string }>("PRAGMA journal_mode")
        const sync = yield* sql.unsafe<{ synchronous: number }>("PRAGMA synchronous")
        const busy = yield* sql.unsafe<{ timeout: number }>("PRAGMA busy_timeout")
        return [mode[0]?.journal_mode, sync[0]?.synchronous, busy[0]?.timeout]
      }).pipe(Effect.provide(SqlStore.layerSqliteClient({ filename: path.join(dir, "p.db"), busy_timeout: 1234 })))
      assert.deepStrictEqual(pragmas, ["wal", 1, 1234])
    }))

  it.effect("configuration is read from DEIXIS_* keys, with the documented defaults", () =>
    Effect.gen(function*() {
      const defaults = yield* Effect.withConfigProvider(SqlStore.sqliteConfig, ConfigProvider.fromMap(new Map()))
      assert.deepStrictEqual(defaults, {
        filename: "deixis.db",
        busy_timeout: 5000,
        synchronous: "normal",
        // Kept without a time limit (0): only bookkeeping (event ids) has one by default.
        object_retention: 0,
        message_retention: 0,
        event_retention: 7 * 24 * 3600 * 1000,
        history_retention: 0,
        sweep_interval: 60_000,
        sweep_batch: 1000,
        cache_mb: 64
      })
      const set = yield* Effect.withConfigProvider(
        SqlStore.pgConfig,
        env(new Map([
          ["DEIXIS_PG_SCHEMA", "bots"],
          ["DEIXIS_PG_MAX_CONNECTIONS", "3"],
          ["DEIXIS_STORE_OBJECT_RETENTION", "2 days"],
          ["DEIXIS_STORE_MESSAGE_RETENTION", "off"],
          ["DEIXIS_HISTORY_STORE_RETENTION", "30 days"]
        ]))
      )
      assert.deepStrictEqual(
        [set.schema, set.max_connections, set.object_retention, set.message_retention, set.history_retention],
        ["bots", 3, 2 * 24 * 3600 * 1000, 0, 30 * 24 * 3600 * 1000]
      )
      const unclear = yield* Effect.flip(
        Effect.withConfigProvider(SqlStore.pgConfig, env(new Map([["DEIXIS_STORE_MESSAGE_RETENTION", "forever"]])))
      )
      assert.include(String(unclear), "STORE_MESSAGE_RETENTION")
      assert.include(String(unclear), "or off")
      const refused = yield* Effect.flip(
        Effect.withConfigProvider(SqlStore.pgConfig, env(new Map([["DEIXIS_STORE_SWEEP_BATCH", "0"]])))
      )
      assert.include(String(refused), "STORE_SWEEP_BATCH")
    }))

  it.scoped("layerSqliteConfig opens the file named by DEIXIS_SQLITE_FILENAME", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "configured.db")
      const stats = yield* Effect.flatMap(ContextStore, (s) => s.stats).pipe(
        Effect.provide(SqlStore.layerSqliteConfig({ sweep_interval: 0 })),
        Effect.withConfigProvider(env(new Map([["DEIXIS_SQLITE_FILENAME", filename]])))
      )
      assert.strictEqual(stats.messages, 0)
      const fs = yield* Effect.promise(() => import("node:fs"))
      assert.isTrue(fs.existsSync(filename))
    }))
})

// A database written before migration 5 (partial active indexes; on PostgreSQL code-point ids
// and no separate position index) upgrades in place and keeps reading what it stored.
const upgradeFrom4 = Effect.gen(function*() {
  const db = makeDb(yield* SqlClient.SqlClient)
  assert.deepStrictEqual(yield* migrate(db, undefined, 4), [1, 2, 3, 4])
  const settings = { ...SqlStore.retentionDefaults }
  const chat = "upgrade"
  // The rows a version-4 store wrote, in the version-4 tables (today's code writes newer columns).
  const reference = makeMemory()
  yield* reference.apply(
    decode([
      { type: "message_observed", chat_id: chat, message_id: 9, topic_id: 1, links: [{ url: "https://example.com/a" }] },
      { type: "message_observed", chat_id: chat, message_id: 10, topic_id: 1, reply_to_message_id: 9 },
      { type: "message_observed", chat_id: chat, message_id: 11, topic_id: 1, reply_to_message_id: 10 },
      { type: "object_activated", event_id: "e1", chat_id: chat, reason: "summarized", source_message_id: 9, kind: "link" }
    ]),
    { now: T0, ttl: TtlPolicy.defaultPolicy }
  )
  const written = yield* reference.snapshot(chat)
  yield* db.query(sql`INSERT INTO deixis_chats (chat_id, next_seq, created_at) VALUES (${chat}, ${written.objects.length + 1}, ${T0})`)
  yield* writeSnapshotRows(db, chat, written)
  yield* db.query(sql`INSERT INTO deixis_events (chat_id, event_id, seen_at) VALUES (${chat}, ${"e1"}, ${T0})`)
  assert.deepStrictEqual(yield* migrate(db, undefined), allVersions.slice(4))
  const after = makeSqlContextStore(db, settings)
  const chain = yield* after.replyChain(chat, "11", 8)
  assert.deepStrictEqual(chain.map((m) => m.message_id), ["11", "10", "9"])
  const pool = yield* after.pool({
    chat_id: chat,
    topic_id: "1",
    current_message_id: "12",
    reply_to_message_id: "11",
    sender_user_id: null,
    kinds: undefined,
    prefer_kinds: [],
    include_owned: false,
    active_only: true,
    now: T0,
    limits: { chain_depth: 8, recent_objects: 4, recent_per_kind: 4, recent_messages: 3, owned: 4, fallback_active: 16 }
  })
  assert.deepStrictEqual(pool.chain, ["11", "10", "9"])
  assert.deepStrictEqual(pool.entries.map((e) => [e.object.kind, e.object.source_message_id]), [["link", "9"]])
  // The same apply path after the upgrade: the replayed activation is a duplicate, the new message is stored.
  const replay = yield* after.apply(
    decode([
      { type: "object_activated", event_id: "e1", chat_id: chat, reason: "summarized", source_message_id: 9, kind: "link" },
      { type: "message_observed", chat_id: chat, message_id: 100, topic_id: 1, reply_to_message_id: 11 }
    ]),
    { now: T0, ttl: TtlPolicy.defaultPolicy }
  )
  assert.deepStrictEqual([replay.applied, replay.duplicates], [1, 1])
  assert.deepStrictEqual((yield* after.snapshot(chat)).messages.map((m) => m.message_id), ["9", "10", "11", "100"])
})

/** `upgrade` on PostgreSQL, in a schema of its own (created empty, dropped afterwards). */
const inFreshPgSchema = <A, E>(upgrade: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.gen(function*() {
    const schema = freshSchema()
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(
        Effect.provide(SqlStore.layerPgClient({ url: pgUrl })),
        Effect.orDie
      )
    )
    yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`CREATE SCHEMA "${schema}"`)).pipe(
      Effect.provide(SqlStore.layerPgClient({ url: pgUrl }))
    )
    return yield* upgrade.pipe(Effect.provide(SqlStore.layerPgClient({ url: pgUrl, schema, max_connections: 1 })))
  })

describe("upgrades", () => {
  it.scoped("SQLite: a database at version 4 with data upgrades to the latest and reads it back", () =>
    Effect.flatMap(tempDir, (dir) =>
      upgradeFrom4.pipe(Effect.provide(SqlStore.layerSqliteClient({ filename: path.join(dir, "u.db") })))))

  it.scoped("PostgreSQL: a database at version 4 with data upgrades to the latest and reads it back", () =>
    inFreshPgSchema(upgradeFrom4))
})

// An update pending in a database written before migration 9 (no attempts column) is handed out
// after the upgrade with its receipt counted as its first attempt (migration 15 puts it in chat '',
// whose claim is stale at once).
const upgradeFrom8 = Effect.gen(function*() {
  const db = makeDb(yield* SqlClient.SqlClient)
  assert.deepStrictEqual(yield* migrate(db, undefined, 8), [1, 2, 3, 4, 5, 6, 7, 8])
  yield* db.query(sql`INSERT INTO deixis_updates (source, update_id, received_at, lease_until, payload) VALUES (${"bot-1"}, ${41}, ${T0}, ${T0 + 1_000}, ${`{"update_id":41}`})`)
  assert.deepStrictEqual(yield* migrate(db, undefined), allVersions.slice(8))
  const inbox = makeSqlUpdateInbox(db)
  const claim = (now: number) => inbox.claimStale({ source: "bot-1", now, owner: "b", lease: 1_000, limit: 10 })
  assert.deepStrictEqual(yield* claim(T0 + 1_000), [{ update_id: 41, chat: "", payload: `{"update_id":41}`, attempts: 2 }])
  assert.deepStrictEqual((yield* claim(T0 + 2_000)).map((s) => s.attempts), [3])
})

describe("migration 9 (update attempts)", () => {
  it.scoped("SQLite: an update pending at version 8 is handed out after the upgrade, its receipt counted as its first attempt", () =>
    Effect.flatMap(tempDir, (dir) =>
      upgradeFrom8.pipe(Effect.provide(SqlStore.layerSqliteClient({ filename: path.join(dir, "u8.db") })))))

  it.scoped("PostgreSQL: an update pending at version 8 is handed out after the upgrade, its receipt counted as its first attempt", () =>
    inFreshPgSchema(upgradeFrom8))
})

// A database at version 18 (the messages' topic index and the history's message-id index over
// every row) holding messages and items in no topic and in a topic: after migration 19 (SQLite:
// those indexes hold only rows in a topic, the inbox's chat claims a WITHOUT ROWID table) every
// read finds them, and a message id stays stored once in its chat whatever topic a later copy
// names. (An inbox's claims carried through it: "migration 9" below.)
const upgradeFrom18 = Effect.gen(function*() {
  const db = makeDb(yield* SqlClient.SqlClient)
  assert.deepStrictEqual(yield* migrate(db, undefined, 18), allVersions.filter((v) => v <= 18))
  const context = makeSqlContextStore(db, { ...SqlStore.retentionDefaults })
  const history = makeSqlHistoryStore(db, { history_retention: 0, sweep_batch: 100 }).store
  const plain = "upgrade-19-plain"
  const mixed = "upgrade-19-mixed"
  yield* context.apply(
    decode([
      { type: "message_observed", chat_id: plain, message_id: 1 },
      { type: "message_observed", chat_id: plain, message_id: 2, reply_to_message_id: 1 },
      { type: "message_observed", chat_id: mixed, message_id: 1, topic_id: 5 },
      { type: "message_observed", chat_id: mixed, message_id: 2 }
    ]),
    { now: T0, ttl: TtlPolicy.defaultPolicy }
  )
  yield* history.appendAll([{ ...item(plain, 1), topic_id: null }, item(mixed, 1), { ...item(mixed, 2), topic_id: null }])
  assert.deepStrictEqual(yield* migrate(db, undefined), allVersions.filter((v) => v > 18))
  if (db.dialect.name === "sqlite") {
    const indexes = yield* db.query(sql`SELECT sql FROM sqlite_master WHERE name IN ('deixis_messages_topic', 'deixis_history_message')`)
    assert.deepStrictEqual(indexes.map((r) => / WHERE topic <> ''$/.test(String(r["sql"]))), [true, true])
    const claims = yield* db.query(sql`SELECT sql FROM sqlite_master WHERE name = 'deixis_update_chats'`)
    assert.match(String(claims[0]?.["sql"]), /WITHOUT ROWID$/)
  }
  // Messages in no topic and in a topic, read by the pool's window of each scope.
  const messages = (chat: string, topic: string | null) =>
    Effect.map(
      context.pool(poolQuery(chat, { topic_id: topic, current_message_id: "3", sender_user_id: null, include_owned: false })),
      (pool) => pool.entries.map((e) => e.object.source_message_id)
    )
  assert.deepStrictEqual(yield* messages(plain, null), ["2", "1"])
  assert.deepStrictEqual(yield* messages(mixed, null), ["2"])
  assert.deepStrictEqual(yield* messages(mixed, "5"), ["1"])
  // Items in no topic and in a topic, by id; a copy naming another topic replaces nothing there.
  const lookup = (chat: string, topic: string | null, id: string) =>
    Effect.map(history.lookup({ chat_id: chat, topic_id: topic }, id), (found) => found._tag === "Some" ? found.value.item.text : null)
  assert.deepStrictEqual(
    [yield* lookup(plain, null, "1"), yield* lookup(mixed, "1", "1"), yield* lookup(mixed, null, "2"), yield* lookup(mixed, null, "1")],
    ["message 1", "message 1", "message 2", null]
  )
  const copies = yield* history.appendAll([
    { ...item(plain, 1), topic_id: "5", text: "edited", edited_at: T0 + 60_000 },
    { ...item(mixed, 2), topic_id: "1", text: "edited", edited_at: T0 + 60_000 },
    { ...item(mixed, 1), topic_id: null, text: "edited", edited_at: T0 + 60_000 }
  ])
  assert.deepStrictEqual(copies, ["replaced", "replaced", "replaced"])
  const ids = (chat: string, topic: string | null) =>
    Effect.map(history.recent({ chat_id: chat, topic_id: topic }, 10), (entries) => entries.map((e) => e.item.message_id))
  assert.deepStrictEqual([yield* ids(plain, "5"), yield* ids(mixed, null), yield* ids(mixed, "1")], [[], ["2"], ["1"]])
  assert.deepStrictEqual(
    [yield* lookup(plain, null, "1"), yield* lookup(mixed, null, "2"), yield* lookup(mixed, "1", "1")],
    ["edited", "edited", "edited"]
  )
  // The bot's answer, linked by position, found by its id.
  assert.isTrue(yield* history.recordResponse({ chat_id: plain, topic_id: null }, "1", "99"))
  assert.deepStrictEqual(yield* lookup(plain, null, "99"), "edited")
})

describe("migration 19 (indexes of rows in a topic)", () => {
  it.scoped("SQLite: messages and items in no topic and in a topic, written at version 18, are read and replaced after the upgrade", () =>
    Effect.flatMap(tempDir, (dir) =>
      upgradeFrom18.pipe(Effect.provide(SqlStore.layerSqliteClient({ filename: path.join(dir, "u18.db") })))))

  it.scoped("PostgreSQL: messages and items in no topic and in a topic, written at version 18, are read and replaced after the upgrade", () =>
    inFreshPgSchema(upgradeFrom18))
})
