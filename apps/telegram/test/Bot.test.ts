import { ContextIngest } from "@deixis/core/ContextIngest"
import * as ConversationState from "@deixis/core/ConversationState"
import { ContextStore } from "@deixis/core/ContextStore"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as F from "../../../packages/telegraf/test/fixtures/updates.js"
import * as FakeBotApi from "../../../packages/telegraf/test/utils/FakeBotApi.js"
import * as App from "../src/App.js"
import * as Bot from "../src/Bot.js"
import type { BotConfig } from "../src/BotConfig.js"
import * as Reminders from "../src/Reminders.js"
import * as Stores from "../src/Stores.js"

const now = 1_771_000_100_000
const chat = String(F.forum.id)

const config = (apiRoot: string, overrides: Partial<BotConfig> = {}) => ({
  token: Redacted.make("123:TEST"),
  apiRoot,
  mode: "talkative" as const,
  send: { maxAttempts: 3, baseDelay: Duration.seconds(1), maxDelay: Duration.seconds(30) },
  reminderRetryDelay: Duration.minutes(1),
  ...overrides
})

let nextId = 1000
const message = (text: string, options: { thread?: number; from?: typeof F.alice | typeof F.bob; extra?: Record<string, unknown> } = {}) => {
  const id = nextId++
  const command = /^\/\w+/.exec(text)
  return {
    update_id: id,
    message: {
      message_id: id,
      from: options.from ?? F.alice,
      chat: F.forum,
      date: Math.floor(now / 1000),
      message_thread_id: options.thread ?? 7,
      is_topic_message: true,
      text,
      ...(command === null ? {} : { entities: [{ type: "bot_command", offset: 0, length: command[0].length }] }),
      ...options.extra
    }
  }
}
const press = (data: string, from: typeof F.alice | typeof F.bob = F.alice, thread = 7) => ({
  update_id: nextId++,
  callback_query: {
    id: `cb-${nextId}`,
    from,
    chat_instance: "-1",
    data,
    message: { message_id: 10_000, from: F.bot, chat: F.forum, date: Math.floor(now / 1000), message_thread_id: thread, is_topic_message: true, text: "…" }
  }
})

const setup = (overrides: Partial<BotConfig> = {}) =>
  Effect.gen(function*() {
    const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
    const bot = yield* Bot.make(config(api.apiRoot, overrides))
    return { api, bot, feed: bot.handle }
  })

const texts = (api: FakeBotApi.FakeBotApi) => api.callsOf("sendMessage").map((c) => String(c.payload["text"]))
const lastSent = (api: FakeBotApi.FakeBotApi) => api.callsOf("sendMessage").at(-1)!.payload

// The clock is set before the stores exist: the memory store sweeps every minute, and moving
// a TestClock across 56 years would run every one of those sweeps.
const withMemory = <A, E, R extends Bot.Services | Scope.Scope>(effect: Effect.Effect<A, E, R>) =>
  Effect.zipRight(TestClock.setTime(now), Effect.provide(effect, App.services(Stores.layerMemory)))

// Waits (in real time: the sleep starts after real I/O) until some fiber sleeps on the TestClock
// until exactly `duration` from now. (The memory store's sweep always sleeps too.)
const sleeperIn = (duration: Duration.DurationInput) =>
  Effect.gen(function*() {
    const at = (yield* TestClock.currentTimeMillis) + Duration.toMillis(duration)
    for (let i = 0; i < 400; i++) {
      if (Chunk.some(yield* TestClock.sleeps(), (t) => t === at)) return
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
    }
    assert.fail(`nothing sleeps until ${Duration.format(duration)} from now`)
  })

