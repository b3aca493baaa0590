import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { StoreError } from "@deixis/core/ContextStore"
import * as UpdateInbox from "@deixis/core/UpdateInbox"
import { StoreConfig } from "@deixis/store-sql"
import { DeixisTelegraf } from "@deixis/telegraf"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as TestClock from "effect/TestClock"
import { connect, type Socket } from "node:net"
import { Composer } from "telegraf"
import * as App from "../src/App.js"
import * as Bot from "../src/Bot.js"
import * as BotApi from "../src/BotApi.js"
import * as Commands from "../src/Commands.js"
import * as Dispatcher from "../src/Dispatcher.js"
import * as Ops from "../src/Ops.js"
import * as Runner from "../src/Runner.js"
import * as Metrics from "../src/Metrics.js"
import {
  chat,
  config,
  eventually,
  eventuallyEffect,
  F,
  FakeBotApi,
  freshId,
  launch,
  message,
  now,
  setup,
  type Services,
  sleeperIn,
  texts,
  withMemory,
  withMemoryLive
} from "./utils/harness.js"

const inChat = (chatId: number) => (p: Record<string, unknown>) => Number(p["chat_id"]) === chatId
const deliveredTo = (api: FakeBotApi.FakeBotApi, chatId: number) => api.delivered().filter((c) => inChat(chatId)(c.payload))
/**
 * A hang released when the test's scope closes, before the bot's shutdown (it is made after
 * `launch`): the shutdown waits for its updates on the TestClock, so a failed assertion would
 * otherwise wait on a held call forever and show only as a test timeout.
 */
const holding = (api: FakeBotApi.FakeBotApi, method: string, where?: FakeBotApi.Matcher) =>
  Effect.sync(() => api.hang(method, where)).pipe(Effect.tap((hang) => Effect.addFinalizer(() => Effect.sync(hang.release))))

/**
 * The status a server answers to a body longer than it takes, read from the status line on a
 * socket of its own: the server may answer before the body is all sent and then close, which a
 * fetch reports as a network error rather than the answer. No answer fails the test.
 */
