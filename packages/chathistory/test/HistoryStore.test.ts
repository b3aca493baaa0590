import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as HistoryStore from "../src/HistoryStore.js"
import { historyStoreContract, testItem } from "../src/HistoryStoreTesting.js"

historyStoreContract("memory", HistoryStore.layerMemory())

// As the environment reads them: DEIXIS_… keys with `_` between path parts.
const env = (vars: Record<string, string>) => ConfigProvider.fromMap(new Map(Object.entries(vars)), { pathDelim: "_" })

const ids = (entries: ReadonlyArray<HistoryStore.HistoryEntry>) => entries.map((e) => e.item.message_id)

describe("HistoryStore memory adapter", () => {
  it.effect("past max_items_per_chat the earliest appended items go, and are counted", () =>
    Effect.gen(function*() {
      const store = HistoryStore.makeMemory({ max_items_per_chat: 3 })
      for (const id of ["1", "2", "3", "4", "5"]) yield* store.append(testItem("c", id, { topic_id: id === "2" ? "t" : null }))
      assert.deepStrictEqual(ids(yield* store.recent({ chat_id: "c", topic_id: null }, 10)), ["3", "4", "5"])
      assert.deepStrictEqual(yield* store.recent({ chat_id: "c", topic_id: "t" }, 10), [])
      assert.isTrue(Option.isNone(yield* store.lookup({ chat_id: "c", topic_id: null }, "1")))
      const stats = yield* store.stats
      assert.deepStrictEqual(stats, { chats: 1, items: 3, evicted_chats: 0, evicted_items: 2 })
    }))

  it.effect("an evicted item leaves the reply and response indexes", () =>
    Effect.gen(function*() {
      const store = HistoryStore.makeMemory({ max_items_per_chat: 2 })
      const scope = { chat_id: "c", topic_id: null }
      yield* store.append(testItem("c", "1"))
      yield* store.append(testItem("c", "2", { reply_to_message_id: "1", bot_response_id: "9" }))
      yield* store.append(testItem("c", "3", { reply_to_message_id: "1" }))
      yield* store.append(testItem("c", "4"))
      assert.deepStrictEqual(ids(yield* store.replies(scope, "1", { limit: 10 })), ["3"])
      assert.isTrue(Option.isNone(yield* store.lookup(scope, "9")))
    }))

  it.effect("past max_chats the chat written least recently goes whole", () =>
    Effect.gen(function*() {
      const store = HistoryStore.makeMemory({ max_chats: 2 })
      yield* store.append(testItem("a", "1"))
      yield* store.append(testItem("b", "1"))
      yield* store.append(testItem("a", "2"))
      yield* store.append(testItem("c", "1"))
      assert.isTrue(Option.isNone(yield* store.lookup({ chat_id: "b", topic_id: null }, "1")))
      assert.isTrue(Option.isSome(yield* store.lookup({ chat_id: "a", topic_id: null }, "1")))
      assert.deepStrictEqual(yield* store.stats, { chats: 2, items: 3, evicted_chats: 1, evicted_items: 1 })
    }))

  it.effect("past max_items_total the least recently written chat goes, then the writer's oldest", () =>
    Effect.gen(function*() {
      const store = HistoryStore.makeMemory({ max_items_total: 3 })
      yield* store.append(testItem("a", "1"))
      yield* store.append(testItem("a", "2"))
      yield* store.append(testItem("b", "1"))
      yield* store.append(testItem("b", "2"))
      assert.deepStrictEqual(yield* store.stats, { chats: 1, items: 2, evicted_chats: 1, evicted_items: 2 })
      yield* store.append(testItem("b", "3"))
      yield* store.append(testItem("b", "4"))
      assert.deepStrictEqual(ids(yield* store.recent({ chat_id: "b", topic_id: null }, 10)), ["2", "3", "4"])
      assert.deepStrictEqual(yield* store.stats, { chats: 1, items: 3, evicted_chats: 1, evicted_items: 3 })
    }))

  it.effect("eviction of many items keeps positions and lookups right (head compaction)", () =>
    Effect.gen(function*() {
      const store = HistoryStore.makeMemory({ max_items_per_chat: 100 })
      const scope = { chat_id: "c", topic_id: null }
      for (let i = 1; i <= 5000; i++) yield* store.append(testItem("c", String(i)))
      assert.deepStrictEqual(ids(yield* store.recent(scope, 3)), ["4998", "4999", "5000"])
      assert.deepStrictEqual(ids(yield* store.around(scope, "4901", { before: 2, after: 1 })), ["4901", "4902"])
      assert.isTrue(Option.isNone(yield* store.lookup(scope, "4900")))
      assert.strictEqual((yield* store.stats).evicted_items, 4900)
    }))

  it.scoped("what the caps evicted is said at Info every sweep interval; nothing evicted, nothing said at Info", () =>
    Effect.gen(function*() {
      const lines: Array<{ level: string; message: unknown; annotations: Record<string, unknown> }> = []
      const capture = Logger.make(({ annotations, logLevel, message }) => {
        lines.push({ level: logLevel.label, message, annotations: Object.fromEntries(annotations) })
      })
      const built = yield* Layer.build(
        HistoryStore.layerMemory({ max_items_per_chat: 2, sweep_interval: 60_000 }).pipe(
          Layer.provide(Logger.replace(Logger.defaultLogger, capture))
        )
      )
      const store = Context.get(built, HistoryStore.HistoryStore)
      for (const id of ["1", "2", "3", "4", "5"]) yield* store.append(testItem("c", id))
      yield* TestClock.adjust("60 seconds")
      assert.deepStrictEqual(lines, [{
        level: "INFO",
        message: ["memory history store evicted entries"],
        annotations: { evicted_chats: 0, evicted_items: 3 }
      }])
      yield* TestClock.adjust("60 seconds")
      assert.strictEqual(lines.length, 1)
    }))

  it.effect("the memory config reads DEIXIS_HISTORY_STORE_* keys over the defaults", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(HistoryStore.memoryDefaults, {
        max_chats: 10_000,
        max_items_per_chat: 5_000,
        max_items_total: 2_000_000,
        sweep_interval: 60_000
      })
      const read = yield* Effect.withConfigProvider(
        HistoryStore.memoryConfig,
        env({ DEIXIS_HISTORY_STORE_MAX_ITEMS_PER_CHAT: "2" })
      )
      assert.strictEqual(read.max_items_per_chat, 2)
      const store = yield* Effect.provide(
        HistoryStore.HistoryStore,
        HistoryStore.layerMemoryConfig().pipe(
          Layer.provide(Layer.setConfigProvider(env({ DEIXIS_HISTORY_STORE_MAX_ITEMS_PER_CHAT: "2" })))
        )
      )
      for (const id of ["1", "2", "3"]) yield* store.append(testItem("c", id))
      assert.deepStrictEqual(ids(yield* store.recent({ chat_id: "c", topic_id: null }, 10)), ["2", "3"])
      const bad = yield* Effect.either(Effect.withConfigProvider(
        HistoryStore.memoryConfig,
        env({ DEIXIS_HISTORY_STORE_MAX_CHATS: "0" })
      ))
      assert.isTrue(bad._tag === "Left")
    }))
})
