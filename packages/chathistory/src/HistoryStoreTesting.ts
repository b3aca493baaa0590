/**
 * The contract suite of the {@link HistoryStore.HistoryStore} port. Every adapter (memory,
 * SQLite, Postgres) runs the very same cases with the same expectations:
 *
 * ```ts
 * import { historyStoreContract } from "@deixis/chathistory/HistoryStoreTesting"
 * historyStoreContract("sqlite", SqliteHistoryStore.layer)
 * ```
 *
 * Cases use chat ids unique to each run, so an adapter over a persistent database may share
 * one layer between cases and runs. Needs `@effect/vitest` and `vitest` (optional peers).
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { HistoryItem } from "./HistoryItem.js"
import * as HistoryStore from "./HistoryStore.js"

const base = Date.UTC(2026, 1, 13, 8, 20, 10)

/**
 * A plain inbound item for tests: `overrides` replace any field.
 *
 * @since 0.1.0
 * @category testing
 */
export const testItem = (
  chatId: string,
  messageId: string | null,
  overrides: Partial<HistoryItem> = {}
): HistoryItem => ({
  channel: "telegram",
  kind: "inbound_user",
  chat_id: chatId,
  topic_id: null,
  chat_type: "supergroup",
  message_id: messageId,
  reply_to_message_id: null,
  bot_response_id: null,
  sent_at: base,
  sender: {
    user_id: "1001",
    username: "alice",
    nickname: "Alice",
    is_bot: false,
    display_ref: "[Alice](tg:@alice)"
  },
  text: `message ${messageId ?? "without id"}`,
  quote: null,
  attachments: [],
  ...overrides
})

const ids = (entries: ReadonlyArray<HistoryStore.HistoryEntry>) => entries.map((e) => e.item.message_id)

/**
 * Registers the store contract as a `describe` block named after the adapter.
 *
 * @since 0.1.0
 * @category testing
 */