const postOversized = (port: number, path: string, bytes: number, headers: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<number>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1")
      let data = ""
      const settle = () => {
        const status = /^HTTP\/1\.1 (\d{3}) /.exec(data)
        if (status !== null) resolve(Number(status[1]))
        else reject(new Error(`no status line in ${JSON.stringify(data.slice(0, 80))}`))
        socket.destroy()
      }
      socket.on("data", (chunk) => {
        data += chunk
        if (data.includes("\r\n")) settle()
      })
      socket.once("error", settle)
      socket.once("close", settle)
      const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")
      socket.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${head}content-length: ${bytes}\r\n\r\n`)
      socket.write("x".repeat(bytes), () => {})
    })
  )

describe("apps/telegram: one chat's trouble never delays another", () => {
  it.scoped("a 429 in chat A does not delay chat B; A is answered after retry_after", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      yield* launch(bot, api.apiRoot)
      api.failNext("sendMessage", { error_code: 429, description: "Too Many Requests: retry after 30", parameters: { retry_after: 30 } }, 1, (c) =>
        inChat(F.forum.id)(c.payload))
      api.pushUpdates(message("/help"), message("/help", { chat: F.otherForum }))
      yield* api.waitFor("sendMessage", inChat(F.otherForum.id))
      yield* eventually("chat B is answered", () => deliveredTo(api, F.otherForum.id).length === 1)
      assert.strictEqual(deliveredTo(api, F.forum.id).length, 0)
      assert.strictEqual(api.callsOf("sendMessage").filter((c) => inChat(F.forum.id)(c.payload)).length, 1)
      yield* sleeperIn("30 seconds")
      yield* TestClock.adjust("30 seconds")
      yield* eventually("chat A is answered after retry_after", () => deliveredTo(api, F.forum.id).length === 1)
    }).pipe(withMemory))

  it.scoped("a hung send in chat A does not block chat B; A goes on once the call returns", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      yield* launch(bot, api.apiRoot)
      const hang = yield* holding(api, "sendMessage", (c) => inChat(F.forum.id)(c.payload))
      api.pushUpdates(message("/help"), message("/help", { chat: F.otherForum }))
      yield* eventually("chat B is answered", () => deliveredTo(api, F.otherForum.id).length === 1)
      yield* eventually("chat A's call is held", () => hang.held() === 1)
      assert.strictEqual(deliveredTo(api, F.forum.id).length, 0)
      hang.release()
      yield* eventually("chat A is answered", () => deliveredTo(api, F.forum.id).length === 1)
    }).pipe(withMemory))

  it.scoped("a call that never returns times out (BOT_API_TIMEOUT) and the chat goes on", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup({ send: { ...config("").send, timeout: Duration.seconds(15) } })
      yield* launch(bot, api.apiRoot)
      api.hang("sendMessage", (c) => inChat(F.forum.id)(c.payload) && String(c.payload["text"]).startsWith("I keep track"))
      api.pushUpdates(message("/help"), message("/remind in 5 minutes tea"))
      yield* eventually("the /help reply hangs", () => api.callsOf("sendMessage").length === 1)
      yield* sleeperIn("15 seconds")
      yield* TestClock.adjust("15 seconds")
      yield* eventually("the next update of the chat is answered", () => texts(api).some((t) => t.startsWith("Okay — I'll remind you")))
      // A send that timed out is not repeated: it may have been posted.
      assert.strictEqual(texts(api).filter((t) => t.startsWith("I keep track")).length, 1)
    }).pipe(withMemory))

  it.scoped("a chat flooding the bot while its calls hang holds at most a quarter of the queue: another chat is answered, the flood is deferred, never lost", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup({ queueCapacity: 20 })
      const running = yield* launch(bot, api.apiRoot, { queueCapacity: 20, updateLease: Duration.seconds(10) })
      const hang = yield* holding(api, "sendMessage", (c) => inChat(F.forum.id)(c.payload))
      // More updates of chat A than the whole queue holds, then one of chat B.
      api.pushUpdates(...Array.from({ length: 30 }, () => message("/help")))
      api.pushUpdates(message("/help", { chat: F.otherForum }))
      yield* eventually("chat B is answered while chat A's calls are held", () => deliveredTo(api, F.otherForum.id).length === 1)
      assert.strictEqual(deliveredTo(api, F.forum.id).length, 0)
      hang.release()
      // The deferred updates come back when their claims end (BOT_UPDATE_LEASE), a share at a time.
      for (let i = 0; i < 20 && deliveredTo(api, F.forum.id).length < 30; i++) {
        yield* running.dispatcher.idle
        yield* TestClock.adjust("10 seconds")
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 20)))
      }
      yield* eventually("chat A is answered for every update", () => deliveredTo(api, F.forum.id).length === 30)
      yield* running.dispatcher.idle
      assert.strictEqual(deliveredTo(api, F.forum.id).length, 30)
    }).pipe(withMemory))

  it.scoped("updates of one chat are handled in order while another chat goes on", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      yield* launch(bot, api.apiRoot)
      const hang = yield* holding(api, "sendMessage", (c) => inChat(F.forum.id)(c.payload))
      // Update ids increase in the order Telegram sends them.
      const a = (i: number) => message(`/remind in ${i} minutes task ${i}`)
      api.pushUpdates(a(1), a(2), a(3), a(4), message("/help", { chat: F.otherForum }), a(5), a(6), a(7), a(8))
      yield* eventually("chat B is answered", () => deliveredTo(api, F.otherForum.id).length === 1)
      // Chat A's first reply hangs (chat B may well be answered before it is sent), and none of
      // its later updates overtook it.
      yield* eventually("chat A's first reply is held", () => hang.held() === 1)
      assert.deepStrictEqual(api.callsOf("sendMessage").filter((c) => inChat(F.forum.id)(c.payload)).length, 1)
      hang.release()
      yield* eventually("chat A is answered", () => deliveredTo(api, F.forum.id).length === 8)
      assert.deepStrictEqual(
        deliveredTo(api, F.forum.id).map((c) => /task (\d+)/.exec(String(c.payload["text"]))![1]),
        ["1", "2", "3", "4", "5", "6", "7", "8"]
      )
    }).pipe(withMemory))

  it.scoped("a reaction waits for its chat's earlier updates in every topic: it lands in the reacted message's topic, even behind a held call", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      yield* launch(bot, api.apiRoot)
      const hang = yield* holding(api, "sendMessage", (c) => inChat(F.forum.id)(c.payload))
      const look = message("look at this https://example.com/a", { extra: { entities: [{ type: "url", offset: 13, length: 21 }] } })
      // A reaction names no topic: only the reacted message, recorded once its topic's queue reaches it.
      const reaction = {
        update_id: freshId(),
        message_reaction: {
          chat: F.forum,
          message_id: look.message.message_id,
          user: F.bob,
          date: look.message.date + 5,
          old_reaction: [],
          new_reaction: [{ type: "emoji", emoji: "👍" }]
        }
      }
      api.pushUpdates(message("/help"), look, reaction)
      yield* eventually("the /help reply is held", () => hang.held() === 1)
      hang.release()
      const topic = (topicId: string | null) =>
        Effect.flatMap(HistoryStore, (h) => h.recent({ chat_id: chat, topic_id: topicId }, 50)).pipe(Effect.map((items) => items.map((i) => i.item)))
      yield* eventually("the /help reply is sent", () => deliveredTo(api, F.forum.id).length === 1)
      const reactionIn = (topicId: string | null) => Effect.map(topic(topicId), (items) => items.some((i) => i.kind === "inbound_reaction"))
      // Bounded generously (about 20 s): the reaction is recorded after the message it names.
      for (let i = 0; i < 4000 && !(yield* reactionIn("7")) && !(yield* reactionIn(null)); i++) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
      assert.isTrue(yield* reactionIn("7"), "the reaction is in topic 7")
      assert.isFalse(yield* reactionIn(null), "the reaction is not outside every topic")
    }).pipe(withMemory))

  it.scoped("updates of a chat that arrive while its run waits join that run: recorded in one unit of work, in order", () => {
    // The history writes, one entry per call: the texts written together.
    const writes: Array<ReadonlyArray<string>> = []
    const counted = Layer.effect(
      HistoryStore,
      Effect.map(HistoryStore, (inner) => ({
        ...inner,
        appendAll: (items: Parameters<typeof inner.appendAll>[0]) =>
          Effect.zipRight(Effect.sync(() => void writes.push(items.map((i) => i.text))), inner.appendAll(items))
      }))
    ).pipe(Layer.provideMerge(StoreConfig.layerMemory))
    return Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const running = yield* launch(bot, api.apiRoot)
      const hang = yield* holding(api, "sendMessage")
      // The chat's command holds its key (its reply hangs); plain messages arrive one at a time.
      assert.strictEqual(yield* running.intake(message("/help")), "queued")
      yield* eventually("the /help reply is held", () => hang.held() === 1)
      for (let i = 1; i <= 5; i++) assert.strictEqual(yield* running.intake(message(`plain ${i}`)), "queued")
      hang.release()
      yield* running.dispatcher.idle
      const plain = writes.filter((texts) => texts.some((t) => t.startsWith("plain")))
      assert.deepStrictEqual(plain, [["plain 1", "plain 2", "plain 3", "plain 4", "plain 5"]])
    }).pipe((effect) => Effect.zipRight(TestClock.setTime(now), Effect.provide(effect, App.services(counted))))
  })

  it.scoped("the dispatcher bounds concurrency and capacity: offer says no when full", () =>
    Effect.gen(function*() {
      const dispatcher = yield* Dispatcher.make({ concurrency: 2, capacity: 3, shutdownTimeout: "1 second" })
      let running = 0
      let peak = 0
      const gate = yield* Effect.makeLatch(false)
      const task = Effect.gen(function*() {
        running++
        peak = Math.max(peak, running)
        yield* gate.await
        running--
      })
      yield* dispatcher.submit("a", task)
      yield* dispatcher.submit("b", task)
      yield* dispatcher.submit("c", task)
      assert.isFalse(yield* dispatcher.offer("d", task))
      yield* eventually("two tasks run", () => running === 2)
      assert.deepStrictEqual(dispatcher.depth().queued, 3)
      yield* gate.open
      yield* dispatcher.idle
      assert.strictEqual(peak, 2)
      assert.isTrue(yield* dispatcher.offer("d", Effect.void))
    }))

  it.scoped("a chat-wide task runs after the chat's earlier tasks in every topic; other chats and later topic tasks do not wait for it", () =>
    Effect.gen(function*() {
      const dispatcher = yield* Dispatcher.make({ concurrency: 4, capacity: 10, shutdownTimeout: "1 second" })
      const gate = yield* Effect.makeLatch(false)
      const done: Array<string> = []
      const mark = (name: string) => Effect.sync(() => void done.push(name))
      yield* dispatcher.submit("-100/7", Effect.zipRight(gate.await, mark("topic 7")))
      yield* dispatcher.submit(Dispatcher.chatWide("-100"), mark("reaction"))
      yield* dispatcher.submit("-100/8", mark("topic 8, later"))
      yield* dispatcher.submit("-200", mark("other chat"))
      yield* eventually("the other chat and the later topic task run", () => done.includes("other chat") && done.includes("topic 8, later"))
      assert.notInclude(done, "reaction")
      yield* gate.open
      yield* dispatcher.idle
      assert.isAbove(done.indexOf("reaction"), done.indexOf("topic 7"))
    }))

  it.scoped("an answer waits for its own chat's earlier tasks, not for other chats' recording filling every worker", () =>
    Effect.gen(function*() {
      const dispatcher = yield* Dispatcher.make({ concurrency: 2, capacity: 10, shutdownTimeout: "1 second" })
      const gate = yield* Effect.makeLatch(false)
      const done: Array<string> = []
      const mark = (name: string) => Effect.sync(() => void done.push(name))
      // Two other chats' recording holds both workers.
      yield* dispatcher.submit("-200", Effect.zipRight(gate.await, mark("recording 1")))
      yield* dispatcher.submit("-300", Effect.zipRight(gate.await, mark("recording 2")))
      // The asking chat's own earlier update, then its command.
      yield* dispatcher.submit("-100", mark("earlier update"), { urgent: true })
      yield* dispatcher.submit("-100", mark("answer"), { urgent: true })
      yield* eventually("the answer runs while the recording waits", () => done.includes("answer"))
      assert.deepStrictEqual(done, ["earlier update", "answer"])
      yield* gate.open
      yield* dispatcher.idle
    }))

  it.scoped("a chat's task queued before its answer moves with it ahead of other chats' recording", () =>
    Effect.gen(function*() {
      const dispatcher = yield* Dispatcher.make({ concurrency: 1, capacity: 10, shutdownTimeout: "1 second" })
      const gate = yield* Effect.makeLatch(false)
      const done: Array<string> = []
      const mark = (name: string) => Effect.sync(() => void done.push(name))
      // Another chat's recording holds the only worker; a third chat's waits behind it.
      yield* dispatcher.submit("-200", Effect.zipRight(gate.await, mark("recording 1")))
      yield* dispatcher.submit("-300", mark("recording 2"))
      // The asking chat's earlier update, queued as recording, then its command.
      yield* dispatcher.submit("-100", mark("earlier update"))
      yield* dispatcher.submit("-100", mark("answer"), { urgent: true })
      yield* eventually("the answer runs while the recording waits", () => done.includes("answer"))
      assert.deepStrictEqual(done, ["earlier update", "answer"])
      yield* gate.open
      yield* dispatcher.idle
      assert.deepStrictEqual(done, ["earlier update", "answer", "recording 1", "recording 2"])
    }))

  it.scoped("saturated: while an answer waits for a worker, other chats' recording starts nothing — it yields to the answer, then runs in order", () =>
    Effect.gen(function*() {
      const dispatcher = yield* Dispatcher.make({ concurrency: 1, capacity: 10, shutdownTimeout: "1 second" })
      const recording = yield* Effect.makeLatch(false)
      const answering = yield* Effect.makeLatch(false)
      // Opened before the dispatcher's shutdown, so a failed assertion fails, not hangs.
      yield* Effect.addFinalizer(() => Effect.zipRight(recording.open, answering.open))
      const done: Array<string> = []
      const started: Array<string> = []
      const mark = (name: string) => Effect.sync(() => void done.push(name))
      const submit = (key: string, task: Effect.Effect<void>, options?: { readonly urgent: boolean }) =>
        dispatcher.submit(key, Effect.zipRight(Effect.sync(() => void started.push(key)), task), options)
      // Both lanes saturated: a recording holds the recording worker, with two more ready; an
      // answer holds the answer worker, with another chat's answer waiting for it.
      yield* submit("-200", Effect.zipRight(recording.await, mark("recording 1")))
      yield* submit("-300", mark("recording 2"))
      yield* submit("-400", mark("recording 3"))
      yield* eventually("recording 1 runs", () => started.includes("-200"))
      yield* submit("-100", Effect.zipRight(answering.await, mark("answer A")), { urgent: true })
      yield* eventually("answer A runs", () => started.includes("-100"))
      yield* submit("-101", mark("answer B"), { urgent: true })
      // The recording worker is free again while answer B still waits: it starts nothing.
      yield* recording.open
      yield* eventually("the running recording ends", () => done.includes("recording 1"))
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 20)))
      assert.deepStrictEqual(done, ["recording 1"])
      yield* answering.open
      yield* dispatcher.idle
      assert.deepStrictEqual(done, ["recording 1", "answer A", "answer B", "recording 2", "recording 3"])
    }))

  it.scoped("while an answer runs, other chats' recording runs one task at a time; at its full bound again once no answer runs", () =>
    Effect.gen(function*() {
      const dispatcher = yield* Dispatcher.make({ concurrency: 2, recordingConcurrency: 3, capacity: 10, shutdownTimeout: "1 second" })
      const recording = yield* Effect.makeLatch(false)
      const answering = yield* Effect.makeLatch(false)
      yield* Effect.addFinalizer(() => Effect.zipRight(recording.open, answering.open))
      const started: Array<string> = []
      const start = (name: string, latch: Effect.Latch) => Effect.zipRight(Effect.sync(() => void started.push(name)), latch.await)
      yield* dispatcher.submit("-100", start("answer", answering), { urgent: true })
      yield* eventually("the answer runs", () => started.includes("answer"))
      yield* dispatcher.submit("-200", start("recording 1", recording))
      yield* dispatcher.submit("-300", start("recording 2", recording))
      yield* dispatcher.submit("-400", start("recording 3", recording))
      yield* eventually("one recording runs beside the answer", () => started.includes("recording 1"))
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 20)))
      assert.deepStrictEqual(started, ["answer", "recording 1"])
      // The answer done: the other two start while the first still runs.
      yield* answering.open
      yield* eventually("recording runs three at once", () => started.length === 4)
      assert.deepStrictEqual(started, ["answer", "recording 1", "recording 2", "recording 3"])
      yield* recording.open
      yield* dispatcher.idle
    }))

  it.scoped("send tasks take workers of their own: slow sends hold neither other chats' recording nor their chat's order", () =>
    Effect.gen(function*() {
      const dispatcher = yield* Dispatcher.make({ concurrency: 1, sendConcurrency: 2, capacity: 10, shutdownTimeout: "1 second" })
      const sending = yield* Effect.makeLatch(false)
      yield* Effect.addFinalizer(() => sending.open)
      const done: Array<string> = []
      const started: Array<string> = []
      const mark = (name: string) => Effect.sync(() => void done.push(name))
      const slowSend = (name: string) => Effect.zipRight(Effect.sync(() => void started.push(name)), Effect.zipRight(sending.await, mark(name)))
      // Three slow sends (a 429's wait): two run at once, the third waits for the send lane.
      yield* dispatcher.submit("-100", slowSend("send A"), { send: true })
      yield* dispatcher.submit("-101", slowSend("send B"), { send: true })
      yield* dispatcher.submit("-102", slowSend("send C"), { send: true })
      // The first send's chat records after it; other chats record at once on the one worker.
      yield* dispatcher.submit("-100", mark("recording after send A"))
      yield* dispatcher.submit("-200", mark("recording 1"))
      yield* dispatcher.submit("-300", mark("recording 2"))
      yield* eventually("the other chats' recording runs", () => done.includes("recording 2"))
      assert.deepStrictEqual(done, ["recording 1", "recording 2"])
      assert.deepStrictEqual(started, ["send A", "send B"])
      yield* sending.open
      yield* dispatcher.idle
      assert.isAbove(done.indexOf("recording after send A"), done.indexOf("send A"))
      assert.sameMembers(started, ["send A", "send B", "send C"])
    }))

  it.scoped("recording runs under its own bound: one recording at a time while answers of other chats go on", () =>
    Effect.gen(function*() {
      const dispatcher = yield* Dispatcher.make({ concurrency: 4, recordingConcurrency: 1, capacity: 10, shutdownTimeout: "1 second" })
      const gate = yield* Effect.makeLatch(false)
      yield* Effect.addFinalizer(() => gate.open)
      const done: Array<string> = []
      const started: Array<string> = []
      const mark = (name: string) => Effect.sync(() => void done.push(name))
      yield* dispatcher.submit("-200", Effect.zipRight(Effect.sync(() => void started.push("recording 1")), Effect.zipRight(gate.await, mark("recording 1"))))
      yield* dispatcher.submit("-300", Effect.zipRight(Effect.sync(() => void started.push("recording 2")), mark("recording 2")))
      yield* eventually("recording 1 runs", () => started.includes("recording 1"))
      yield* dispatcher.submit("-100", mark("answer"), { urgent: true })
      yield* eventually("the answer runs", () => done.includes("answer"))
      // The recording lane's one worker is taken: the other chat's recording has not started.
      assert.deepStrictEqual(started, ["recording 1"])
      yield* gate.open
      yield* dispatcher.idle
      assert.deepStrictEqual(done, ["answer", "recording 1", "recording 2"])
    }))

  it.scoped("while held, recording waits and answers go on; released, the recording runs in order", () =>
    Effect.gen(function*() {
      const dispatcher = yield* Dispatcher.make({ concurrency: 4, capacity: 10, shutdownTimeout: "1 second", holdMillis: 60_000 })
      const done: Array<string> = []
      const mark = (name: string) => Effect.sync(() => void done.push(name))
      dispatcher.hold(true)
      yield* dispatcher.submit("-200", mark("recording 1"))
      yield* dispatcher.submit("-200", mark("recording 2"))
      yield* dispatcher.submit("-100", mark("answer"), { urgent: true })
      yield* eventually("the answer runs", () => done.includes("answer"))
      assert.deepStrictEqual(done, ["answer"])
      dispatcher.hold(false)
      yield* dispatcher.idle
      assert.deepStrictEqual(done, ["answer", "recording 1", "recording 2"])
    }))

  it("keys updates by chat and forum topic, polls by poll id", () => {
    assert.strictEqual(Dispatcher.keyOf(message("x")), `${F.forum.id}/7`)
    assert.strictEqual(Dispatcher.keyOf(message("x", { thread: null })), `${F.forum.id}`)
    assert.strictEqual(Dispatcher.keyOf({ update_id: 1, poll_answer: { poll_id: "p1" } }), "poll:p1")
    assert.strictEqual(Dispatcher.keyOf({ update_id: 1, message_reaction: { chat: { id: 5 } } }), "5/*")
    assert.strictEqual(Dispatcher.keyOf(null), "other")
  })
})

describe("apps/telegram: polling and webhook cannot die quietly", () => {
  it.scoped("launch registers the commands for private chats and groups, and deletes a webhook before polling", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      yield* launch(bot, api.apiRoot)
      assert.deepStrictEqual(api.calls().slice(0, 1).map((c) => c.method), ["getMe"])
      assert.deepStrictEqual([...api.commands().keys()].sort(), ["all_group_chats", "all_private_chats", "default"])
      assert.include(api.commands().get("all_group_chats")!.map((c) => c.command), "remind")
      assert.strictEqual(api.callsOf("deleteWebhook").length, 1)
    }).pipe(withMemory))

  it.scoped("a command is one entry of the table: it is listed by setMyCommands and answered", () =>
    Effect.gen(function*() {
      const ping: Commands.Command = {
        name: "ping",
        description: "Is the bot there?",
        scopes: ["all_group_chats"],
        handler: (ctx, scope) => BotApi.text(ctx, `pong (chat ${scope.chat_id})`)
      }
      const { api, bot } = yield* setup({}, {}, { commands: [...Commands.all, ping] })
      yield* launch(bot, api.apiRoot)
      assert.deepStrictEqual(api.commands().get("all_group_chats")!.at(-1), { command: "ping", description: "Is the bot there?" })
      assert.notInclude(api.commands().get("all_private_chats")!.map((c) => c.command), "ping")
      yield* bot.handle(message("/ping"))
      assert.deepStrictEqual(api.callsOf("sendMessage").map((c) => c.payload["text"]), [`pong (chat ${F.forum.id})`])
    }).pipe(withMemory))

  it.live("409 Conflict is logged and retried with back-off, and polling goes on", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      api.failNext("getUpdates", { error_code: 409, description: "Conflict: terminated by other getUpdates request" }, 3)
      yield* launch(bot, api.apiRoot, { send: { ...config("").send, baseDelay: Duration.millis(5) } })
      api.pushUpdates(message("/help"))
      yield* eventually("the update is answered after the conflicts", () => api.delivered().length === 1)
      assert.strictEqual(api.polls().conflicts, 3)
    }).pipe(withMemoryLive, Effect.scoped))

  it.live("a 409 Conflict lasting past BOT_POLL_CONFLICT_TIMEOUT stops polling with an error (the process exits non-zero)", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      api.failNext("getUpdates", { error_code: 409, description: "Conflict: can't use getUpdates method while webhook is active" }, 10_000)
      const running = yield* launch(bot, api.apiRoot, {
        send: { ...config("").send, baseDelay: Duration.millis(5), maxDelay: Duration.millis(20) },
        polling: { timeout: Duration.seconds(1), conflictTimeout: Duration.millis(200) }
      })
      const exit = yield* Effect.exit(running.wait)
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.include(String(exit.cause), "409 Conflict")
      assert.isFalse(running.healthy())
    }).pipe(withMemoryLive, Effect.scoped))

  it.live("a webhook set by another deployment while polling: 409 Conflict, /healthz unhealthy, then polling stops with an error", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const running = yield* launch(bot, api.apiRoot, {
        send: { ...config("").send, baseDelay: Duration.millis(5), maxDelay: Duration.millis(20) },
        polling: { timeout: Duration.seconds(1), conflictTimeout: Duration.millis(300) }
      })
      api.pushUpdates(message("/help"))
      yield* eventually("polling works", () => api.delivered().length === 1)
      yield* Effect.promise(() =>
        fetch(`${api.apiRoot}/bot123:OTHER/setWebhook`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ url: "https://elsewhere.example.com/hook" })
        })
      )
      yield* eventually("polling sees the conflict", () => !running.healthy())
      const exit = yield* Effect.exit(running.wait)
      assert.isTrue(Exit.isFailure(exit) && String(exit.cause).includes("webhook is active"))
    }).pipe(withMemoryLive, Effect.scoped))

  it.live("a refused token stops polling with an error", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const running = yield* launch(bot, api.apiRoot)
      api.failNext("getUpdates", { error_code: 401, description: "Unauthorized" })
      const exit = yield* Effect.exit(running.wait)
      assert.isTrue(Exit.isFailure(exit) && String(exit.cause).includes("refused the bot token"))
    }).pipe(withMemoryLive, Effect.scoped))

  it.scoped("long polling: malformed and unknown updates are ignored without a crash", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      api.pushUpdates(
        null,
        { update_id: "x" },
        { update_id: 1, message: { message_id: "not a number", chat: {} } },
        { update_id: 2, chat_boost: {} },
        F.hugeText,
        { ...message("/help"), update_id: 3000 }
      )
      yield* launch(bot, api.apiRoot)
      yield* eventually("the good update is answered", () => api.delivered().length === 1)
      assert.match(texts(api)[0]!, /^I keep track/)
    }).pipe(withMemory))

  it.live("long polling: after a full page the next getUpdates asks without a long poll, then polls long again", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      // Exactly one full page (Telegram's largest, 100), then nothing: a backlog that ends on a full page.
      const backlog = Array.from({ length: 100 }, (_, i) => message(`backlog ${i}`, { thread: null }))
      api.pushUpdates(...backlog)
      yield* launch(bot, api.apiRoot, { polling: { timeout: Duration.seconds(30), conflictTimeout: Duration.minutes(5) } })
      yield* eventually("the page and the two polls after it", () => api.polls().requests.length >= 3)
      const polls = api.polls().requests.map((r) => ({ timeout: r.timeout, offset: r.offset }))
      // The full page came on a long poll; the next asks at once (the backlog may go on) and finds
      // nothing; the one after waits long again, past the page.
      assert.deepStrictEqual(polls.slice(0, 3), [
        { timeout: 30, offset: 0 },
        { timeout: 0, offset: backlog.at(-1)!.update_id + 1 },
        { timeout: 30, offset: backlog.at(-1)!.update_id + 1 }
      ])
    }).pipe(withMemoryLive, Effect.scoped))

  it.scoped("an update nested too deep to serialise is refused as malformed, and polling goes on", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const running = yield* launch(bot, api.apiRoot)
      // 100 000 nested arrays in an unknown field: JSON.parse reads it, JSON.stringify overflows the stack.
      const deep = JSON.parse(`{"update_id":4000,"message":{"message_id":4000,"date":1771000100,"chat":{"id":${F.forum.id},"type":"supergroup"},"text":"x","extra":${"[".repeat(100_000)}${"]".repeat(100_000)}}}`)
      assert.strictEqual(yield* running.intake(deep), "malformed")
      api.pushUpdates(message("/help"))
      yield* eventually("the next update is answered", () => api.delivered().length === 1)
      assert.match(texts(api)[0]!, /^I keep track/)
    }).pipe(withMemory))

  it.scoped("a redelivered update is handled once, also by a restarted bot over the same store", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const stores = yield* Layer.build(StoreConfig.layerMemory)
      const services = App.services(Layer.succeedContext(stores))
      const update = message("/help")
      const first = yield* Scope.make()
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        const running = yield* launch(bot, api.apiRoot)
        api.pushUpdates(update)
        yield* eventually("the update is answered", () => api.delivered().length === 1)
        assert.strictEqual(yield* running.intake(update), "duplicate")
      }).pipe(Effect.provide(services), Scope.extend(first))
      yield* Scope.close(first, Exit.void)
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        const running = yield* launch(bot, api.apiRoot)
        // Telegram delivers it again (the offset was never confirmed to it), then something new.
        api.pushUpdates(update, message("/help", { chat: F.otherForum }))
        yield* eventually("the new update is answered", () => deliveredTo(api, F.otherForum.id).length === 1)
        assert.strictEqual(deliveredTo(api, F.forum.id).length, 1)
        assert.strictEqual(yield* running.intake(update), "duplicate")
      }).pipe(Effect.provide(services), Effect.scoped)
    }))

  it.scoped("webhook: setWebhook with a secret; refused without it; 200 once recorded; a repeated POST is handled once", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const { port } = yield* launch(bot, api.apiRoot, {
        transport: { _tag: "webhook", url: "https://bot.example.com/telegram/hook", secret: Option.some(Redacted.make("s3cret_token")), port: 0, host: "127.0.0.1" }
      })
      const set = api.webhook()!
      assert.deepStrictEqual([set.url, set.secret_token], ["https://bot.example.com/telegram/hook", "s3cret_token"])
      assert.include(set.allowed_updates as Array<string>, "message_reaction")
      const post = (body: string, headers: Record<string, string>, path = "/telegram/hook") =>
        Effect.promise(() =>
          fetch(`http://127.0.0.1:${port}${path}`, { method: "POST", body, headers: { "content-type": "application/json", ...headers } })
            .then((r) => r.status)
        )
      const secret = { "x-telegram-bot-api-secret-token": "s3cret_token" }
      const update = JSON.stringify(message("/help"))
      assert.strictEqual(yield* post(update, {}), 401)
      assert.strictEqual(yield* post(update, { "x-telegram-bot-api-secret-token": "wrong" }), 401)
      assert.strictEqual(yield* post(update, secret, "/other"), 404)
      assert.strictEqual(yield* post("{not json", secret), 400)
      assert.strictEqual(yield* post("null", secret), 200)
      assert.strictEqual(yield* postOversized(port!, "/telegram/hook", 1024 * 1024 + 10, secret), 413)
      assert.strictEqual(yield* post(update, secret), 200)
      assert.strictEqual(yield* post(update, secret), 200)
      yield* eventually("the update is answered", () => api.delivered().length === 1)
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
      assert.strictEqual(api.delivered().length, 1)
    }).pipe(withMemory))

  it.scoped("webhook: connections past the bound are closed on arrival, and the webhook still answers once some end", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const { port } = yield* launch(bot, api.apiRoot, {
        transport: { _tag: "webhook", url: "https://bot.example.com/hook", secret: Option.some(Redacted.make("s")), port: 0, host: "127.0.0.1" }
      })
      // Idle connections held open, as a client that never sends its request.
      let closed = 0
      const open = (): Promise<Socket> =>
        new Promise((resolve, reject) => {
          const socket = connect(port!, "127.0.0.1")
          socket.once("close", () => closed++)
          socket.once("error", () => undefined)
          socket.once("connect", () => resolve(socket))
          socket.once("error", reject)
        })
      const sockets = yield* Effect.acquireRelease(
        Effect.promise(() => Promise.all(Array.from({ length: Runner.webhookLimits.maxConnections + 1 }, open))),
        (sockets) => Effect.sync(() => sockets.forEach((s) => s.destroy()))
      )
      // One past the bound: the server closes one (whichever it accepted last).
      yield* eventually("a connection past the bound is closed", () => closed >= 1)
      sockets.filter((s) => !s.destroyed).slice(0, 4).forEach((s) => s.destroy())
      // A request on a connection of its own (no client pool), answered once the count is down.
      const body = JSON.stringify(message("/help"))
      const post = Effect.promise(() =>
        new Promise<string>((resolve) => {
          const socket = connect(port!, "127.0.0.1")
          let data = ""
          socket.on("data", (chunk) => (data += chunk))
          socket.once("error", () => resolve(""))
          socket.once("close", () => resolve(data.split("\r\n")[0]!))
          socket.write(`POST /hook HTTP/1.1\r\nhost: x\r\nconnection: close\r\nx-telegram-bot-api-secret-token: s\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
        })
      )
      yield* eventuallyEffect("the webhook answers once connections end", Effect.map(post, (status) => status === "HTTP/1.1 200 OK"))
    }).pipe(withMemory))

  it.scoped("webhook: when the bot is full it answers 503, and Telegram's retry is handled", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const { port } = yield* launch(bot, api.apiRoot, {
        queueCapacity: 1,
        transport: { _tag: "webhook", url: "https://bot.example.com/hook", secret: Option.some(Redacted.make("s")), port: 0, host: "127.0.0.1" }
      })
      const hang = yield* holding(api, "sendMessage")
      const post = (body: unknown) =>
        Effect.promise(() =>
          fetch(`http://127.0.0.1:${port}/hook`, { method: "POST", body: JSON.stringify(body), headers: { "x-telegram-bot-api-secret-token": "s" } })
            .then((r) => r.status)
        )
      const second = message("/help", { chat: F.otherForum })
      assert.strictEqual(yield* post(message("/help")), 200)
      yield* eventually("the first reply hangs", () => hang.held() === 1)
      assert.strictEqual(yield* post(second), 503)
      hang.release()
      yield* eventually("the first is answered", () => api.delivered().length === 1)
      assert.strictEqual(yield* post(second), 200)
      yield* eventually("the retried one is answered", () => api.delivered().length === 2)
    }).pipe(withMemory))
})

