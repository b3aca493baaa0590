import { ContextEventBatch, decodeEvents, toMigratedChat } from "@deixis/core/ContextEvent"
import * as Json from "@deixis/core/Json"
import * as HistoryItem from "@deixis/chathistory/HistoryItem"
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import { type MappedUpdate, mapMessage, mapUpdate, toMigratedChats } from "../src/UpdateMapper.js"
import * as Tg from "../src/internal/telegram.js"
import { corpus } from "../src/TelegramFixtures.js"
import * as F from "./fixtures/updates.js"

const options = { botId: String(F.botId), botUsername: F.botUsername }
const decodeItem = Schema.decodeUnknownEither(HistoryItem.HistoryItem)

// The message itself is the last event and item: a message replied to comes first.
const observed = (mapped: MappedUpdate) => {
  assert.strictEqual(mapped.skipped, undefined, mapped.skipped)
  assert.isAtLeast(mapped.events.length, 1)
  const event = mapped.events[mapped.events.length - 1]!
  assert.oneOf(event.type, ["message_observed", "message_edited"])
  return event as Extract<typeof event, { type: "message_observed" }>
}
const item = (mapped: MappedUpdate) => {
  assert.isAtLeast(mapped.history.length, 1)
  return mapped.history[mapped.history.length - 1]!
}

// Whatever comes out is what the consumers' Schemas hold: its wire form decodes back to it.
const encodeEvents = Schema.encodeEither(ContextEventBatch)
const assertConsumable = (mapped: MappedUpdate) => {
  const wire = encodeEvents(mapped.events)
  assert.isTrue(Either.isRight(wire), "events encode")
  assert.deepStrictEqual(decodeEvents(Either.getOrThrow(wire)), Either.right(mapped.events), "events decode to themselves")
  for (const h of mapped.history) {
    assert.deepStrictEqual(decodeItem(HistoryItem.encodeTrusted(h)), Either.right(h), "history item decodes to itself")
  }
}

