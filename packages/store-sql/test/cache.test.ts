/**
 * The context store's in-memory cache of active chats: served only at the chat's revision (so a
 * second store's writes on the same file or database are seen), the same answers as the
 * database at any later time, bounded with LRU eviction, counted by metrics, and migration 8
 * (the revision) upgrading a version-7 database with data.
 */
import { assert, describe, it } from "@effect/vitest"
import { ContextEventBatch } from "@deixis/core/ContextEvent"
import type { CandidatePool, ContextStoreShape, PoolQuery } from "@deixis/core/ContextStore"
import type { ObjectKind } from "@deixis/core/ObjectKind"
import { makeMemory } from "@deixis/core/ContextStore"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import * as SqlClient from "@effect/sql/SqlClient"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as path from "node:path"
import { cacheEvictions, cacheHits, cacheMisses, makeContextCache, untouched } from "../src/internal/contextCache.js"
import { sqliteChanges } from "../src/internal/changes.js"
import { makeSqlContextStore } from "../src/internal/contextStore.js"
import { type Db, makeDb, withQuery } from "../src/internal/db.js"
import { migrate, migrations } from "../src/internal/migrations.js"
import * as Pg from "../src/Pg.js"
import * as Sqlite from "../src/Sqlite.js"
import * as SqlStore from "../src/SqlStore.js"
import { freshSchema, pgUrl, poolQuery, T0, tempDir, writeSnapshotRows } from "./helpers.js"
import { compile, raw, sql } from "../src/internal/statement.js"

const decode = Schema.decodeUnknownSync(ContextEventBatch)
const settings = (cache_mb: number) => ({ ...SqlStore.retentionDefaults, sweep_interval: 0, cache_mb })
const apply = (store: ContextStoreShape, events: ReadonlyArray<unknown>, now = T0) =>
  store.apply(decode(events), { now, ttl: TtlPolicy.defaultPolicy })

/**
 * A context store on `db` as the layers make it: on SQLite with the probe of its file's commits
 * (so a chat's revision is read only after something was committed).
 */
const storeOn = (db: Db, options: ReturnType<typeof settings>) =>
  Effect.map(sqliteChanges(db.sql), (changes) => makeSqlContextStore(db, options, changes))

const query = poolQuery
const shape = (pool: { readonly entries: ReadonlyArray<{ readonly object: { readonly object_id: string }; readonly tier: string }> }) =>
  pool.entries.map((e) => `${e.tier}:${e.object.object_id}`)

const counts = Effect.all({
  hits: Metric.value(cacheHits),
  misses: Metric.value(cacheMisses),
  evictions: Metric.value(cacheEvictions)
}).pipe(Effect.map((c) => ({ hits: c.hits.count, misses: c.misses.count, evictions: c.evictions.count })))

type Engine = "sqlite" | "pg"

/** Two independent connections (pools) to one SQLite file or one PostgreSQL schema, migrated. */
const twoDatabases = (engine: Engine): Effect.Effect<readonly [Db, Db], unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const client = (layer: Layer.Layer<SqlClient.SqlClient, SqlStore.SqlStoreError>) =>
      Effect.map(Layer.build(layer), (ctx) => makeDb(Context.get(ctx, SqlClient.SqlClient)))
    if (engine === "sqlite") {
      const filename = path.join(yield* tempDir, "two.db")
      const a = yield* client(Sqlite.layerClient({ filename }))
      yield* migrate(a, undefined)
      return [a, yield* client(Sqlite.layerClient({ filename }))] as const
    }
    const schema = freshSchema()
    const admin = yield* client(Pg.layerClient({ url: pgUrl, max_connections: 1 }))
    yield* Effect.addFinalizer(() => Effect.orDie(admin.query(raw(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))))
    const a = yield* client(Pg.layerClient({ url: pgUrl, schema, max_connections: 2 }))
    yield* migrate(a, schema)
    return [a, yield* client(Pg.layerClient({ url: pgUrl, schema, max_connections: 2 }))] as const
  })

const seed = (chat: string) => [
  { type: "message_observed", chat_id: chat, message_id: 1, topic_id: 1, sender_user_id: 7, links: [{ url: "https://example.com/a" }] },
  { type: "message_observed", chat_id: chat, message_id: 2, topic_id: 1, reply_to_message_id: 1 },
  { type: "message_observed", chat_id: chat, message_id: 3, topic_id: 2 }
]

/**
 * A chat for chains: topic 1 has messages 1..80 (every 4th with a link, every 7th with an image,
 * the even ones replying to the one before; 80 replies to 2, beyond topic 1's recent window;
 * 79 into topic 2; 77 to a message the chat does not have), topic 2 has 101..105 (104 and 105
 * reply to each other).
 */
const chainChat = (chat: string): ReadonlyArray<unknown> => [
  ...Array.from({ length: 80 }, (_, k) => {
    const i = k + 1
    const reply = i === 80 ? 2 : i === 79 ? 101 : i === 77 ? 999 : i % 2 === 0 && i > 1 ? i - 1 : undefined
    return {
      type: "message_observed",
      chat_id: chat,
      message_id: i,
      topic_id: 1,
      sender_user_id: 7 + (i % 3),
      ...(reply === undefined ? {} : { reply_to_message_id: reply }),
      ...(i % 4 === 0 ? { links: [{ url: `https://example.com/${i}` }] } : {}),
      ...(i % 7 === 0 ? { media: [{ kind: "media.image", file_id: `f${i}` }] } : {})
    }
  }),
  ...[101, 102, 103].map((i) => ({
    type: "message_observed",
    chat_id: chat,
    message_id: i,
    topic_id: 2,
    reply_to_message_id: i === 101 ? 60 : i - 1,
    links: [{ url: `https://example.com/${i}` }]
  })),
  // A cycle: 104 and 105 reply to each other.
  ...[104, 105].map((i) => ({
    type: "message_observed",
    chat_id: chat,
    message_id: i,
    topic_id: 2,
    reply_to_message_id: i === 104 ? 105 : 104,
    ...(i === 104 ? { links: [{ url: `https://example.com/${i}` }] } : {})
  }))
]