describe("apps/telegram: bounded shutdown and recovery", () => {
  it.live("shutdown with a hung send ends within the shutdown timeout; the unfinished update is handled after the next start", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const stores = yield* Layer.build(StoreConfig.layerMemory)
      const services = App.services(Layer.succeedContext(stores))
      const settings = { shutdownTimeout: Duration.millis(100), updateLease: Duration.millis(300) }
      // The first process's calls never return (its token is the default one).
      const hang = api.hang("sendMessage", (c) => c.token === "123:TEST")
      const first = yield* Scope.make()
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        yield* launch(bot, api.apiRoot, settings, "first")
        api.pushUpdates(message("/help"))
        yield* eventually("the reply hangs", () => hang.held() === 1)
      }).pipe(Effect.provide(services), Scope.extend(first))
      // Closing the scope returns although the call never does: the update is interrupted.
      yield* Scope.close(first, Exit.void)
      const inbox = yield* UpdateInbox.UpdateInbox.pipe(Effect.provide(Layer.succeedContext(stores)))
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot, { token: Redacted.make("123:SECOND") }))
        const running = yield* launch(bot, api.apiRoot, settings, "second")
        yield* eventually("the unfinished update is answered by the next start", () =>
          api.delivered().some((c) => c.token === "123:SECOND" && String(c.payload["text"]).startsWith("I keep track")))
        yield* running.dispatcher.idle
      }).pipe(Effect.provide(services), Effect.scoped)
      const stale = yield* inbox.claimStale({ source: String(F.botId), now: Date.now() + 10_000, owner: "x", lease: 1, limit: 10 })
      assert.deepStrictEqual(stale, [])
    }).pipe(Effect.scoped))
})

