import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { HistoryItem } from "../src/HistoryItem.js"
import * as HistoryStore from "../src/HistoryStore.js"
import { testItem } from "../src/HistoryStoreTesting.js"
import * as WritePolicy from "../src/WritePolicy.js"

const env = (vars: Record<string, string>) => ConfigProvider.fromMap(new Map(Object.entries(vars)), { pathDelim: "_" })
const scope = { chat_id: "g", topic_id: null }

/** 20 inbound messages (every 4th triggers a run), a reaction after each 5th, the bot's answer to each trigger. */
const conversation = (): ReadonlyArray<{ readonly item: HistoryItem; readonly triggered_run: boolean }> => {
  const out: Array<{ item: HistoryItem; triggered_run: boolean }> = []
  let id = 0
  for (let i = 1; i <= 20; i++) {
    const triggered = i % 4 === 0
    out.push({ item: testItem("g", String(++id), { text: `user ${i}` }), triggered_run: triggered })
    if (triggered) {
      out.push({
        item: testItem("g", String(++id), { kind: "outbound_agent", reply_to_message_id: String(id - 1), text: `bot ${i}` }),
        triggered_run: false
      })
    }
    if (i % 5 === 0) {
      out.push({ item: testItem("g", null, { kind: "inbound_reaction", reply_to_message_id: String(id), text: "👍" }), triggered_run: false })
    }
  }
  return out
}

const replay = (mode: WritePolicy.GroupMode) =>
  Effect.gen(function*() {
    const recorded = yield* Effect.forEach(conversation(), ({ item, triggered_run }) =>
      WritePolicy.record(item, { triggered_run, mode }))
    const history = yield* WritePolicy.history(scope, { mode })
    const all = yield* Effect.flatMap(HistoryStore.HistoryStore, (store) => store.recent(scope, 1000))
    return { recorded, history, all: all.map((e) => e.item) }
  }).pipe(Effect.provide(Layer.merge(HistoryStore.layerMemory(), WritePolicy.layer())))

