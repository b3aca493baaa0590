/**
 * Core's `UnitOfWork` over the SQL stores: everything run through it is one transaction —
 * committed together, or rolled back together when any part fails — each written chat's
 * revision moves once per unit however many writes it holds, and the store's cache answers as
 * the database does after a committed and after a rolled-back unit.
 */
import { assert, describe, it } from "@effect/vitest"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { ContextEventBatch } from "@deixis/core/ContextEvent"
import { ContextStore } from "@deixis/core/ContextStore"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import { UnitOfWork } from "@deixis/core/UnitOfWork"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { makeSqlContextStore } from "../src/internal/contextStore.js"
import { makeDb } from "../src/internal/db.js"
import * as Pg from "../src/Pg.js"
import * as SqlStore from "../src/SqlStore.js"
import * as WritePriority from "../src/WritePriority.js"
import { item, pgLayerWithClient, pgUrl, poolQuery, sqliteLayerWithClient, T0 } from "./helpers.js"

const decode = Schema.decodeUnknownSync(ContextEventBatch)

const message = (chat: string, id: number, extra: Record<string, unknown> = {}) => ({
  type: "message_observed",
  chat_id: chat,
  message_id: id,
  topic_id: 1,
  sender_user_id: 7,
  links: [{ url: `https://example.com/${chat}/${id}` }],
  ...extra
})

const query = poolQuery

const apply = (events: ReadonlyArray<unknown>) =>
  Effect.flatMap(ContextStore, (store) => store.apply(decode(events), { now: T0, ttl: TtlPolicy.defaultPolicy }))

const revision = (chat: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ revision: unknown }>`SELECT revision FROM deixis_chats WHERE chat_id = ${chat}`, (rows) => Number(rows[0]?.revision ?? -1)))

/** What the database holds for `chat`, read by a store with no cache. */
const databaseView = (chat: string) =>
  Effect.gen(function*() {
    const direct = makeSqlContextStore(makeDb(yield* SqlClient.SqlClient), { ...SqlStore.retentionDefaults, cache_mb: 0 })
    return { snapshot: yield* direct.snapshot(chat), pool: yield* direct.pool(query(chat)) }
  })

const engines: ReadonlyArray<readonly [string, () => Layer.Layer<SqlStore.Stores | SqlClient.SqlClient, SqlStore.SqlStoreError>]> = [
  ["sqlite", () => sqliteLayerWithClient()],
  ["pg", () => pgLayerWithClient()]
]