describe("apps/telegram: a stop whose drain times out", () => {
  it.live("the chats it held are given up, not kept until the lease: the next process answers their unstarted updates at once, each once", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const stores = yield* Layer.build(StoreConfig.layerMemory)
      const services = App.services(Layer.succeedContext(stores))
      // A lease far longer than the test: nothing here waits for one to end.
      const settings = { shutdownTimeout: Duration.millis(100), updateLease: Duration.minutes(10) }
      const hang = api.hang("sendMessage", (c) => c.token === "123:TEST")
      // One chat's commands: the first hangs, the three behind it never start.
      const updates = Array.from({ length: 4 }, () => message("/help"))
      const ids = updates.map((u) => u.message.message_id)
      const first = yield* Scope.make()
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot))
        const running = yield* launch(bot, api.apiRoot, settings, "first")
        api.pushUpdates(...updates)
        yield* eventually("the first reply hangs and the rest wait behind it", () => hang.held() === 1 && running.intakeService.queued() === 4)
      }).pipe(Effect.provide(services), Scope.extend(first))
      yield* Scope.close(first, Exit.void)
      const inbox = yield* UpdateInbox.UpdateInbox.pipe(Effect.provide(Layer.succeedContext(stores)))
      const answeredBySecond = () =>
        api.delivered("sendMessage").filter((c) => c.token === "123:SECOND").map((c) =>
          (c.payload["reply_parameters"] as { readonly message_id?: number } | undefined)?.message_id
        )
      yield* Effect.gen(function*() {
        const bot = yield* Bot.make(config(api.apiRoot, { token: Redacted.make("123:SECOND") }))
        const running = yield* launch(bot, api.apiRoot, settings, "second")
        yield* eventually("every update of the chat is answered by the next process", () => ids.every((id) => answeredBySecond().includes(id)))
        yield* running.dispatcher.idle
      }).pipe(Effect.provide(services), Effect.scoped)
      assert.deepStrictEqual([...answeredBySecond()].sort(), [...ids].sort())
      // Nothing is left claimed or pending.
      const stale = yield* inbox.claimStale({ source: String(F.botId), now: Date.now() + 3_600_000, owner: "x", lease: 1, limit: 10 })
      assert.deepStrictEqual(stale, [])
    }).pipe(Effect.scoped))
})

