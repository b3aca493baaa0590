import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { start } from "./harness.js"

const call = <A>(f: () => Promise<A>) => Effect.promise(f)
const body = <T>(response: Response) => response.json() as Promise<T>

const forumMessage = (updateId: number, messageId: number, extra: Record<string, unknown> = {}) => ({
  update_id: updateId,
  message: {
    message_id: messageId,
    date: 1_795_000_000,
    chat: { id: -1001234567890, type: "supergroup", title: "Team", is_forum: true },
    from: { id: 42, is_bot: false, first_name: "Alice", username: "alice" },
    message_thread_id: 7,
    is_topic_message: true,
    ...extra
  }
})

describe("POST /v1/telegram/updates", () => {
  it.scoped("maps raw updates with the shared mapper into events and history", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const text = "read https://example.com/post"
      const result = yield* call(() =>
        api.json("/v1/telegram/updates", [
          forumMessage(1, 100, { text, entities: [{ type: "url", offset: 5, length: 24 }] }),
          forumMessage(2, 101, { text: "@deixis_bot summarise this", reply_to_message: { message_id: 100 }, entities: [{ type: "mention", offset: 0, length: 11 }] }),
          { update_id: 3, some_future_update: { id: 1 } }
        ]).then(body<{ updates: number; skipped: ReadonlyArray<{ index: number }>; events: { applied: number }; history_items: number }>)
      )
      assert.strictEqual(result.updates, 3)
      assert.deepStrictEqual(result.skipped.map((s) => s.index), [2])
      assert.strictEqual(result.events.applied, 2)
      // smart mode (the default) records every message the bot receives, addressed or not.
      assert.strictEqual(result.history_items, 2)

      const resolved = yield* call(() =>
        api.json("/v1/tools/resolve_reference_target", {
          chat_id: -1001234567890, topic_id: 7, current_message_id: 101, reply_to_message_id: 100,
          normalized_reference_hints: { target_kind_hint: "article" }
        }).then(body<{ status: string; best_match: { ref: string } }>)
      )
      assert.strictEqual(resolved.status, "resolved")
      assert.strictEqual(resolved.best_match.ref, "https://example.com/post")

      const context = yield* call(() =>
        api.fetch("/v1/chats/-1001234567890/context?topic_id=7").then(body<{ messages: ReadonlyArray<{ message_id: string }>; chat_history_context: string }>)
      )
      assert.deepStrictEqual(context.messages.map((m) => m.message_id), ["100", "101"])
      assert.include(context.chat_history_context, "summarise this")
      assert.include(context.chat_history_context, "read https://example.com/post")
    }))

  it.scoped("a hostile update is skipped, never a crash, and a single update is accepted too", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const hostile = yield* call(() =>
        api.json("/v1/telegram/updates", { update_id: 9, message: { message_id: "x", chat: null, text: 5 } })
          .then(body<{ updates: number; skipped: ReadonlyArray<{ index: number; reason: string }> }>)
      )
      assert.strictEqual(hostile.updates, 1)
      assert.strictEqual(hostile.skipped.length, 1)
      const notAnObject = yield* call(() => api.json("/v1/telegram/updates", "[1, 2]"))
      assert.strictEqual(notAnObject.status, 400)
      assert.strictEqual((yield* call(() => api.fetch("/healthz"))).status, 200)
    }))

  const group = { id: -1009876543210, type: "supergroup", title: "Plain group" }
  const alice = { id: 42, is_bot: false, first_name: "Alice", username: "alice" }
  const bot = { id: 999, is_bot: true, first_name: "Deixis", username: "deixis_bot" }
  const mention = (updateId: number, messageId: number, date: number, text: string, extra: Record<string, unknown> = {}) => ({
    update_id: updateId,
    message: {
      message_id: messageId, date, chat: group, from: alice, text: `@deixis_bot ${text}`,
      entities: [{ type: "mention", offset: 0, length: 11 }], ...extra
    }
  })

  it.scoped("POST /v1/telegram/sent records the bot's message as the answer to a user message (bot_response_id)", () =>
    Effect.gen(function*() {
      const api = yield* start()
      yield* call(() => api.json("/v1/telegram/updates", mention(10, 300, 1_795_000_000, "what is new?")))
      const sent = yield* call(() =>
        api.json("/v1/telegram/sent", {
          message: { message_id: 301, date: 1_795_000_005, chat: group, from: bot, text: "Release 2 is out." },
          answering_message_id: 300
        }).then(body<{ answered: string | null; history_items: number; events: { applied: number } }>)
      )
      assert.deepStrictEqual([sent.answered, sent.history_items, sent.events.applied], ["300", 1, 1])
      const context = yield* call(() =>
        api.fetch(`/v1/chats/${group.id}/messages/300/context`).then(body<{ message: { bot_response_id: string | null; text: string } }>)
      )
      assert.strictEqual(context.message.bot_response_id, "301")
      // A sent reply needs no answering_message_id: the message it replies to is the one answered.
      yield* call(() => api.json("/v1/telegram/updates", mention(11, 302, 1_795_000_010, "and then?")))
      const reply = yield* call(() =>
        api.json("/v1/telegram/sent", {
          message: {
            message_id: 303, date: 1_795_000_012, chat: group, from: bot, text: "Then release 3.",
            reply_to_message: { message_id: 302, date: 1_795_000_010, chat: group, from: alice, text: "@deixis_bot and then?" }
          }
        }).then(body<{ answered: string | null }>)
      )
      assert.strictEqual(reply.answered, "302")
      const bad = yield* call(() => api.json("/v1/telegram/sent", { message: { message_id: "x" } }).then(body<{ skipped: string | null; history_items: number }>))
      assert.include(bad.skipped ?? "", "malformed")
      assert.strictEqual(bad.history_items, 0)
    }))

  it.scoped("GET /v1/chats/:chat_id/messages/:message_id/context loads the recency window, the reply window, the gap note and the history window", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const t0 = 1_795_000_000
      const updates = [1, 2, 3, 4, 5].map((i) => mention(20 + i, 400 + i, t0 + i * 60, `message ${i}`))
      // Forty minutes later, a reply to the second message.
      updates.push(mention(30, 410, t0 + 5 * 60 + 40 * 60, "back to this", {
        reply_to_message: { message_id: 402, date: t0 + 120, chat: group, from: alice, text: "@deixis_bot message 2" }
      }))
      yield* call(() => api.json("/v1/telegram/updates", updates))
      const context = yield* call(() =>
        api.fetch(`/v1/chats/${group.id}/messages/410/context`).then(body<{
          topic_id: string | null
          messages: ReadonlyArray<{ message_id: string }>
          sources: ReadonlyArray<ReadonlyArray<string>>
          reply: { target_id: string; status: string }
          gap: { exceeds_threshold: boolean } | null
          gap_note: string | null
          history: ReadonlyArray<{ message_id: string }>
          chat_history_context: string
          current_message: string
        }>)
      )
      assert.strictEqual(context.topic_id, null)
      assert.deepStrictEqual(context.messages.map((m) => m.message_id), ["401", "402", "403", "404", "405"])
      assert.include(context.sources[1]!, "reply_target")
      assert.deepStrictEqual(context.reply, { target_id: "402", status: "found" })
      assert.isTrue(context.gap?.exceeds_threshold)
      assert.include(context.gap_note ?? "", "40 minutes")
      assert.deepStrictEqual(context.history.map((m) => m.message_id), ["401", "402", "403", "404", "405"])
      assert.include(context.chat_history_context, "message 2")
      assert.include(context.current_message, "back to this")
      // A message the history did not keep (core saw it, through /v1/events) still loads from what core saw of it.
      yield* call(() => api.json("/v1/events", [
        { type: "message_observed", chat_id: group.id, message_id: 411, reply_to_message_id: 405, sender_user_id: alice.id }
      ]))
      const unkept = yield* call(() =>
        api.fetch(`/v1/chats/${group.id}/messages/411/context`).then(body<{ message: unknown; reply: { target_id: string; status: string } }>)
      )
      assert.isNull(unkept.message)
      assert.deepStrictEqual(unkept.reply, { target_id: "405", status: "found" })
    }))
})