for (const [engine, layer] of engines) {
  describe(`${engine}: one unit of work`, () => {
    it.effect("writes of several stores and several calls commit together; each chat's revision moves once", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const history = yield* HistoryStore
        const [a, b] = [`uow-a-${engine}`, `uow-b-${engine}`]
        yield* apply([message(a, 1), message(b, 1)])
        const before = { a: yield* revision(a), b: yield* revision(b) }
        yield* unit.run(Effect.gen(function*() {
          yield* apply([message(a, 2)])
          yield* history.appendAll([item(a, 2)])
          yield* apply([message(a, 3, { reply_to_message_id: 2 }), message(b, 2)])
          yield* history.recordResponse({ chat_id: a, topic_id: "1" }, "2", "3")
        }))
        assert.deepStrictEqual({ a: yield* revision(a), b: yield* revision(b) }, { a: before.a + 1, b: before.b + 1 })
        const view = yield* databaseView(a)
        assert.deepStrictEqual(view.snapshot.messages.map((m) => m.message_id), ["1", "2", "3"])
        assert.strictEqual(Option.getOrNull(yield* history.lookup({ chat_id: a, topic_id: "1" }, "2"))?.item.bot_response_id, "3")
        // Outside a unit every call is its own transaction, each moving the revision.
        yield* apply([message(a, 4)])
        yield* apply([message(a, 5)])
        assert.strictEqual(yield* revision(a), before.a + 3)
      }).pipe(Effect.provide(layer())))

    it.effect("a unit that fails keeps nothing of what it wrote, and the cache answers as the database does", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const store = yield* ContextStore
        const history = yield* HistoryStore
        const chat = `uow-fail-${engine}`
        yield* apply([message(chat, 1)])
        const warm = yield* store.pool(query(chat))
        const before = yield* revision(chat)
        const exit = yield* Effect.exit(unit.run(Effect.gen(function*() {
          yield* apply([message(chat, 2), message(chat, 3)])
          yield* history.appendAll([item(chat, 2)])
          return yield* Effect.fail("later failure" as const)
        })))
        assert.deepStrictEqual(exit, Exit.fail("later failure" as const))
        assert.strictEqual(yield* revision(chat), before)
        assert.isTrue(Option.isNone(yield* history.lookup({ chat_id: chat, topic_id: "1" }, "2")))
        const view = yield* databaseView(chat)
        assert.deepStrictEqual(view.snapshot.messages.map((m) => m.message_id), ["1"])
        assert.deepStrictEqual(yield* store.pool(query(chat)), warm)
        assert.deepStrictEqual(yield* store.pool(query(chat)), view.pool)
        assert.isTrue(Option.isNone(yield* store.message(chat, "2")))
      }).pipe(Effect.provide(layer())))

    it.effect("after a committed unit the cached store answers as the database does", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const store = yield* ContextStore
        const chat = `uow-cache-${engine}`
        yield* apply([message(chat, 1)])
        yield* store.pool(query(chat))
        yield* unit.run(Effect.gen(function*() {
          yield* apply([message(chat, 2, { reply_to_message_id: 1 })])
          yield* apply([{ type: "object_activated", event_id: "act", chat_id: chat, reason: "summarized", source_message_id: 1, kind: "link" }])
          yield* apply([message(chat, 3)])
        }))
        const view = yield* databaseView(chat)
        assert.deepStrictEqual(yield* store.pool(query(chat)), view.pool)
        assert.deepStrictEqual(yield* store.pool(query(chat)), view.pool, "served again from the cache")
        assert.deepStrictEqual(view.snapshot.messages.map((m) => m.message_id), ["1", "2", "3"])
        assert.isTrue(view.pool.entries.some((e) => e.object.source_message_id === "1" && e.object.active_until !== null))
      }).pipe(Effect.provide(layer())))

    it.effect("units nest: an inner unit joins the outer one and commits with it", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const chat = `uow-nest-${engine}`
        yield* apply([message(chat, 1)])
        const before = yield* revision(chat)
        const exit = yield* Effect.exit(unit.run(Effect.gen(function*() {
          yield* unit.run(apply([message(chat, 2)]))
          yield* unit.run(apply([message(chat, 3)]))
          return yield* Effect.fail("outer fails" as const)
        })))
        assert.isTrue(Exit.isFailure(exit))
        assert.strictEqual(yield* revision(chat), before)
        yield* unit.run(Effect.all([unit.run(apply([message(chat, 2)])), unit.run(apply([message(chat, 3)]))]))
        assert.strictEqual(yield* revision(chat), before + 1)
        assert.deepStrictEqual((yield* databaseView(chat)).snapshot.messages.map((m) => m.message_id), ["1", "2", "3"])
      }).pipe(Effect.provide(layer())))
  })
}

/** What the database holds of `chats`: message ids, history message ids, and the history rows' positions (no two alike). */
const stored = (chats: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const messages = yield* sql<{ chat_id: string; message_id: string }>`SELECT chat_id, message_id FROM deixis_messages WHERE chat_id IN ${sql.in(chats)}`
    const items = yield* sql<{ chat_id: string; message_id: string | null; seq: unknown }>`SELECT chat_id, message_id, seq FROM deixis_history WHERE chat_id IN ${sql.in(chats)}`
    const sorted = (rows: ReadonlyArray<{ chat_id: string; message_id: string | null }>) => rows.map((r) => `${r.chat_id}/${r.message_id}`).sort()
    return { messages: sorted(messages), items: sorted(items) }
  })

const expected = (chats: ReadonlyArray<string>, ids: ReadonlyArray<number>) =>
  chats.flatMap((chat) => ids.map((id) => `${chat}/${id}`)).sort()

