import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as fc from "fast-check"
import * as ContextLoader from "../src/ContextLoader.js"
import type { HistoryItem } from "../src/HistoryItem.js"
import * as HistoryRenderer from "../src/HistoryRenderer.js"
import * as HistoryStore from "../src/HistoryStore.js"
import { testItem } from "../src/HistoryStoreTesting.js"
import { history as historyArb } from "./arbitraries.js"
import { captureLogs } from "./logs.js"

const minute = 60_000
const t0 = Date.UTC(2026, 10, 22, 10, 0, 0)
const chat = "-100"
const scope = { chat_id: chat, topic_id: null }
const env = (vars: Record<string, string>) => ConfigProvider.fromMap(new Map(Object.entries(vars)), { pathDelim: "_" })

/** Messages 1..n, one a minute, in chat -100 with no topic. */
const line = (n: number, overrides: (i: number) => Partial<HistoryItem> = () => ({})) =>
  Array.from({ length: n }, (_, k) => testItem(chat, String(k + 1), { sent_at: t0 + k * minute, ...overrides(k + 1) }))

const setup = (items: ReadonlyArray<HistoryItem>, options: Partial<ContextLoader.ContextLoaderSettings> = {}) =>
  Effect.gen(function*() {
    const store = HistoryStore.makeMemory()
    yield* Effect.forEach(items, (item) => store.append(item), { discard: true })
    return { store, loader: ContextLoader.make(store, options) }
  })

const request = (
  messageId: string,
  fields: Partial<ContextLoader.LoadRequest> = {}
): ContextLoader.LoadRequest => ({ chat_id: chat, topic_id: null, message_id: messageId, reply_to_message_id: null, ...fields })

const ids = (context: ContextLoader.LoadedContext) => context.messages.map((m) => m.message_id)

describe("ContextLoader behaviors", () => {
  it.effect("new message (no reply): loads the last recency_window messages", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(30))
      const context = yield* loader.load(request("31", { sent_at: t0 + 30 * minute }))
      assert.deepStrictEqual(ids(context), ["21", "22", "23", "24", "25", "26", "27", "28", "29", "30"])
      assert.isTrue(context.entries.every((e) => e.sources.join() === "recent"))
      assert.deepStrictEqual(context.reply, { target_id: null, status: "none" })
      assert.strictEqual(context.chain, null)
    }))

  it.effect("reply to message: loads the reply target, its surrounding context and the recent messages", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(40), { reply_chain: false })
      const context = yield* loader.load(request("41", { reply_to_message_id: "10", sent_at: t0 + 40 * minute }))
      assert.deepStrictEqual(ids(context), ["7", "8", "9", "10", "11", "12", "13", "31", "32", "33", "34", "35", "36", "37", "38", "39", "40"])
      assert.deepStrictEqual(context.reply, { target_id: "10", status: "found" })
      const sources = new Map(context.entries.map((e) => [e.item.message_id, e.sources]))
      assert.deepStrictEqual(sources.get("10"), ["reply_target"])
      assert.deepStrictEqual(sources.get("7"), ["reply_context"])
      assert.deepStrictEqual(sources.get("13"), ["reply_context"])
      assert.deepStrictEqual(sources.get("31"), ["recent"])
    }))

  it.effect("reply target not found: falls back to recency-only context", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(30))
      const context = yield* loader.load(request("31", { reply_to_message_id: "999" }))
      assert.deepStrictEqual(ids(context), line(30).slice(-10).map((i) => i.message_id))
      assert.deepStrictEqual(context.reply, { target_id: "999", status: "not_found" })
      assert.strictEqual(context.chain, null)
    }))

  it.effect("gap > threshold: a gap note is added to the system prompt", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(3))
      const context = yield* loader.load(request("4", { sent_at: t0 + 2 * minute + 15 * minute + 1 }))
      assert.strictEqual(context.gap?.exceeds_threshold, true)
      assert.strictEqual(
        context.gap_note,
        "Conversation gap: 15 minutes since the previous message in this conversation. Earlier messages may be stale; the topic may have changed."
      )
      const current = testItem(chat, "4", { sent_at: t0 + 20 * minute })
      const prompt = HistoryRenderer.renderPrompt({ history: context.messages, current, gap_note: context.gap_note })
      assert.deepStrictEqual(prompt.system, [context.gap_note ?? "missing"])
    }))

  it.effect("gap <= threshold: no gap note, at the threshold exactly and below it", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(3))
      const at = yield* loader.load(request("4", { sent_at: t0 + 2 * minute + 15 * minute }))
      assert.strictEqual(at.gap?.ms, 15 * minute)
      assert.strictEqual(at.gap_note, null)
      assert.strictEqual(at.gap?.exceeds_threshold, false)
      const below = yield* loader.load(request("4", { sent_at: t0 + 2 * minute + 30_000 }))
      assert.strictEqual(below.gap_note, null)
      assert.deepStrictEqual(HistoryRenderer.renderPrompt({ history: below.messages, current: line(4)[3]!, gap_note: below.gap_note }).system, [])
    }))

  it.effect("duplicate messages in context: de-duplicated by message ID", () =>
    Effect.gen(function*() {
      // The target sits inside the recency window: recent, target, context and chain overlap.
      const items = line(12, (i) => (i > 1 ? { reply_to_message_id: String(i - 1) } : {}))
      const { loader } = yield* setup(items)
      const context = yield* loader.load(request("13", { reply_to_message_id: "11" }))
      assert.deepStrictEqual(ids(context), ["3", "4", "5", "6", "7", "8", "9", "10", "11", "12"])
      assert.strictEqual(new Set(ids(context)).size, context.messages.length)
      assert.deepStrictEqual(context.chain?.message_ids, ["11", "10", "9", "8", "7", "6", "5", "4"])
      assert.deepStrictEqual(context.entries.find((e) => e.item.message_id === "9")?.sources, ["recent", "reply_context", "reply_chain"])
      const eleven = context.entries.find((e) => e.item.message_id === "11")
      assert.deepStrictEqual(eleven?.sources, ["recent", "reply_target"])
      const five = context.entries.find((e) => e.item.message_id === "5")
      assert.deepStrictEqual(five?.sources, ["recent", "reply_chain"])
    }))
})

