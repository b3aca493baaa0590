/**
 * The bot where Telegram's conversations live since Bot API 9.x–10.1: it answers in the topic
 * it was asked in (a private-chat topic, a channel's direct-messages topic), answers a guest
 * query with answerGuestQuery, and in LLM mode streams its answer as a draft while the model
 * writes it (the final message sent with sendMessage), showing "typing…" where drafts are not
 * taken. Against the fake Bot API and a fake model server on loopback.
 */
import { ContextIngest } from "@deixis/core/ContextIngest"
import * as PromptAssembler from "@deixis/chathistory/PromptAssembler"
import { DeixisToolkit, UrlReader } from "@deixis/tools"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Bot from "../src/Bot.js"
import * as Llm from "../src/Llm.js"
import * as FakeLlm from "./utils/FakeLlm.js"
import { F, FakeBotApi, now, setup, withMemory } from "./utils/harness.js"

const date = Math.floor(now / 1000)
const privateChat = { id: F.alice.id, type: "private", first_name: "Alice" }
const dmChat = { id: -1005000, type: "supergroup", title: "News DMs", is_direct_messages: true }
let nextId = 9000
const command = (text: string) => ({ text, entities: [{ type: "bot_command", offset: 0, length: text.split(" ")[0]!.length }] })
const inPrivateTopic = (thread: number, rest: Record<string, unknown>) => {
  const id = nextId++
  return { update_id: id, message: { message_id: id, date, chat: privateChat, from: F.alice, message_thread_id: thread, is_topic_message: true, ...rest } }
}
const inDmTopic = (user: typeof F.alice | typeof F.bob, topic: number, rest: Record<string, unknown>) => {
  const id = nextId++
  return { update_id: id, message: { message_id: id, date, chat: dmChat, from: user, direct_messages_topic: { topic_id: topic, user }, ...rest } }
}

describe("apps/telegram: answers in the topic it was asked in", () => {
  it.scoped("a command in a private-chat topic is answered in that topic", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      const asked = inPrivateTopic(300, command("/context"))
      yield* feed(asked)
      const answer = api.callsOf("sendMessage")[0]!.payload
      assert.deepStrictEqual([answer["chat_id"], answer["message_thread_id"]], [F.alice.id, 300])
      assert.deepStrictEqual(answer["reply_parameters"], { message_id: asked.message.message_id, allow_sending_without_reply: true })
    }).pipe(withMemory))

  it.scoped("a command in a direct-messages topic is answered by direct_messages_topic_id, and only from that user's topic", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* setup()
      const photo = inDmTopic(F.alice, 7001, { photo: [{ file_id: "alice-photo", width: 800, height: 600 }], caption: "passport" })
      yield* feed(photo)
      yield* Effect.flatMap(ContextIngest, (i) =>
        i.ingest({
          type: "object_activated",
          event_id: "inspect-alice",
          chat_id: "-1005000:dm:7001",
          reason: "media_inspected",
          source_message_id: photo.message.message_id,
          kind: "media.image"
        }))
      yield* feed(inDmTopic(F.bob, 7002, command("/context")))
      yield* feed(inDmTopic(F.alice, 7001, command("/context")))
      const [toBob, toAlice] = api.callsOf("sendMessage").map((c) => c.payload)
      assert.deepStrictEqual([toBob!["chat_id"], toBob!["direct_messages_topic_id"], toBob!["message_thread_id"]], [-1005000, 7002, undefined])
      assert.notMatch(String(toBob!["text"]), /photo|passport/i)
      assert.deepStrictEqual([toAlice!["chat_id"], toAlice!["direct_messages_topic_id"]], [-1005000, 7001])
      assert.match(String(toAlice!["text"]), /photo/i)
    }).pipe(withMemory))
})

const llmConfig = (baseUrl: string): Llm.LlmConfig => ({
  baseUrl,
  model: "test-model",
  apiKey: Option.some(Redacted.make("sk-test")),
  maxRounds: 0,
  timeout: Duration.seconds(30),
  aliases: [],
  instructions: "",
  budgets: DeixisToolkit.defaultBudgets,
  prompt: PromptAssembler.defaults,
  fetch: UrlReader.defaults
})

const llmBot = (script: (request: FakeLlm.Request, index: number) => FakeLlm.Reply) =>
  Effect.gen(function*() {
    const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
    const llm = yield* FakeLlm.make(script)
    const bot = yield* Bot.make({
      token: Redacted.make("123:TEST"),
      apiRoot: api.apiRoot,
      mode: "talkative",
      send: { maxAttempts: 1, baseDelay: Duration.seconds(1), maxDelay: Duration.seconds(30), timeout: Duration.seconds(15) },
      timeZone: "UTC",
      llm: Option.some(llmConfig(llm.baseUrl))
    })
    return { api, llm, feed: bot.handle }
  })