for (const engine of ["sqlite", "pg"] as const) {
  describe(`${engine}: the in-memory cache`, () => {
    it.scoped("two store instances on the same database: one writes, the other reads the new state (its cache warm before)", () =>
      Effect.gen(function*() {
        const [dbA, dbB] = yield* twoDatabases(engine)
        const a = yield* storeOn(dbA, settings(64))
        const b = yield* storeOn(dbB, settings(64))
        const chat = `two-${engine}`
        yield* apply(a, seed(chat))
        const before = yield* b.pool(query(chat))
        assert.deepStrictEqual(shape(yield* b.pool(query(chat))), shape(before), "served again from b's cache")
        const hitsBefore = (yield* counts).hits
        yield* b.pool(query(chat))
        assert.isAbove((yield* counts).hits, hitsBefore)

        // a writes: a new message with a link, and an activation of the old link.
        yield* apply(a, [
          { type: "message_observed", chat_id: chat, message_id: 4, topic_id: 1, links: [{ url: "https://example.com/b" }] },
          { type: "object_activated", event_id: "act", chat_id: chat, reason: "summarized", source_message_id: 1, kind: "link" }
        ])
        const after = yield* b.pool(query(chat))
        const fresh = yield* storeOn(dbB, settings(0))
        assert.deepStrictEqual(shape(after), shape(yield* fresh.pool(query(chat))), "b answers as the database does")
        assert.notDeepEqual(shape(after), shape(before))
        assert.isTrue(after.entries.some((e) => e.object.source_message_id === "4"), "b sees a's new message")
        assert.isTrue(after.entries.some((e) => e.object.source_message_id === "1" && e.object.active_until !== null))

        // a's retention sweep removes the objects and messages: b sees that too.
        const swept = yield* storeOn(dbA, { ...settings(64), object_retention: 1, message_retention: 1 })
        yield* swept.sweep(T0 + 400 * 24 * 3600 * 1000)
        const empty = yield* b.pool(query(chat))
        assert.deepStrictEqual(shape(empty), shape(yield* fresh.pool(query(chat))))
        assert.deepStrictEqual(empty.entries, [])
      }))

    it.scoped("with nothing committed since, a warm pool runs no statement (SQLite); any commit, by either instance, is read on the next pool", () =>
      Effect.gen(function*() {
        const [dbA, dbB] = yield* twoDatabases(engine)
        let statements = 0
        const counted: Db = withQuery(dbB, (statement) => Effect.suspend(() => (statements++, dbB.query(statement))))
        const a = yield* storeOn(dbA, settings(64))
        const b = yield* storeOn(counted, settings(64))
        const direct = yield* storeOn(dbB, settings(0))
        const chat = `quiet-${engine}`
        yield* apply(a, seed(chat))
        yield* b.pool(query(chat))
        statements = 0
        const warm = yield* b.pool(query(chat))
        // PostgreSQL has no probe: it reads the chat's revision every time (one statement).
        assert.strictEqual(statements, engine === "sqlite" ? 0 : 1)
        // Another instance commits: b reads again, and sees it.
        yield* apply(a, [{ type: "message_observed", chat_id: chat, message_id: 4, topic_id: 1, links: [{ url: "https://example.com/q" }] }])
        statements = 0
        const seen = yield* b.pool(query(chat))
        assert.isAbove(statements, 0)
        assert.deepStrictEqual(seen, yield* direct.pool(query(chat)))
        assert.notDeepEqual(shape(seen), shape(warm))
        // A commit to another chat: b reads the revision again (one statement), the entry stays.
        yield* apply(a, seed(`${chat}-other`))
        statements = 0
        assert.deepStrictEqual(yield* b.pool(query(chat)), seen)
        assert.strictEqual(statements, 1)
        // b's own write is read like anyone's.
        yield* apply(b, [{ type: "message_observed", chat_id: chat, message_id: 5, topic_id: 1, links: [{ url: "https://example.com/r" }] }])
        const own = yield* b.pool(query(chat))
        assert.deepStrictEqual(own, yield* direct.pool(query(chat)))
        assert.isTrue(own.entries.some((e) => e.object.source_message_id === "5"))
      }))

    it.scoped("a pool inside a transaction that is rolled back leaves nothing of it in the cache, whoever commits next", () =>
      Effect.gen(function*() {
        const [dbA, dbB] = yield* twoDatabases(engine)
        const a = yield* storeOn(dbA, settings(64))
        const b = yield* storeOn(dbB, settings(64))
        const direct = yield* storeOn(dbA, settings(0))
        const chat = `rollback-${engine}`
        yield* apply(a, seed(chat))
        yield* a.pool(query(chat))
        // In a's transaction: a write (the chat's revision moves, uncommitted), a pool that sees it, then a failure.
        let inside: CandidatePool | undefined
        const failed = yield* dbA.transaction(Effect.gen(function*() {
          yield* apply(a, [{ type: "message_observed", chat_id: chat, message_id: 6, topic_id: 1, links: [{ url: "https://example.com/gone" }] }])
          inside = yield* a.pool(query(chat))
          return yield* Effect.fail("roll back" as const)
        })).pipe(Effect.flip)
        assert.strictEqual(failed, "roll back")
        assert.isTrue(inside!.entries.some((e) => e.object.source_message_id === "6"), "the transaction saw its own write")
        // b commits the revision the rolled-back write had taken.
        yield* apply(b, [{ type: "message_observed", chat_id: chat, message_id: 7, topic_id: 1, links: [{ url: "https://example.com/kept" }] }])
        const after = yield* a.pool(query(chat))
        assert.deepStrictEqual(after, yield* direct.pool(query(chat)))
        assert.isFalse(after.entries.some((e) => e.object.source_message_id === "6"), "nothing of the rolled-back write")
        assert.isTrue(after.entries.some((e) => e.object.source_message_id === "7"))
      }))

    it.scoped("this store's own write keeps the scopes it cannot have changed: another topic's scope is still a hit", () =>
      Effect.gen(function*() {
        const [db] = yield* twoDatabases(engine)
        const cached = yield* storeOn(db, settings(64))
        const direct = yield* storeOn(db, settings(0))
        const chat = `keep-${engine}`
        // Topic 2 has an active link (so its pool needs no fallback, which reads the whole chat).
        yield* apply(cached, [
          ...seed(chat),
          { type: "message_observed", chat_id: chat, message_id: 5, topic_id: 2, links: [{ url: "https://example.com/5" }] },
          { type: "object_activated", event_id: "act", chat_id: chat, reason: "summarized", source_message_id: 5, kind: "link" }
        ])
        const elsewhere = query(chat, { topic_id: "2", current_message_id: "9", include_owned: false })
        yield* cached.pool(elsewhere)
        // A plain message in topic 1: topic 2's scope stays.
        yield* apply(cached, [{ type: "message_observed", chat_id: chat, message_id: 10, topic_id: 1 }])
        const before = yield* counts
        assert.deepStrictEqual(yield* cached.pool(elsewhere), yield* direct.pool(elsewhere))
        const after = yield* counts
        assert.strictEqual(after.misses, before.misses, "no read: topic 2's scope was kept")
        assert.isAbove(after.hits, before.hits)
        // A link in topic 2 (by anyone): its scope is read again, and has the link.
        yield* apply(cached, [{ type: "message_observed", chat_id: chat, message_id: 11, topic_id: 2, links: [{ url: "https://example.com/11" }] }])
        const read = yield* counts
        const answer = yield* cached.pool(elsewhere)
        assert.isAbove((yield* counts).misses, read.misses)
        assert.deepStrictEqual(answer, yield* direct.pool(elsewhere))
        assert.isTrue(answer.entries.some((e) => e.object.source_message_id === "11"))
        // A reply chain walked from memory, from topic 2 into topic 1: its message's objects, once
        // written again (in topic 1), are read again.
        yield* apply(cached, [{ type: "message_observed", chat_id: chat, message_id: 6, topic_id: 2, reply_to_message_id: 1 }])
        const reply = query(chat, { topic_id: "2", current_message_id: "40", reply_to_message_id: "6", include_owned: false })
        yield* cached.pool(reply)
        yield* cached.pool(reply)
        yield* apply(cached, [{ type: "object_activated", event_id: "act-1", chat_id: chat, reason: "summarized", source_message_id: 1, kind: "link" }])
        const walked = yield* cached.pool(reply)
        assert.deepStrictEqual(walked, yield* direct.pool(reply))
        assert.isTrue(walked.entries.some((e) => e.object.object_id === `${chat}/1/link` && e.object.active_until !== null))
        // The sender's own objects are a window over every topic: a scope that takes them changes
        // when the sender's newer objects elsewhere push an old one of its topic out of that window.
        const small = { chain_depth: 1, recent_objects: 1, recent_per_kind: 1, recent_messages: 1, owned: 1, fallback_active: 1 }
        const link = (id: number, topic: number, sender: number) =>
          ({ type: "message_observed", chat_id: chat, message_id: id, topic_id: topic, sender_user_id: sender, links: [{ url: `https://example.com/${id}` }] })
        yield* apply(cached, [link(20, 2, 7), link(21, 2, 8), link(22, 2, 8), ...[23, 24, 25, 26, 27, 28, 29].map((id) => link(id, 1, 7))])
        const owned = query(chat, { topic_id: "2", current_message_id: "31", include_owned: true, sender_user_id: "7", prefer_kinds: [], limits: small })
        const ownedLink = (p: { readonly entries: ReadonlyArray<{ readonly object: { readonly object_id: string } }> }) =>
          p.entries.some((e) => e.object.object_id === `${chat}/20/link`)
        assert.isTrue(ownedLink(yield* cached.pool(owned)), "link 20 is found as the sender's own (only)")
        yield* apply(cached, [link(30, 1, 7)])
        const pushedOut = yield* cached.pool(owned)
        assert.deepStrictEqual(pushedOut, yield* direct.pool(owned))
        assert.isFalse(ownedLink(pushedOut), "the sender's link 30 in topic 1 pushed link 20 out of the window")
      }))

    it.scoped("writes into some topics and pools over all of them, interleaved at random: every answer is the database's", () =>
      Effect.gen(function*() {
        const [dbA, dbB] = yield* twoDatabases(engine)
        const cached = yield* storeOn(dbA, settings(64))
        const other = yield* storeOn(dbB, settings(64))
        const direct = yield* storeOn(dbA, settings(0))
        const chat = `mixed-${engine}`
        let seed = 7
        const rand = (n: number) => {
          seed = (seed * 1103515245 + 12345) & 0x7fffffff
          return (seed >>> 16) % n // the high bits: an LCG's low bits repeat with a short period
        }
        const topics = [1, 2, 3, 4, 5, 6]
        let next = 1
        let event = 0
        const hitsBefore = (yield* counts).hits
        for (let step = 0; step < 240; step++) {
          const now = T0 + step * 1000
          if (rand(10) < 6) {
            const id = next++
            const events: Array<unknown> = [{
              type: "message_observed",
              chat_id: chat,
              message_id: id,
              topic_id: topics[rand(topics.length)],
              sender_user_id: 7 + rand(3),
              ...(id > 1 && rand(2) === 0 ? { reply_to_message_id: 1 + rand(id - 1) } : {}),
              ...(rand(3) === 0 ? { links: [{ url: `https://example.com/${id}` }] } : {}),
              ...(rand(8) === 0 ? { media: [{ kind: "media.image", file_id: `f${id}` }] } : {})
            }]
            if (id > 1 && rand(4) === 0) {
              events.push({ type: "object_activated", event_id: `e${event++}`, chat_id: chat, reason: "summarized", source_message_id: 1 + rand(id - 1), kind: "link" })
            }
            // Now and then another instance writes (this store then reads the chat afresh).
            yield* apply(rand(8) === 0 ? other : cached, events, now)
          } else {
            const topic = rand(topics.length + 2)
            const q = query(chat, {
              topic_id: topic < topics.length ? String(topics[topic]) : topic === topics.length ? "9" : null,
              current_message_id: String(next),
              reply_to_message_id: next > 1 && rand(2) === 0 ? String(1 + rand(next - 1)) : null,
              // Few shapes, so that scopes are asked again across writes (and kept or dropped by them).
              sender_user_id: "7",
              include_owned: true,
              active_only: rand(4) === 0,
              kinds: rand(4) === 0 ? ["link" as const] : undefined,
              prefer_kinds: ["link"],
              // Small windows (8 rows), so that writes shift them often.
              limits: { chain_depth: 1 + rand(4), recent_objects: 1, recent_per_kind: 1, recent_messages: 1, owned: 1, fallback_active: 2 },
              now
            })
            assert.deepStrictEqual(yield* cached.pool(q), yield* direct.pool(q), `step ${step}: ${JSON.stringify(q)}`)
          }
        }
        assert.isAbove((yield* counts).hits, hitsBefore)
      }))

    it.scoped("served from cache at a later time, the pool equals the database's: an object whose activity ended gives way", () =>
      Effect.gen(function*() {
        const [db] = yield* twoDatabases(engine)
        const cached = yield* storeOn(db, settings(64))
        const direct = yield* storeOn(db, settings(0))
        const chat = `time-${engine}`
        yield* apply(cached, [
          ...seed(chat),
          { type: "object_activated", event_id: "act", chat_id: chat, reason: "summarized", source_message_id: 1, kind: "link" }
        ])
        const active = (yield* cached.pool(query(chat, { active_only: true }))).entries
        assert.strictEqual(active.length, 1)
        const until = active[0]!.object.active_until!
        // Every shape asked at every time gives the database's answer, the cache warm or cold.
        for (const now of [T0, T0 + 1, until - 1, until, until + 1, T0]) {
          for (const over of [{}, { active_only: true }, { current_message_id: "2" }, { reply_to_message_id: "2" }, { topic_id: "2" }, { kinds: ["message" as const] }]) {
            const q = query(chat, { ...over, now })
            assert.deepStrictEqual(yield* cached.pool(q), yield* direct.pool(q), `${JSON.stringify(over)} at ${now - T0}`)
          }
        }
        assert.deepStrictEqual((yield* cached.pool(query(chat, { active_only: true, now: until + 1 }))).entries, [])
        // A scope first read after the activity ended is not served to an earlier time: the object
        // active then is not in its rows.
        const late = yield* storeOn(db, settings(64))
        for (const now of [until + 1, T0]) {
          for (const over of [{ active_only: true }, {}]) {
            const q = query(chat, { ...over, now })
            assert.deepStrictEqual(yield* late.pool(q), yield* direct.pool(q), `${JSON.stringify(over)} first read at ${now - T0}`)
          }
        }
      }))

    it.scoped("reply chains walked from memory are the database's chains, across topics, depths and absent messages", () =>
      Effect.gen(function*() {
        const [db] = yield* twoDatabases(engine)
        const cached = yield* storeOn(db, settings(64))
        const direct = yield* storeOn(db, settings(0))
        const chat = `chains-${engine}`
        yield* apply(cached, chainChat(chat))
        const asked = (reply: string, over: Partial<PoolQuery> = {}) =>
          query(chat, { current_message_id: "200", reply_to_message_id: reply, ...over })
        const same = (q: PoolQuery) =>
          Effect.gen(function*() {
            assert.deepStrictEqual(yield* cached.pool(q), yield* direct.pool(q), JSON.stringify(q))
          })
        // The first chain read brings topic 1's recent window.
        yield* same(asked("60"))
        // Topic 1's window is 17..80: every chain from 20..76 stays within it (77 and 78 lead to 999).
        const inWindow = Array.from({ length: 57 }, (_, i) => String(20 + i))
        const shapes: ReadonlyArray<Partial<PoolQuery>> = [
          {},
          { limits: { chain_depth: 1, recent_objects: 8, recent_per_kind: 4, recent_messages: 4, owned: 4, fallback_active: 16 } },
          { limits: { chain_depth: 3, recent_objects: 8, recent_per_kind: 4, recent_messages: 4, owned: 4, fallback_active: 16 } },
          { active_only: true },
          { kinds: ["message"] },
          { current_message_id: "41" }
        ]
        for (const over of shapes) yield* same(asked("60", over))
        // PostgreSQL reads topic 1's window in the background (its own fiber and connection): until
        // it is kept, a chain within it is read, a miss. Asked again, in real time, until one is
        // walked from memory (SQLite read the window with the first chain: at once).
        for (let tries = 0;; tries++) {
          const before = yield* counts
          yield* same(asked("20"))
          if ((yield* counts).misses === before.misses) break
          assert.isBelow(tries, 1000, "topic 1's window is kept")
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
        }
        const start = yield* counts
        for (const reply of inWindow) for (const over of shapes) yield* same(asked(reply, over))
        const walked = yield* counts
        assert.strictEqual(walked.misses, start.misses, "every chain within the window walked from memory")
        assert.isAbove(walked.hits, start.hits)
        // Beyond the window, into another topic, to a message the chat does not have: read, then kept.
        const beyond = ["80", "79", "78", "77", "999", "5", "101", "104", "105"]
        for (const reply of beyond) for (const over of shapes) yield* same(asked(reply, over))
        const again = yield* counts
        for (const reply of beyond) for (const over of shapes) yield* same(asked(reply, over))
        assert.strictEqual((yield* counts).misses, again.misses, "chains read once are walked from memory after")
      }))

    it.scoped("a first reply into a topic whose scope is kept is one read (PostgreSQL: the topic's window follows in the background), the replies after it walked from memory", () =>
      Effect.gen(function*() {
        const [db] = yield* twoDatabases(engine)
        const cached = yield* storeOn(db, settings(64))
        const direct = yield* storeOn(db, settings(0))
        const chat = `prefetch-${engine}`
        yield* apply(cached, chainChat(chat))
        const asked = (reply: string | null) => query(chat, { current_message_id: "200", reply_to_message_id: reply })
        yield* cached.pool(asked(null))
        const start = yield* counts
        assert.deepStrictEqual(yield* cached.pool(asked("60")), yield* direct.pool(asked("60")))
        assert.strictEqual((yield* counts).misses - start.misses, 1, "one read")
        // Replies to messages never asked about: once the window is in, they are walked from memory.
        let walked = false
        for (let target = 58; target >= 20 && !walked; target--) {
          // A real pause (the test clock does not move): the window's read is the database's work.
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
          const before = yield* counts
          assert.deepStrictEqual(yield* cached.pool(asked(String(target))), yield* direct.pool(asked(String(target))))
          walked = (yield* counts).misses === before.misses
        }
        assert.isTrue(walked, "the window read in the background serves later replies")
      }))

    it.scoped("a chain walked from memory follows writes: this store's own and another instance's", () =>
      Effect.gen(function*() {
        const [dbA, dbB] = yield* twoDatabases(engine)
        const a = yield* storeOn(dbA, settings(64))
        const b = yield* storeOn(dbB, settings(64))
        const direct = yield* storeOn(dbB, settings(0))
        const chat = `chain-writes-${engine}`
        yield* apply(a, chainChat(chat))
        const asked = query(chat, { current_message_id: "200", reply_to_message_id: "58" })
        for (const store of [a, b]) {
          yield* store.pool(asked)
          assert.deepStrictEqual(yield* store.pool(asked), yield* direct.pool(asked))
        }
        // Another instance activates an object of the chain and replies into it with a link.
        yield* apply(a, [
          { type: "object_activated", event_id: "act-56", chat_id: chat, reason: "summarized", source_message_id: 56, kind: "link" },
          { type: "message_observed", chat_id: chat, message_id: 150, topic_id: 1, reply_to_message_id: 58, links: [{ url: "https://example.com/150" }] }
        ])
        const later = query(chat, { current_message_id: "200", reply_to_message_id: "150" })
        for (const q of [asked, later]) assert.deepStrictEqual(yield* b.pool(q), yield* direct.pool(q), "b sees a's write")
        assert.isTrue((yield* b.pool(asked)).entries.some((e) => e.object.source_message_id === "56" && e.object.active_until !== null))
        // This store's own write: its chains follow it too.
        yield* apply(b, [
          { type: "message_observed", chat_id: chat, message_id: 58, topic_id: 1, reply_to_message_id: 57, links: [{ url: "https://example.com/58" }] },
          { type: "object_activated", event_id: "act-150", chat_id: chat, reason: "summarized", source_message_id: 150, kind: "link" }
        ])
        for (const q of [asked, later]) {
          assert.deepStrictEqual(yield* b.pool(q), yield* direct.pool(q), "b follows its own write")
          assert.deepStrictEqual(yield* a.pool(q), yield* direct.pool(q), "a follows b's write")
        }
      }))

    it.scoped("requests that differ only in their hinted kinds share one scope; each kind's part is read once", () =>
      Effect.gen(function*() {
        const [db] = yield* twoDatabases(engine)
        const cached = yield* storeOn(db, settings(64))
        const direct = yield* storeOn(db, settings(0))
        const chat = `kinds-${engine}`
        yield* apply(cached, chainChat(chat))
        const hinted = (prefer_kinds: ReadonlyArray<ObjectKind>, over: Partial<PoolQuery> = {}) =>
          query(chat, { current_message_id: "200", prefer_kinds, ...over })
        const same = (q: PoolQuery) =>
          Effect.gen(function*() {
            assert.deepStrictEqual(yield* cached.pool(q), yield* direct.pool(q), JSON.stringify(q))
          })
        yield* same(hinted(["link"]))
        const start = yield* counts
        yield* same(hinted(["media.image"]))
        const one = yield* counts
        assert.strictEqual(one.misses - start.misses, 1, "only the image part is read")
        for (const prefer of [[], ["link"], ["media.image"], ["media.image", "link"], ["link", "media.image"]] as const) {
          yield* same(hinted(prefer))
          yield* same(hinted(prefer, { kinds: ["link", "message"] }))
          yield* same(hinted(prefer, { topic_id: "2" }))
        }
        // After a write, the scope's next read brings the kinds asked of the chat before.
        yield* apply(cached, [{ type: "message_observed", chat_id: chat, message_id: 151, topic_id: 1, media: [{ kind: "media.image", file_id: "f151" }] }])
        yield* same(hinted([]))
        const reread = yield* counts
        yield* same(hinted(["media.image"]))
        yield* same(hinted(["link"]))
        assert.strictEqual((yield* counts).misses, reread.misses, "the kinds came with the scope")
      }))

    it.scoped("bounded by its budget: least recently used chats leave, counted as evictions, answers unchanged", () =>
      Effect.gen(function*() {
        const [db] = yield* twoDatabases(engine)
        // About 20 KB: a few chats' scopes.
        const small = yield* storeOn(db, settings(0.02))
        const direct = yield* storeOn(db, settings(0))
        const chats = Array.from({ length: 12 }, (_, i) => `lru-${engine}-${i}`)
        for (const chat of chats) yield* apply(small, seed(chat))
        const start = yield* counts
        for (let round = 0; round < 2; round++) {
          for (const chat of chats) assert.deepStrictEqual(yield* small.pool(query(chat)), yield* direct.pool(query(chat)))
        }
        const end = yield* counts
        assert.isAbove(end.evictions, start.evictions)
        assert.isAbove(end.misses - start.misses, chats.length, "evicted chats are read again")
      }))

    it.scoped("a cache of 0 MiB keeps nothing: every pool reads the database", () =>
      Effect.gen(function*() {
        const [db] = yield* twoDatabases(engine)
        const off = yield* storeOn(db, settings(0))
        const chat = `off-${engine}`
        yield* apply(off, seed(chat))
        const start = yield* counts
        yield* off.pool(query(chat))
        yield* off.pool(query(chat))
        assert.deepStrictEqual(yield* counts, start)
      }))
  })
}