for (const [engine, layer] of engines) {
  describe(`${engine}: units that run at once`, () => {
    it.effect("each unit is recorded once and whole, and answers as if it ran alone, a repeated one as a repeat", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const history = yield* HistoryStore
        const chats = [`many-a-${engine}`, `many-b-${engine}`]
        const ids = Array.from({ length: 24 }, (_, i) => i + 1)
        // Every (chat, id) twice, all at once: one of the two applies the message, the other finds it applied.
        const work = [...ids, ...ids].flatMap((id) => chats.map((chat) => [chat, id] as const))
        const answers = yield* Effect.forEach(work, ([chat, id]) =>
          unit.run(Effect.zip(apply([message(chat, id)]), history.appendAll([item(chat, id)]))), { concurrency: "unbounded" })
        for (const chat of chats) {
          for (const id of ids) {
            const mine = answers.filter((_, i) => work[i]![0] === chat && work[i]![1] === id)
            assert.deepStrictEqual(mine.map(([a]) => a.applied).sort(), [0, 1], `${chat}/${id} applied once`)
            assert.deepStrictEqual(mine.map(([a]) => a.duplicates).sort(), [0, 1])
            // The later of two copies of one version replaces the first (HistoryItem.mergeVersions).
            assert.deepStrictEqual(mine.map(([, h]) => h[0]).sort(), ["appended", "replaced"])
          }
        }
        assert.deepStrictEqual(yield* stored(chats), { messages: expected(chats, ids), items: expected(chats, ids) })
      }).pipe(Effect.provide(layer())))

    it.effect("replies recorded with their links (appendAllResponding) at once, with other chats' messages: each whole", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const history = yield* HistoryStore
        const chat = `replies-${engine}`
        const other = `replies-other-${engine}`
        const ids = Array.from({ length: 12 }, (_, i) => i + 1)
        yield* history.appendAll(ids.map((id) => item(chat, id)))
        // Each reply (id + 100) answers message id, in a unit with its context write; beside them, other chats' messages.
        yield* Effect.forEach([...ids.map((id) => ["reply", id] as const), ...ids.map((id) => ["other", id] as const)], ([what, id]) =>
          what === "reply"
            ? unit.run(Effect.zip(
              apply([message(chat, id + 100, { sender_user_id: 1 })]),
              history.appendAllResponding([{ ...item(chat, id + 100), kind: "outbound_agent", reply_to_message_id: String(id) }], [
                { scope: { chat_id: chat, topic_id: "1" }, message_id: id, response_id: id + 100 }
              ])
            ))
            : unit.run(Effect.zip(apply([message(other, id)]), history.appendAll([item(other, id)]))), { concurrency: "unbounded" })
        for (const id of ids) {
          const answered = Option.getOrThrow(yield* history.lookup({ chat_id: chat, topic_id: "1" }, String(id))).item
          assert.strictEqual(answered.bot_response_id, String(id + 100), `message ${id} linked to its reply`)
        }
        assert.deepStrictEqual(yield* stored([chat, other]), {
          messages: [...expected([chat], ids.map((id) => id + 100)), ...expected([other], ids)].sort(),
          items: [...expected([chat], [...ids, ...ids.map((id) => id + 100)]), ...expected([other], ids)].sort()
        })
      }).pipe(Effect.provide(layer())))

    it.effect("an urgent unit (WritePriority) does not wait for the group of ordinary units running, nor for those queued behind it", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const history = yield* HistoryStore
        const chat = `urgent-${engine}`
        const inside = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        // An ordinary unit that holds its group open until the gate opens; another queued behind it.
        const holding = yield* Effect.fork(unit.run(Effect.gen(function*() {
          yield* apply([message(`${chat}-a`, 1)])
          yield* Deferred.succeed(inside, undefined)
          yield* Deferred.await(gate)
        })))
        yield* Deferred.await(inside)
        const queued = yield* Effect.fork(unit.run(apply([message(`${chat}-b`, 1)])))
        // The urgent unit is recorded while both wait (it would wait for the gate in their queue).
        yield* WritePriority.asUrgent(unit.run(Effect.zip(apply([message(chat, 1)]), history.appendAll([item(chat, 1)]))))
        assert.isTrue(Option.isSome(yield* history.lookup({ chat_id: chat, topic_id: "1" }, "1")))
        assert.isTrue(Option.isNone(yield* Fiber.poll(holding)))
        assert.isTrue(Option.isNone(yield* Fiber.poll(queued)))
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(holding)
        yield* Fiber.join(queued)
        assert.deepStrictEqual((yield* stored([`${chat}-a`, `${chat}-b`, chat])).messages, [`${chat}-a/1`, `${chat}-b/1`, `${chat}/1`].sort())
      }).pipe(Effect.provide(layer())))

    it.effect("a unit that fails among others keeps nothing; the others are recorded", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const history = yield* HistoryStore
        const chat = `among-${engine}`
        const ids = Array.from({ length: 12 }, (_, i) => i + 1)
        const exits = yield* Effect.forEach(ids, (id) =>
          Effect.exit(unit.run(Effect.gen(function*() {
            yield* apply([message(chat, id)])
            yield* history.appendAll([item(chat, id)])
            if (id === 5) return yield* Effect.fail("unit 5 fails" as const)
          }))), { concurrency: "unbounded" })
        assert.deepStrictEqual(exits.map(Exit.isSuccess), ids.map((id) => id !== 5))
        const rest = ids.filter((id) => id !== 5)
        assert.deepStrictEqual(yield* stored([chat]), { messages: expected([chat], rest), items: expected([chat], rest) })
        assert.isTrue(Option.isNone(yield* (yield* ContextStore).message(chat, "5")))
      }).pipe(Effect.provide(layer())))

    it.effect("a unit interrupted after its first write, among others, keeps nothing; the others are recorded", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const history = yield* HistoryStore
        const chat = `interrupted-${engine}`
        const ids = Array.from({ length: 8 }, (_, i) => i + 1)
        const applied = yield* Deferred.make<void>()
        const fibers = yield* Effect.forEach(ids, (id) =>
          Effect.fork(unit.run(Effect.gen(function*() {
            yield* apply([message(chat, id)])
            // Unit 3 stops after its apply, until it is interrupted.
            if (id === 3) yield* Effect.zipRight(Deferred.succeed(applied, undefined), Effect.never)
            yield* history.appendAll([item(chat, id)])
          }))))
        yield* Deferred.await(applied)
        yield* Fiber.interrupt(fibers[2]!)
        const exits = yield* Effect.forEach(fibers, Fiber.await)
        assert.deepStrictEqual(exits.map(Exit.isSuccess), ids.map((id) => id !== 3))
        const rest = ids.filter((id) => id !== 3)
        assert.deepStrictEqual(yield* stored([chat]), { messages: expected([chat], rest), items: expected([chat], rest) })
      }).pipe(Effect.provide(layer())))

    it.effect("the unit that completes its group last, interrupted as the group writes: the others are recorded, none waits forever", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const history = yield* HistoryStore
        const chat = `last-${engine}`
        const ids = Array.from({ length: 6 }, (_, i) => i + 1)
        const release = yield* Deferred.make<void>()
        const completing = yield* Deferred.make<void>()
        const fibers = yield* Effect.forEach(ids, (id) =>
          Effect.fork(unit.run(Effect.gen(function*() {
            yield* apply([message(chat, id)])
            yield* history.appendAll([item(chat, id)])
            // Unit 6 completes after every other: its fiber ends the group's attempt and runs its one write.
            if (id === 6) yield* Effect.zipRight(Deferred.await(release), Deferred.succeed(completing, undefined))
          }))))
        yield* Deferred.succeed(release, undefined)
        yield* Deferred.await(completing)
        yield* Fiber.interrupt(fibers[5]!)
        const exits = yield* Effect.forEach(fibers, Fiber.await)
        assert.deepStrictEqual(exits.slice(0, 5).map(Exit.isSuccess), [true, true, true, true, true])
        const { items, messages } = yield* stored([chat])
        // Unit 6 is whole either way: in the group's write, or out of it.
        assert.deepStrictEqual(messages, items)
        assert.includeMembers(items, expected([chat], ids.slice(0, 5)))
      }).pipe(Effect.provide(layer())))

    it.effect("a unit that writes twice to a store, reads its own write or moves a chat, among others: each is recorded whole", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const history = yield* HistoryStore
        const store = yield* ContextStore
        const chat = `mixed-${engine}`
        const ids = Array.from({ length: 10 }, (_, i) => i + 1)
        const found = yield* Effect.forEach(ids, (id) =>
          unit.run(Effect.gen(function*() {
            yield* apply([message(chat, id)])
            if (id === 3) yield* apply([message(chat, 100 + id)])
            yield* history.appendAll([item(chat, id)])
            if (id === 6) yield* history.appendAll([item(chat, 100 + id)])
            // Its own message, read back inside the unit.
            return id === 8 ? Option.isSome(yield* store.message(chat, String(id))) : true
          })), { concurrency: "unbounded" })
        assert.deepStrictEqual(found, ids.map(() => true))
        yield* unit.run(store.migrateChat(chat, `${chat}-moved`, T0))
        const moved = yield* stored([chat, `${chat}-moved`])
        assert.deepStrictEqual(moved.messages.length, 11)
        assert.strictEqual((yield* stored([chat])).items.length, 11)
      }).pipe(Effect.provide(layer())))
  })
}