const pieces = ["The ", "photo you sent ", "shows a passport page; ", "the expiry date ", "is in the lower right ", "corner, next to the photo."]
const whole = pieces.join("")

describe("apps/telegram: LLM answers streamed as drafts", () => {
  it.scoped("in a private chat the answer grows as a draft while the model writes, then is sent with sendMessage", () =>
    Effect.gen(function*() {
      const { api, feed, llm } = yield* llmBot(() => FakeLlm.streamed(...pieces))
      yield* feed(inPrivateTopic(400, { text: "what is on the photo?" }))
      assert.strictEqual(llm.requests()[0]!["stream"], true)
      const drafts = api.callsOf("sendMessageDraft").map((c) => c.payload)
      // First the "Thinking…" placeholder, then the text as it grows, in the asker's topic.
      assert.strictEqual(drafts[0]!["text"], "")
      assert.isAtLeast(drafts.length, 3)
      const texts = drafts.map((d) => String(d["text"]))
      for (let i = 1; i < texts.length; i++) assert.isTrue(whole.startsWith(texts[i]!) && texts[i]!.length > texts[i - 1]!.length, texts[i])
      for (const d of drafts) assert.deepStrictEqual([d["chat_id"], d["message_thread_id"], d["draft_id"]], [F.alice.id, 400, drafts[0]!["draft_id"]])
      assert.notStrictEqual(drafts[0]!["draft_id"], 0)
      const final = api.callsOf("sendMessage").map((c) => c.payload)
      assert.deepStrictEqual(final.map((p) => [p["text"], p["message_thread_id"]]), [[whole, 400]])
      assert.strictEqual(api.callsOf("sendChatAction").length, 0)
    }).pipe(withMemory))

  it.scoped("where drafts are refused, the typing indicator shows instead and the answer is still sent", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* llmBot(() => FakeLlm.streamed(...pieces))
      api.failNext("sendMessageDraft", { error_code: 400, description: "Bad Request: method is not available" }, 100)
      yield* feed(inPrivateTopic(401, { text: "and now?" }))
      assert.strictEqual(api.delivered("sendMessageDraft").length, 0)
      assert.deepStrictEqual(api.callsOf("sendMessageDraft").length, 1, "one refusal is enough to stop drafting")
      assert.isAtLeast(api.callsOf("sendChatAction").length, 1)
      assert.strictEqual(api.callsOf("sendChatAction")[0]!.payload["action"], "typing")
      assert.deepStrictEqual(api.callsOf("sendMessage").map((c) => c.payload["text"]), [whole])
    }).pipe(withMemory))

  it.scoped("in a group no draft is tried: typing, then the answer", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* llmBot(() => FakeLlm.streamed(...pieces))
      const id = nextId++
      yield* feed({
        update_id: id,
        message: {
          message_id: id, date, chat: F.forum, from: F.alice, message_thread_id: 7, is_topic_message: true,
          text: `@${F.botUsername} what is this?`, entities: [{ type: "mention", offset: 0, length: F.botUsername.length + 1 }]
        }
      })
      assert.strictEqual(api.callsOf("sendMessageDraft").length, 0)
      assert.isAtLeast(api.callsOf("sendChatAction").length, 1)
      assert.deepStrictEqual(api.callsOf("sendMessage").map((c) => [c.payload["text"], c.payload["message_thread_id"]]), [[whole, 7]])
    }).pipe(withMemory))

  it.scoped("a guest message is answered with answerGuestQuery, never a message in the bot's own chat of that id", () =>
    Effect.gen(function*() {
      const { api, feed } = yield* llmBot(() => FakeLlm.answer("Guest answer."))
      const id = nextId++
      yield* feed({
        update_id: id,
        guest_message: { message_id: 1, date, chat: privateChat, from: F.alice, guest_query_id: "gq-42", text: "@deixis_bot hi" }
      })
      const answered = api.callsOf("answerGuestQuery").map((c) => c.payload)
      assert.strictEqual(answered.length, 1)
      assert.strictEqual(answered[0]!["guest_query_id"], "gq-42")
      assert.deepStrictEqual((answered[0]!["result"] as { input_message_content: unknown }).input_message_content, { message_text: "Guest answer." })
      assert.strictEqual(api.callsOf("sendMessage").length, 0)
      assert.strictEqual(api.callsOf("sendMessageDraft").length, 0)
    }).pipe(withMemory))

  it("the bot asks Telegram for guest messages", () => {
    assert.include(Bot.allowedUpdates, "guest_message")
  })
})