describe("UpdateMapper: messages", () => {
  it("a forum topic message yields its topic, links by UTF-16 offsets, and a normalised mention", () => {
    const mapped = mapUpdate(F.topicTextWithLinks, options)
    const event = observed(mapped)
    assert.deepStrictEqual(event, {
      type: "message_observed",
      chat_id: "-1001234567890",
      message_id: "50",
      topic_id: "7",
      // Replying to the topic's creation message is how Telegram marks topic membership.
      reply_to_message_id: null,
      sender_user_id: "1001",
      direction: "inbound",
      sent_at: Date.parse("2026-02-13T16:26:40.000Z"),
      is_forum: true,
      chat_title: "Team",
      // Spans in UTF-16 code units: the emoji before them counts two.
      links: [
        { url: "https://example.com/rust", span: { offset: 7, length: 24 } },
        { url: "https://example.com/spec", title: "spec", span: { offset: 40, length: 4 } }
      ],
      media: []
    })
    const h = item(mapped)
    assert.strictEqual(h.kind, "inbound_user")
    assert.strictEqual(h.topic_id, "7")
    assert.strictEqual(h.sender.display_ref, "[Alice](tg:@alice)")
    assert.strictEqual(h.text, "😀 see https://example.com/rust and the spec, cc [@bob](tg:@bob)")
    assert.deepStrictEqual(mapped.scope, {
      chat_id: "-1001234567890",
      topic_id: "7",
      destination: { chat_id: "-1001234567890", message_thread_id: 7 },
      message_id: "50",
      reply_to_message_id: null,
      sender_user_id: "1001",
      chat_type: "supergroup"
    })
    assert.isFalse(mapped.addressed)
    assert.strictEqual(mapped.update_id, 100)
    assert.strictEqual(mapped.update_type, "message")
    assertConsumable(mapped)
  })

  it("a thread id on a plain reply chain is not a topic", () => {
    const event = observed(mapUpdate(F.plainReplyChain, options))
    assert.strictEqual(event.topic_id, null)
    assert.strictEqual(event.reply_to_message_id, "299")
  })

  it("a forum message without a thread is in the General topic", () => {
    const mapped = mapUpdate(F.generalTopic, options)
    assert.strictEqual(observed(mapped).topic_id, "1")
    assert.strictEqual(item(mapped).topic_id, "1")
  })

  it("a quoted reply keeps the reply target and the quote with its author", () => {
    const mapped = mapUpdate(F.topicReplyWithQuote, options)
    assert.strictEqual(observed(mapped).reply_to_message_id, "50")
    const h = item(mapped)
    assert.strictEqual(h.reply_to_message_id, "50")
    assert.deepStrictEqual(h.quote, {
      sender_ref: "[Alice](tg:@alice)",
      text: "see https://example.com/rust",
      markdown_block: "> [Alice](tg:@alice): see https://example.com/rust"
    })
  })

  it("an external reply in the same chat is a reply; its quote names the origin's author", () => {
    const mapped = mapUpdate(F.externalReply, options)
    const event = observed(mapped)
    assert.strictEqual(event.topic_id, "9")
    assert.strictEqual(event.reply_to_message_id, "41")
    assert.strictEqual(item(mapped).quote?.sender_ref, "Bob Stone")
  })

  it("attachments become media refs of the right kind, and attachment summaries", () => {
    const cases: ReadonlyArray<[unknown, unknown, unknown]> = [
      [F.photo, [{ kind: "media.image", file_id: "AgAC-large", label: "the cat @bob", span: { offset: 0, length: 12 } }], [{ kind: "photo" }]],
      [F.video, [{ kind: "media.video", file_id: "BAAC-video", label: "demo.mp4" }], [{ kind: "video", name: "demo.mp4" }]],
      [F.voice, [{ kind: "media.voice", file_id: "AwAC-voice" }], [{ kind: "voice" }]],
      [F.videoNote, [{ kind: "media.video", file_id: "DQAC-note" }], [{ kind: "video_note" }]],
      [F.audio, [{ kind: "media.voice", file_id: "CQAC-audio", label: "Band – Song" }], [{ kind: "audio", name: "Band – Song" }]],
      [F.pdf, [{ kind: "media.pdf", file_id: "BQAC-pdf", label: "report.pdf" }], [{ kind: "document", name: "report.pdf" }]],
      [F.zip, [{ kind: "media.document", file_id: "BQAC-zip", label: "data.zip" }], [{ kind: "document", name: "data.zip" }]],
      [F.animation, [{ kind: "media.video", file_id: "CgAC-gif", label: "party.mp4" }], [{ kind: "animation", name: "party.mp4" }]]
    ]
    for (const [update, media, attachments] of cases) {
      const mapped = mapUpdate(update, options)
      assert.deepStrictEqual(observed(mapped).media, media)
      assert.deepStrictEqual(item(mapped).attachments, attachments)
      assertConsumable(mapped)
    }
    const sticker = mapUpdate(F.sticker, options)
    assert.deepStrictEqual(observed(sticker).media, [])
    assert.deepStrictEqual(item(sticker).attachments, [{ kind: "sticker", name: "👍" }])
  })

  it("a caption's mention entities are normalised like a text's", () => {
    assert.strictEqual(item(mapUpdate(F.photo, options)).text, "the cat [@bob](tg:@bob)")
  })

  it("a user's poll is carried as a poll; the bot's own poll message is outbound", () => {
    const user = observed(mapUpdate(F.userPoll, options))
    assert.deepStrictEqual(user.poll, { poll_id: "5400000000000000001", question: "Lunch?", is_closed: false })
    assert.strictEqual(user.direction, "inbound")
    const own = mapMessage(F.botPollMessage, options)
    const event = observed(own)
    assert.strictEqual(event.direction, "outbound")
    assert.deepStrictEqual(event.poll, { poll_id: "5400000000000000002", question: "Ship on Friday?", is_closed: false })
    assert.strictEqual(item(own).kind, "outbound_agent")
    assert.deepStrictEqual(item(own).attachments, [{ kind: "poll", name: "Ship on Friday?" }])
  })

  it("an edit maps to the same message key with the new text", () => {
    const mapped = mapUpdate(F.edited, options)
    assert.strictEqual(mapped.update_type, "edited_message")
    assert.strictEqual(observed(mapped).type, "message_edited")
    assert.strictEqual(observed(mapped).message_id, "50")
    assert.strictEqual(item(mapped).text, "see https://example.com/rust-2026")
  })

  it("a channel post is spoken by the channel", () => {
    const mapped = mapUpdate(F.channelPost, options)
    const event = observed(mapped)
    assert.strictEqual(event.sender_user_id, "-1005555555555")
    assert.deepStrictEqual(event.links, [{ url: "https://example.com/notes", span: { offset: 14, length: 25 } }])
    assert.strictEqual(item(mapped).sender.display_ref, "[News](tg:@news)")
  })
})