describe("ContextLoader errors", () => {
  it.effect("reply target message not in DB: logs debug, continues without reply context", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(5))
      const { logs, result } = yield* captureLogs(loader.load(request("6", { reply_to_message_id: "404" })))
      assert.deepStrictEqual(ids(result), ["1", "2", "3", "4", "5"])
      assert.strictEqual(result.reply.status, "not_found")
      const debug = logs.filter((l) => l.level === "DEBUG")
      assert.strictEqual(debug.length, 1)
      assert.include(debug[0]?.message ?? "", "reply target not in history")
      assert.strictEqual(debug[0]?.annotations["reply_to_message_id"], "404")
      assert.isFalse(logs.some((l) => l.level === "ERROR" || l.level === "WARN"))
    }))

  it.effect("invalid external_id format: lookup returns None, the loader finds nothing, nothing throws", () =>
    Effect.gen(function*() {
      const { loader, store } = yield* setup(line(5))
      for (const bad of ["", 1.5, Number.NaN, "x".repeat(257)]) {
        assert.isTrue(Option.isNone(yield* store.lookup(scope, bad)))
      }
      const context = yield* loader.load(request("6", { reply_to_message_id: "" }))
      assert.strictEqual(context.reply.status, "not_found")
      assert.deepStrictEqual(ids(context), ["1", "2", "3", "4", "5"])
      // At the wire boundary an invalid id is a typed InvalidRequest naming the field.
      const decoded = yield* Effect.either(ContextLoader.decodeRequest({ chat_id: chat, message_id: 6, reply_to_message_id: 1.5 }))
      assert.isTrue(Either.isLeft(decoded))
      if (Either.isLeft(decoded)) {
        assert.strictEqual(decoded.left._tag, "InvalidRequest")
        assert.strictEqual(decoded.left.path, "reply_to_message_id")
      }
    }))
})