describe("apps/telegram: commands", () => {
  it.scoped("/context lists this topic's active objects, answering in the same topic; a topic with nothing active falls back to the chat's", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(F.topicTextWithLinks)
      yield* Effect.flatMap(ContextIngest, (i) =>
        i.ingest({ type: "object_activated", event_id: "s1", chat_id: chat, reason: "summarized", source_message_id: 50, kind: "link" }))
      yield* feed(message("/context", { thread: 7 }))
      yield* feed(message("/context", { thread: 9 }))
      const [first, second] = api.callsOf("sendMessage")
      assert.strictEqual(first!.payload["message_thread_id"], 7)
      assert.match(String(first!.payload["text"]), /^Active \(topic\):\n• link · https:\/\/example\.com\/rust — until /)
      assert.strictEqual(second!.payload["message_thread_id"], 9)
      assert.match(String(second!.payload["text"]), /^Active \(chat\):\n• link · https:\/\/example\.com\/rust — until /)
    }).pipe(withMemory))

  it.scoped("/what poll resolves the topic's poll and touches it", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(F.userPoll)
      yield* feed(message("/what poll"))
      assert.strictEqual(lastSent(api)["text"], "Resolved: poll · Lunch?")
      const poll = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, `${chat}/70/poll`))
      assert.include(Option.getOrThrow(poll).activation_reasons, "resolver_touch")
    }).pipe(withMemory))

  it.scoped("/what as a reply resolves the replied message's object", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(F.photo)
      yield* feed(F.pdf)
      yield* feed(message("/what", { extra: { reply_to_message: { message_id: 60, from: F.alice, chat: F.forum, date: 1, message_thread_id: 7, is_topic_message: true } } }))
      assert.strictEqual(lastSent(api)["text"], "Resolved: media.image · the cat @bob")
    }).pipe(withMemory))

  it.scoped("/what image with two equal candidates is ambiguous; a button resolves on press", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(F.photo)
      yield* feed({ ...F.photo, update_id: 999, message: { ...F.photo.message, message_id: 69, caption: "the dog", caption_entities: [] } })
      yield* feed(message("/what image"))
      const sent = lastSent(api)
      assert.match(String(sent["text"]), /^Ambiguous — which one\?\n1\. media\.image · /)
      const keyboard = (sent["reply_markup"] as { inline_keyboard: Array<Array<{ callback_data: string }>> }).inline_keyboard
      assert.deepStrictEqual(keyboard.map((row) => row[0]!.callback_data).sort(), [`w:${chat}/60/media.image`, `w:${chat}/69/media.image`])
      yield* feed(press(`w:${chat}/69/media.image`))
      assert.strictEqual(api.callsOf("answerCallbackQuery")[0]!.payload["text"], "Resolved.")
      assert.strictEqual(api.callsOf("editMessageText")[0]!.payload["text"], "Resolved: media.image · the dog")
      const dog = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, `${chat}/69/media.image`))
      assert.include(Option.getOrThrow(dog).activation_reasons, "resolver_touch")
    }).pipe(withMemory))

  it.scoped("/what answers not found, and usage for an unknown kind", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(message("/what pdf", { thread: 11 }))
      yield* feed(message("/what gizmo", { thread: 11 }))
      assert.deepStrictEqual(texts(api).map((t) => t.split(":")[0]), ["Not found.", "usage"])
    }).pipe(withMemory))

  it.scoped("/poll sends a poll in the topic, activates it, and tracks its close", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(message("/poll Ship on Friday? | yes | no"))
      const sent = api.callsOf("sendPoll")[0]!.payload
      assert.deepStrictEqual([sent["question"], sent["options"], sent["message_thread_id"]], ["Ship on Friday?", ["yes", "no"], 7])
      yield* feed(message("/context"))
      assert.match(texts(api).at(-1)!, /• poll · Ship on Friday\?/)
      yield* feed({ update_id: nextId++, poll: { id: "poll-1", question: "Ship on Friday?", options: [], is_closed: true } })
      const poll = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, `${chat}/10000/poll`))
      assert.strictEqual(Option.getOrThrow(poll).poll?.state, "closed")
      yield* feed(message("/poll only a question"))
      assert.match(texts(api).at(-1)!, /^usage: \/poll/)
    }).pipe(withMemory))

  it.scoped("/state renders this topic's conversation state, not another topic's", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* Effect.flatMap(ConversationState.ConversationState, (s) =>
        s.update({ scope: { chat_id: chat, topic_id: "7" }, patch: { plan: "ship friday" }, updated_by: "1001" }))
      yield* feed(message("/state", { thread: 7 }))
      yield* feed(message("/state", { thread: 9 }))
      assert.deepStrictEqual(texts(api), [
        `Conversation state, revision 1 (updated 2026-02-13T16:28:20.000Z by "1001"):\n{"plan":"ship friday"}`,
        "Conversation state, revision 0 (empty):\n{}"
      ])
    }).pipe(withMemory))
})