describe("apps/telegram: operations", () => {
  it.scoped("health and Prometheus metrics: updates handled, latency, send failures by code, queue depth", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      let healthy = true
      const running = yield* launch(bot, api.apiRoot)
      const port = yield* Ops.serve({ port: 0, host: "127.0.0.1" }, { ready: SubscriptionRef.get(running.ready), healthy: Effect.sync(() => healthy) })
      const registry = yield* Metrics.Registry
      yield* registry.probe({
        queue: () => ({ queued: running.intakeService.queued(), chats: running.dispatcher.depth().chats, deepest: 0 }),
        reminders: () => Promise.resolve({ pending: 2, due: 1 })
      })
      api.failNext("sendMessage", { error_code: 400, description: "Bad Request: chat not found" })
      api.pushUpdates(message("/help"), message("/help"))
      yield* eventually("both updates handled", () => api.callsOf("sendMessage").length === 2)
      yield* running.dispatcher.idle
      const get = (path: string) =>
        Effect.promise(() => fetch(`http://127.0.0.1:${port}${path}`).then(async (r) => ({ status: r.status, body: await r.text() })))
      assert.strictEqual((yield* get("/healthz")).status, 200)
      assert.strictEqual((yield* get("/readyz")).status, 200)
      const metrics = (yield* get("/metrics")).body
      assert.match(metrics, /deixis_bot_updates_total\{outcome="handled"\} [1-9]/)
      assert.match(metrics, /deixis_bot_update_duration_seconds_count [1-9]/)
      assert.match(metrics, /deixis_bot_send_failures_total\{method="sendMessage",code="400"\} [1-9]/)
      assert.match(metrics, /deixis_bot_queued_updates 0/)
      assert.match(metrics, /deixis_bot_reminders_pending\{state="due"\} 1/)
      // No label names a chat.
      assert.notMatch(metrics, /chat="/)
      healthy = false
      assert.strictEqual((yield* get("/healthz")).status, 503)
    }).pipe(withMemory))
})