describe("ContextLoader verification", () => {
  it.effect("recent messages loaded without time cutoff", () =>
    Effect.gen(function*() {
      const year = 365 * 24 * 60 * minute
      const { loader } = yield* setup(line(3, (i) => ({ sent_at: t0 - (4 - i) * year })))
      const context = yield* loader.load(request("4", { sent_at: t0 }))
      assert.deepStrictEqual(ids(context), ["1", "2", "3"])
      assert.strictEqual(context.gap_note?.startsWith("Conversation gap: 365 days"), true)
    }))

  it.effect("reply metadata stored in message: reply_to and the bot's response id", () =>
    Effect.gen(function*() {
      const { loader, store } = yield* setup([
        testItem(chat, "1", { sent_at: t0 }),
        testItem(chat, "2", { sent_at: t0 + minute, reply_to_message_id: "1" })
      ])
      assert.isTrue(yield* store.recordResponse(scope, "2", "3"))
      const stored = Option.getOrThrow(yield* store.lookup(scope, "2")).item
      assert.strictEqual(stored.reply_to_message_id, "1")
      assert.strictEqual(stored.bot_response_id, "3")
      // A user replying to the bot's (unstored) response gets the message it answered as target.
      const context = yield* loader.load(request("4", { reply_to_message_id: "3", sent_at: t0 + 2 * minute }))
      assert.deepStrictEqual(context.reply, { target_id: "3", status: "found" })
      assert.deepStrictEqual(context.entries.find((e) => e.item.message_id === "2")?.sources, ["recent", "reply_target"])
    }))

  it.effect("reply context includes target + surrounding messages, by position not timestamp", () =>
    Effect.gen(function*() {
      // Same second, stored out of order.
      const items = ["5", "3", "4", "1", "2", "6", "7", "8", "9"].map((id) => testItem(chat, id, { sent_at: t0 }))
      const { loader } = yield* setup(items, { recency_window: 0, reply_chain: false })
      const context = yield* loader.load(request("10", { reply_to_message_id: "4", sent_at: t0 }))
      assert.deepStrictEqual(ids(context), ["1", "2", "3", "4", "5", "6", "7"])
    }))

  it.effect("gap calculated correctly: from the previous item of the same chat and topic, bot outputs included", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup([
        testItem(chat, "1", { sent_at: t0 }),
        testItem(chat, "2", { sent_at: t0 + 3 * minute, kind: "outbound_agent" }),
        testItem(chat, "3", { sent_at: t0 + 50 * minute, topic_id: "9" }),
        testItem("other", "4", { sent_at: t0 + 60 * minute })
      ])
      const context = yield* loader.load(request("5", { sent_at: t0 + 3 * minute + 125 * minute + 30_000 }))
      assert.deepStrictEqual(context.gap, {
        ms: 125 * minute + 30_000,
        previous_message_id: "2",
        previous_sent_at: t0 + 3 * minute,
        exceeds_threshold: true
      })
      assert.include(context.gap_note ?? "", "2 hours")
      const first = yield* loader.load({ chat_id: "empty", topic_id: null, message_id: "1", reply_to_message_id: null, sent_at: t0 })
      assert.strictEqual(first.gap, null)
      assert.strictEqual(first.gap_note, null)
    }))

  it.effect("gap uses the Clock when the request carries no time", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup([testItem(chat, "1", { sent_at: 0 })])
      yield* TestClock.adjust("16 minutes")
      const context = yield* loader.load(request("2"))
      assert.strictEqual(context.gap?.ms, 16 * minute)
      assert.include(context.gap_note ?? "", "16 minutes")
    }))

  it.effect("gap note added to prompt when > threshold", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(1))
      const context = yield* loader.load(request("2", { sent_at: t0 + 16 * minute }))
      const prompt = HistoryRenderer.renderPrompt({ history: context.messages, current: testItem(chat, "2"), gap_note: context.gap_note })
      assert.strictEqual(prompt.system.length, 1)
      assert.include(prompt.system[0] ?? "", "16 minutes")
    }))

  it.effect("gap note omitted when <= threshold", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(1))
      const context = yield* loader.load(request("2", { sent_at: t0 + 15 * minute }))
      const prompt = HistoryRenderer.renderPrompt({ history: context.messages, current: testItem(chat, "2"), gap_note: context.gap_note })
      assert.deepStrictEqual(prompt.system, [])
    }))

  it.effect("context deduplicated correctly, reactions (no message id) included once", () =>
    Effect.gen(function*() {
      const items = [
        ...line(4),
        testItem(chat, null, { kind: "inbound_reaction", reply_to_message_id: "4", text: "👍", sent_at: t0 + 4 * minute }),
        testItem(chat, "5", { sent_at: t0 + 5 * minute, reply_to_message_id: "4" })
      ]
      const { loader } = yield* setup(items)
      const context = yield* loader.load(request("6", { reply_to_message_id: "4" }))
      assert.deepStrictEqual(context.messages.map((m) => m.message_id ?? m.text), ["1", "2", "3", "4", "👍", "5"])
      assert.strictEqual(new Set(context.entries.map(HistoryStore.entryKey)).size, context.entries.length)
    }))

  it("gap duration in human-readable form", () => {
    const cases: ReadonlyArray<readonly [number, string]> = [
      [30_000, "less than a minute"],
      [minute, "1 minute"],
      [16 * minute, "16 minutes"],
      [59 * minute, "59 minutes"],
      [60 * minute, "about an hour"],
      [119 * minute, "about an hour"],
      [120 * minute, "2 hours"],
      [23 * 60 * minute, "23 hours"],
      [24 * 60 * minute, "about a day"],
      [47 * 60 * minute, "about a day"],
      [48 * 60 * minute, "2 days"],
      [10 * 24 * 60 * minute, "10 days"]
    ]
    for (const [ms, words] of cases) assert.strictEqual(ContextLoader.formatDuration(ms), words, String(ms))
    assert.strictEqual(ContextLoader.gapNote(15 * minute, 15), null)
    assert.isNotNull(ContextLoader.gapNote(15 * minute + 1, 15))
  })

  it.effect("runs on every message: a second load sees what was appended since the first (no session cache)", () =>
    Effect.gen(function*() {
      const { loader, store } = yield* setup(line(2))
      const first = yield* loader.load(request("3", { sent_at: t0 + 30 * minute }))
      assert.deepStrictEqual(ids(first), ["1", "2"])
      assert.isNotNull(first.gap_note)
      yield* store.append(testItem(chat, "3", { sent_at: t0 + 30 * minute }))
      const second = yield* loader.load(request("4", { sent_at: t0 + 31 * minute }))
      assert.deepStrictEqual(ids(second), ["1", "2", "3"])
      assert.strictEqual(second.gap?.ms, minute)
      assert.strictEqual(second.gap_note, null)
    }))

  it.effect("the current message and anything after it stay out of the context; other topics and chats never leak", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup([
        ...line(6),
        testItem(chat, "3", { topic_id: "t" }),
        testItem(chat, "7", { topic_id: "t" }),
        testItem("other", "2")
      ])
      const context = yield* loader.load(request("4", { reply_to_message_id: "3" }))
      assert.deepStrictEqual(ids(context), ["1", "2", "3"])
      assert.isTrue(context.messages.every((m) => m.chat_id === chat && m.topic_id === null))
      const topic = yield* loader.load({ ...request("8"), topic_id: "t" })
      assert.deepStrictEqual(ids(topic), ["7"])
    }))
})