describe("apps/telegram: reminders", () => {
  it.scoped("/remind fires in the same topic when due (TestClock)", () =>
    Effect.gen(function*() {
      const { api, bot, feed } = yield* setup()
      const command = message("/remind 10m stand-up notes")
      yield* feed(command)
      assert.strictEqual(texts(api)[0], "Reminder set for 2026-02-13T16:38:20Z: stand-up notes")
      const objectId = `${chat}/${command.message.message_id}/reminder`
      assert.deepStrictEqual(yield* bot.scheduled, [objectId])
      yield* sleeperIn("10 minutes")
      yield* TestClock.adjust("9 minutes")
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
      yield* TestClock.adjust("1 minute")
      const fired = yield* api.waitFor("sendMessage", (p) => p["text"] === "⏰ stand-up notes")
      assert.strictEqual(fired.payload["message_thread_id"], 7)
      assert.deepStrictEqual(fired.payload["reply_parameters"], { message_id: command.message.message_id, allow_sending_without_reply: true })
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
      const object = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, objectId))
      assert.strictEqual(Option.getOrThrow(object).reminder?.status, "fired")
      assert.deepStrictEqual(yield* Effect.flatMap(Reminders.ReminderStore, (s) => s.all), [])
    }).pipe(withMemory))

  it.scoped("a group upgraded to a supergroup takes its pending reminder along: it fires in the supergroup, not into the dead group", () =>
    Effect.gen(function*() {
      const { api, bot, feed } = yield* setup()
      const group = { id: -4001234567, title: "Book club", type: "group" }
      const supergroup = { id: -1004001234567, title: "Book club", type: "supergroup" }
      const remind = {
        update_id: nextId++,
        message: {
          message_id: 77, from: F.alice, chat: group, date: Math.floor(now / 1000), text: "/remind 10m chapter 4",
          entities: [{ type: "bot_command", offset: 0, length: 7 }]
        }
      }
      yield* feed(remind)
      assert.deepStrictEqual(yield* bot.scheduled, [`${group.id}/77/reminder`])
      yield* feed({ update_id: nextId++, message: { message_id: 78, from: F.alice, chat: group, date: Math.floor(now / 1000), migrate_to_chat_id: supergroup.id } })
      const pending = yield* Effect.flatMap(Reminders.ReminderStore, (s) => s.all)
      assert.deepStrictEqual(pending.map((r) => [r.chat_id, r.source_message_id]), [[String(supergroup.id), "~77"]])
      // The reminder's object moved with the chat's data, under its old id.
      const object = yield* Effect.flatMap(ContextStore, (s) => s.object(String(supergroup.id), `${group.id}/77/reminder`))
      assert.strictEqual(Option.getOrThrow(object).source_message_id, "~77")
      yield* sleeperIn("10 minutes")
      yield* TestClock.adjust("10 minutes")
      const fired = yield* api.waitFor("sendMessage", (p) => p["text"] === "⏰ chapter 4")
      assert.strictEqual(fired.payload["chat_id"], supergroup.id)
      // A message of the old group cannot be replied to from the supergroup.
      assert.isUndefined(fired.payload["reply_parameters"])
      assert.deepStrictEqual(api.callsOf("sendMessage").filter((c) => c.payload["chat_id"] === group.id).map((c) => c.payload["text"]), [
        "Reminder set for 2026-02-13T16:38:20Z: chapter 4"
      ])
    }).pipe(withMemory))

  it.scoped("a pending reminder survives a restart of the bot", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      // One store instance outlives both bots, as a database file does.
      const stores = yield* Layer.build(Stores.layerMemory)
      const services = App.services(Layer.succeedContext(stores))
      const first = yield* Scope.make()
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        yield* bot.handle(message("/remind 1h deploy", { thread: 9 }))
      }).pipe(Effect.provide(services), Scope.extend(first))
      yield* Scope.close(first, Exit.void)

      const second = yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        return yield* bot.scheduled
      }).pipe(Effect.provide(services))
      assert.strictEqual(second.length, 1)
      yield* sleeperIn("1 hour")
      yield* TestClock.adjust("1 hour")
      const fired = yield* api.waitFor("sendMessage", (p) => p["text"] === "⏰ deploy")
      assert.strictEqual(fired.payload["message_thread_id"], 9)
      assert.strictEqual(api.callsOf("sendMessage").filter((c) => c.payload["text"] === "⏰ deploy").length, 1)
    }))

  it.scoped("a pending reminder survives a restart over the SQLite store (a new store instance, same file)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bot-"))),
        (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
      )
      const filename = path.join(dir, "nested", "deixis.sqlite")
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        yield* bot.handle(message("/remind 2h retro", { thread: 9 }))
      }).pipe(Effect.provide(App.services(Stores.layerSqlite(filename))), Effect.scoped)

      const pending = yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        return yield* bot.scheduled
      }).pipe(Effect.provide(App.services(Stores.layerSqlite(filename))))
      assert.strictEqual(pending.length, 1)
      yield* sleeperIn("2 hours")
      yield* TestClock.adjust("2 hours")
      const fired = yield* api.waitFor("sendMessage", (p) => p["text"] === "⏰ retro")
      assert.strictEqual(fired.payload["message_thread_id"], 9)
    }))

  it.scoped("/reminders lists the chat's reminders with cancel buttons; only the creator cancels", () =>
    Effect.gen(function*() {
      const { api, bot, feed } = yield* setup()
      yield* feed(message("/remind 2h mine"))
      yield* feed(message("/remind 1h theirs", { from: F.bob }))
      yield* feed(message("/reminders"))
      const list = lastSent(api)
      assert.strictEqual(list["text"], "Reminders:\n1. 2026-02-13T18:28:20Z — mine (yours)\n2. 2026-02-13T17:28:20Z — theirs")
      const buttons = (list["reply_markup"] as { inline_keyboard: Array<Array<{ callback_data: string }>> }).inline_keyboard
      const mine = buttons[0]![0]!.callback_data
      yield* feed(press(mine, F.bob))
      assert.strictEqual(api.callsOf("answerCallbackQuery").at(-1)!.payload["text"], "Only its creator can cancel it.")
      assert.strictEqual((yield* bot.scheduled).length, 2)
      yield* feed(press(mine, F.alice))
      assert.strictEqual(api.callsOf("answerCallbackQuery").at(-1)!.payload["text"], "Cancelled.")
      assert.strictEqual(texts(api).at(-1), "Cancelled: mine")
      assert.strictEqual((yield* bot.scheduled).length, 1)
      const object = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, mine.slice(3)))
      assert.strictEqual(Option.getOrThrow(object).reminder?.status, "cancelled")
    }).pipe(withMemory))

  it.scoped("a reminder whose message cannot be sent stays pending and is sent later", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(message("/remind 1m retry me"))
      api.failNext("sendMessage", { error_code: 502, description: "Bad Gateway" }, 3)
      yield* sleeperIn("1 minute")
      yield* TestClock.adjust("1 minute")
      // Three attempts with 1 s and 2 s back-off, then the reminder waits a minute.
      for (const step of ["1 second", "2 seconds", "1 minute"] as const) {
        yield* sleeperIn(step)
        yield* TestClock.adjust(step)
      }
      yield* api.waitFor("sendMessage", (p) => p["text"] === "⏰ retry me")
      assert.strictEqual(api.callsOf("sendMessage").filter((c) => c.payload["text"] === "⏰ retry me").length, 4)
    }).pipe(withMemory))

  it("parses 10m, 2h, 1d and date-times, and refuses the rest", () => {
    const t = 0
    for (const [input, expected] of [["10m", 600_000], ["2h", 7_200_000], ["1d", 86_400_000], ["1970-01-02T00:00:00Z", 86_400_000]] as const) {
      assert.strictEqual(Reminders.parseWhen(input, t).pipe((e) => (e._tag === "Right" ? e.right : -1)), expected)
    }
    for (const input of ["0m", "10", "soon", "1970-01-01T00:00:00Z", "2026-12-01T09:00:00", "999999d"]) {
      assert.strictEqual(Reminders.parseWhen(input, t)._tag, "Left", input)
    }
  })
})