describe("the SQLite commit probe (the -shm wal-index header)", () => {
  it.scoped("the same token while nothing is committed (reads included), another after any connection's commit; none for a database in memory", () =>
    Effect.gen(function*() {
      const [a, b] = yield* twoDatabases("sqlite")
      const probe = yield* sqliteChanges(a.sql)
      assert.isDefined(probe)
      yield* a.query(sql`SELECT count(*) FROM deixis_chats`)
      const first = probe!.token()
      assert.isDefined(first)
      yield* b.query(sql`SELECT count(*) FROM deixis_messages`)
      assert.strictEqual(probe!.token(), first, "a read commits nothing")
      yield* b.query(sql`INSERT INTO deixis_chats (chat_id, next_seq, created_at) VALUES ('probe', 1, 0)`)
      const second = probe!.token()
      assert.notStrictEqual(second, first, "the other connection's commit")
      yield* a.query(sql`UPDATE deixis_chats SET revision = revision + 1 WHERE chat_id = 'probe'`)
      assert.notStrictEqual(probe!.token(), second, "this connection's own commit")
      const memory = yield* Layer.build(Sqlite.layerClient({ filename: ":memory:" }))
      assert.isUndefined(yield* sqliteChanges(Context.get(memory, SqlClient.SqlClient)))
    }))
})