describe("UpdateMapper: a migrated chat", () => {
  it("a reply of a chat that migrated moves whole: its events, items and scope carry the new chat and the migrated ids", () => {
    const mapped = mapUpdate(F.plainReplyChain, options)
    const from = mapped.scope!.chat_id
    const moved = toMigratedChats(mapped, new Map([[from, "-1009"]]))
    assert.deepStrictEqual(moved.events.map((e) => e.type === "message_observed" ? [e.chat_id, e.message_id, e.reply_to_message_id] : []), [
      ["-1009", "~299", null],
      ["-1009", "~300", "~299"]
    ])
    assert.deepStrictEqual(moved.history.map((h) => [h.chat_id, h.message_id, h.reply_to_message_id]), [
      ["-1009", "~299", null],
      ["-1009", "~300", "~299"]
    ])
    assert.deepStrictEqual([moved.scope!.chat_id, moved.scope!.message_id, moved.scope!.reply_to_message_id], ["-1009", "~300", "~299"])
    // Each part moves by its owner's rule, the same one the stores' migrations use.
    assert.deepStrictEqual(moved.history[1], HistoryItem.toMigratedChat(mapped.history[1]!, "-1009"))
    assert.deepStrictEqual(moved.events[1], toMigratedChat(mapped.events[1]!, "-1009"))
    assertConsumable(moved)
  })

  it("an update of a chat that did not migrate is left as it is", () => {
    const mapped = mapUpdate(F.plainReplyChain, options)
    assert.deepStrictEqual(toMigratedChats(mapped, new Map([["-1", "-1009"]])), mapped)
  })
})

describe("UpdateMapper: addressing", () => {
  it("a command for this bot, a mention of it, a reply to it and a private chat address the bot", () => {
    for (const update of [F.commandForBot, F.mentionOfBot, F.replyToBot, F.privateChat]) {
      assert.isTrue(mapUpdate(update, options).addressed)
    }
  })

  it("a command for another bot and a plain message do not", () => {
    assert.isFalse(mapUpdate(F.commandForOtherBot, options).addressed)
    assert.isFalse(mapUpdate(F.generalTopic, options).addressed)
  })
})

