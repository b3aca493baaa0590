/**
 * The example bot, as shipped (examples/bot.ts), run by @grammyjs/runner against the fake Bot
 * API on loopback (`@deixis/telegraf/testing`): grammY long-polls it, the plugin records every
 * update and answers from deixis in the topic it was asked in.
 */
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import * as ContextIngest from "@deixis/core/ContextIngest"
import type * as DeixisAdapter from "@deixis/telegraf/DeixisAdapter"
import * as FakeBotApi from "@deixis/telegraf/testing"
import { assert, describe, it } from "@effect/vitest"
import { run } from "@grammyjs/runner"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { createBot } from "../examples/bot.js"
import * as DeixisGrammy from "../src/DeixisGrammy.js"

// Now: what deixis keeps active is active for a while after the message, by the real clock.
const date = Math.floor(Date.now() / 1000)
const alice = { id: 11, is_bot: false, first_name: "Alice" }
const bob = { id: 22, is_bot: false, first_name: "Bob" }
const command = (text: string) => ({ text, entities: [{ type: "bot_command", offset: 0, length: text.split(" ")[0]!.length }] })

/** The history of a topic once it holds `n` items (the bot's answer is recorded after it is sent). */
type Runtime = ManagedRuntime.ManagedRuntime<DeixisAdapter.Services, unknown>
const historyOf = (deixis: Runtime, chat_id: string, topic_id: string, n: number) =>
  Effect.gen(function*() {
    const read = Effect.promise(() => deixis.runPromise(Effect.flatMap(HistoryStore.HistoryStore, (h) => h.recent({ chat_id, topic_id }, 10))))
    // Polled a bounded number of times (the bot records in its own time), never against a deadline.
    for (let i = 0; i < 1000; i++) {
      const items = yield* read
      if (items.length >= n) return items
      yield* Effect.sleep("10 millis")
    }
    return yield* read
  })

/** An object activated (a link fetched, a photo inspected): what list_active_context_objects lists. */
const activate = (deixis: Runtime, chat_id: string, message: number, kind: string, reason: string) =>
  Effect.promise(() =>
    deixis.runPromise(Effect.flatMap(ContextIngest.ContextIngest, (i) =>
      i.ingest({ type: "object_activated", event_id: `activate-${chat_id}-${message}`, chat_id, reason, source_message_id: message, kind })))
  )

/** The example bot running against a fake Bot API for the scope's lifetime. */
const started = Effect.gen(function*() {
  const api = yield* FakeBotApi.make({ username: "deixis_bot" })
  const deixis = yield* Effect.acquireRelease(
    Effect.sync(() => ManagedRuntime.make(DeixisGrammy.layerMemory())),
    (runtime) => Effect.promise(() => runtime.dispose())
  )
  const bot = createBot("123:test", deixis, { client: { apiRoot: api.apiRoot } })
  yield* Effect.acquireRelease(
    Effect.sync(() => run(bot)),
    (runner) => Effect.promise(() => runner.isRunning() ? runner.stop() : Promise.resolve())
  )
  return { api, deixis }
})

describe("@deixis/grammy: the example bot through grammY", () => {
  it.scopedLive("answers /context in a private-chat topic with that topic's link, in that topic", () =>
    Effect.gen(function*() {
      const { api, deixis } = yield* started
      const chat = { id: 11, type: "private", first_name: "Alice" }
      const inTopic = (id: number, thread: number, rest: Record<string, unknown>) => ({
        update_id: id,
        message: { message_id: id, date, chat, from: alice, message_thread_id: thread, is_topic_message: true, ...rest }
      })
      api.pushUpdates(
        inTopic(1, 100, { text: "read https://example.com/a", entities: [{ type: "url", offset: 5, length: 21 }] }),
        inTopic(2, 200, { text: "read https://example.com/b", entities: [{ type: "url", offset: 5, length: 21 }] })
      )
      yield* historyOf(deixis, "11", "200", 1)
      yield* historyOf(deixis, "11", "100", 1)
      yield* activate(deixis, "11", 1, "link", "url_fetched")
      yield* activate(deixis, "11", 2, "link", "url_fetched")
      api.pushUpdates(inTopic(3, 200, command("/context")))
      const answer = yield* api.waitFor("sendMessage")
      assert.strictEqual(answer.payload["message_thread_id"], 200)
      assert.include(String(answer.payload["text"]), "https://example.com/b")
      assert.notInclude(String(answer.payload["text"]), "https://example.com/a")
      const topic = yield* historyOf(deixis, "11", "200", 3)
      assert.deepStrictEqual(topic.map((e) => e.item.kind), ["inbound_user", "inbound_user", "outbound_agent"])
    }))

  it.scopedLive("answers in a channel's direct-messages topic by direct_messages_topic_id, never with another user's photo", () =>
    Effect.gen(function*() {
      const { api, deixis } = yield* started
      const chat = { id: -1005000, type: "supergroup", title: "News DMs", is_direct_messages: true }
      const dm = (id: number, user: typeof alice, topic: number, rest: Record<string, unknown>) => ({
        update_id: id,
        message: { message_id: id, date, chat, from: user, direct_messages_topic: { topic_id: topic, user }, ...rest }
      })
      api.pushUpdates(dm(1, alice, 7001, { photo: [{ file_id: "alice-photo", width: 800, height: 600 }], caption: "passport" }))
      yield* historyOf(deixis, "-1005000:dm:7001", "7001", 1)
      yield* activate(deixis, "-1005000:dm:7001", 1, "media.image", "media_inspected")
      api.pushUpdates(dm(2, bob, 7002, command("/context")), dm(3, alice, 7001, command("/context")))
      const toBob = yield* api.waitFor("sendMessage", (p) => p["direct_messages_topic_id"] === 7002)
      assert.strictEqual(toBob.payload["text"], "Nothing is active here.")
      const toAlice = yield* api.waitFor("sendMessage", (p) => p["direct_messages_topic_id"] === 7001)
      assert.include(String(toAlice.payload["text"]), "media.image")
      // Bob's topic holds his command and the bot's answer to it, nothing of Alice's.
      const bobs = yield* historyOf(deixis, "-1005000:dm:7002", "7002", 2)
      yield* historyOf(deixis, "-1005000:dm:7001", "7001", 3)
      assert.deepStrictEqual(bobs.map((e) => [e.item.kind, e.item.text]), [
        ["inbound_user", "/context"],
        ["outbound_agent", "Nothing is active here."]
      ])
    }))

  it("the sequentialize key orders a chat's updates, keeps chats apart and follows a poll", () => {
      const ctx = (update: unknown) => ({ update }) as unknown as Parameters<typeof DeixisGrammy.sequentializeKey>[0]
      assert.deepStrictEqual(DeixisGrammy.sequentializeKey(ctx({ update_id: 1, message: { chat: { id: 5 }, message_id: 1 } })), ["5"])
      assert.deepStrictEqual(
        DeixisGrammy.sequentializeKey(ctx({ update_id: 2, message: { chat: { id: 5 }, poll: { id: "p1" } } })),
        ["5", "poll:p1"]
      )
      assert.deepStrictEqual(DeixisGrammy.sequentializeKey(ctx({ update_id: 3, poll_answer: { poll_id: "p1" } })), ["poll:p1"])
      assert.deepStrictEqual(DeixisGrammy.sequentializeKey(ctx({ update_id: 4, message_reaction: { chat: { id: 6 } } })), ["6"])
    assert.isUndefined(DeixisGrammy.sequentializeKey(ctx({ update_id: 5, inline_query: { id: "q" } })))
  })
})
