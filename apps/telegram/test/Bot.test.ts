import { ContextIngest } from "@deixis/core/ContextIngest"
import * as ConversationState from "@deixis/core/ConversationState"
import { ContextStore } from "@deixis/core/ContextStore"
import * as ReminderStore from "@deixis/core/ReminderStore"
import { StoreConfig } from "@deixis/store-sql"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as App from "../src/App.js"
import * as Bot from "../src/Bot.js"
import {
  buttonsOf,
  chat,
  config,
  eventuallyEffect,
  F,
  FakeBotApi,
  lastSent,
  message,
  now,
  press,
  setup,
  sleeperIn,
  startReminders,
  texts,
  withMemory
} from "./utils/harness.js"

const reminders = Effect.flatMap(ReminderStore.ReminderStore, (s) => s.list(chat, { topic_id: null, limit: 100 }))

describe("apps/telegram: commands answer as replies, in plain language", () => {
  it.scoped("/context describes this topic's objects in words, as a reply in the same topic; a topic with nothing in focus falls back to the chat's", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(F.topicTextWithLinks)
      yield* Effect.flatMap(ContextIngest, (i) =>
        i.ingest({ type: "object_activated", event_id: "s1", chat_id: chat, reason: "summarized", source_message_id: 50, kind: "link" }))
      const asked = message("/context", { thread: 7 })
      yield* feed(asked)
      yield* feed(message("/context", { thread: 9 }))
      const [first, second] = api.callsOf("sendMessage")
      assert.strictEqual(first!.payload["message_thread_id"], 7)
      assert.deepStrictEqual(first!.payload["reply_parameters"], { message_id: asked.message.message_id, allow_sending_without_reply: true })
      assert.match(String(first!.payload["text"]), /^In focus in this topic:\n• The link example\.com\/rust \(summarized\) — until today 18:28$/m)
      assert.strictEqual(second!.payload["message_thread_id"], 9)
      assert.match(String(second!.payload["text"]), /^In focus in this chat:\n• The link example\.com\/rust \(summarized, another topic\) — until today 18:28$/m)
    }).pipe(withMemory))

  it.scoped("/context right after a link, a photo and a PDF names what was seen instead of saying nothing, with no reason codes", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(F.topicTextWithLinks)
      yield* feed(F.photo)
      yield* feed(F.pdf)
      yield* feed(message("/context"))
      const answer = texts(api)[0]!
      assert.include(answer, "Seen here recently:")
      assert.include(answer, "• The photo")
      assert.include(answer, "• The PDF")
      assert.include(answer, "• The link")
      assert.include(answer, "reply to one with /what")
      assert.notMatch(answer, /[a-z]+_[a-z]+/)
    }).pipe(withMemory))

  it.scoped("/what poll resolves the topic's poll, says why in words, and touches it", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(F.userPoll)
      yield* feed(message("/what poll"))
      assert.match(String(lastSent(api)["text"]), /^You mean the poll “Lunch\?” — .*it is in this topic.*\.$/)
      assert.notMatch(String(lastSent(api)["text"]), /same_topic|kind_match/)
      const poll = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, `${chat}/70/poll`))
      assert.include(Option.getOrThrow(poll).activation_reasons, "resolver_touch")
    }).pipe(withMemory))

  it.scoped("/what as a reply names the replied message's object and that it was replied to", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(F.photo)
      yield* feed(F.pdf)
      yield* feed(message("/what", { extra: { reply_to_message: { message_id: 60, from: F.alice, chat: F.forum, date: 1, message_thread_id: 7, is_topic_message: true } } }))
      assert.match(String(lastSent(api)["text"]), /^You mean the photo “the cat @bob” — you replied to it/)
    }).pipe(withMemory))

  it.scoped("/what photo with two equal candidates asks which one; a button resolves on press", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(F.photo)
      yield* feed({ ...F.photo, update_id: 999, message: { ...F.photo.message, message_id: 69, caption: "the dog", caption_entities: [] } })
      yield* feed(message("/what photo"))
      const sent = lastSent(api)
      assert.match(String(sent["text"]), /^That could be more than one thing — which one\?\n1\. The photo “/)
      assert.deepStrictEqual(buttonsOf(sent).map((row) => row[0]!.callback_data).sort(), [`w:${chat}/60/media.image`, `w:${chat}/69/media.image`])
      yield* feed(press(`w:${chat}/69/media.image`))
      assert.strictEqual(api.callsOf("answerCallbackQuery")[0]!.payload["text"], "Got it.")
      assert.strictEqual(api.callsOf("editMessageText")[0]!.payload["text"], "You mean the photo “the dog”.")
      const dog = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, `${chat}/69/media.image`))
      assert.include(Option.getOrThrow(dog).activation_reasons, "resolver_touch")
    }).pipe(withMemory))

  it.scoped("/what with nothing to find, or an unknown kind, says what to do instead", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(message("/what pdf", { thread: 11 }))
      yield* feed(message("/what gizmo", { thread: 11 }))
      const [notFound, unknown] = texts(api)
      assert.match(notFound!, /^I can't tell what that refers to\. Reply to the message you mean with \/what/)
      assert.match(unknown!, /^I know these kinds: poll, reminder/)
    }).pipe(withMemory))

  it.scoped("/start, /help and /help@bot explain the bot and privacy mode; /help@another_bot is not for it", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(message("/start", { thread: null, chat: F.forum }))
      yield* feed(message("/help"))
      yield* feed(message(`/help@${F.botUsername}`))
      yield* feed(message("/help@another_bot"))
      const answers = texts(api)
      assert.strictEqual(answers.length, 3)
      for (const answer of answers) {
        assert.include(answer, "/remind <when> <what>")
        assert.include(answer, "privacy mode")
      }
    }).pipe(withMemory))

  it.scoped("/help leaves the privacy note out when the bot reads every group message", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup({}, { readsAllGroupMessages: true })
      yield* feed(message("/help"))
      assert.notInclude(texts(api)[0]!, "privacy mode")
    }).pipe(withMemory))

  it.scoped("/state renders this topic's conversation state, not another topic's", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* Effect.flatMap(ConversationState.ConversationState, (s) =>
        s.update({ scope: { chat_id: chat, topic_id: "7" }, patch: { plan: "ship friday" }, updated_by: "1001" }))
      yield* feed(message("/state", { thread: 7 }))
      yield* feed(message("/state", { thread: 9 }))
      const [here, there] = texts(api)
      assert.include(here!, `{"plan":"ship friday"}`)
      assert.include(there!, "revision 0")
    }).pipe(withMemory))

  it.scoped("a command whose store fails gets an apology with a hint, never silence", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const failing = Layer.succeed(ReminderStore.ReminderStore, {
        ...ReminderStore.makeMemory(),
        list: () => Effect.fail(new ReminderStore.StoreError({ message: "database is down" })),
        add: () => Effect.fail(new ReminderStore.StoreError({ message: "database is down" }))
      })
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        yield* bot.handle(message("/reminders"))
        yield* bot.handle(message("/remind in 5 minutes tea"))
      }).pipe(Effect.provide(Layer.merge(App.services(StoreConfig.layerMemory), failing)))
      const [list, remind] = texts(api)
      assert.strictEqual(list, "Sorry — something went wrong on my side while doing /reminders. Nothing was lost; please try again in a minute.")
      assert.match(remind!, /^Sorry — something went wrong on my side while doing \/remind\./)
    }).pipe((effect) => Effect.zipRight(TestClock.setTime(now), effect)))
})