for (const [engine, layer] of engines) {
  describe(`${engine}: units that read their chat first`, () => {
    it.effect("units that read their chat, two of them renaming it, are each recorded whole, each reading a title some unit gave", () =>
      Effect.gen(function*() {
        const unit = yield* UnitOfWork
        const store = yield* ContextStore
        const history = yield* HistoryStore
        const chat = `read-first-${engine}`
        const ids = Array.from({ length: 12 }, (_, i) => i + 1)
        // Units 4 and 9 rename the chat; every unit reads the chat, then records its message.
        const titles = yield* Effect.forEach(ids, (id) =>
          unit.run(Effect.gen(function*() {
            const info = yield* store.chat(chat)
            yield* apply([message(chat, id, id === 4 || id === 9 ? { chat_title: `title ${id}` } : {})])
            yield* history.appendAll([item(chat, id)])
            return info.title
          })), { concurrency: "unbounded" })
        assert.deepStrictEqual(yield* stored([chat]), { messages: expected([chat], ids), items: expected([chat], ids) })
        assert.include(["title 4", "title 9"], (yield* store.chat(chat)).title)
        for (const title of titles) assert.include([null, "title 4", "title 9"], title)
      }).pipe(Effect.provide(layer())))
  })
}

describe("pg: units of two store instances over one database at once", () => {
  it.effect("nothing is lost and every item keeps a position of its own when both write the same chats", () =>
    Effect.gen(function*() {
      const chats = ["two-a", "two-b"]
      const ids = Array.from({ length: 30 }, (_, i) => i + 1)
      const schema = `deixis_uow_two_${Date.now().toString(36)}`
      const run = (offset: number) =>
        Effect.gen(function*() {
          const unit = yield* UnitOfWork
          const history = yield* HistoryStore
          yield* Effect.forEach(ids.filter((id) => id % 2 === offset), (id) =>
            Effect.forEach(chats, (chat) =>
              unit.run(Effect.zip(apply([message(chat, id)]), history.appendAll([item(chat, id), { ...item(chat, id), message_id: null, event_id: `reaction-${id}` }])))),
            { concurrency: "unbounded" })
        })
      const first = pgLayerWithClient({}, schema)
      yield* Effect.provide(
        Effect.gen(function*() {
          // A second instance over the same schema: another process, as far as the first can tell.
          const second = SqlStore.layerStores({ schema, sweep_interval: 0 }).pipe(Layer.provide(Pg.layerClient({ url: pgUrl, schema, max_connections: 4 })))
          yield* Effect.all([run(0), Effect.provide(run(1), second)], { concurrency: "unbounded" })
          assert.deepStrictEqual((yield* stored(chats)).messages, expected(chats, ids))
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ n: unknown; positions: unknown }>`SELECT count(*) AS n, count(DISTINCT (chat_id, topic, anchor_len, anchor, seq)) AS positions FROM deixis_history WHERE chat_id IN ${sql.in(chats)}`
          assert.deepStrictEqual(rows.map((r) => [Number(r.n), Number(r.positions)]), [[chats.length * ids.length * 2, chats.length * ids.length * 2]])
        }),
        first
      )
    }))
})
