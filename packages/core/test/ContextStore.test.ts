import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import { ContextEventBatch } from "../src/ContextEvent.js"
import * as ContextStore from "../src/ContextStore.js"
import { contextStoreContract, contractObjectRetention, replacedTtl } from "../src/ContextStoreTesting.js"
import * as TtlPolicy from "../src/TtlPolicy.js"

const contract = ContextStore.layerMemory({ sweep_interval: 0, object_retention: contractObjectRetention })
contextStoreContract("memory", contract)
// The same cases under a replaced TTL policy: the store keeps what the policy wrote.
contextStoreContract("memory", contract, { ttl: replacedTtl })

const T0 = Date.parse("2026-11-22T10:00:00Z")
const decode = Schema.decodeUnknownSync(ContextEventBatch)
const messages = (chat: string, from: number, to: number, topic?: number) =>
  decode(Array.from({ length: to - from + 1 }, (_, i) => ({
    type: "message_observed", chat_id: chat, message_id: from + i, topic_id: topic ?? null, links: [{ url: `https://x/${from + i}` }]
  })))
const options = { now: T0, ttl: TtlPolicy.defaultPolicy }

describe("the memory ContextStore's bounds", () => {
  it.effect("a chat past its message cap drops its oldest messages, counted", () =>
    Effect.gen(function*() {
      const store = ContextStore.makeMemory({ max_messages_per_chat: 100 })
      yield* store.apply(messages("c", 1, 150, 1), options)
      const snap = yield* store.snapshot("c")
      assert.strictEqual(snap.messages.length, 100)
      assert.strictEqual(snap.messages[0]!.message_id, "51")
      const stats = yield* store.stats
      assert.deepStrictEqual([stats.messages, stats.evicted_messages], [100, 50])
    }))

  it.effect("a chat past its object cap drops its oldest objects, counted", () =>
    Effect.gen(function*() {
      const store = ContextStore.makeMemory({ max_objects_per_chat: 20 })
      yield* store.apply(messages("c", 1, 50), options)
      const snap = yield* store.snapshot("c")
      assert.strictEqual(snap.objects.length, 20)
      assert.isTrue(snap.objects.every((o) => Number(o.source_message_id) > 30))
      assert.strictEqual((yield* store.stats).evicted_objects, 30)
    }))

  it.effect("past the total cap, the least recently used chat is evicted first", () =>
    Effect.gen(function*() {
      const store = ContextStore.makeMemory({ max_messages_total: 25 })
      yield* store.apply(messages("a", 1, 10), options)
      yield* store.apply(messages("b", 1, 10), options)
      yield* store.message("a", "1") // reading does not count as use...
      yield* store.pool({
        chat_id: "a", topic_id: null, current_message_id: "11", reply_to_message_id: null, sender_user_id: null,
        kinds: undefined, prefer_kinds: [], include_owned: false, active_only: false, now: T0,
        limits: { chain_depth: 1, recent_objects: 1, recent_per_kind: 1, recent_messages: 1, owned: 1, fallback_active: 1 }
      }) // ...a tool call does
      yield* store.apply(messages("c", 1, 10), options)
      const stats = yield* store.stats
      assert.deepStrictEqual([stats.chats, stats.evicted_chats, stats.messages], [2, 1, 20])
      assert.strictEqual((yield* store.snapshot("b")).messages.length, 0)
      assert.strictEqual((yield* store.snapshot("a")).messages.length, 10)
    }))

  it.effect("past the chat cap, the least recently used chat is evicted", () =>
    Effect.gen(function*() {
      const store = ContextStore.makeMemory({ max_chats: 2 })
      for (const chat of ["a", "b", "c"]) yield* store.apply(messages(chat, 1, 1), options)
      const stats = yield* store.stats
      assert.deepStrictEqual([stats.chats, stats.evicted_chats], [2, 1])
      assert.strictEqual((yield* store.snapshot("a")).messages.length, 0)
    }))

  it.effect("the event-id memory is bounded per chat", () =>
    Effect.gen(function*() {
      const store = ContextStore.makeMemory({ max_event_ids_per_chat: 2 })
      yield* store.apply(messages("c", 1, 1), options)
      const touch = (id: string) =>
        decode([{ type: "object_activated", event_id: id, chat_id: "c", reason: "url_fetched", object_id: "c/1/link" }])
      for (const id of ["e1", "e2", "e3"]) yield* store.apply(touch(id), options)
      // e1 has been forgotten (applies again, harmlessly); e3 is remembered.
      assert.strictEqual((yield* store.apply(touch("e1"), options)).applied, 1)
      assert.strictEqual((yield* store.apply(touch("e3"), options)).duplicates, 1)
    }))

  it.scoped("the layer sweeps on its schedule", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const context = yield* Layer.build(ContextStore.layerMemory({ sweep_interval: 60_000, object_retention: 7 * 24 * 3_600_000 }))
      const store = Context.get(context, ContextStore.ContextStore)
      // Never activated, created just under 7 days (the retention) before now.
      const createdAt = T0 - 7 * 24 * 3_600_000 + 30_000
      yield* store.apply(messages("c", 1, 1), { now: createdAt, ttl: TtlPolicy.defaultPolicy })
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual((yield* store.stats).swept_objects, 0)
      yield* TestClock.adjust("60 seconds")
      assert.strictEqual((yield* store.stats).swept_objects, 1)
      assert.deepStrictEqual((yield* store.snapshot("c")).objects, [])
    }))

  it.scoped("by default objects are kept however old: the retention is off", () =>
    Effect.gen(function*() {
      const store = ContextStore.makeMemory()
      yield* store.apply(messages("old", 1, 3), { now: T0 - 400 * 24 * 3_600_000, ttl: TtlPolicy.defaultPolicy })
      assert.strictEqual(yield* store.sweep(T0), 0)
      assert.strictEqual((yield* store.snapshot("old")).objects.length, 3)
    }))

  it.scoped("each scheduled sweep says at Info what left the store: objects past retention, and what the caps evicted", () =>
    Effect.gen(function*() {
      const lines: Array<{ level: string; message: unknown; annotations: Record<string, unknown> }> = []
      const capture = Logger.make(({ annotations, logLevel, message }) => {
        lines.push({ level: logLevel.label, message, annotations: Object.fromEntries(annotations) })
      })
      yield* TestClock.setTime(T0)
      const context = yield* Layer.build(
        ContextStore.layerMemory({ sweep_interval: 60_000, object_retention: 24 * 3_600_000, max_messages_per_chat: 2 }).pipe(
          Layer.provide(Logger.replace(Logger.defaultLogger, capture))
        )
      )
      const store = Context.get(context, ContextStore.ContextStore)
      yield* TestClock.adjust("1 second")
      // Nothing left the store yet: nothing is said.
      assert.deepStrictEqual(lines, [])
      // Three messages in a chat capped at two (one evicted), their links two days old (swept).
      yield* store.apply(messages("c", 1, 3), { now: T0 - 2 * 24 * 3_600_000, ttl: TtlPolicy.defaultPolicy })
      yield* TestClock.adjust("60 seconds")
      assert.deepStrictEqual(lines, [{
        level: "INFO",
        message: ["memory context store removed entries"],
        annotations: { swept_objects: 3, evicted_chats: 0, evicted_messages: 1, evicted_objects: 0 }
      }])
      yield* TestClock.adjust("60 seconds")
      assert.strictEqual(lines.length, 1)
    }))
})