describe("apps/telegram: malformed updates", () => {
  it.scoped("a message with fields of the wrong type is logged as a malformed update with the mapper's reason, not as a handler failure, and answered by nothing", () => {
    const logs: Array<{ readonly level: string; readonly message: string; readonly annotations: Record<string, unknown> }> = []
    const capture = Logger.make(({ annotations, logLevel, message }) => {
      logs.push({ level: logLevel.label, message: String(message), annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
    })
    return Effect.gen(function*() {
      const { api, feed } = yield* setup()
      // Telegraf's command matcher would call text.slice on a number.
      yield* feed(message("/help", { extra: { text: 42 } }))
      yield* feed(message("/help", { extra: { entities: "bot_command" } }))
      assert.deepStrictEqual(texts(api), [])
      assert.deepStrictEqual(logs.filter((l) => l.level === "ERROR").map((l) => l.message), [])
      const warnings = logs.filter((l) => l.message === "malformed update ignored")
      assert.deepStrictEqual(warnings.map((l) => [l.level, l.annotations["reason"]]), [
        ["WARN", "malformed message: text: expected a string"],
        ["WARN", "malformed message: entities: expected an array"]
      ])
      yield* feed(message("/help"))
      assert.strictEqual(texts(api).length, 1)
    }).pipe(withMemory, Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
  })
})

describe("apps/telegram: polls", () => {
  it.scoped("/poll sends a poll with a close button in the topic; its creator closes it and the object follows", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(message("/poll Ship on Friday? | yes | no"))
      const sent = api.callsOf("sendPoll")[0]!.payload
      assert.deepStrictEqual([sent["question"], sent["options"], sent["message_thread_id"]], ["Ship on Friday?", [{ text: "yes" }, { text: "no" }], 7])
      assert.deepStrictEqual(buttonsOf(sent)[0]![0], { text: "Close poll", callback_data: `pc:${F.alice.id}` })
      yield* feed(message("/context"))
      assert.match(texts(api).at(-1)!, /• The poll “Ship on Friday\?”/)
      yield* feed(press(`pc:${F.alice.id}`, { from: F.bob, messageId: 10_000 }))
      assert.strictEqual(api.callsOf("answerCallbackQuery").at(-1)!.payload["text"], "Only the poll's creator or an admin can close it.")
      assert.strictEqual(api.callsOf("stopPoll").length, 0)
      yield* feed(press(`pc:${F.alice.id}`, { from: F.alice, messageId: 10_000 }))
      assert.strictEqual(api.callsOf("answerCallbackQuery").at(-1)!.payload["text"], "Poll closed.")
      assert.deepStrictEqual(api.callsOf("stopPoll")[0]!.payload["message_id"], 10_000)
      const poll = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, `${chat}/10000/poll`))
      assert.strictEqual(Option.getOrThrow(poll).poll?.state, "closed")
      yield* feed(message("/poll only a question"))
      assert.match(texts(api).at(-1)!, /^Write the question and at least two options/)
    }).pipe(withMemory))

  it.scoped("an admin closes someone else's poll with /closepoll as a reply; a member cannot", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(message("/poll Lunch? | pizza | sushi"))
      const pollMessage = { message_id: 10_000, from: F.bot, chat: F.forum, date: 1, message_thread_id: 7, is_topic_message: true, poll: { id: "poll-1" } }
      yield* feed(message("/closepoll", { from: F.bob, extra: { reply_to_message: pollMessage } }))
      assert.strictEqual(texts(api).at(-1), "Only the poll's creator or an admin can close it.")
      api.setMember(F.forum.id, F.bob.id, "administrator")
      yield* feed(message("/closepoll", { from: F.bob, extra: { reply_to_message: pollMessage } }))
      assert.strictEqual(texts(api).at(-1), "Poll closed.")
      yield* feed(message("/closepoll", { from: F.bob, extra: { reply_to_message: pollMessage } }))
      assert.strictEqual(texts(api).at(-1), "That poll is already closed.")
      // A poll message Telegram no longer has (deleted) is not "already closed".
      const gone = { ...pollMessage, message_id: 10_500, poll: { id: "poll-gone" } }
      yield* feed(message("/closepoll", { from: F.bob, extra: { reply_to_message: gone } }))
      assert.strictEqual(texts(api).at(-1), "I can no longer close that poll (Telegram says: message with poll to stop not found).")
      yield* feed(message("/closepoll"))
      assert.strictEqual(texts(api).at(-1), "Reply to one of my polls with /closepoll to close it.")
    }).pipe(withMemory))
})

