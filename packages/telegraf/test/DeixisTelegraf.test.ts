import { ContextIngest } from "@deixis/core/ContextIngest"
import * as ContextStoreModule from "@deixis/core/ContextStore"
import { ContextStore, StoreError } from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import * as ReminderStore from "@deixis/core/ReminderStore"
import * as UpdateInbox from "@deixis/core/UpdateInbox"
import * as HistoryStoreModule from "@deixis/chathistory/HistoryStore"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Telegraf } from "telegraf"
import type { Update } from "telegraf/types"
import * as DeixisTelegraf from "../src/DeixisTelegraf.js"
import * as F from "./fixtures/updates.js"
import * as FakeBotApi from "./utils/FakeBotApi.js"

const asUpdate = (u: unknown) => u as Update

const setup = Effect.gen(function*() {
  const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
  const runtime = yield* Effect.runtime<DeixisTelegraf.Services>()
  const bot = new Telegraf<DeixisTelegraf.DeixisContext>("123:TEST", { telegram: { apiRoot: api.apiRoot } })
  bot.use(DeixisTelegraf.middleware(runtime, { mode: "talkative" }))
  bot.command("context", async (ctx) => {
    const { objects } = await ctx.deixis.listActive()
    await ctx.deixis.reply(objects.length === 0 ? "nothing active" : objects.map((o) => `${o.kind} ${o.ref ?? ""}`).join("\n"))
  })
  bot.command("what", async (ctx) => {
    const result = await ctx.deixis.resolve({ normalized_reference_hints: { target_kind_hint: "poll" } })
    await ctx.deixis.reply(`${result.status} ${result.best_match?.object_id ?? ""}`)
  })
  bot.command("poll", async (ctx) => {
    const sent = await ctx.replyWithPoll("Ship on Friday?", ["yes", "no"])
    await ctx.deixis.recordSent(sent)
  })
  bot.command("state", async (ctx) => {
    await ctx.deixis.state.update({ plan: "friday" })
    await ctx.deixis.reply(await ctx.deixis.state.render())
  })
  bot.catch((error) => {
    console.error("handler failed", error)
  })
  const feed = (u: unknown) => Effect.promise(() => bot.handleUpdate(asUpdate(u)))
  return { api, bot, feed }
})

const command = (update_id: number, message_id: number, text: string, thread: number) => ({
  update_id,
  message: {
    message_id,
    from: F.alice,
    chat: F.forum,
    date: 1_771_000_100,
    message_thread_id: thread,
    is_topic_message: true,
    text,
    entities: [{ type: "bot_command", offset: 0, length: text.split(" ")[0]!.length }]
  }
})

const Live = DeixisTelegraf.layerMemory()

