/**
 * Core's `UnitOfWork` over the SQL stores: everything run through it is one transaction —
 * committed together, or rolled back together when any part fails — each written chat's
 * revision moves once per unit however many writes it holds, and the store's cache answers as
 * the database does after a committed and after a rolled-back unit.
 */
import { assert, describe, it } from "@effect/vitest"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import type { HistoryItem } from "@deixis/chathistory/HistoryItem"
import { ContextEventBatch } from "@deixis/core/ContextEvent"
import { ContextStore } from "@deixis/core/ContextStore"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import { UnitOfWork } from "@deixis/core/UnitOfWork"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { makeSqlContextStore } from "../src/internal/contextStore.js"
import { makeDb } from "../src/internal/db.js"
import * as SqlStore from "../src/SqlStore.js"
import { pgLayerWithClient, poolQuery, sqliteLayerWithClient, T0 } from "./helpers.js"

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

const item = (chat: string, id: number): HistoryItem => ({
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