/**
 * The memory stores with a history store whose writes fail while `down` is set — what a
 * PostgreSQL restart, a busy SQLite file or a full disk does to recording — counting them.
 * The inbox keeps working (it took the update before the store went down).
 */
const faultyHistory = () => {
  const down = Ref.unsafeMake(false)
  let failures = 0
  const history = Layer.effect(
    HistoryStore,
    Effect.map(HistoryStore, (inner) => ({
      ...inner,
      appendAll: (items: Parameters<typeof inner.appendAll>[0]) =>
        Effect.flatMap(Ref.get(down), (isDown) =>
          isDown
            ? Effect.suspend(() => {
              failures++
              return Effect.fail(new StoreError({ message: "could not write: disk full" }))
            })
            : inner.appendAll(items))
    }))
  )
  const stores = history.pipe(Layer.provideMerge(StoreConfig.layerMemory))
  return {
    down,
    failures: () => failures,
    provide: <A, E, R extends Services>(effect: Effect.Effect<A, E, R>) =>
      Effect.zipRight(TestClock.setTime(now), Effect.provide(effect, App.services(stores)))
  }
}

const capturedLogs = () => {
  const logs: Array<{ readonly level: string; readonly message: string; readonly annotations: Record<string, unknown> }> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    logs.push({
      level: logLevel.label,
      message: String(Array.isArray(message) ? message[0] : message),
      annotations: Object.fromEntries(HashMap.toEntries(annotations))
    })
  })
  return { logs, layer: Logger.replace(Logger.defaultLogger, logger) }
}