describe("DeixisTelegraf.middleware", () => {
  it.scoped("records every update: events into core, items into history", () =>
    Effect.gen(function*() {
      const { feed } = yield* setup
      yield* feed(F.topicTextWithLinks)
      yield* feed(F.reaction)
      const store = yield* ContextStore
      const meta = yield* store.message(String(F.forum.id), "50")
      assert.isTrue(Option.isSome(meta))
      assert.strictEqual(Option.getOrThrow(meta).topic_id, "7")
      const history = yield* HistoryStore
      const recent = yield* history.recent({ chat_id: String(F.forum.id), topic_id: "7" }, 10)
      // The reaction has no thread of its own; it is placed in the reacted message's topic.
      assert.deepStrictEqual(recent.map((e) => e.item.kind), ["inbound_user", "inbound_reaction"])
    }).pipe(Effect.provide(Live)))

  it.scoped("answers in a channel's direct-messages topic by its id, from that user's topic only", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup
      const chat = { id: -1005000, type: "supergroup", title: "News DMs", is_direct_messages: true }
      const dm = (id: number, topic: number, text: string) => ({
        update_id: id,
        message: {
          message_id: id, date: 1_771_000_100, chat, from: F.alice, direct_messages_topic: { topic_id: topic, user: F.alice }, text,
          entities: text.startsWith("/")
            ? [{ type: "bot_command", offset: 0, length: text.length }]
            : [{ type: "url", offset: 4, length: text.length - 4 }]
        }
      })
      yield* feed(dm(600, 7001, "see https://example.com/mine"))
      // Alice's link is active in her topic: it must still never be listed in Bob's.
      yield* Effect.flatMap(ContextIngest, (i) =>
        i.ingest({ type: "object_activated", event_id: "fetch-600", chat_id: "-1005000:dm:7001", reason: "url_fetched", source_message_id: 600, kind: "link" }))
      yield* feed(dm(601, 7002, "/context"))
      yield* feed(dm(602, 7001, "/context"))
      const [answer] = api.callsOf("sendMessage")
      assert.deepStrictEqual([answer!.payload["chat_id"], answer!.payload["direct_messages_topic_id"]], [-1005000, 7002])
      assert.strictEqual(answer!.payload["text"], "nothing active")
      const toAlice = api.callsOf("sendMessage")[1]!.payload
      assert.deepStrictEqual([toAlice["direct_messages_topic_id"], toAlice["text"]], [7001, "link https://example.com/mine"])
    }).pipe(Effect.provide(Live)))

  it.scoped("answers in the same topic and keeps topics apart", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup
      yield* feed(F.topicTextWithLinks)
      const ingest = yield* ContextIngest
      yield* ingest.ingest({
        type: "object_activated",
        event_id: "summary-1",
        chat_id: F.forum.id,
        reason: "summarized",
        source_message_id: 50,
        kind: "link"
      })
      yield* feed({
        update_id: 299,
        message: { ...command(0, 60, "", 9).message, text: "https://example.com/nine", entities: [{ type: "url", offset: 0, length: 24 }] }
      })
      yield* ingest.ingest({ type: "object_activated", event_id: "fetch-9", chat_id: F.forum.id, reason: "url_fetched", source_message_id: 60, kind: "link" })
      yield* feed(command(300, 301, "/context", 7))
      yield* feed(command(302, 303, "/context", 9))
      const replies = api.callsOf("sendMessage")
      assert.strictEqual(replies.length, 2)
      assert.strictEqual(replies[0]!.payload["message_thread_id"], 7)
      assert.strictEqual(replies[0]!.payload["text"], "link https://example.com/rust")
      assert.strictEqual(replies[1]!.payload["message_thread_id"], 9)
      assert.strictEqual(replies[1]!.payload["text"], "link https://example.com/nine")
      // The bot's own replies are recorded as outbound history.
      const history = yield* HistoryStore
      const recent = yield* history.recent({ chat_id: String(F.forum.id), topic_id: "9" }, 10)
      assert.deepStrictEqual(recent.map((e) => [e.item.kind, e.item.message_id]), [["inbound_user", "60"], ["inbound_user", "303"], ["outbound_agent", "10001"]])
      // The reply is the command's answer: its bot_response_id.
      assert.strictEqual(recent[1]!.item.bot_response_id, "10001")
    }).pipe(Effect.provide(Live)))

  it.scoped("a poll the bot sent resolves, and its close is tracked by poll id", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup
      yield* feed(command(310, 311, "/poll", 7))
      const sent = api.callsOf("sendPoll")
      assert.strictEqual(sent.length, 1)
      assert.strictEqual(sent[0]!.payload["message_thread_id"], 7)
      yield* feed(command(312, 313, "/what", 7))
      assert.match(String(api.callsOf("sendMessage")[0]!.payload["text"]), /^resolved -1001234567890\/10000\/poll$/)
      yield* feed({ update_id: 314, poll: { id: "poll-1", question: "Ship on Friday?", options: [], is_closed: true } })
      const store = yield* ContextStore
      const poll = yield* store.object(String(F.forum.id), "-1001234567890/10000/poll")
      assert.strictEqual(Option.getOrThrow(poll).poll?.state, "closed")
    }).pipe(Effect.provide(Live)))

  it.scoped("a user forwarding the bot's poll elsewhere does not take its close: the bot's own poll is the one closed", () =>
    Effect.gen(function*() {
      const { feed } = yield* setup
      yield* feed(command(320, 321, "/poll", 7))
      const store = yield* ContextStore
      const chat = String(F.forum.id)
      const own = (yield* store.snapshot(chat)).objects.find((o) => o.kind === "poll")!
      const poll = { id: own.poll!.poll_id!, question: "Ship on Friday?", options: [{ text: "yes", voter_count: 0 }, { text: "no", voter_count: 0 }], is_closed: false }
      const elsewhere = { id: -1008888888888, type: "supergroup", title: "Elsewhere" }
      // Telegram forwards a poll as the same poll, with the same id.
      yield* feed({
        update_id: 322,
        message: { message_id: 5, from: F.alice, chat: elsewhere, date: 1_771_000_200, forward_origin: { type: "user", sender_user: { id: F.botId, is_bot: true, first_name: "Deixis" }, date: 1_771_000_100 }, poll }
      })
      yield* feed({ update_id: 323, poll: { ...poll, is_closed: true } })
      assert.strictEqual(Option.getOrThrow(yield* store.object(chat, own.object_id)).poll?.state, "closed")
      assert.strictEqual(Option.getOrThrow(yield* store.object(String(elsewhere.id), `${elsewhere.id}/5/poll`)).poll?.state, "open")
    }).pipe(Effect.provide(DeixisTelegraf.layerMemory())))

  it.scoped("ctx.deixis.state patches and renders this topic's state", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup
      yield* feed(command(320, 321, "/state", 7))
      assert.include(String(api.callsOf("sendMessage")[0]!.payload["text"]), `{"plan":"friday"}`)
    }).pipe(Effect.provide(Live)))

  it.scoped("malformed and unknown updates pass through without a crash or a call", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup
      for (const u of [F.hostile.unknownType, F.hostile.messageWithoutChat, F.hostile.hugeText, F.pollAnswer, F.hostile.wrongPhotoShape]) {
        yield* feed(u)
      }
      yield* feed(command(330, 331, "/context", 7))
      assert.deepStrictEqual(api.calls().map((c) => c.method), ["getMe", "sendMessage"])
    }).pipe(Effect.provide(Live)))
})