describe("ContextLoader reply chain", () => {
  // 10 ← 20 ← 30 ← 40; side replies: 11,12,13 → 10; 21,22,23 → 20; 31..34 → 30; 41,42 → 40.
  const chain = [
    testItem(chat, "10"),
    ...["11", "12", "13"].map((id) => testItem(chat, id, { reply_to_message_id: "10" })),
    testItem(chat, "20", { reply_to_message_id: "10" }),
    ...["21", "22", "23"].map((id) => testItem(chat, id, { reply_to_message_id: "20" })),
    testItem(chat, "30", { reply_to_message_id: "20" }),
    ...["31", "32", "33", "34"].map((id) => testItem(chat, id, { reply_to_message_id: "30" })),
    testItem(chat, "40", { reply_to_message_id: "30" }),
    ...["41", "42"].map((id) => testItem(chat, id, { reply_to_message_id: "40" })),
    testItem(chat, "99", { reply_to_message_id: "40" }) // after the current message: never taken
  ]
  const isolated = { recency_window: 0, reply_context_window: 0 } as const

  it.effect("walks the chain with side replies, nearest first, reporting the per-message cut", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(chain, isolated)
      const context = yield* loader.load(request("50", { reply_to_message_id: "40" }))
      assert.deepStrictEqual(context.chain, {
        message_ids: ["40", "30", "20", "10"],
        side_reply_ids: ["41", "42", "32", "33", "34", "21", "22", "23", "11", "12", "13"],
        truncated_by: ["side_replies_per_message"],
        missing_parent_id: null
      })
      assert.deepStrictEqual(ids(context), ["10", "11", "12", "13", "20", "21", "22", "23", "30", "32", "33", "34", "40", "41", "42"])
    }))

  it.effect("chain_max_messages bounds the chain (the target counts) and is reported", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(chain, { ...isolated, chain_max_messages: 2, chain_side_replies_per_message: 0 })
      const context = yield* loader.load(request("50", { reply_to_message_id: "40" }))
      assert.deepStrictEqual(context.chain?.message_ids, ["40", "30"])
      assert.deepStrictEqual(context.chain?.truncated_by, ["chain_max_messages"])
      assert.deepStrictEqual(ids(context), ["30", "40"])
    }))

  it.effect("chain_side_replies_total bounds side replies in all and is reported", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(chain, { ...isolated, chain_side_replies_total: 6 })
      const context = yield* loader.load(request("50", { reply_to_message_id: "40" }))
      assert.deepStrictEqual(context.chain?.side_reply_ids, ["41", "42", "32", "33", "34", "23"])
      assert.deepStrictEqual(context.chain?.truncated_by, ["side_replies_per_message", "side_replies_total"])
    }))

  it.effect("the default bounds are 8 messages of chain, 3 side replies per message, 12 in all", () =>
    Effect.gen(function*() {
      assert.strictEqual(ContextLoader.defaults.chain_max_messages, 8)
      assert.strictEqual(ContextLoader.defaults.chain_side_replies_per_message, 3)
      assert.strictEqual(ContextLoader.defaults.chain_side_replies_total, 12)
      // A 20-deep chain, each link with 2 side replies.
      const items: Array<HistoryItem> = []
      for (let k = 1; k <= 20; k++) {
        items.push(testItem(chat, String(k * 10), k > 1 ? { reply_to_message_id: String((k - 1) * 10) } : {}))
        items.push(testItem(chat, String(k * 10 + 1), { reply_to_message_id: String(k * 10) }))
        items.push(testItem(chat, String(k * 10 + 2), { reply_to_message_id: String(k * 10) }))
      }
      const { loader } = yield* setup(items, isolated)
      const context = yield* loader.load(request("1000", { reply_to_message_id: "200" }))
      assert.strictEqual(context.chain?.message_ids.length, 8)
      assert.strictEqual(context.chain?.side_reply_ids.length, 12)
      assert.deepStrictEqual(context.chain?.truncated_by, ["chain_max_messages", "side_replies_total"])
    }))

  it.effect("a parent missing from the store ends the chain and is reported", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup([testItem(chat, "5", { reply_to_message_id: "4" }), testItem(chat, "6", { reply_to_message_id: "5" })], isolated)
      const context = yield* loader.load(request("7", { reply_to_message_id: "6" }))
      assert.deepStrictEqual(context.chain?.message_ids, ["6", "5"])
      assert.strictEqual(context.chain?.missing_parent_id, "4")
      assert.deepStrictEqual(context.chain?.truncated_by, [])
    }))

  it.effect("reply_chain off: no chain walk, target and its window only", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(chain, { ...isolated, reply_chain: false })
      const context = yield* loader.load(request("50", { reply_to_message_id: "40" }))
      assert.strictEqual(context.chain, null)
      assert.deepStrictEqual(ids(context), ["40"])
    }))
})