const updatesCounted = (outcome: Metrics.UpdateOutcome) => Effect.sync(() => Metrics.updatesCounted(outcome))

/**
 * The updates the inbox still holds unfinished. It claims them all for a year: the last look
 * of a test.
 */
const pendingAtLast = Effect.flatMap(UpdateInbox.UpdateInbox, (inbox) =>
  inbox.claimStale({ source: String(F.botId), now: now + 365 * 86_400_000, owner: "probe", lease: 0, limit: 1000 })).pipe(
    Effect.map((stale) => stale.map((s) => s.update_id))
  )

/** Moves the TestClock to the claim loop's next run, `interval` ahead (BOT_UPDATE_LEASE / 2). */
const nextClaim = (interval: Duration.DurationInput) => Effect.zipRight(sleeperIn(interval), TestClock.adjust(interval))

/** The claim loop's run is over (it sleeps again) and so is every update it handed out. */
const settled = (running: { readonly dispatcher: { readonly idle: Effect.Effect<void> } }, interval: Duration.DurationInput) =>
  Effect.zipRight(sleeperIn(interval), running.dispatcher.idle)

const inHistory = (messageId: number) =>
  Effect.flatMap(HistoryStore, (h) => h.recent({ chat_id: chat, topic_id: "7" }, 50)).pipe(
    Effect.map((items) => items.some((i) => i.item.message_id === String(messageId)))
  )