describe("the cache's bookkeeping", () => {
  const rows = [{ part: "r", body: "x".repeat(1000) }]
  const home = (topic: string, owner: string | null = null) => ({ now: T0, rows, topic, fallback: false, activeOnly: false, owner })
  it("rows read after seeing an older revision are not kept once another reader moved the chat on", () => {
    const cache = makeContextCache(1024 * 1024)
    const early = cache.entry("c", 1)!
    const late = cache.entry("c", 2)!
    assert.strictEqual(cache.putScope(early, 1, "k", home("")), 0)
    assert.isUndefined(late.scopes.get("k"))
    cache.putScope(late, 2, "k", home(""))
    assert.strictEqual(cache.entry("c", 2)!.scopes.get("k")?.rows, rows)
    // This process's own write moves the entry on: the scopes of the topic it wrote emptied, written messages kept.
    const m = { chat_id: "c", message_id: "9", topic_id: null, reply_to_message_id: null, sender_user_id: null, from_bot: false, sent_at: T0 }
    cache.wrote("c", 2, { ...untouched(), messages: [m], topics: new Set([""]) })
    const moved = cache.entry("c", 3)!
    assert.strictEqual(moved.scopes.size, 0)
    assert.deepStrictEqual(moved.messages.get("9"), m)
    // A write by this process over an entry at another revision starts it over.
    cache.wrote("c", 7, untouched())
    assert.strictEqual(cache.entry("c", 8)!.messages.size, 0)
  })

  it("a write of this process keeps what it cannot have changed: other topics' scopes, other messages' objects", () => {
    const cache = makeContextCache(1024 * 1024)
    const e = cache.entry("c", 1)!
    cache.putScope(e, 1, "written", home("5"))
    cache.putScope(e, 1, "other", home("6"))
    cache.putScope(e, 1, "owned", home("6", "u"))
    cache.putScope(e, 1, "owned by another", home("6", "v"))
    cache.putScope(e, 1, "fallback", { ...home("6"), fallback: true })
    cache.putScope(e, 1, "active fallback", { ...home("6"), fallback: true, activeOnly: true })
    cache.putScope(e, 1, "active fallback of the written topic", { ...home("5"), fallback: true, activeOnly: true })
    cache.putChain(e, 1, [], [["m1", rows], ["m2", rows]], "5")
    cache.putChain(e, 1, [], [], "6")
    // Messages written into topic 5 only: every scope of other topics stays, but a fallback over the whole chat.
    cache.wrote("c", 1, { ...untouched(), topics: new Set(["5"]) })
    assert.sameMembers([...cache.entry("c", 2)!.scopes.keys()], ["other", "owned", "owned by another", "active fallback", "active fallback of the written topic"])
    // An object written in topic 5 by u.
    cache.wrote("c", 2, { ...untouched(), topics: new Set(["5"]), activeTopics: new Set(["5"]), creators: new Set(["u"]), sources: new Set(["m1"]) })
    const after = cache.entry("c", 3)!
    assert.sameMembers([...after.scopes.keys()], ["other", "owned by another", "active fallback of the written topic"])
    assert.sameMembers([...after.sourced.keys()], ["m2"])
    assert.sameMembers([...after.windows], ["6"])
    // A chat-wide change (whether it is a forum) keeps nothing of it.
    cache.wrote("c", 3, { ...untouched(), everything: true })
    const reset = cache.entry("c", 4)!
    assert.deepStrictEqual([reset.scopes.size, reset.sourced.size, reset.windows.size], [0, 0, 0])
  })

  it("least recently used chats leave first when the budget is exceeded", () => {
    const cache = makeContextCache(6000)
    for (const chat of ["a", "b"]) cache.putScope(cache.entry(chat, 0)!, 0, "k", home(""))
    cache.entry("a", 0) // a is used again; b is now the least recent
    assert.strictEqual(cache.putScope(cache.entry("c", 0)!, 0, "k", home("")), 1)
    assert.strictEqual(cache.entry("a", 0)!.scopes.size, 1)
    assert.strictEqual(cache.entry("b", 0)!.scopes.size, 0)
    assert.isAtMost(cache.size().bytes, 6000)
    assert.strictEqual(cache.takeEvictions(), 1)
  })

  it("many chats asked once each stay within the budget: an empty entry counts too", () => {
    const cache = makeContextCache(64 * 1024)
    for (let i = 0; i < 10_000; i++) cache.entry(`chat-${i}`, 0)
    assert.isAtMost(cache.size().bytes, 64 * 1024)
    assert.isBelow(cache.size().chats, 10_000)
    assert.strictEqual(cache.takeEvictions(), 10_000 - cache.size().chats)
  })
})