describe("apps/telegram: Bot API failures and transports", () => {
  it.scoped("a 429 is retried after exactly retry_after seconds", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      api.failNext("sendMessage", { error_code: 429, description: "Too Many Requests: retry after 5", parameters: { retry_after: 5 } })
      const fiber = yield* Effect.fork(feed(message("/context")))
      yield* api.waitFor("sendMessage")
      yield* sleeperIn("5 seconds")
      yield* TestClock.adjust("4999 millis")
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
      yield* TestClock.adjust("1 millis")
      yield* api.waitFor("sendMessage", undefined, 2)
      yield* Fiber.join(fiber)
      assert.strictEqual(api.callsOf("sendMessage").length, 2)
    }).pipe(withMemory))

  it.scoped("when every attempt fails the update is still recorded and the bot keeps going", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      api.failNext("sendMessage", { error_code: 500, description: "Internal Server Error" }, 3)
      const update = message("/context https://example.com/kept")
      const fiber = yield* Effect.fork(feed({ ...update, message: { ...update.message, entities: [...update.message.entities!, { type: "url", offset: 9, length: 24 }] } }))
      for (const step of ["1 second", "2 seconds"] as const) {
        yield* sleeperIn(step)
        yield* TestClock.adjust(step)
      }
      yield* Fiber.join(fiber)
      assert.strictEqual(api.callsOf("sendMessage").length, 3)
      const link = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, `${chat}/${update.message.message_id}/link`))
      assert.strictEqual(Option.getOrThrow(link).ref, "https://example.com/kept")
      yield* feed(message("/state"))
      assert.strictEqual(api.callsOf("sendMessage").length, 4)
    }).pipe(withMemory))

  it.scoped("long polling: malformed and unknown updates are ignored without a crash", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      api.pushUpdates(
        null,
        { update_id: "x" },
        { update_id: 1, message: { message_id: "not a number", chat: {} } },
        { update_id: 2, chat_boost: {} },
        F.hostile.hugeText,
        { ...message("/context"), update_id: 3 }
      )
      yield* Bot.launch(bot, { _tag: "polling" }, config(api.apiRoot).send)
      yield* api.waitFor("sendMessage")
      assert.deepStrictEqual(api.calls().slice(0, 2).map((c) => c.method), ["getMe", "deleteWebhook"])
      assert.strictEqual(texts(api)[0], "Nothing is active here.")
    }).pipe(withMemory))

  it.scoped("webhook: setWebhook with a secret; requests without it are refused", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const { port } = yield* Bot.launch(
        bot,
        { _tag: "webhook", url: "https://bot.example.com/telegram/hook", secret: Option.some(Redacted.make("s3cret_token")), port: 0, host: "127.0.0.1" },
        config(api.apiRoot).send
      )
      const set = api.callsOf("setWebhook")[0]!.payload
      assert.deepStrictEqual([set["url"], set["secret_token"]], ["https://bot.example.com/telegram/hook", "s3cret_token"])
      assert.include(set["allowed_updates"] as Array<string>, "message_reaction")
      const post = (body: string, headers: Record<string, string>) =>
        Effect.promise(() =>
          fetch(`http://127.0.0.1:${port}/telegram/hook`, { method: "POST", body, headers: { "content-type": "application/json", ...headers } })
            .then((r) => r.status)
        )
      const update = JSON.stringify(message("/context"))
      assert.strictEqual(yield* post(update, {}), 401)
      assert.strictEqual(yield* post(update, { "x-telegram-bot-api-secret-token": "wrong" }), 401)
      assert.strictEqual(yield* post("{not json", { "x-telegram-bot-api-secret-token": "s3cret_token" }), 400)
      assert.strictEqual(yield* post("null", { "x-telegram-bot-api-secret-token": "s3cret_token" }), 200)
      assert.strictEqual(api.callsOf("sendMessage").length, 0)
      assert.strictEqual(yield* post(update, { "x-telegram-bot-api-secret-token": "s3cret_token" }), 200)
      assert.strictEqual(texts(api)[0], "Nothing is active here.")
    }).pipe(withMemory))
})