describe("ContextLoader configuration", () => {
  it.effect("configuration values respected: recency_window", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(30), { recency_window: 4 })
      assert.deepStrictEqual(ids(yield* loader.load(request("31"))), ["27", "28", "29", "30"])
      const none = yield* (yield* setup(line(30), { recency_window: 0 })).loader.load(request("31", { sent_at: t0 + 60 * minute }))
      assert.deepStrictEqual(ids(none), [])
      assert.strictEqual(none.gap?.previous_message_id, "30") // the gap still sees the previous message
    }))

  it.effect("configuration values respected: reply_context_window", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(40), { recency_window: 0, reply_context_window: 1, reply_chain: false })
      assert.deepStrictEqual(ids(yield* loader.load(request("41", { reply_to_message_id: "10" }))), ["9", "10", "11"])
      const zero = ContextLoader.make((yield* setup(line(40))).store, { recency_window: 0, reply_context_window: 0, reply_chain: false })
      assert.deepStrictEqual(ids(yield* zero.load(request("41", { reply_to_message_id: "10" }))), ["10"])
    }))

  it.effect("configuration values respected: gap_threshold_minutes", () =>
    Effect.gen(function*() {
      const { loader } = yield* setup(line(1), { gap_threshold_minutes: 60 })
      assert.strictEqual((yield* loader.load(request("2", { sent_at: t0 + 59 * minute }))).gap_note, null)
      assert.include((yield* loader.load(request("2", { sent_at: t0 + 61 * minute }))).gap_note ?? "", "about an hour")
    }))

  it.effect("configuration values respected: every DEIXIS_CONTEXT_* key, with the documented defaults", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(ContextLoader.defaults, {
        recency_window: 10,
        reply_context_window: 3,
        gap_threshold_minutes: 15,
        reply_chain: true,
        chain_max_messages: 8,
        chain_side_replies_per_message: 3,
        chain_side_replies_total: 12
      })
      const vars = {
        DEIXIS_CONTEXT_RECENCY_WINDOW: "2",
        DEIXIS_CONTEXT_REPLY_CONTEXT_WINDOW: "1",
        DEIXIS_CONTEXT_GAP_THRESHOLD_MINUTES: "5",
        DEIXIS_CONTEXT_REPLY_CHAIN: "false",
        DEIXIS_CONTEXT_CHAIN_MAX_MESSAGES: "4",
        DEIXIS_CONTEXT_CHAIN_SIDE_REPLIES_PER_MESSAGE: "1",
        DEIXIS_CONTEXT_CHAIN_SIDE_REPLIES_TOTAL: "2"
      }
      const settings = yield* Effect.withConfigProvider(ContextLoader.config, env(vars))
      assert.deepStrictEqual(settings, {
        recency_window: 2,
        reply_context_window: 1,
        gap_threshold_minutes: 5,
        reply_chain: false,
        chain_max_messages: 4,
        chain_side_replies_per_message: 1,
        chain_side_replies_total: 2
      })
      const context = yield* Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        yield* Effect.forEach(line(20), (item) => store.append(item), { discard: true })
        return yield* ContextLoader.load(request("21", { reply_to_message_id: "10", sent_at: t0 + 25 * minute }))
      }).pipe(
        Effect.provide(ContextLoader.layerConfig().pipe(Layer.provideMerge(HistoryStore.layerMemory()))),
        Effect.withConfigProvider(env(vars))
      )
      assert.deepStrictEqual(ids(context), ["9", "10", "11", "19", "20"])
      assert.strictEqual(context.chain, null)
      assert.include(context.gap_note ?? "", "6 minutes")
      for (const [key, value] of [["DEIXIS_CONTEXT_RECENCY_WINDOW", "-1"], ["DEIXIS_CONTEXT_CHAIN_MAX_MESSAGES", "0"], ["DEIXIS_CONTEXT_GAP_THRESHOLD_MINUTES", "soon"]] as const) {
        const bad = yield* Effect.either(Effect.withConfigProvider(ContextLoader.config, env({ [key]: value })))
        assert.isTrue(Either.isLeft(bad), key)
      }
    }))
})