// A history store that fails every write: a disk that is full, a database that is down.
const historyDown = Layer.succeed(HistoryStore, {
  ...HistoryStoreModule.makeMemory(),
  appendAll: () => Effect.fail(new StoreError({ message: "disk full" }))
})
const Down = DeixisTelegraf.layerWith(
  Layer.mergeAll(ContextStoreModule.layerMemory(), historyDown, ConversationState.layerMemory, ReminderStore.layerMemory, UpdateInbox.layerMemory)
)

const withHandler = (options: DeixisTelegraf.MiddlewareOptions) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<DeixisTelegraf.Services>()
    const bot = new Telegraf<DeixisTelegraf.DeixisContext>("123:TEST", { telegram: { apiRoot: "http://127.0.0.1:9" } })
    bot.botInfo = { id: F.botId, is_bot: true, first_name: "Bot", username: F.botUsername } as Telegraf["botInfo"] & object
    bot.use(DeixisTelegraf.middleware(runtime, { mode: "talkative", ...options }))
    const handled: Array<number> = []
    bot.on("message", (ctx) => void handled.push(ctx.update.update_id))
    const caught: Array<unknown> = []
    bot.catch((error) => void caught.push(error))
    const feed = (u: unknown) => Effect.promise(() => bot.handleUpdate(asUpdate(u)))
    return { handled, caught, feed }
  })

describe("DeixisTelegraf.middleware when the store fails", () => {
  it.scoped("by default a recording failure is logged and the next handler runs", () =>
    Effect.gen(function*() {
      const { caught, feed, handled } = yield* withHandler({})
      yield* feed(command(400, 401, "/context", 7))
      assert.deepStrictEqual(handled, [400])
      assert.deepStrictEqual(caught, [])
    }).pipe(Effect.provide(Down)))

  it.scoped("onStoreError: \"fail\" rejects with RecordFailed carrying the StoreError, and no later handler runs", () =>
    Effect.gen(function*() {
      const { caught, feed, handled } = yield* withHandler({ onStoreError: "fail" })
      yield* feed(command(410, 411, "/context", 7))
      assert.deepStrictEqual(handled, [])
      assert.strictEqual(caught.length, 1)
      const error = caught[0]
      assert.instanceOf(error, DeixisTelegraf.RecordFailed)
      if (error instanceof DeixisTelegraf.RecordFailed) {
        assert.strictEqual(error.update_id, 410)
        assert.instanceOf(error.cause, StoreError)
        assert.include(error.message, "disk full")
      }
    }).pipe(Effect.provide(Down)))

  it.scoped("onStoreError: \"fail\" with a working store records and calls the next handler", () =>
    Effect.gen(function*() {
      const { caught, feed, handled } = yield* withHandler({ onStoreError: "fail" })
      yield* feed(command(420, 421, "/context", 7))
      assert.deepStrictEqual(handled, [420])
      assert.deepStrictEqual(caught, [])
      const recent = yield* Effect.flatMap(HistoryStore, (h) => h.recent({ chat_id: String(F.forum.id), topic_id: "7" }, 10))
      assert.deepStrictEqual(recent.map((e) => e.item.message_id), ["421"])
    }).pipe(Effect.provide(Live)))
})
