import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as HistoryItem from "../src/HistoryItem.js"
import * as fc from "fast-check"
import { item as arbitraryItem } from "./arbitraries.js"
import { captureLogs } from "./logs.js"

const wire = {
  channel: "telegram",
  kind: "inbound_user",
  chat_id: -1001234567890,
  sent_at: "2026-02-13T08:20:10Z",
  sender: { user_id: 1001, username: "alice", nickname: "Alice", display_ref: "[Alice](tg:@alice)" },
  text: "Please review [Bob](tg:@bob)'s update."
}

describe("HistoryItem", () => {
  it.effect("ChatHistoryItem field completeness validation: required fields, defaults for the rest", () =>
    Effect.gen(function*() {
      const item = yield* HistoryItem.decode(wire)
      assert.deepStrictEqual(item, {
        channel: "telegram",
        kind: "inbound_user",
        chat_id: "-1001234567890",
        topic_id: null,
        chat_type: null,
        message_id: null,
        reply_to_message_id: null,
        bot_response_id: null,
        sent_at: Date.UTC(2026, 1, 13, 8, 20, 10),
        sender: { user_id: "1001", username: "alice", nickname: "Alice", is_bot: false, display_ref: "[Alice](tg:@alice)" },
        text: "Please review [Bob](tg:@bob)'s update.",
        quote: null,
        attachments: []
      })
      for (const field of ["channel", "kind", "chat_id", "sent_at", "sender", "text"] as const) {
        const { [field]: _, ...missing } = wire
        const result = yield* Effect.either(HistoryItem.decode(missing))
        assert.isTrue(Either.isLeft(result), field)
        if (Either.isLeft(result)) {
          assert.strictEqual(result.left._tag, "InvalidEvent")
          assert.strictEqual(result.left.path, field)
        }
      }
      const nested = yield* Effect.either(HistoryItem.decode({ ...wire, sender: { nickname: "A" } }))
      assert.isTrue(Either.isLeft(nested) && nested.left.path === "sender.display_ref")
      const kind = yield* Effect.either(HistoryItem.decode({ ...wire, kind: "inbound_edit" }))
      assert.isTrue(Either.isLeft(kind) && kind.left.path === "kind")
      for (const k of HistoryItem.Kind.literals) {
        assert.strictEqual((yield* HistoryItem.decode({ ...wire, kind: k })).kind, k)
      }
    }))

  it.effect("sent_at is UTC: an offset time decodes to the same instant and encodes as RFC 3339 Z", () =>
    Effect.gen(function*() {
      const item = yield* HistoryItem.decode({ ...wire, sent_at: "2026-02-13T11:20:10+03:00" })
      assert.strictEqual(item.sent_at, Date.UTC(2026, 1, 13, 8, 20, 10))
      assert.strictEqual(HistoryItem.encode(item).sent_at, "2026-02-13T08:20:10.000Z")
      const local = yield* Effect.either(HistoryItem.decode({ ...wire, sent_at: "2026-02-13 08:20" }))
      assert.isTrue(Either.isLeft(local) && local.left.path === "sent_at")
    }))

  it("quote rendering to a > blockquote, every line quoted", () => {
    assert.strictEqual(
      HistoryItem.quoteBlock("[Carol](tg:@carol)", "I will add details tomorrow."),
      "> [Carol](tg:@carol): I will add details tomorrow."
    )
    assert.strictEqual(HistoryItem.quoteBlock("[Bob](tg:@bob)", "one\r\ntwo\n\nfour"), "> [Bob](tg:@bob): one\n> two\n>\n> four")
    assert.strictEqual(HistoryItem.quoteBlock(null, "anonymous"), "> anonymous")
  })

  it.effect("make formats sender and quote with the one people formatter and normalises mentions in both", () =>
    Effect.gen(function*() {
      const item = yield* HistoryItem.make({
        kind: "inbound_user",
        chat_id: "-100",
        topic_id: "5",
        chat_type: "supergroup",
        message_id: "77",
        reply_to_message_id: "70",
        sent_at: Date.UTC(2026, 1, 13, 8, 20, 10),
        sender: { user_id: "1", username: "alice", first_name: "Alice" },
        text: "@bob see above",
        entities: [{ type: "mention", offset: 0, length: 4 }],
        people: [{ username: "bob", display_name: "Bob" }],
        quote: { sender: { username: "carol", first_name: "Carol" }, text: "ask @bob", entities: [{ type: "mention", offset: 4, length: 4 }] },
        attachments: [{ kind: "photo" }]
      })
      assert.strictEqual(item.sender.display_ref, "[Alice](tg:@alice)")
      assert.strictEqual(item.text, "[Bob](tg:@bob) see above")
      assert.deepStrictEqual(item.quote, {
        sender_ref: "[Carol](tg:@carol)",
        text: "ask [Bob](tg:@bob)",
        markdown_block: "> [Carol](tg:@carol): ask [Bob](tg:@bob)"
      })
      assert.strictEqual(item.channel, "telegram")
      assert.deepStrictEqual(item.attachments, [{ kind: "photo" }])
      // A built item is a valid wire item.
      assert.deepStrictEqual(yield* HistoryItem.decode(HistoryItem.encode(item)), item)
    }))

  it.effect("make logs a warning for a missing username and still builds the item", () =>
    Effect.gen(function*() {
      const { logs, result } = yield* captureLogs(HistoryItem.make({
        kind: "inbound_user",
        chat_id: "1",
        message_id: "2",
        sent_at: 0,
        sender: { user_id: "9", first_name: "Nameless" },
        text: "hi Erin",
        entities: [{ type: "text_mention", offset: 3, length: 4, user: { id: "10", first_name: "Erin" } }]
      }))
      assert.strictEqual(result.sender.display_ref, "Nameless")
      assert.strictEqual(result.text, "hi Erin")
      assert.deepStrictEqual(logs.map((l) => l.level), ["WARN", "WARN"])
      assert.include(logs[0]?.message ?? "", "no username for user 9")
      assert.strictEqual(logs[0]?.annotations["chat_id"], "1")
    }))

  it.effect("the bot's reply takes its time from the Clock (UTC now)", () =>
    Effect.gen(function*() {
      yield* TestClock.adjust("90 seconds")
      const item = yield* HistoryItem.make({
        kind: "outbound_agent",
        chat_id: "1",
        message_id: "3",
        sender: { username: "mistermorph_bot", display_name: "MisterMorph", is_bot: true },
        text: "Got it, I will organize it first."
      })
      assert.strictEqual(item.sent_at, 90_000)
      assert.isTrue(item.sender.is_bot)
      assert.strictEqual(item.sender.display_ref, "[MisterMorph](tg:@mistermorph_bot)")
    }))

  it("toMessageMeta derives core's message metadata from the same item (one decode feeds both)", () => {
    const built = HistoryItem.build({
      kind: "outbound_agent",
      chat_id: "1",
      topic_id: "4",
      message_id: "3",
      reply_to_message_id: "2",
      sender: { user_id: "99", username: "bot" },
      text: "x"
    }, 5)
    assert.deepStrictEqual(Option.getOrThrow(HistoryItem.toMessageMeta(built.item)), {
      chat_id: "1",
      message_id: "3",
      topic_id: "4",
      reply_to_message_id: "2",
      sender_user_id: "99",
      from_bot: true,
      sent_at: 5
    })
    assert.isTrue(Option.isNone(HistoryItem.toMessageMeta({ ...built.item, message_id: null })))
  })

  it("an item moved to the chat its chat migrated into keeps everything but its chat and its ids, which are marked as carried over", () => {
    const built = HistoryItem.build({
      kind: "outbound_agent",
      chat_id: "-5",
      message_id: "3",
      reply_to_message_id: "2",
      sender: { user_id: "99", username: "bot" },
      text: "x"
    }, 5)
    const item = { ...built.item, bot_response_id: "4" }
    const moved = HistoryItem.toMigratedChat(item, "-1009")
    assert.deepStrictEqual(moved, { ...item, chat_id: "-1009", message_id: "~3", reply_to_message_id: "~2", bot_response_id: "~4" })
    // An item without a message (a reaction) keeps its null ids.
    const reaction = HistoryItem.toMigratedChat({ ...item, message_id: null, bot_response_id: null }, "-1009")
    assert.deepStrictEqual([reaction.message_id, reaction.reply_to_message_id, reaction.bot_response_id], [null, "~2", null])
  })

  it("property: encodeTrusted is Schema's encode, byte for byte, for any valid item", () => {
    const forward = fc.option(fc.record({
      origin: fc.constantFrom("user" as const, "hidden_user" as const, "chat" as const, "channel" as const),
      sender_ref: fc.string({ maxLength: 40 }),
      sent_at: fc.integer({ min: 0, max: 4_102_444_800_000 }),
      automatic: fc.boolean()
    }), { nil: undefined })
    fc.assert(fc.property(
      arbitraryItem("c"),
      fc.option(fc.integer({ min: 0, max: 4_102_444_800_000 }), { nil: undefined }),
      forward,
      fc.option(fc.constant("album-1"), { nil: undefined }),
      fc.option(fc.constant("reply" as const), { nil: undefined }),
      fc.option(fc.constant("reaction:1"), { nil: undefined }),
      (base, edited_at, fwd, album_id, seen_via, event_id) => {
        const item: HistoryItem.HistoryItem = {
          ...base,
          message_id: "7",
          ...(edited_at === undefined ? {} : { edited_at }),
          ...(fwd === undefined ? {} : { forward: fwd }),
          ...(album_id === undefined ? {} : { album_id }),
          ...(seen_via === undefined ? {} : { seen_via }),
          ...(event_id === undefined ? {} : { event_id })
        }
        assert.strictEqual(JSON.stringify(HistoryItem.encodeTrusted(item)), JSON.stringify(HistoryItem.encode(item)))
      }
    ))
  })
})