describe("DEIXIS_STORE_CACHE_MB", () => {
  const env = (map: Map<string, string>) => ConfigProvider.fromMap(map, { pathDelim: "_" })
  it.effect("defaults to 64 MiB; a negative budget is refused, naming the key", () =>
    Effect.gen(function*() {
      assert.strictEqual(SqlStore.retentionDefaults.cache_mb, 64)
      const set = yield* Effect.withConfigProvider(SqlStore.retentionConfig, env(new Map([["DEIXIS_STORE_CACHE_MB", "8"]])))
      assert.strictEqual(set.cache_mb, 8)
      const refused = yield* Effect.flip(Effect.withConfigProvider(SqlStore.retentionConfig, env(new Map([["DEIXIS_STORE_CACHE_MB", "-1"]]))))
      assert.include(String(refused), "STORE_CACHE_MB")
    }))
})

// A database written at version 7 (no revision column, no edit times) upgrades to the latest and keeps reading it.
const upgradeFrom7 = Effect.gen(function*() {
  const db = makeDb(yield* SqlClient.SqlClient)
  assert.deepStrictEqual(yield* migrate(db, undefined, 7), [1, 2, 3, 4, 5, 6, 7])
  const chat = "upgrade7"
  const reference = makeMemory()
  yield* reference.apply(decode(seed(chat)), { now: T0, ttl: TtlPolicy.defaultPolicy })
  const written = yield* reference.snapshot(chat)
  yield* db.query(sql`INSERT INTO deixis_chats (chat_id, next_seq, created_at, is_forum) VALUES (${chat}, ${written.objects.length + 1}, ${T0}, 0)`)
  yield* writeSnapshotRows(db, chat, written)
  assert.deepStrictEqual(yield* migrate(db, undefined), migrations.map((m) => m.version).filter((v) => v > 7))
  assert.deepStrictEqual(migrations.map((m) => m.version).slice(0, 10), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  const revision = () => Effect.map(db.query(sql`SELECT revision FROM deixis_chats WHERE chat_id = ${chat}`), (rows) => Number(rows[0]!["revision"]))
  assert.strictEqual(yield* revision(), 0)
  const store = makeSqlContextStore(db, settings(64))
  const before = yield* store.pool(query(chat))
  assert.deepStrictEqual(before, yield* reference.pool(query(chat)))
  yield* apply(store, [{ type: "message_observed", chat_id: chat, message_id: 5, topic_id: 1, links: [{ url: "https://example.com/c" }] }])
  assert.strictEqual(yield* revision(), 1)
  yield* reference.apply(
    decode([{ type: "message_observed", chat_id: chat, message_id: 5, topic_id: 1, links: [{ url: "https://example.com/c" }] }]),
    { now: T0, ttl: TtlPolicy.defaultPolicy }
  )
  assert.deepStrictEqual(yield* store.pool(query(chat)), yield* reference.pool(query(chat)))
  // Migration 10: a message stored before it has no edit time; its edits then apply in time order.
  const edit = (at: string, url: string) => ({
    type: "message_edited" as const, chat_id: chat, message_id: 5, topic_id: 1, edited_at: at, links: [{ url }]
  })
  yield* apply(store, [edit("2026-11-22T10:20:00Z", "https://example.com/newer"), edit("2026-11-22T10:10:00Z", "https://example.com/older")])
  const editedAt = yield* db.query(sql`SELECT edited_at FROM deixis_messages WHERE chat_id = ${chat} AND message_id = ${"5"}`)
  assert.strictEqual(Number(editedAt[0]!["edited_at"]), Date.parse("2026-11-22T10:20:00Z"))
  const refs = (yield* store.snapshot(chat)).objects.filter((o) => o.source_message_id === "5").map((o) => o.ref)
  assert.deepStrictEqual(refs, ["https://example.com/newer"])
})

describe("migrations 8 (chat revisions) and 9 (edit times)", () => {
  it.scoped("SQLite: a database at version 7 with data upgrades to 8, reads it back, and its first write bumps the revision", () =>
    Effect.flatMap(tempDir, (dir) => upgradeFrom7.pipe(Effect.provide(Sqlite.layerClient({ filename: path.join(dir, "u7.db") })))))

  it.scoped("PostgreSQL: a database at version 7 with data upgrades to 8, reads it back, and its first write bumps the revision", () =>
    Effect.gen(function*() {
      const schema = freshSchema()
      const admin = Pg.layerClient({ url: pgUrl, max_connections: 1 })
      yield* Effect.addFinalizer(() =>
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(Effect.provide(admin), Effect.orDie)
      )
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`CREATE SCHEMA "${schema}"`)).pipe(Effect.provide(admin))
      yield* upgradeFrom7.pipe(Effect.provide(Pg.layerClient({ url: pgUrl, schema, max_connections: 1 })))
    }))
})