describe("UpdateMapper: polls, votes, reactions, buttons", () => {
  it("a closed poll maps to poll_closed by poll id alone", () => {
    const mapped = mapUpdate(F.pollClosed, options)
    assert.deepStrictEqual(mapped.events, [
      { type: "poll_closed", event_id: "telegram:poll_closed:5400000000000000002", poll_id: "5400000000000000002" }
    ])
    assert.strictEqual(mapped.skipped, undefined)
    assertConsumable(mapped)
  })

  it("an open poll's update, a vote and a button press map to nothing, with a reason", () => {
    for (const [update, reason] of [
      [F.pollStillOpen, "poll: still open"],
      [F.pollAnswer, "poll_answer: carries no chat"],
      [F.callbackQuery, "callback_query"]
    ] as const) {
      const mapped = mapUpdate(update, options)
      assert.deepStrictEqual([mapped.events, mapped.history], [[], []])
      assert.include(mapped.skipped ?? "", reason)
    }
  })

  it("a reaction becomes an inbound_reaction item pointing at the reacted message", () => {
    const mapped = mapUpdate(F.reaction, options)
    assert.deepStrictEqual(mapped.events, [])
    const h = item(mapped)
    assert.strictEqual(h.kind, "inbound_reaction")
    assert.strictEqual(h.reply_to_message_id, "50")
    assert.strictEqual(h.message_id, null)
    assert.strictEqual(h.topic_id, null)
    assert.strictEqual(h.text, "👍 :custom_emoji:")
    assertConsumable(mapped)
    // Its identity is the actor's reaction to the message, not this update: a change replaces it.
    assert.strictEqual(h.event_id, `telegram:reaction:${F.forum.id}:50:${F.bob.id}`)
  })

  it("a reaction withdrawn maps to its retraction: no item, nothing skipped", () => {
    const mapped = mapUpdate(F.reactionRemoved, options)
    assert.deepStrictEqual([mapped.events, mapped.history, mapped.skipped], [[], [], undefined])
    assert.deepStrictEqual(mapped.retractions, [{
      chat_id: String(F.forum.id),
      chat_type: "supergroup",
      event_id: `telegram:reaction:${F.forum.id}:50:${F.bob.id}`,
      at: F.reactionRemoved.message_reaction.date * 1000
    }])
  })
})