describe("ContextLoader properties", () => {
  it.effect("property: no message ever appears twice in a loaded context; it is ordered by position and before the current message", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(
          historyArb(chat, 40),
          fc.nat({ max: 45 }),
          fc.option(fc.nat({ max: 45 }), { nil: null }),
          fc.record({
            recency_window: fc.nat({ max: 12 }),
            reply_context_window: fc.nat({ max: 5 }),
            reply_chain: fc.boolean(),
            chain_max_messages: fc.integer({ min: 1, max: 10 }),
            chain_side_replies_per_message: fc.nat({ max: 4 }),
            chain_side_replies_total: fc.nat({ max: 13 })
          }),
          fc.array(fc.tuple(fc.nat({ max: 45 }), fc.nat({ max: 45 })), { maxLength: 20 }),
          async (items, currentIndex, replyTo, settings, links) => {
            // Random reply links (any direction, loops included) over the generated history.
            const linked = items.map((item, i) => {
              const link = links.find(([from]) => from === i)
              return link === undefined ? item : { ...item, reply_to_message_id: String(link[1] + 1) }
            })
            const context = await Effect.runPromise(Effect.gen(function*() {
              const { loader } = yield* setup(linked, settings)
              return yield* loader.load(request(String(currentIndex + 1), {
                reply_to_message_id: replyTo === null ? null : String(replyTo + 1),
                sent_at: t0
              }))
            }))
            const keys = context.entries.map(HistoryStore.entryKey)
            assert.strictEqual(new Set(keys).size, keys.length)
            const ids = context.messages.flatMap((m) => (m.message_id === null ? [] : [m.message_id]))
            assert.strictEqual(new Set(ids).size, ids.length)
            for (let i = 1; i < context.entries.length; i++) {
              assert.isBelow(HistoryStore.comparePositions(context.entries[i - 1]!, context.entries[i]!), 0)
            }
            const bound = { anchor: String(currentIndex + 1), seq: 0 }
            assert.isTrue(context.entries.every((e) => HistoryStore.comparePositions(e, bound) < 0))
            if (context.chain !== null) {
              assert.isAtMost(context.chain.message_ids.length, settings.chain_max_messages)
              assert.isAtMost(context.chain.side_reply_ids.length, settings.chain_side_replies_total)
            }
          }
        )
      )
    ))
})