describe("PostgreSQL: a pool the cache cannot serve in one round trip", () => {
  it.scoped("the chat's revision is read with the request's own scope; the pool is kept at it and served again with the revision alone", () =>
    Effect.gen(function*() {
      const [db] = yield* twoDatabases("pg")
      const writer = yield* storeOn(db, settings(0))
      // An active object in the request's topic: the rest of the chat is not asked for.
      const active = (chat: string) => [...seed(chat), { type: "object_activated", event_id: "act", chat_id: chat, reason: "summarized", source_message_id: 1, kind: "link" }]
      yield* apply(writer, active("one"))
      yield* apply(writer, active("forum"))
      yield* db.query(sql`UPDATE deixis_chats SET is_forum = 1 WHERE chat_id = ${"forum"}`)
      const statements: Array<string> = []
      const counted = withQuery(db, (statement) => Effect.suspend(() => (statements.push(compile(db.dialect, statement).text), db.query(statement))))
      const store = yield* storeOn(counted, settings(64))
      const plain = makeSqlContextStore(db, settings(0))

      const missed = yield* store.pool(query("one"))
      assert.strictEqual(statements.length, 1, statements.join("\n---\n"))
      assert.include(statements[0]!, "deixis_chats")
      assert.include(statements[0]!, "deixis_pool(")
      assert.isFalse(missed.fallback)
      assert.deepStrictEqual(shape(missed), shape(yield* plain.pool(query("one"))))
      // A hit: the revision alone, nothing of the scope read again.
      statements.length = 0
      assert.deepStrictEqual(shape(yield* store.pool(query("one"))), shape(missed))
      assert.isAtMost(statements.length, 1)
      assert.notInclude(statements.join(), "deixis_pool(")

      // Without a topic in a forum: the General topic, settled in the same statement.
      statements.length = 0
      const general = yield* store.pool(query("forum", { topic_id: null }))
      assert.strictEqual(statements.length, 1, statements.join("\n---\n"))
      assert.strictEqual(general.topic_id, "1")
      assert.isFalse(general.fallback)
      assert.deepStrictEqual(shape(general), shape(yield* plain.pool(query("forum", { topic_id: "1" }))))
      // A chat never seen: an empty pool; its revision read with its scope, then the rest of the chat.
      statements.length = 0
      assert.deepStrictEqual((yield* store.pool(query("never"))).entries, [])
      assert.strictEqual(statements.length, 2)
      assert.include(statements[0]!, "deixis_chats")
      assert.notInclude(statements[1]!, "deixis_chats")
    }))
})