describe("WritePolicy", () => {
  it("history trimming policy: talkative keeps the newest 16, strict and smart the newest 8", () => {
    const s = WritePolicy.defaults
    assert.strictEqual(WritePolicy.capOf(s, "talkative"), 16)
    assert.strictEqual(WritePolicy.capOf(s, "strict"), 8)
    assert.strictEqual(WritePolicy.capOf(s, "smart"), 8)
    const items = Array.from({ length: 20 }, (_, i) => i + 1)
    assert.deepStrictEqual(WritePolicy.trim(items, 16), items.slice(4))
    assert.deepStrictEqual(WritePolicy.trim(items, 8), [13, 14, 15, 16, 17, 18, 19, 20])
    assert.deepStrictEqual(WritePolicy.trim(items.slice(0, 5), 8), [1, 2, 3, 4, 5])
    assert.deepStrictEqual(WritePolicy.trim(items, 0), [])
  })

  it.effect("in talkative, non-triggering inbound messages are still recorded, with reactions and outputs; the window is the newest 16", () =>
    Effect.gen(function*() {
      const { all, history, recorded } = yield* replay("talkative")
      assert.isTrue(recorded.every((r) => r))
      assert.strictEqual(all.length, 20 + 5 + 4) // every message, every output, every reaction
      assert.strictEqual(history.length, 16)
      assert.deepStrictEqual(history, all.slice(-16))
      assert.isTrue(history.some((i) => i.kind === "inbound_reaction"))
      assert.isTrue(history.some((i) => i.text === "user 19")) // never triggered, still there
    }))

  it.effect("in strict, only the addressed exchange is recorded: non-triggering inbound messages are not; triggers and bot outputs are, capped at 8", () =>
    Effect.gen(function*() {
      const { all, history } = yield* replay("strict")
      assert.deepStrictEqual(all.map((i) => i.text), [
        "user 4", "bot 4", "user 8", "bot 8", "user 12", "bot 12", "user 16", "bot 16", "user 20", "bot 20"
      ])
      assert.deepStrictEqual(history.map((i) => i.text), all.slice(-8).map((i) => i.text))
    }))

  it.effect("smart records every message the bot receives, and the bot outputs; reactions only when they triggered a run; capped at 8", () =>
    Effect.gen(function*() {
      const { all, history } = yield* replay("smart")
      assert.strictEqual(all.length, 20 + 5) // every message, every output, no reaction
      assert.isFalse(all.some((i) => i.kind === "inbound_reaction"))
      assert.isTrue(all.some((i) => i.text === "user 19")) // never triggered, still there
      assert.deepStrictEqual(history.map((i) => i.text), all.slice(-8).map((i) => i.text))
    }))

  it("shouldRecord: bot outputs always; inbound messages always in smart, only when they triggered a run in strict; reactions only when triggering outside talkative", () => {
    for (const mode of ["strict", "smart"] as const) {
      assert.isTrue(WritePolicy.shouldRecord(mode, "outbound_agent", false))
      assert.isTrue(WritePolicy.shouldRecord(mode, "outbound_reaction", false))
      assert.isFalse(WritePolicy.shouldRecord(mode, "inbound_reaction", false))
      assert.isFalse(WritePolicy.shouldRecord(mode, "system", false))
      assert.isTrue(WritePolicy.shouldRecord(mode, "inbound_user", true))
    }
    assert.isFalse(WritePolicy.shouldRecord("strict", "inbound_user", false))
    assert.isTrue(WritePolicy.shouldRecord("smart", "inbound_user", false))
    for (const kind of ["inbound_user", "inbound_reaction", "outbound_agent", "outbound_reaction", "system"] as const) {
      assert.isTrue(WritePolicy.shouldRecord("talkative", kind, false))
    }
  })

  it.effect("modes and caps are configurable through DEIXIS_HISTORY_* keys; the default mode applies when none is named", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(WritePolicy.defaults, { default_mode: "smart", talkative_cap: 16, strict_cap: 8, smart_cap: 8 })
      const settings = yield* Effect.withConfigProvider(
        WritePolicy.config,
        env({ DEIXIS_HISTORY_MODE: "talkative", DEIXIS_HISTORY_TALKATIVE_CAP: "3", DEIXIS_HISTORY_SMART_CAP: "2" })
      )
      assert.deepStrictEqual(settings, { default_mode: "talkative", talkative_cap: 3, strict_cap: 8, smart_cap: 2 })
      const program = Effect.gen(function*() {
        yield* Effect.forEach(["1", "2", "3", "4", "5"], (id) => WritePolicy.record(testItem("g", id), { triggered_run: false }))
        return yield* WritePolicy.history(scope)
      })
      const history = yield* program.pipe(
        Effect.provide(Layer.merge(HistoryStore.layerMemory(), WritePolicy.layerConfig)),
        Effect.withConfigProvider(env({ DEIXIS_HISTORY_MODE: "talkative", DEIXIS_HISTORY_TALKATIVE_CAP: "3" }))
      )
      assert.deepStrictEqual(history.map((i) => i.message_id), ["3", "4", "5"])
      const bad = yield* Effect.either(Effect.withConfigProvider(WritePolicy.config, env({ DEIXIS_HISTORY_MODE: "chatty" })))
      assert.strictEqual(bad._tag, "Left")
    }))

  it.effect("telegram-history-max-messages is deprecated: no such key changes the history length", () =>
    Effect.gen(function*() {
      const settings = yield* Effect.withConfigProvider(
        WritePolicy.config,
        env({ DEIXIS_HISTORY_MAX_MESSAGES: "50", TELEGRAM_HISTORY_MAX_MESSAGES: "50", DEIXIS_TELEGRAM_HISTORY_MAX_MESSAGES: "50" })
      )
      assert.deepStrictEqual(settings, WritePolicy.defaults)
    }))

  it.effect("the history window leaves out the current message and anything after it", () =>
    Effect.gen(function*() {
      yield* Effect.forEach(["1", "2", "3"], (id) => WritePolicy.record(testItem("g", id), { triggered_run: true }))
      const history = yield* WritePolicy.history(scope, { before: "3" })
      assert.deepStrictEqual(history.map((i) => i.message_id), ["1", "2"])
    }).pipe(Effect.provide(Layer.merge(HistoryStore.layerMemory(), WritePolicy.layer()))))
})