describe("apps/telegram: a store failure while recording never loses an update", () => {
  // BOT_UPDATE_LEASE 12 s: the claim loop runs every 6 s (no other fiber sleeps that long).
  const lease = { updateLease: Duration.seconds(12) }

  it.scoped("an update whose recording fails is not marked done and is handled once the store is back", () => {
    const fault = faultyHistory()
    return Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const running = yield* launch(bot, api.apiRoot, lease)
      yield* Ref.set(fault.down, true)
      const update = message("/help")
      api.pushUpdates(update)
      yield* eventually("its recording fails", () => fault.failures() === 1)
      yield* running.dispatcher.idle
      assert.strictEqual(api.callsOf("sendMessage").length, 0)
      // Not marked done: handed out again when its claim ends (the store still down: failing again).
      yield* nextClaim("6 seconds")
      yield* nextClaim("6 seconds")
      yield* eventually("it is handed out again and its recording fails again", () => fault.failures() === 2)
      yield* running.dispatcher.idle
      assert.strictEqual(api.callsOf("sendMessage").length, 0)
      // The store is back: the next hand-out records it, then answers it.
      yield* Ref.set(fault.down, false)
      yield* nextClaim("6 seconds")
      yield* nextClaim("6 seconds")
      yield* eventually("it is answered once the store is back", () => api.delivered("sendMessage").length === 1)
      yield* running.dispatcher.idle
      assert.isTrue(yield* inHistory(update.update_id), "recorded in the history")
      assert.match(texts(api)[0]!, /^I keep track/)
      // Marked done: never handed out again, never answered twice.
      yield* nextClaim("6 seconds")
      yield* nextClaim("6 seconds")
      yield* settled(running, "6 seconds")
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
      assert.strictEqual(fault.failures(), 2)
      assert.deepStrictEqual(yield* pendingAtLast, [])
    }).pipe(fault.provide)
  })

  it.scoped("the handler does not run for an update that was not recorded", () => {
    const fault = faultyHistory()
    return Effect.gen(function*() {
      let handled = 0
      // A handler after the bot's own (a command of its own): it must not run either.
      const { api, bot } = yield* setup({}, {}, { middleware: [Composer.command("note", () => void handled++)] })
      yield* Ref.set(fault.down, true)
      const command = message("/help")
      const plain = message("/note see you at the station at five")
      const error = yield* Effect.flip(bot.handle(command))
      assert.instanceOf(error, DeixisTelegraf.RecordFailed)
      assert.strictEqual(error.update_id, command.update_id)
      yield* Effect.flip(bot.handle(plain))
      assert.strictEqual(fault.failures(), 2)
      assert.deepStrictEqual(api.callsOf("sendMessage"), [])
      assert.strictEqual(handled, 0)
      assert.isFalse(yield* inHistory(command.update_id))
      // Once recorded, each is handled once.
      yield* Ref.set(fault.down, false)
      yield* bot.handle(command)
      yield* bot.handle(plain)
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
      assert.strictEqual(handled, 1)
      assert.isTrue(yield* inHistory(plain.update_id))
    }).pipe(fault.provide)
  })

  it.scoped("an update that keeps failing is given up after BOT_UPDATE_MAX_ATTEMPTS", () => {
    const fault = faultyHistory()
    const { layer: logged, logs } = capturedLogs()
    return Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const running = yield* launch(bot, api.apiRoot, { ...lease, updateMaxAttempts: 3 })
      const abandonedBefore = yield* updatesCounted("abandoned")
      yield* Ref.set(fault.down, true)
      const update = message("/help")
      api.pushUpdates(update)
      yield* eventually("the first attempt fails", () => fault.failures() === 1)
      for (const attempt of [2, 3]) {
        yield* nextClaim("6 seconds")
        yield* nextClaim("6 seconds")
        yield* eventually(`attempt ${attempt} fails`, () => fault.failures() === attempt)
        yield* running.dispatcher.idle
      }
      // The fourth hand-out gives it up: not handled, marked done, logged, counted.
      yield* nextClaim("6 seconds")
      yield* nextClaim("6 seconds")
      yield* eventuallyEffect("it is counted as abandoned", Effect.map(updatesCounted("abandoned"), (n) => n === abandonedBefore + 1))
      const given = logs.filter((l) => l.level === "ERROR" && l.message.startsWith("update given up"))
      assert.deepStrictEqual(given.map((l) => [l.annotations["update_id"], l.annotations["attempts"]]), [[update.update_id, 3]])
      // Given up for good (marked done): the store back, it is still never handled.
      yield* Ref.set(fault.down, false)
      yield* nextClaim("6 seconds")
      yield* nextClaim("6 seconds")
      yield* settled(running, "6 seconds")
      assert.strictEqual(fault.failures(), 3)
      assert.deepStrictEqual(api.callsOf("sendMessage"), [])
      assert.strictEqual(yield* updatesCounted("abandoned"), abandonedBefore + 1)
      assert.deepStrictEqual(yield* pendingAtLast, [])
    }).pipe(fault.provide, Effect.provide(logged))
  })

  it.scoped("a handler bug or a send Telegram refuses is not retried: the update is marked done", () =>
    Effect.gen(function*() {
      let bugs = 0
      const { api, bot } = yield* setup({}, {}, {
        middleware: [Composer.command("note", () => {
          bugs++
          throw new Error("a bug in a handler")
        })]
      })
      const running = yield* launch(bot, api.apiRoot, lease)
      api.failNext("sendMessage", { error_code: 400, description: "Bad Request: not enough rights to send text messages to the chat" })
      const buggy = message("/note see you at the station at five")
      const refused = message("/help")
      api.pushUpdates(buggy, refused)
      yield* eventually("both are handled", () => bugs === 1 && api.callsOf("sendMessage").length === 1)
      yield* running.dispatcher.idle
      // Past their claims: marked done, neither is handed out again.
      yield* nextClaim("6 seconds")
      yield* nextClaim("6 seconds")
      yield* settled(running, "6 seconds")
      assert.strictEqual(bugs, 1)
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
      assert.deepStrictEqual(yield* pendingAtLast, [])
    }).pipe(withMemory))
})