describe("PostgreSQL: a write batch in one round trip", () => {
  it.scoped("a new message in a known chat is one read and one write call, a redelivered batch one read; nothing runs in a transaction", () =>
    Effect.gen(function*() {
      const [db] = yield* twoDatabases("pg")
      const statements: Array<string> = []
      const counted = withQuery({
        ...db,
        // The write call is the engine's (one statement, `deixis_apply`): counted as one.
        call: (name, argument) => Effect.suspend(() => (statements.push(`SELECT deixis_${name}(…)`), db.call!(name, argument)))
      }, (statement) => Effect.suspend(() => (statements.push(compile(db.dialect, statement).text), db.query(statement))))
      const store = yield* storeOn(counted, settings(0))
      yield* apply(store, seed("rt"))
      statements.length = 0
      const message = [{ type: "message_observed", chat_id: "rt", message_id: 4, topic_id: 1, reply_to_message_id: 1, links: [{ url: "https://example.com/rt" }] }]
      const first = yield* apply(store, message)
      assert.strictEqual(first.applied, 1)
      assert.strictEqual(statements.length, 2, statements.join("\n---\n"))
      assert.include(statements[1]!, "deixis_apply(")
      statements.length = 0
      const again = yield* apply(store, message)
      assert.strictEqual(again.duplicates, 1)
      assert.strictEqual(statements.length, 1)
      const snapshot = yield* store.snapshot("rt")
      assert.deepStrictEqual(snapshot.messages.map((m) => m.message_id).sort(), ["1", "2", "3", "4"])
      assert.deepStrictEqual(snapshot.objects.filter((o) => o.source_message_id === "4").map((o) => o.ref), ["https://example.com/rt"])
    }))

  it.scoped("two instances writing into one chat at once lose nothing: every message, each object with its own sequence number", () =>
    Effect.gen(function*() {
      const [dbA, dbB] = yield* twoDatabases("pg")
      const a = yield* storeOn(dbA, settings(64))
      const b = yield* storeOn(dbB, settings(64))
      const batches = Array.from({ length: 40 }, (_, i) => [
        { type: "message_observed", chat_id: "race", message_id: i + 1, topic_id: 1, links: [{ url: `https://example.com/race/${i + 1}` }] }
      ])
      const results = yield* Effect.forEach(batches, (batch, i) => apply(i % 2 === 0 ? a : b, batch), { concurrency: 8 })
      assert.deepStrictEqual(results.map((r) => r.applied), batches.map(() => 1))
      const snapshot = yield* b.snapshot("race")
      assert.strictEqual(snapshot.messages.length, 40)
      assert.strictEqual(snapshot.objects.length, 40)
      const seqs = yield* dbA.query(sql`SELECT seq FROM deixis_objects WHERE chat_id = ${"race"}`)
      assert.strictEqual(new Set(seqs.map((r) => Number(r["seq"]))).size, 40)
      const chat = yield* dbA.query(sql`SELECT next_seq, revision FROM deixis_chats WHERE chat_id = ${"race"}`)
      assert.strictEqual(Number(chat[0]!["next_seq"]), 41)
      // One revision per write; batches that arrived together at one instance were one write.
      assert.isAtLeast(Number(chat[0]!["revision"]), 2)
      assert.isAtMost(Number(chat[0]!["revision"]), 40)
      // Both instances' caches answer as the database does.
      assert.deepStrictEqual(shape(yield* a.pool(query("race"))), shape(yield* makeSqlContextStore(dbA, settings(0)).pool(query("race"))))
    }))

  it.scoped("batches that arrive at one instance while its write to their chat is under way are written together, each answered as if applied alone", () =>
    Effect.gen(function*() {
      const [db] = yield* twoDatabases("pg")
      let writes = 0
      const counted = withQuery(db, (statement) =>
        Effect.suspend(() => {
          if (compile(db.dialect, statement).text.includes("deixis_apply(")) writes++
          return db.query(statement)
        }))
      const store = yield* storeOn(counted, settings(64))
      const batch = (i: number) => [{ type: "message_observed", chat_id: "together", message_id: i, topic_id: 1, links: [{ url: `https://example.com/t/${i}` }] }]
      // The same message twice in the burst: the second is a duplicate, as it would be one after the other.
      const results = yield* Effect.forEach([...Array.from({ length: 20 }, (_, i) => batch(i + 1)), batch(1)], (b) => apply(store, b), { concurrency: "unbounded" })
      assert.deepStrictEqual(results.map((r) => [r.applied, r.duplicates]), [...Array.from({ length: 20 }, () => [1, 0]), [0, 1]])
      assert.isBelow(writes, 20)
      const snapshot = yield* store.snapshot("together")
      assert.strictEqual(snapshot.messages.length, 20)
      assert.strictEqual(snapshot.objects.length, 20)
      assert.deepStrictEqual(shape(yield* store.pool(query("together"))), shape(yield* makeSqlContextStore(db, settings(0)).pool(query("together"))))
    }))
})