describe("apps/telegram: time zones and reminders", () => {
  it.scoped("/remind answers in local time; /timezone changes the zone (admins in groups), and refuses unknown zones", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(message("/remind in 10 minutes stand-up notes"))
      assert.strictEqual(texts(api).at(-1), "Okay — I'll remind you today 16:38, UTC (in 10 minutes): stand-up notes")
      yield* feed(message("/timezone Europe/Berlin"))
      assert.strictEqual(texts(api).at(-1), "Only an admin can change this chat's time zone.")
      api.setMember(F.forum.id, F.alice.id, "creator")
      yield* feed(message("/timezone Mars/Olympus"))
      assert.match(texts(api).at(-1)!, /^I don't know the time zone “Mars\/Olympus”/)
      yield* feed(message("/timezone europe/berlin"))
      assert.strictEqual(texts(api).at(-1), "Time zone set: Europe/Berlin. It is today 17:28, Europe/Berlin now.")
      yield* feed(message("/remind tomorrow 9:00 retro"))
      assert.strictEqual(texts(api).at(-1), "Okay — I'll remind you tomorrow 09:00, Europe/Berlin (in 15 hours 32 minutes): retro")
      yield* feed(message("/timezone"))
      assert.match(texts(api).at(-1)!, /^This chat's time zone is Europe\/Berlin/)
      assert.notMatch(texts(api).join("\n"), /\d{4}-\d\d-\d\dT/)
    }).pipe(withMemory))

  it.scoped("an anonymous admin (a message sent as the group itself) may set the time zone and close the bot's poll", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      // Telegram hides an anonymous admin behind @GroupAnonymousBot, with the group as sender_chat.
      const anonymous = { from: { id: 1087968824, is_bot: true, first_name: "Group", username: "GroupAnonymousBot" }, sender_chat: F.forum }
      yield* feed(message("/timezone Europe/Berlin", { extra: anonymous }))
      assert.strictEqual(texts(api).at(-1), "Time zone set: Europe/Berlin. It is today 17:28, Europe/Berlin now.")
      yield* feed(message("/poll Lunch? | pizza | sushi", { from: F.bob }))
      const pollMessage = { message_id: 10_001, from: F.bot, chat: F.forum, date: 1, message_thread_id: 7, is_topic_message: true, poll: { id: "poll-1" } }
      yield* feed(message("/closepoll", { extra: { ...anonymous, reply_to_message: pollMessage } }))
      assert.strictEqual(texts(api).at(-1), "Poll closed.")
      // A channel speaking in its discussion group is not an admin of the group.
      const channel = { id: -1005555555555, title: "News", type: "channel" }
      yield* feed(message("/timezone Asia/Tokyo", { extra: { from: { id: 136817688, is_bot: true, first_name: "Channel", username: "Channel_Bot" }, sender_chat: channel } }))
      assert.strictEqual(texts(api).at(-1), "Only an admin can change this chat's time zone.")
      // Nor is a member who sets sender_chat to the group in a forged update of another chat.
      yield* feed(message("/timezone Asia/Tokyo", { from: F.bob, extra: { sender_chat: F.otherForum } }))
      assert.strictEqual(texts(api).at(-1), "Only an admin can change this chat's time zone.")
    }).pipe(withMemory))

  it.scoped("/remind without a usable time explains with examples", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(message("/remind soon-ish tea"))
      yield* feed(message("/remind yesterday 9:00 tea"))
      yield* feed(message("/remind in 10 minutes"))
      const [none, past, noText] = texts(api)
      assert.match(none!, /^I couldn't find a time in that\. For example: \/remind in 10 minutes/)
      assert.match(past!, /^That time has already passed \(times are in UTC/)
      assert.match(noText!, /^What should I remind you of\?/)
      assert.deepStrictEqual(yield* reminders, [])
    }).pipe(withMemory))

  it.scoped("a reminder fires in the same topic, as a reply to the /remind, when due (TestClock), and leaves the store", () =>
    Effect.gen(function*() {
      const { api, bot, feed } = yield* setup()
      yield* startReminders(bot)
      const command = message("/remind 10min stand-up notes")
      yield* feed(command)
      assert.strictEqual((yield* reminders).length, 1)
      yield* sleeperIn("5 seconds")
      yield* TestClock.adjust("9 minutes")
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
      yield* TestClock.adjust("1 minute")
      const fired = yield* api.waitFor("sendMessage", (p) => p["text"] === "⏰ Reminder: stand-up notes")
      assert.strictEqual(fired.payload["message_thread_id"], 7)
      assert.deepStrictEqual(fired.payload["reply_parameters"], { message_id: command.message.message_id, allow_sending_without_reply: true })
      const objectId = `${chat}/${command.message.message_id}/reminder`
      yield* eventuallyEffect("the fired reminder leaves the store", Effect.map(reminders, (list) => list.length === 0))
      const object = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, objectId))
      assert.strictEqual(Option.getOrThrow(object).reminder?.status, "fired")
    }).pipe(withMemory))

  it.scoped("a pending reminder survives a restart of the bot (one store instance, as a database)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const stores = yield* Layer.build(StoreConfig.layerMemory)
      const services = App.services(Layer.succeedContext(stores))
      const first = yield* Scope.make()
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        yield* bot.handle(message("/remind 1h deploy", { thread: 9 }))
      }).pipe(Effect.provide(services), Scope.extend(first))
      yield* Scope.close(first, Exit.void)
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        // The sender sleeps until the reminder is due (the poll interval is longer).
        yield* startReminders(bot, { reminderPollInterval: Duration.days(1) })
        yield* sleeperIn("1 hour")
        yield* TestClock.adjust("1 hour")
        const fired = yield* api.waitFor("sendMessage", (p) => p["text"] === "⏰ Reminder: deploy")
        assert.strictEqual(fired.payload["message_thread_id"], 9)
      }).pipe(Effect.provide(services))
      assert.strictEqual(api.callsOf("sendMessage").filter((c) => c.payload["text"] === "⏰ Reminder: deploy").length, 1)
    }))

  it.scoped("a pending reminder survives a restart over SQLite (a new store instance on the same file)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bot-"))),
        (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
      )
      const choice = { _tag: "sqlite", filename: path.join(dir, "nested", "deixis.sqlite") } as const
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        yield* bot.handle(message("/remind 2h retro", { thread: 9 }))
      }).pipe(Effect.provide(App.services(StoreConfig.layer(choice))), Effect.scoped)
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        yield* startReminders(bot, { reminderPollInterval: Duration.days(1) })
        yield* sleeperIn("2 hours")
        yield* TestClock.adjust("2 hours")
        const fired = yield* api.waitFor("sendMessage", (p) => p["text"] === "⏰ Reminder: retro")
        assert.strictEqual(fired.payload["message_thread_id"], 9)
      }).pipe(Effect.provide(App.services(StoreConfig.layer(choice))), Effect.scoped)
    }))

  it.scoped("/reminders lists this topic's first; the creator cancels and the list is edited in place; others cannot", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      yield* feed(message("/remind 2h mine"))
      yield* feed(message("/remind 1h theirs", { from: F.bob }))
      yield* feed(message("/remind 30min elsewhere", { thread: 9 }))
      yield* feed(message("/reminders"))
      const list = lastSent(api)
      assert.strictEqual(
        list["text"],
        "Reminders here:\n1. today 17:28 — theirs\n2. today 18:28 — mine (yours)\nElsewhere in this chat:\n3. today 16:58 — elsewhere (yours)\nTimes in UTC."
      )
      const mine = buttonsOf(list)[1]![0]!.callback_data
      yield* feed(press(mine, { from: F.bob }))
      assert.strictEqual(api.callsOf("answerCallbackQuery").at(-1)!.payload["text"], "Only the reminder's creator or an admin can cancel it.")
      assert.strictEqual((yield* reminders).length, 3)
      yield* feed(press(mine, { from: F.alice }))
      assert.strictEqual(api.callsOf("answerCallbackQuery").at(-1)!.payload["text"], "Cancelled: mine")
      const edited = api.callsOf("editMessageText").at(-1)!.payload
      assert.strictEqual(edited["text"], "Reminders here:\n1. today 17:28 — theirs\nElsewhere in this chat:\n2. today 16:58 — elsewhere (yours)\nTimes in UTC.")
      assert.strictEqual(buttonsOf(edited).length, 2)
      assert.strictEqual((yield* reminders).length, 2)
      const object = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, mine.slice(3)))
      assert.strictEqual(Option.getOrThrow(object).reminder?.status, "cancelled")
    }).pipe(withMemory))

  it.scoped("a reminder whose message cannot be sent stays pending and is sent later", () =>
    Effect.gen(function*() {
      const { api, bot, feed } = yield* setup()
      yield* startReminders(bot)
      yield* feed(message("/remind 1m retry me"))
      api.failNext("sendMessage", { error_code: 502, description: "Bad Gateway" }, 1)
      yield* sleeperIn("5 seconds")
      yield* TestClock.adjust("1 minute")
      // A 502 may have posted: sendMessage is not repeated at once (TelegramSend's rule); the
      // reminder is due again a minute after the failure.
      yield* api.waitFor("sendMessage", (p) => p["text"] === "⏰ Reminder: retry me")
      const failedAt = yield* TestClock.currentTimeMillis
      const store = yield* ReminderStore.ReminderStore
      yield* eventuallyEffect(
        "the reminder is due again a minute after the failure",
        Effect.map(store.nextDueAt, (next) => Option.getOrUndefined(next) === failedAt + 60_000)
      )
      assert.strictEqual(api.delivered().length, 1)
      yield* TestClock.adjust("1 minute")
      yield* eventuallyEffect("the reminder is delivered", Effect.sync(() => api.delivered().some((c) => c.payload["text"] === "⏰ Reminder: retry me")))
      assert.strictEqual(api.callsOf("sendMessage").filter((c) => c.payload["text"] === "⏰ Reminder: retry me").length, 2)
      assert.strictEqual(api.delivered().filter((c) => c.payload["text"] === "⏰ Reminder: retry me").length, 1)
    }).pipe(withMemory))

  it.scoped("when a group is upgraded to a supergroup (migrate_to_chat_id) its reminders move to the new id", () =>
    Effect.gen(function*() {
      const { feed } = yield* setup()
      yield* feed(message("/remind in 1 hour upgrade", { thread: null }))
      yield* feed(message("", { thread: null, extra: { text: undefined, migrate_to_chat_id: -1007777 } }))
      assert.deepStrictEqual(yield* reminders, [])
      const moved = yield* Effect.flatMap(ReminderStore.ReminderStore, (s) => s.list("-1007777", { topic_id: null, limit: 10 }))
      assert.deepStrictEqual(moved.map((r) => r.text), ["upgrade"])
      // Its source is a message of the old group, under its migrated id: never replied to from the supergroup.
      assert.isTrue(moved.every((r) => r.source_message_id.startsWith("~")))
    }).pipe(withMemory))

  it.scoped("a reminder for a group upgraded to a supergroup moves to the new chat id and is sent there", () =>
    Effect.gen(function*() {
      const { api, bot, feed } = yield* setup()
      yield* startReminders(bot)
      yield* feed(message("/remind 1m moved"))
      api.failNext("sendMessage", {
        error_code: 400,
        description: "Bad Request: group chat was upgraded to a supergroup chat",
        parameters: { migrate_to_chat_id: -1009999 }
      })
      yield* sleeperIn("5 seconds")
      yield* TestClock.adjust("1 minute")
      const sent = yield* api.waitFor("sendMessage", (p) => p["chat_id"] === "-1009999")
      assert.strictEqual(sent.payload["text"], "⏰ Reminder: moved")
    }).pipe(withMemory))
})