describe("UpdateMapper: hostile input", () => {
  const skippedWith = (update: unknown, reason: string) => {
    const mapped = mapUpdate(update, options)
    assert.deepStrictEqual([mapped.events, mapped.history], [[], []])
    assert.include(mapped.skipped ?? "(not skipped)", reason)
  }

  it("non-objects, missing or malformed update ids, unknown and empty updates are skipped", () => {
    for (const u of F.hostile.notAnObject) skippedWith(u, "not a JSON object")
    skippedWith(undefined, "not a JSON object")
    skippedWith(F.hostile.noUpdateId, "update_id")
    skippedWith(F.hostile.stringUpdateId, "update_id")
    skippedWith(F.hostile.unknownType, "chat_boost: a boost is not conversation")
    skippedWith({ update_id: 300, next_year_update: {} }, "unknown update type: next_year_update")
    skippedWith(F.hostile.emptyUpdate, "unknown update type: (none)")
  })

  it("messages missing their chat or with malformed ids, dates or media are skipped", () => {
    skippedWith(F.hostile.messageWithoutChat, "malformed message")
    skippedWith(F.hostile.chatIdAsString, "malformed message")
    skippedWith(F.hostile.fractionalMessageId, "malformed message")
    skippedWith(F.hostile.dateOutOfRange, "date out of range")
    skippedWith(F.hostile.wrongPhotoShape, "malformed message")
    skippedWith(F.hostile.reactionWithoutChat, "malformed message_reaction")
    skippedWith(F.hostile.emptyPollId, "malformed poll")
    skippedWith(F.hostile.pollWithoutId, "malformed poll")
  })

  it("an update nested deeper than core's bound is skipped as malformed before anything reads it, wherever the depth is", () => {
    let deep: unknown = 1
    for (let i = 0; i < 100_000; i++) deep = [deep]
    const base = { message_id: 1, date: F.hostile.entitiesOutOfRange.message.date, chat: F.hostile.entitiesOutOfRange.message.chat, from: F.alice }
    for (
      const update of [
        { update_id: 1, message: { ...base, text: deep } },
        { update_id: 2, message: { ...base, text: "x", reply_to_message: deep } },
        { update_id: 3, edited_message: { ...base, text: "x", entities: [deep] } },
        { update_id: 4, poll: deep },
        // A decoder's error message printed this one recursively and overflowed the stack.
        { update_id: 5, message_reaction: { chat: base.chat, message_id: 1, date: base.date, user: F.alice, old_reaction: [], new_reaction: deep } }
      ]
    ) skippedWith(update, `nested deeper than ${Json.maxDepth} levels`)
    assert.include(mapMessage({ ...base, text: deep }, options).skipped ?? "", "nested deeper")
    // At the bound an update is read as any other: its unknown field is ignored.
    let atBound: unknown = 1
    for (let i = 0; i < Json.maxDepth - 2; i++) atBound = [atBound]
    const mapped = mapUpdate({ update_id: 6, message: { ...base, text: "kept", extra: atBound } }, options)
    assert.strictEqual(mapped.skipped, undefined)
    assert.strictEqual(item(mapped).text, "kept")
  })

  it("out-of-range entities are skipped with warnings; the message is kept", () => {
    const mapped = mapUpdate(F.hostile.entitiesOutOfRange, options)
    assert.deepStrictEqual(observed(mapped).links, [])
    assert.strictEqual(item(mapped).text, "short")
    assert.isAtLeast(mapped.warnings.length, 2)
  })

  it("a url or text_link entity that cuts a character in two is skipped with a warning, never a link with half a character", () => {
    const message = (text: string, entities: ReadonlyArray<unknown>) => ({
      update_id: 209,
      message: { message_id: 3, from: F.alice, date: F.hostile.entitiesOutOfRange.message.date, chat: F.hostile.entitiesOutOfRange.message.chat, text, entities }
    })
    // "😀" is two UTF-16 code units: offset 1 starts, and offset 15 ends, inside it.
    const url = mapUpdate(message("😀https://a.example😀", [{ type: "url", offset: 1, length: 18 }]), options)
    assert.deepStrictEqual(observed(url).links, [])
    assert.isTrue(url.warnings.some((w) => w.includes("cuts a character")), url.warnings.join("; "))
    const titled = mapUpdate(message("😀😀 docs", [{ type: "text_link", offset: 1, length: 2, url: "https://docs.example" }]), options)
    assert.deepStrictEqual(observed(titled).links, [])
    assert.isTrue(titled.warnings.some((w) => w.includes("cuts a character")), titled.warnings.join("; "))
    // The same entities on whole characters are links.
    assert.deepStrictEqual(observed(mapUpdate(message("😀https://a.example😀", [{ type: "url", offset: 2, length: 17 }]), options)).links, [
      { url: "https://a.example", span: { offset: 2, length: 17 } }
    ])
    assert.deepStrictEqual(observed(mapUpdate(message("😀😀 docs", [{ type: "text_link", offset: 0, length: 4, url: "https://docs.example" }]), options)).links, [
      { url: "https://docs.example", title: "😀😀", span: { offset: 0, length: 4 } }
    ])
  })

  it("an embedded reply_to_message of another chat names no message of this chat", () => {
    const mapped = mapUpdate({
      update_id: 210,
      message: {
        message_id: 4,
        from: F.alice,
        date: F.hostile.entitiesOutOfRange.message.date,
        chat: F.hostile.entitiesOutOfRange.message.chat,
        text: "what about this?",
        reply_to_message: { message_id: 44, from: F.alice, date: F.hostile.entitiesOutOfRange.message.date, chat: { id: -1009999999999, type: "supergroup", title: "Other" }, text: "elsewhere" }
      }
    }, options)
    assert.strictEqual(observed(mapped).reply_to_message_id, null)
    assert.strictEqual(item(mapped).reply_to_message_id, null)
    assert.strictEqual(mapped.scope?.reply_to_message_id, null)
    assert.strictEqual(mapped.history.length, 1)
  })

  it("huge text is cut at a code point boundary and entities past the cut are dropped", () => {
    const mapped = mapUpdate(F.hostile.hugeText, options)
    const h = item(mapped)
    assert.strictEqual(h.text.length, 8192)
    assert.strictEqual(h.text, "😀".repeat(4096))
    assert.deepStrictEqual(observed(mapped).links, [])
    assert.isTrue(mapped.warnings.some((w) => w.includes("text cut")))
    assertConsumable(mapped)
  })

  it("thousands of entities: links are capped at 50 and the event still decodes", () => {
    const mapped = mapUpdate(F.hostile.tooManyEntities, options)
    assert.strictEqual(observed(mapped).links?.length, 1)
    assertConsumable(mapped)
  })

  it("an over-long url is dropped, the message kept", () => {
    const mapped = mapUpdate(F.hostile.overlongUrl, options)
    assert.deepStrictEqual(observed(mapped).links, [])
    assert.isTrue(mapped.warnings.some((w) => w.includes("no usable url")))
  })

  it("a __proto__ key in the JSON does not leak into the output", () => {
    const mapped = mapUpdate(F.hostile.prototypePollution, options)
    assert.strictEqual(mapped.skipped, undefined)
    assert.strictEqual(({} as Record<string, unknown>)["polluted"], undefined)
  })

  it("never throws and only ever hands out decodable events and items (property)", () => {
    const message = fc.record({
      message_id: fc.oneof(fc.integer(), fc.string()),
      date: fc.oneof(fc.integer({ min: 0, max: 2_000_000_000 }), fc.double()),
      chat: fc.record({ id: fc.oneof(fc.integer(), fc.constant("x")), type: fc.string(), is_forum: fc.boolean() }, { requiredKeys: ["id"] }),
      text: fc.string({ unit: "grapheme", maxLength: 60 }),
      message_thread_id: fc.integer(),
      is_topic_message: fc.boolean(),
      entities: fc.array(fc.record({ type: fc.constantFrom("url", "text_link", "mention", "text_mention", "bot_command"), offset: fc.integer({ min: -2, max: 70 }), length: fc.integer({ min: -1, max: 70 }), url: fc.string() }, { requiredKeys: ["type", "offset", "length"] }), { maxLength: 6 }),
      poll: fc.record({ id: fc.string(), question: fc.string(), is_closed: fc.boolean() })
    }, { requiredKeys: [] })
    const update = fc.oneof(
      fc.anything(),
      fc.record({ update_id: fc.integer(), message }),
      fc.record({ update_id: fc.integer(), edited_message: message }),
      fc.record({ update_id: fc.integer(), poll: fc.anything() }),
      fc.record({ update_id: fc.integer(), message_reaction: fc.anything() })
    )
    fc.assert(
      fc.property(update, (u) => {
        const mapped = mapUpdate(u, options)
        assertConsumable(mapped)
        assert.isTrue((mapped.skipped === undefined) === (mapped.events.length + mapped.history.length > 0))
      }),
      { numRuns: 400 }
    )
  })

  it("property: the hand-compiled message check gives the Schema's verdict, whatever field is replaced by whatever JSON", () => {
    const messages = corpus.flatMap((f) =>
      ["message", "edited_message", "channel_post", "edited_channel_post"].flatMap((k) => (f.update[k] === undefined ? [] : [f.update[k]]))
    )
    const decode = Schema.decodeUnknownEither(Tg.Message)
    const paths = (value: unknown, prefix: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> =>
      typeof value !== "object" || value === null
        ? [prefix]
        : [prefix, ...Object.entries(value).flatMap(([k, v]) => paths(v, [...prefix, Array.isArray(value) ? Number(k) : k]))]
    const replaced = (value: unknown, path: ReadonlyArray<string | number>, next: unknown): unknown => {
      if (path.length === 0) return next
      const [head, ...rest] = path
      const copy = (Array.isArray(value) ? [...(value as ReadonlyArray<unknown>)] : { ...(value as object) }) as Record<string | number, unknown>
      copy[head!] = replaced((value as Record<string | number, unknown>)[head!], rest, next)
      return copy
    }
    fc.assert(fc.property(
      fc.constantFrom(...messages),
      fc.nat(),
      fc.oneof(fc.jsonValue(), fc.constant(undefined), fc.constant(Number.NaN), fc.double(), fc.integer()),
      (message, pick, next) => {
        const all = paths(message)
        const input = replaced(message, all[pick % all.length]!, next)
        assert.strictEqual(Tg.parseMessage(input).ok, Either.isRight(decode(input)), JSON.stringify(input))
      }
    ), { numRuns: 2000 })
  })
})