describe("POST /v1/telegram/updates: Bot API 10.1 scopes", () => {
  it.scoped("each direct-messages topic is a scope of its own, read back through the chat endpoints as the inspector does", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const chat = { id: -1005000, type: "supergroup", title: "News DMs", is_direct_messages: true }
      const dm = (updateId: number, messageId: number, userId: number, topic: number, extra: Record<string, unknown>) => ({
        update_id: updateId,
        message: {
          message_id: messageId,
          date: 1_795_000_000,
          chat,
          from: { id: userId, is_bot: false, first_name: `U${userId}` },
          direct_messages_topic: { topic_id: topic, user: { id: userId, is_bot: false, first_name: `U${userId}` } },
          ...extra
        }
      })
      const result = yield* call(() =>
        api.json("/v1/telegram/updates", [
          dm(1, 10, 11, 7001, { photo: [{ file_id: "alice-photo", width: 800, height: 600 }], caption: "passport" }),
          dm(2, 11, 22, 7002, { text: "what about this photo?" })
        ]).then(body<{ skipped: ReadonlyArray<unknown>; history_items: number }>)
      )
      assert.deepStrictEqual([result.skipped, result.history_items], [[], 2])
      // The inspector's calls: the chat id URI-encoded, the topic as a query parameter.
      const read = (topic: number) =>
        call(() =>
          api.fetch(`/v1/chats/${encodeURIComponent(`-1005000:dm:${topic}`)}/context?topic_id=${topic}`)
            .then(body<{ messages: ReadonlyArray<{ message_id: string }> }>)
        )
      assert.deepStrictEqual((yield* read(7001)).messages.map((m) => m.message_id), ["10"])
      assert.deepStrictEqual((yield* read(7002)).messages.map((m) => m.message_id), ["11"])
      const resolved = yield* call(() =>
        api.json("/v1/tools/resolve_reference_target", {
          chat_id: "-1005000:dm:7002", topic_id: "7002", current_message_id: 11,
          normalized_reference_hints: { target_kind_hint: "image" }
        }).then(body<{ status: string }>)
      )
      assert.strictEqual(resolved.status, "not_found")
    }))
})