export const historyStoreContract = <E>(
  name: string,
  storeLayer: Layer.Layer<HistoryStore.HistoryStore, E>
): void => {
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`
  let counter = 0
  const chat = (label: string) => `contract-${run}-${++counter}-${label}`
  const appendAll = (store: HistoryStore.HistoryStoreShape, items: ReadonlyArray<HistoryItem>) =>
    Effect.forEach(items, (item) => store.append(item), { discard: true })

  layer(storeLayer)(`HistoryStore contract: ${name}`, (it) => {
    it.effect("an appended item reads back exactly by its message id", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("roundtrip")
        const item = testItem(chatId, "42", {
          topic_id: "7",
          kind: "outbound_agent",
          reply_to_message_id: "41",
          sent_at: base + 1234,
          sender: { user_id: null, username: null, nickname: "Bot", is_bot: true, display_ref: "Bot" },
          text: "naïve 🧮 \"quoted\" \\ back\nslash — [x](y)",
          quote: { sender_ref: "[Bob](tg:@bob)", text: "two\nlines", markdown_block: "> [Bob](tg:@bob): two\n> lines" },
          attachments: [{ kind: "document", name: "report.pdf" }, { kind: "photo" }]
        })
        const result = yield* store.append(item)
        assert.strictEqual(result, "appended")
        const found = yield* store.lookup({ chat_id: chatId, topic_id: "7" }, "42")
        assert.deepStrictEqual(Option.getOrThrow(found).item, item)
        const byNumber = yield* store.lookup({ chat_id: chatId, topic_id: "7" }, 42)
        assert.deepStrictEqual(Option.getOrThrow(byNumber).item, item)
      }))

    it.effect("an id never stored finds nothing", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("unknown")
        yield* store.append(testItem(chatId, "1"))
        assert.isTrue(Option.isNone(yield* store.lookup({ chat_id: chatId, topic_id: null }, "2")))
        assert.isTrue(Option.isNone(yield* store.lookup({ chat_id: chat("nochat"), topic_id: null }, "1")))
      }))

    it.effect("an invalid external id finds nothing and never fails", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("invalid")
        const scope = { chat_id: chatId, topic_id: null }
        yield* store.append(testItem(chatId, "1"))
        const invalid: ReadonlyArray<string | number> = ["", 1.5, Number.NaN, Number.POSITIVE_INFINITY, "9".repeat(300)]
        for (const id of invalid) {
          assert.isTrue(Option.isNone(yield* store.lookup(scope, id)), `lookup(${String(id)})`)
          assert.deepStrictEqual(yield* store.around(scope, id, { before: 3, after: 3 }), [])
          assert.isFalse(yield* store.recordResponse(scope, id, "2"))
          assert.isFalse(yield* store.recordResponse(scope, "1", id))
        }
        // Hostile but well-formed ids are just ids nobody stored.
        for (const id of ["' OR 1=1 --", "1; DROP TABLE history", "%", "_", "1\u0000"]) {
          assert.isTrue(Option.isNone(yield* store.lookup(scope, id)), `lookup(${JSON.stringify(id)})`)
        }
        assert.isTrue(Option.isSome(yield* store.lookup(scope, 1)))
      }))

    it.effect("the id of the bot's response finds the message it answered", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("response")
        const scope = { chat_id: chatId, topic_id: "3" }
        yield* store.append(testItem(chatId, "10", { topic_id: "3" }))
        assert.isTrue(yield* store.recordResponse(scope, "10", 11))
        const viaResponse = Option.getOrThrow(yield* store.lookup(scope, "11"))
        assert.strictEqual(viaResponse.item.message_id, "10")
        assert.strictEqual(viaResponse.item.bot_response_id, "11")
        // Once the response itself is stored, its id finds the response.
        yield* store.append(testItem(chatId, "11", { topic_id: "3", kind: "outbound_agent", reply_to_message_id: "10" }))
        assert.strictEqual(Option.getOrThrow(yield* store.lookup(scope, "11")).item.kind, "outbound_agent")
        // An item appended with bot_response_id is found by it too.
        yield* store.append(testItem(chatId, "20", { topic_id: "3", bot_response_id: "21" }))
        assert.strictEqual(Option.getOrThrow(yield* store.lookup(scope, 21)).item.message_id, "20")
        assert.isFalse(yield* store.recordResponse(scope, "99", "100"))
      }))

    it.effect("appendAllResponding appends, then links each answered message to the bot's answer, in one write", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("responding")
        const scope = { chat_id: chatId, topic_id: "3" }
        yield* store.append(testItem(chatId, "10", { topic_id: "3" }))
        yield* store.append(testItem(chatId, "12", { topic_id: "4" }))
        const reply = testItem(chatId, "11", { topic_id: "3", kind: "outbound_agent", reply_to_message_id: "10" })
        const results = yield* store.appendAllResponding([reply, testItem(chatId, "13", { topic_id: "3" })], [
          { scope, message_id: "10", response_id: 11 },
          // A message of the same call is linked too; one in another topic, or never stored, is not.
          { scope, message_id: 13, response_id: "14" },
          { scope, message_id: "12", response_id: "15" },
          { scope, message_id: "99", response_id: "100" },
          { scope, message_id: "", response_id: "16" }
        ])
        assert.deepStrictEqual(results, ["appended", "appended"])
        const answered = Option.getOrThrow(yield* store.lookup(scope, "10")).item
        assert.strictEqual(answered.bot_response_id, "11")
        assert.deepStrictEqual(Option.getOrThrow(yield* store.lookup(scope, "11")).item, reply)
        assert.strictEqual(Option.getOrThrow(yield* store.lookup(scope, "13")).item.bot_response_id, "14")
        assert.strictEqual(Option.getOrThrow(yield* store.lookup({ chat_id: chatId, topic_id: "4" }, "12")).item.bot_response_id, null)
        assert.isTrue(Option.isNone(yield* store.lookup(scope, "99")))
        // Responses alone are written too.
        assert.deepStrictEqual(yield* store.appendAllResponding([], [{ scope, message_id: "10", response_id: "17" }]), [])
        assert.strictEqual(Option.getOrThrow(yield* store.lookup(scope, "10")).item.bot_response_id, "17")
      }))

    it.effect("reads are scoped by chat and topic", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const a = chat("scope-a")
        const b = chat("scope-b")
        yield* appendAll(store, [
          testItem(a, "1", { topic_id: null, text: "a general" }),
          testItem(a, "2", { topic_id: "5", text: "a topic 5" }),
          testItem(a, "3", { topic_id: "6", text: "a topic 6" }),
          testItem(b, "1", { topic_id: null, text: "b general" })
        ])
        assert.strictEqual(Option.getOrThrow(yield* store.lookup({ chat_id: a, topic_id: null }, "1")).item.text, "a general")
        assert.strictEqual(Option.getOrThrow(yield* store.lookup({ chat_id: b, topic_id: null }, "1")).item.text, "b general")
        assert.isTrue(Option.isNone(yield* store.lookup({ chat_id: a, topic_id: "5" }, "1")))
        assert.isTrue(Option.isNone(yield* store.lookup({ chat_id: a, topic_id: null }, "2")))
        assert.isTrue(Option.isNone(yield* store.lookup({ chat_id: a, topic_id: "6" }, "2")))
        assert.deepStrictEqual(ids(yield* store.recent({ chat_id: a, topic_id: "5" }, 10)), ["2"])
        assert.deepStrictEqual(ids(yield* store.recent({ chat_id: a, topic_id: null }, 10)), ["1"])
        assert.deepStrictEqual(ids(yield* store.around({ chat_id: a, topic_id: "6" }, "3", { before: 5, after: 5 })), ["3"])
        assert.deepStrictEqual(yield* store.recent({ chat_id: a, topic_id: "null" }, 10), [])
      }))

    it.effect("around is by position, not timestamp: same-second and out-of-order messages", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("around")
        const scope = { chat_id: chatId, topic_id: null }
        // All in the same second, arriving out of order; one carries an earlier timestamp.
        yield* appendAll(store, ["5", "3", "4", "1", "2", "6", "7"].map((id) =>
          testItem(chatId, id, { sent_at: id === "6" ? base - 60_000 : base })
        ))
        assert.deepStrictEqual(ids(yield* store.around(scope, "4", { before: 2, after: 2 })), ["2", "3", "4", "5", "6"])
        assert.deepStrictEqual(ids(yield* store.around(scope, "2", { before: 3, after: 1 })), ["1", "2", "3"])
        assert.deepStrictEqual(ids(yield* store.around(scope, "7", { before: 1, after: 3 })), ["6", "7"])
        assert.deepStrictEqual(ids(yield* store.around(scope, "4", { before: 0, after: 0 })), ["4"])
        assert.deepStrictEqual(yield* store.around(scope, "8", { before: 3, after: 3 }), [])
      }))

    it.effect("positions compare numerically: 9 comes before 10", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("numeric")
        const scope = { chat_id: chatId, topic_id: null }
        yield* appendAll(store, ["100", "8", "10", "9", "11"].map((id) => testItem(chatId, id)))
        assert.deepStrictEqual(ids(yield* store.around(scope, "10", { before: 1, after: 1 })), ["9", "10", "11"])
        assert.deepStrictEqual(ids(yield* store.recent(scope, 10)), ["8", "9", "10", "11", "100"])
        assert.deepStrictEqual(ids(yield* store.recent(scope, 2, { before: "11" })), ["9", "10"])
      }))

    it.effect("recent returns the newest N, oldest first, without a time cutoff", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("recent")
        const scope = { chat_id: chatId, topic_id: null }
        const year = 365 * 24 * 3600 * 1000
        yield* appendAll(store, Array.from({ length: 15 }, (_, i) => testItem(chatId, String(i + 1), { sent_at: base - (15 - i) * year })))
        assert.deepStrictEqual(ids(yield* store.recent(scope, 10)), ["6", "7", "8", "9", "10", "11", "12", "13", "14", "15"])
        assert.deepStrictEqual(ids(yield* store.recent(scope, 100)).length, 15)
        assert.deepStrictEqual(yield* store.recent(scope, 0), [])
      }))

    it.effect("recent before a message excludes it and everything after it, stored or not", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("before")
        const scope = { chat_id: chatId, topic_id: null }
        yield* appendAll(store, ["1", "2", "3", "5", "6"].map((id) => testItem(chatId, id)))
        assert.deepStrictEqual(ids(yield* store.recent(scope, 10, { before: "5" })), ["1", "2", "3"])
        assert.deepStrictEqual(ids(yield* store.recent(scope, 2, { before: "4" })), ["2", "3"])
        assert.deepStrictEqual(ids(yield* store.recent(scope, 10, { before: "1" })), [])
      }))

    it.effect("re-appending a message id replaces the item in place, never duplicates it", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("replace")
        const scope = { chat_id: chatId, topic_id: null }
        yield* appendAll(store, ["1", "2", "3"].map((id) => testItem(chatId, id)))
        const result = yield* store.append(testItem(chatId, "2", { text: "edited" }))
        assert.strictEqual(result, "replaced")
        const recent = yield* store.recent(scope, 10)
        assert.deepStrictEqual(ids(recent), ["1", "2", "3"])
        assert.strictEqual(recent[1]?.item.text, "edited")
      }))

    it.effect("an item without a message id follows the newest message of its topic", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("reaction")
        const scope = { chat_id: chatId, topic_id: null }
        yield* appendAll(store, [
          testItem(chatId, "1"),
          testItem(chatId, "2"),
          testItem(chatId, null, { kind: "inbound_reaction", reply_to_message_id: "1", text: "👍" }),
          testItem(chatId, "3"),
          testItem(chatId, null, { kind: "inbound_reaction", reply_to_message_id: "3", text: "🔥" })
        ])
        const recent = yield* store.recent(scope, 10)
        assert.deepStrictEqual(recent.map((e) => e.item.message_id ?? e.item.text), ["1", "2", "👍", "3", "🔥"])
        assert.deepStrictEqual(ids(yield* store.recent(scope, 10, { before: "3" })), ["1", "2", null])
        const again = yield* store.recent(scope, 10)
        assert.deepStrictEqual(recent.map(HistoryStore.entryKey), again.map(HistoryStore.entryKey))
        assert.strictEqual(new Set(recent.map(HistoryStore.entryKey)).size, 5)
        assert.deepStrictEqual(ids(yield* store.around(scope, "2", { before: 0, after: 1 })), ["2", null])
      }))

    it.effect("replies are the newest replies to a message, oldest first, in scope and before a bound", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("replies")
        const scope = { chat_id: chatId, topic_id: "1" }
        yield* appendAll(store, [
          testItem(chatId, "1", { topic_id: "1" }),
          testItem(chatId, "2", { topic_id: "1", reply_to_message_id: "1" }),
          testItem(chatId, "4", { topic_id: "1", reply_to_message_id: "1" }),
          testItem(chatId, "3", { topic_id: "1", reply_to_message_id: "1" }),
          testItem(chatId, "5", { topic_id: "1", reply_to_message_id: "2" }),
          testItem(chatId, "6", { topic_id: "1", reply_to_message_id: "1" }),
          testItem(chatId, "7", { topic_id: "2", reply_to_message_id: "1" })
        ])
        assert.deepStrictEqual(ids(yield* store.replies(scope, "1", { limit: 10 })), ["2", "3", "4", "6"])
        assert.deepStrictEqual(ids(yield* store.replies(scope, "1", { limit: 2 })), ["4", "6"])
        assert.deepStrictEqual(ids(yield* store.replies(scope, "1", { limit: 10, before: "4" })), ["2", "3"])
        assert.deepStrictEqual(ids(yield* store.replies(scope, "2", { limit: 10 })), ["5"])
        assert.deepStrictEqual(yield* store.replies(scope, "5", { limit: 10 }), [])
        assert.deepStrictEqual(yield* store.replies(scope, "1", { limit: 0 }), [])
      }))

    it.effect("a copy seen only inside a reply never overwrites the message; the message replaces such a copy", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("seen-via-reply")
        const scope = { chat_id: chatId, topic_id: null }
        yield* store.append(testItem(chatId, "1", { text: "the message", reply_to_message_id: "0" }))
        assert.strictEqual(yield* store.append(testItem(chatId, "1", { text: "embedded copy", seen_via: "reply" })), "unchanged")
        assert.strictEqual((yield* store.recent(scope, 5))[0]?.item.text, "the message")
        assert.strictEqual(yield* store.append(testItem(chatId, "2", { text: "only seen in a reply", seen_via: "reply" })), "appended")
        assert.strictEqual(yield* store.append(testItem(chatId, "2", { text: "seen again in a reply", seen_via: "reply" })), "replaced")
        assert.strictEqual(yield* store.append(testItem(chatId, "2", { text: "the message itself" })), "replaced")
        const second = Option.getOrThrow(yield* store.lookup(scope, "2")).item
        assert.deepStrictEqual([second.text, second.seen_via], ["the message itself", undefined])
      }))

    it.effect("an edit replaces the item; a redelivered original or an older edit changes nothing; the bot's response survives", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("edits")
        const scope = { chat_id: chatId, topic_id: null }
        const original = testItem(chatId, "1", { text: "v1" })
        yield* store.append(original)
        yield* store.recordResponse(scope, "1", "90")
        const edit = (minute: number, text: string) => testItem(chatId, "1", { text, edited_at: base + minute * 60_000 })
        assert.strictEqual(yield* store.append(edit(5, "v3")), "replaced")
        assert.strictEqual(yield* store.append(edit(2, "v2")), "unchanged")
        assert.strictEqual(yield* store.append(original), "unchanged")
        assert.strictEqual(yield* store.append(edit(5, "v3")), "replaced")
        const item = Option.getOrThrow(yield* store.lookup(scope, "1")).item
        assert.deepStrictEqual([item.text, item.edited_at, item.bot_response_id], ["v3", base + 5 * 60_000, "90"])
        assert.deepStrictEqual(ids(yield* store.recent(scope, 5)), ["1"])
      }))

    it.effect("an older edit applied after a newer one does not overwrite it", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("older-edit")
        const scope = { chat_id: chatId, topic_id: null }
        const at = (minute: number) => base + minute * 60_000
        const edit = (minute: number, text: string, extra: Partial<HistoryItem> = {}) =>
          testItem(chatId, "1", { text, edited_at: at(minute), attachments: [{ kind: "photo", name: text }], ...extra })
        yield* store.append(testItem(chatId, "1", { text: "v1", reply_to_message_id: "0" }))
        assert.strictEqual(yield* store.append(edit(9, "v3", { reply_to_message_id: "0" })), "replaced")
        assert.strictEqual(yield* store.append(edit(4, "v2", { reply_to_message_id: "0" })), "unchanged")
        const kept = Option.getOrThrow(yield* store.lookup(scope, "1")).item
        assert.deepStrictEqual([kept.text, kept.edited_at, kept.attachments], ["v3", at(9), [{ kind: "photo", name: "v3" }]])
        // A copy seen in a reply shows a newer edit than the message stored: its content is
        // taken, the message's own reply target stays; an older edit after it changes nothing.
        assert.strictEqual(yield* store.append(edit(12, "v4", { seen_via: "reply" })), "replaced")
        assert.strictEqual(yield* store.append(edit(10, "v3.5", { reply_to_message_id: "0" })), "unchanged")
        const newer = Option.getOrThrow(yield* store.lookup(scope, "1")).item
        assert.deepStrictEqual(
          [newer.text, newer.edited_at, newer.attachments, newer.reply_to_message_id, newer.seen_via],
          ["v4", at(12), [{ kind: "photo", name: "v4" }], "0", undefined]
        )
        // Known only from a reply's copy, then the message itself as of an older edit: its reply
        // target, not its text.
        const copy = testItem(chatId, "2", { text: "v2 of 2", edited_at: at(20), seen_via: "reply" })
        assert.strictEqual(yield* store.append(copy), "appended")
        assert.strictEqual(yield* store.append(testItem(chatId, "2", { text: "v1 of 2", reply_to_message_id: "0" })), "replaced")
        const merged = Option.getOrThrow(yield* store.lookup(scope, "2")).item
        assert.deepStrictEqual(
          [merged.text, merged.edited_at, merged.reply_to_message_id, merged.seen_via],
          ["v2 of 2", at(20), "0", undefined]
        )
        assert.deepStrictEqual(ids(yield* store.replies(scope, "0", { limit: 5 })), ["1", "2"])
      }))

    it.effect("an edit of a message not yet observed, then the message itself", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("edit-first")
        const scope = { chat_id: chatId, topic_id: null }
        assert.strictEqual(yield* store.append(testItem(chatId, "5", { text: "edited", edited_at: base + 60_000 })), "appended")
        assert.strictEqual(yield* store.append(testItem(chatId, "5", { text: "original" })), "unchanged")
        assert.strictEqual(yield* store.append(testItem(chatId, "5", { text: "seen in a reply", seen_via: "reply" })), "unchanged")
        const item = Option.getOrThrow(yield* store.lookup(scope, "5")).item
        assert.deepStrictEqual([item.text, item.edited_at, item.seen_via], ["edited", base + 60_000, undefined])
        assert.deepStrictEqual(ids(yield* store.recent(scope, 5)), ["5"])
      }))

    it.effect("edits in the same second: the later arrival wins", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("same-second")
        const scope = { chat_id: chatId, topic_id: null }
        const edit = (text: string, extra: Partial<HistoryItem> = {}) =>
          testItem(chatId, "1", { text, edited_at: base + 60_000, ...extra })
        yield* store.append(testItem(chatId, "1", { text: "v1" }))
        assert.strictEqual(yield* store.append(edit("first of the second")), "replaced")
        assert.strictEqual(yield* store.append(edit("second of the second")), "replaced")
        assert.strictEqual(Option.getOrThrow(yield* store.lookup(scope, "1")).item.text, "second of the second")
        // A copy seen in a reply of the same edit time does not replace the message itself.
        assert.strictEqual(yield* store.append(edit("copy in a reply", { seen_via: "reply" })), "unchanged")
        assert.strictEqual(Option.getOrThrow(yield* store.lookup(scope, "1")).item.text, "second of the second")
      }))

    it.effect("an item without a message id is stored once per event_id", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("event-id")
        const scope = { chat_id: chatId, topic_id: null }
        const reaction = testItem(chatId, null, { kind: "inbound_reaction", reply_to_message_id: "1", text: "👍", event_id: "reaction:1:1001:5" })
        yield* store.append(testItem(chatId, "1"))
        assert.strictEqual(yield* store.append(reaction), "appended")
        assert.strictEqual(yield* store.append(reaction), "unchanged")
        assert.strictEqual(yield* store.append(testItem(chatId, null, { kind: "inbound_reaction", text: "👎" })), "appended")
        assert.deepStrictEqual((yield* store.recent(scope, 10)).map((e) => e.item.text), ["message 1", "👍", "👎"])
      }))

    it.effect("an item without a message id is replaced, in its position, by a newer one with its event_id", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("event-replaced")
        const scope = { chat_id: chatId, topic_id: null }
        const reaction = (text: string, seconds: number) =>
          testItem(chatId, null, { kind: "inbound_reaction", reply_to_message_id: "1", text, sent_at: base + seconds * 1000, event_id: "reaction:1:1001" })
        yield* store.append(testItem(chatId, "1"))
        assert.strictEqual(yield* store.append(reaction("👍", 10)), "appended")
        yield* store.append(testItem(chatId, "2"))
        assert.strictEqual(yield* store.append(reaction("❤️", 20)), "replaced")
        // Older, or the same again: nothing changes. The same second, something else: the later arrival.
        assert.strictEqual(yield* store.append(reaction("👎", 15)), "unchanged")
        assert.strictEqual(yield* store.append(reaction("❤️", 20)), "unchanged")
        assert.deepStrictEqual((yield* store.recent(scope, 10)).map((e) => e.item.text), ["message 1", "❤️", "message 2"])
        // Within one batch as one by one.
        const results = yield* store.appendAll([reaction("🔥", 30), reaction("🎉", 25), testItem(chatId, null, {
          kind: "inbound_reaction", reply_to_message_id: "2", text: "👀", event_id: "reaction:2:1001"
        }), testItem(chatId, null, {
          kind: "inbound_reaction", reply_to_message_id: "2", text: "👏", sent_at: base + 1000, event_id: "reaction:2:1001"
        })])
        assert.deepStrictEqual(results, ["replaced", "unchanged", "appended", "replaced"])
        assert.deepStrictEqual((yield* store.recent(scope, 10)).map((e) => e.item.text), ["message 1", "🔥", "message 2", "👏"])
        assert.deepStrictEqual((yield* store.replies(scope, "2", { limit: 5 })).map((e) => e.item.text), ["👏"])
      }))

    it.effect("retract removes the item stored under an event_id unless it is newer; an unknown one removes nothing", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("retract")
        const scope = { chat_id: chatId, topic_id: null }
        const reaction = (actor: string, seconds: number) =>
          testItem(chatId, null, { kind: "inbound_reaction", reply_to_message_id: "1", text: "👍", sent_at: base + seconds * 1000, event_id: `reaction:1:${actor}` })
        yield* store.append(testItem(chatId, "1"))
        yield* store.append(reaction("a", 10))
        yield* store.append(reaction("b", 30))
        assert.isFalse(yield* store.retract(chatId, "reaction:1:nobody", base + 60_000))
        assert.isFalse(yield* store.retract("never-seen-chat", "reaction:1:a", base + 60_000))
        // b reacted again after withdrawing; the withdrawal arrived late.
        assert.isFalse(yield* store.retract(chatId, "reaction:1:b", base + 20_000))
        assert.isTrue(yield* store.retract(chatId, "reaction:1:a", base + 20_000))
        assert.isFalse(yield* store.retract(chatId, "reaction:1:a", base + 20_000))
        const left = yield* store.recent(scope, 10)
        assert.deepStrictEqual(left.map((e) => [e.item.message_id, e.item.event_id]), [["1", undefined], [null, "reaction:1:b"]])
        assert.deepStrictEqual((yield* store.replies(scope, "1", { limit: 5 })).map((e) => e.item.event_id), ["reaction:1:b"])
        // Given again after the withdrawal: a new item.
        assert.strictEqual(yield* store.append(reaction("a", 40)), "appended")
      }))

    it.effect("appendAll appends in order, atomically, and reports each result", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const chatId = chat("append-all")
        const results = yield* store.appendAll([
          testItem(chatId, "2"),
          testItem(chatId, "1"),
          testItem(chatId, "2", { text: "again" }),
          testItem(chatId, "1", { text: "embedded", seen_via: "reply" })
        ])
        assert.deepStrictEqual(results, ["appended", "appended", "replaced", "unchanged"])
        assert.deepStrictEqual(ids(yield* store.recent({ chat_id: chatId, topic_id: null }, 10)), ["1", "2"])
      }))

    it.effect("a chat's items migrate to its new id once: re-keyed, and placed before the new chat's own", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore.HistoryStore
        const from = chat("migrate-old")
        const to = chat("migrate-new")
        yield* appendAll(store, [
          testItem(from, "1"),
          testItem(from, "2", { reply_to_message_id: "1", bot_response_id: "3" }),
          testItem(from, null, { kind: "inbound_reaction", reply_to_message_id: "2", text: "👍", event_id: "r1" }),
          // The new chat numbers its messages from 1 again.
          testItem(to, "1", { text: "first in the supergroup" })
        ])
        assert.strictEqual(yield* store.migrateChat(from, to), 3)
        assert.strictEqual(yield* store.migrateChat(from, to), 0)
        const scope = { chat_id: to, topic_id: null }
        const recent = yield* store.recent(scope, 10)
        assert.deepStrictEqual(recent.map((e) => [e.item.message_id, e.item.chat_id]), [
          ["~1", to], ["~2", to], [null, to], ["1", to]
        ])
        assert.deepStrictEqual(recent.map((e) => e.item.reply_to_message_id), [null, "~1", "~2", null])
        assert.deepStrictEqual(yield* store.recent({ chat_id: from, topic_id: null }, 10), [])
        // The bot's answer still finds the message it answered; ids of the new chat are its own.
        assert.strictEqual(Option.getOrThrow(yield* store.lookup(scope, "~3")).item.message_id, "~2")
        assert.strictEqual(Option.getOrThrow(yield* store.lookup(scope, "1")).item.text, "first in the supergroup")
        assert.deepStrictEqual(ids(yield* store.replies(scope, "~1", { limit: 5 })), ["~2"])
        assert.strictEqual(yield* store.append(testItem(to, null, { kind: "inbound_reaction", text: "👍", event_id: "r1" })), "unchanged")
        assert.deepStrictEqual(ids(yield* store.recent(scope, 10, { before: "1" })), ["~1", "~2", null])
      }))
  })
}
