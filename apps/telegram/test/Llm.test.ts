import * as ActiveContext from "@deixis/core/ActiveContext"
import * as ConversationState from "@deixis/core/ConversationState"
import type * as DeixisServices from "@deixis/chathistory/DeixisServices"
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import * as PromptAssembler from "@deixis/chathistory/PromptAssembler"
import { DeixisToolkit, type Envelope, UrlReader } from "@deixis/tools"
import * as UrlReaderTesting from "@deixis/tools/UrlReaderTesting"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as Exit from "effect/Exit"
import * as TestClock from "effect/TestClock"
import { SqlStore, StoreConfig } from "@deixis/store-sql"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as FakeBotApi from "@deixis/telegraf/testing"
import * as App from "../src/App.js"
import * as Bot from "../src/Bot.js"
import * as Runner from "../src/Runner.js"
import * as Harness from "./utils/harness.js"
import type { BotConfig } from "../src/BotConfig.js"
import * as Llm from "../src/Llm.js"
import * as FakeLlm from "./utils/FakeLlm.js"
import * as F from "./utils/fixtures.js"
import { pgUrl as testPgUrl } from "deixis-test-support/pg"

const now = 1_771_000_100_000
const chat = String(F.forum.id)

let nextId = 5000
const message = (
  text: string,
  options: { from?: typeof F.alice | typeof F.bob; mention?: boolean; id?: number; extra?: Record<string, unknown> } = {}
) => {
  const id = options.id ?? nextId++
  const command = /^\/\w+/.exec(text)
  const mention = options.mention === true ? `@${F.botUsername} ` : ""
  return {
    update_id: id,
    message: {
      message_id: id,
      from: options.from ?? F.alice,
      chat: F.forum,
      date: Math.floor(now / 1000) + (id % 1000),
      message_thread_id: 7,
      is_topic_message: true,
      text: mention + text,
      ...(command === null ? {} : { entities: [{ type: "bot_command", offset: 0, length: command[0].length }] }),
      ...(mention === "" ? {} : { entities: [{ type: "mention", offset: 0, length: mention.length - 1 }] }),
      ...options.extra
    }
  }
}

const llmConfig = (baseUrl: string, overrides: Partial<Llm.LlmConfig> = {}): Llm.LlmConfig => ({
  baseUrl,
  model: "test-model",
  apiKey: Option.some(Redacted.make("sk-test")),
  maxRounds: Llm.defaults.maxRounds,
  timeout: Duration.seconds(30),
  aliases: ["deixie"],
  instructions: "",
  budgets: DeixisToolkit.defaultBudgets,
  prompt: PromptAssembler.defaults,
  fetch: UrlReader.defaults,
  ...overrides
})

const setup = (
  script: (request: FakeLlm.Request, index: number) => FakeLlm.Reply,
  options: { readonly mode?: BotConfig["mode"]; readonly llm?: Partial<Llm.LlmConfig> } = {}
) =>
  Effect.gen(function*() {
    const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
    const llm = yield* FakeLlm.make(script)
    const bot = yield* Bot.make({
      token: Redacted.make("123:TEST"),
      apiRoot: api.apiRoot,
      mode: options.mode ?? "talkative",
      send: { maxAttempts: 3, baseDelay: Duration.seconds(1), maxDelay: Duration.seconds(30), timeout: Duration.seconds(15) },
      timeZone: "UTC",
      llm: Option.some(llmConfig(llm.baseUrl, options.llm))
    })
    return { api, llm, feed: bot.handle }
  })

const withMemory = <A, E, R extends Bot.Services | Scope.Scope>(effect: Effect.Effect<A, E, R>) =>
  Effect.zipRight(TestClock.setTime(now), Effect.provide(effect, App.services(StoreConfig.layerMemory)))

const sent = (api: FakeBotApi.FakeBotApi) => api.callsOf("sendMessage").map((c) => c.payload)
const historyTexts = Effect.flatMap(HistoryStore.HistoryStore, (s) => s.recent({ chat_id: chat, topic_id: "7" }, 50)).pipe(
  Effect.map((entries) => entries.map((e) => e.item.text))
)
const toolMessages = (request: FakeLlm.Request) => request.messages.filter((m) => m.role === "tool")

describe("apps/telegram: LLM mode", () => {
  it.scoped("an addressed message sends [system + state, history, turn context, current] with the bot's replies as assistant turns, offers the tools, and is answered in its topic", () =>
    Effect.gen(function*() {
      const { api, feed, llm } = yield* setup(() => FakeLlm.answer("Nothing yet — want a poll?"))
      // Telegram numbers a chat's messages in order; the fake Bot API numbers the bot's from 10000.
      yield* feed(message("lunch at noon?", { from: F.bob, id: 9000 }))
      yield* feed(message("/context", { id: 9001 }))
      const question = message("what did you just say?", { mention: true, id: 20_000 })
      yield* feed(question)

      const [request] = llm.requests()
      assert.strictEqual(llm.requests().length, 1)
      assert.strictEqual(request!.model, "test-model")
      assert.strictEqual(llm.authorizations()[0], "Bearer sk-test")
      const roles = request!.messages.map((m) => m.role)
      assert.deepStrictEqual(roles, ["system", "user", "assistant", "user", "user"])
      assert.include(String(request!.messages[0]!["content"]), `${PromptAssembler.STATE_HEADING}\nConversation state`)
      const turn = String(request!.messages[3]!["content"])
      assert.isTrue(turn.startsWith(PromptAssembler.TURN_CONTEXT_HEADING))
      assert.include(turn, `chat_id=${chat}, topic_id=7, current_message_id=${question.message.message_id}`)
      const history = String(request!.messages[1]!["content"])
      assert.match(history, /^\{"type":"chat_history_context"/)
      assert.include(history, "lunch at noon?")
      assert.include(history, "/context")
      assert.match(String(request!.messages[2]!["content"]), /^Nothing is in focus here right now\./)
      const current = String(request!.messages[4]!["content"])
      assert.match(current, /^\{"type":"current_message"/)
      assert.include(current, "what did you just say?")
      assert.deepStrictEqual(request!.tools?.map((t) => t.function.name), [...DeixisToolkit.toolNames])
      for (const tool of request!.tools ?? []) assert.strictEqual(tool.function.parameters["additionalProperties"], false)

      const reply = sent(api).at(-1)!
      assert.deepStrictEqual([reply["text"], reply["message_thread_id"]], ["Nothing yet — want a poll?", 7])
      assert.deepStrictEqual(reply["reply_parameters"], { message_id: question.message.message_id, allow_sending_without_reply: true })
      assert.include(yield* historyTexts, "Nothing yet — want a poll?")
    }).pipe(withMemory))

  it.scoped("the prompt of a follow-up turn contains the state and the replied-to message", () =>
    Effect.gen(function*() {
      const { feed, llm } = yield* setup((_, i) =>
        i === 0
          ? FakeLlm.toolCalls(["update_conversation_state", { patch: { plan: "pizza", time: "12:00" } }])
          : i === 1
          ? FakeLlm.answer("Noted: pizza at noon.")
          : FakeLlm.answer("Still pizza at noon.")
      , { mode: "smart" })
      yield* feed(message("Bob proposes the Napoli place for friday", { from: F.bob, id: 30_001 }))
      for (let i = 0; i < 12; i++) yield* feed(message(`filler chat line ${i}`, { from: F.bob, id: 30_010 + i }))
      yield* feed(message("we settled on pizza at noon, remember it", { mention: true, id: 30_100 }))
      // A follow-up replying to the old proposal, outside the recency window.
      const proposal = { message_id: 30_001, from: F.bob, chat: F.forum, date: Math.floor(now / 1000) + 1, message_thread_id: 7, is_topic_message: true, text: "Bob proposes the Napoli place for friday" }
      yield* feed(message("is this still the plan?", { mention: true, id: 30_200, extra: { reply_to_message: proposal } }))

      const followUp = llm.requests()[2]!
      const system = String(followUp.messages[0]!["content"])
      assert.include(system, `${PromptAssembler.STATE_HEADING}\nConversation state, revision 1`)
      assert.include(system, `{"plan":"pizza","time":"12:00"}`)
      const all = followUp.messages.map((m) => String(m["content"] ?? "")).join("\n")
      assert.include(all, "Bob proposes the Napoli place for friday")
      assert.include(all, "\"message_id\":\"30001\"")
      assert.include(all, "Noted: pizza at noon.")
      assert.match(String(followUp.messages.at(-1)!["content"]), /^\{"type":"current_message".*is this still the plan\?.*"reply_to_message_id":"30001"/)
    }).pipe(withMemory))

  it.scoped("token budget cuts are stated in the prompt the model gets", () =>
    Effect.gen(function*() {
      const { feed, llm } = yield* setup(() => FakeLlm.answer("ok"), { llm: { prompt: { ...PromptAssembler.defaults, max_tokens: 700 } } })
      for (let i = 0; i < 10; i++) yield* feed(message(`a long line of chat number ${i} ${"about the weekend trip plans ".repeat(6)}`, { from: F.bob, id: 31_000 + i }))
      yield* feed(message("what did we decide?", { mention: true, id: 31_100 }))
      const request = llm.requests()[0]!
      const turn = String(request.messages.at(-2)!["content"])
      assert.match(turn, /Left out to fit the prompt budget of 700 tokens: \d+ older messages? \(get_message_thread_context loads them\)\./)
      const all = request.messages.map((m) => String(m["content"] ?? "")).join("\n")
      assert.notInclude(all, "chat number 0 ")
      assert.include(all, "chat number 9 ")
      assert.isAtMost(PromptAssembler.estimateMessages(request.messages.map((m) => ({ role: "user", content: String(m["content"] ?? "") }))), 700)
    }).pipe(withMemory))

  it.scoped("a URL fetch activates the link, and \"make it shorter\" after a summary resolves to the bot's summary", () =>
    Effect.gen(function*() {
      const url = "https://news.example/story"
      const ask = "summarize https://news.example/story please"
      const { api, feed, llm } = yield* setup((_, i) =>
        i === 0
          ? FakeLlm.toolCalls(
            ["record_context_action", { action: "url_fetched", message_id: "32000", url }, "a"],
            ["record_context_action", { action: "summary_written", label: "the story" }, "b"]
          )
          : i === 1
          ? FakeLlm.answer("Summary: the story says three long things about the town fair.")
          : i === 2
          // "shorter" applies to a text: the model passes the kind as a normalized hint.
          ? FakeLlm.toolCalls(["resolve_reference_target", { normalized_reference_hints: { target_kind_hint: "summary" } }])
          : FakeLlm.answer("The fair: three things.")
      )
      const mention = `@${F.botUsername} `
      yield* feed(message(ask, {
        mention: true,
        id: 32_000,
        extra: { entities: [{ type: "mention", offset: 0, length: mention.length - 1 }, { type: "url", offset: mention.length + "summarize ".length, length: url.length }] }
      }))
      const recorded = toolMessages(llm.requests()[1]!).map((m) => JSON.parse(String(m["content"])) as Envelope.Envelope)
      assert.deepStrictEqual(recorded.map((e) => e.status), ["ok", "ok"])
      assert.strictEqual(recorded[0]!.summary, `recorded: link ${chat}/32000/link activated (url_fetched)`)
      assert.strictEqual(api.callsOf("sendMessage").length, 1)

      yield* feed(message("make it shorter", { mention: true, id: 32_010 }))
      const followUp = llm.requests()[2]!
      const turn = String(followUp.messages.at(-2)!["content"])
      assert.include(turn, `"object_id":"${chat}/10000/summary","kind":"summary","label":"the story"`)
      assert.include(turn, `"object_id":"${chat}/32000/link","kind":"link"`)
      assert.include(turn, "activated_by_url_fetch")
      const resolved = JSON.parse(String(toolMessages(llm.requests()[3]!)[0]!["content"])) as { data: { best_match: { object_id: string; created_by_bot: boolean } } }
      assert.deepStrictEqual([resolved.data.best_match.object_id, resolved.data.best_match.created_by_bot], [`${chat}/10000/summary`, true])
      assert.notProperty(resolved.data, "diagnostics")
      assert.strictEqual(sent(api).at(-1)!["text"], "The fair: three things.")
    }).pipe(withMemory))

  it.scoped("tool calls run against the real state, pinned to this chat, with ids unique across rounds", () =>
    Effect.gen(function*() {
      const { api, feed, llm } = yield* setup((_, i) =>
        i === 0
          ? FakeLlm.toolCalls(["update_conversation_state", { chat_id: "-42", patch: { plan: "pizza" }, expected_revision: 0 }])
          : i === 1
          ? FakeLlm.toolCalls(["get_conversation_state", {}], ["list_active_context_objects", {}, "call_1"])
          : FakeLlm.answer("Pizza it is.")
      )
      yield* feed(message("we settled on pizza, remember it", { mention: true }))
      assert.strictEqual(llm.requests().length, 3)
      const state = yield* Effect.flatMap(ConversationState.ConversationState, (s) => s.get({ chat_id: chat, topic_id: "7" }))
      assert.deepStrictEqual([state.state, state.revision, state.updated_by], [{ plan: "pizza" }, 1, String(F.alice.id)])
      const other = yield* Effect.flatMap(ConversationState.ConversationState, (s) => s.get({ chat_id: "-42", topic_id: null }))
      assert.strictEqual(other.revision, 0)

      const last = llm.requests()[2]!
      const ids = toolMessages(last).map((m) => String(m["tool_call_id"]))
      assert.deepStrictEqual(ids, ["deixis_1_0", "deixis_2_0", "deixis_2_1"])
      const asked = last.messages.flatMap((m) => (m["tool_calls"] as ReadonlyArray<{ id: string }> | undefined ?? []).map((c) => c.id))
      assert.deepStrictEqual(asked, ids)
      const read = JSON.parse(String(toolMessages(last)[1]!["content"])) as { status: string; data: { state: unknown } }
      assert.deepStrictEqual([read.status, read.data.state], ["ok", { plan: "pizza" }])
      assert.strictEqual(sent(api).at(-1)!["text"], "Pizza it is.")
    }).pipe(withMemory))

  it.scoped("the tool loop stops at the round limit and asks once more without tools", () =>
    Effect.gen(function*() {
      const { api, feed, llm } = yield* setup(
        (request) => request.tools === undefined ? FakeLlm.answer("Here is what I found so far.") : FakeLlm.toolCalls(["list_active_context_objects", {}]),
        { llm: { maxRounds: 2 } }
      )
      yield* feed(message("what is going on here?", { mention: true }))
      assert.deepStrictEqual(llm.requests().map((r) => r.tools !== undefined), [true, true, false])
      assert.strictEqual(toolMessages(llm.requests()[2]!).length, 2)
      assert.strictEqual(sent(api).at(-1)!["text"], "Here is what I found so far.")
    }).pipe(withMemory))

  it.scoped("when the very first model call fails, the bot answers plainly without tools", () =>
    Effect.gen(function*() {
      const { api, feed, llm } = yield* setup((request) =>
        request.tools === undefined ? FakeLlm.answer("Plain answer.") : { status: 400, body: { error: { message: "model does not support tools" } } }
      )
      yield* feed(message("hi", { mention: true }))
      assert.deepStrictEqual(llm.requests().map((r) => r.tools !== undefined), [true, false])
      assert.deepStrictEqual(llm.requests()[1]!.messages, llm.requests()[0]!.messages)
      assert.strictEqual(sent(api).at(-1)!["text"], "Plain answer.")
    }).pipe(withMemory))

  it.scoped("a model timeout gives a short clear message, and the message and state changes stay recorded", () =>
    Effect.gen(function*() {
      const { api, feed, llm } = yield* setup((_, i) =>
        i === 0 ? FakeLlm.toolCalls(["update_conversation_state", { patch: { step: "asked" } }]) : "hang"
      )
      const fiber = yield* Effect.fork(feed(message("remember this step", { mention: true })))
      yield* llm.waitForRequests(2)
      yield* TestClock.adjust(Duration.seconds(30))
      yield* Fiber.join(fiber)
      assert.strictEqual(sent(api).at(-1)!["text"], Llm.messages.timeout)
      assert.isTrue((yield* historyTexts).some((t) => t.endsWith(" remember this step")))
      const state = yield* Effect.flatMap(ConversationState.ConversationState, (s) => s.get({ chat_id: chat, topic_id: "7" }))
      assert.deepStrictEqual(state.state, { step: "asked" })
    }).pipe(withMemory))

  it.scoped("a model error after the first call gives a short clear message", () =>
    Effect.gen(function*() {
      const { api, feed, llm } = yield* setup((_, i) =>
        i === 0 ? FakeLlm.toolCalls(["get_conversation_state", {}]) : { status: 500, body: { error: "boom" } }
      )
      yield* feed(message("and now?", { mention: true }))
      assert.strictEqual(llm.requests().length, 2)
      assert.strictEqual(sent(api).at(-1)!["text"], Llm.messages.error)
    }).pipe(withMemory))

  it.scoped("in strict mode only a mention, a reply to the bot or an alias reaches the model; an alias-addressed message is recorded", () =>
    Effect.gen(function*() {
      const { api, feed, llm } = yield* setup(() => FakeLlm.answer("Hello!"), { mode: "strict" })
      yield* feed(message("just chatting, deixies are cool"))
      assert.strictEqual(llm.requests().length, 0)
      assert.strictEqual(sent(api).length, 0)
      yield* feed(message("Deixie, are you there?"))
      assert.strictEqual(llm.requests().length, 1)
      assert.strictEqual(sent(api).at(-1)!["text"], "Hello!")
      const texts = yield* historyTexts
      assert.include(texts, "Deixie, are you there?")
      assert.notInclude(texts, "just chatting, deixies are cool")
      const botMessage = { message_id: 10_000, from: F.bot, chat: F.forum, date: Math.floor(now / 1000), message_thread_id: 7, is_topic_message: true, text: "Hello!" }
      yield* feed(message("thanks", { extra: { reply_to_message: botMessage } }))
      assert.strictEqual(llm.requests().length, 2)
    }).pipe(withMemory))

  it.scoped("in smart mode every message the bot receives is recorded and reaches the next prompt, but only an addressed one is answered", () =>
    Effect.gen(function*() {
      const { api, feed, llm } = yield* setup(() => FakeLlm.answer("Friday works."), { mode: "smart" })
      yield* feed(message("how about friday for the review?", { from: F.bob }))
      assert.strictEqual(llm.requests().length, 0)
      assert.strictEqual(sent(api).length, 0)
      assert.include(yield* historyTexts, "how about friday for the review?")
      yield* feed(message("does friday work for you?", { mention: true }))
      assert.strictEqual(llm.requests().length, 1)
      const history = llm.requests()[0]!.messages.map((m) => String(m["content"] ?? "")).join("\n")
      assert.include(history, "how about friday for the review?")
      assert.strictEqual(sent(api).at(-1)!["text"], "Friday works.")
    }).pipe(withMemory))

  it.scoped("a typing indicator is sent during a model turn and repeated every 4 seconds in the message's topic", () =>
    Effect.gen(function*() {
      const { api, feed, llm } = yield* setup(() => "hang")
      const fiber = yield* Effect.fork(feed(message("think hard about this", { mention: true })))
      yield* llm.waitForRequests(1)
      yield* api.waitFor("sendChatAction", undefined, 1)
      yield* TestClock.adjust(Llm.typingInterval)
      yield* api.waitFor("sendChatAction", undefined, 2)
      yield* TestClock.adjust(Llm.typingInterval)
      yield* api.waitFor("sendChatAction", undefined, 3)
      assert.strictEqual(sent(api).length, 0)
      for (const typing of api.callsOf("sendChatAction")) {
        assert.deepStrictEqual(typing.payload, { chat_id: F.forum.id, message_thread_id: 7, action: "typing" })
      }
      yield* TestClock.adjust(Duration.seconds(30))
      yield* Fiber.join(fiber)
      assert.strictEqual(sent(api).at(-1)!["text"], Llm.messages.timeout)
    }).pipe(withMemory))

  it.live("cancellation: a newer message from the same user in the same topic cancels the turn in progress; only the newer one is answered, with the earlier one in its history", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const llm = yield* FakeLlm.make((_, i) => (i === 0 ? "hang" : FakeLlm.answer("Here is the answer to both.")))
      const settings = Harness.config(api.apiRoot, { llm: Option.some(llmConfig(llm.baseUrl, { timeout: Duration.minutes(10) })) })
      const bot = yield* Bot.make(settings)
      yield* Runner.launch(bot, { ...settings, owner: "llm-cancel-test" })
      const privateChat = { id: F.alice.id, type: "private", first_name: "Alice" }
      const date = Math.floor(Date.now() / 1000)
      api.pushUpdates({ update_id: 81, message: { message_id: 81, from: F.alice, chat: privateChat, date, text: "what was decided about the trip?" } })
      yield* llm.waitForRequests(1)
      api.pushUpdates({ update_id: 82, message: { message_id: 82, from: F.alice, chat: privateChat, date, text: "and who is driving?" } })
      const reply = yield* api.waitFor("sendMessage")
      yield* llm.waitForRequests(2)
      assert.deepStrictEqual(reply.payload["reply_parameters"], { message_id: 82, allow_sending_without_reply: true })
      assert.strictEqual(reply.payload["text"], "Here is the answer to both.")
      const second = llm.requests()[1]!.messages.map((m) => String(m["content"] ?? "")).join("\n")
      assert.include(second, "what was decided about the trip?")
      assert.match(String(llm.requests()[1]!.messages.at(-1)!["content"]), /and who is driving\?/)
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
    }).pipe(Effect.provide(App.services(StoreConfig.layerMemory)), Effect.scoped), 20_000)

  it("aliases match whole words only, case-insensitively", () => {
    assert.isTrue(Llm.mentionsAlias("hey DEIXIE!", ["deixie"]))
    assert.isFalse(Llm.mentionsAlias("deixies everywhere", ["deixie"]))
    assert.isFalse(Llm.mentionsAlias("anything", []))
  })

  it.live("shutdown cancels an LLM turn in progress within DEIXIS_SHUTDOWN_TIMEOUT, without a reply after it", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const llm = yield* FakeLlm.make(() => "hang")
      const scope = yield* Scope.make()
      yield* Effect.gen(function*() {
        const settings = Harness.config(api.apiRoot, {
          shutdownTimeout: Duration.millis(100),
          llm: Option.some(llmConfig(llm.baseUrl, { timeout: Duration.minutes(10) }))
        })
        const bot = yield* Bot.make(settings)
        yield* Runner.launch(bot, { ...settings, owner: "llm-test" })
        api.pushUpdates({
          update_id: 77,
          message: { message_id: 77, from: F.alice, chat: { id: F.alice.id, type: "private", first_name: "Alice" }, date: Math.floor(now / 1000), text: "what is in focus?" }
        })
        yield* llm.waitForRequests(1)
      }).pipe(Effect.provide(App.services(StoreConfig.layerMemory)), Scope.extend(scope))
      // The model never answers; closing returns once the turn is interrupted.
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(api.callsOf("sendMessage").length, 0)
    }).pipe(Effect.scoped), 20_000)
})

const sqliteStores = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bot-llm-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ),
  (dir) => SqlStore.layerSqlite({ filename: path.join(dir, "deixis.db"), sweep_interval: 0 })
))
const pgUrl = testPgUrl()
const pgStores = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => `deixis_bot_llm_${Date.now().toString(36)}_${process.pid}`),
    (schema) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(
        Effect.provide(SqlStore.layerPgClient({ url: pgUrl, max_connections: 1 })),
        Effect.orDie
      )
  ),
  (schema) => SqlStore.layerPg({ url: pgUrl, schema, max_connections: 4, sweep_interval: 0 })
))
const storeChoices: ReadonlyArray<readonly [string, Layer.Layer<DeixisServices.Stores, unknown>]> = [
  ["memory", StoreConfig.layerMemory],
  ["sqlite", sqliteStores],
  ["postgres", pgStores]
]

// The four situations of issue 27 through the bot's own LLM loop, on every store: the model asks
// the tools, which are pinned to the current message; the answers come from the bot's real store.
for (const [storeName, stores] of storeChoices) describe(`apps/telegram: LLM mode resolves what the user pointed at, ${storeName}`, () => {
  const withMemory = <A, E, R extends Bot.Services | Scope.Scope>(effect: Effect.Effect<A, E, R>) =>
    Effect.zipRight(TestClock.setTime(now), Effect.provide(effect, App.services(stores)))

  let guard = UrlReaderTesting.loopbackOnly()
  afterEach(() => {
    // Whatever the model asked to read, no socket went beyond loopback.
    assert.deepStrictEqual(guard.violations, [])
    guard = UrlReaderTesting.loopbackOnly()
  })

  const at = Math.floor(now / 1000)
  const inTopic = (id: number, from: typeof F.alice | typeof F.bob, fields: Record<string, unknown>) => ({
    message_id: id, from, chat: F.forum, date: at + (id % 1000), message_thread_id: 7, is_topic_message: true, ...fields
  })
  const twoLinks = inTopic(40_000, F.bob, {
    text: "Compare https://example.com/plan-a and https://example.com/plan-b",
    entities: [{ offset: 8, length: 26, type: "url" }, { offset: 39, length: 26, type: "url" }]
  })
  const resolvedBy = (request: FakeLlm.Request) =>
    (JSON.parse(String(toolMessages(request)[0]!["content"])) as { data: { status: string; best_match: { object_id: string } | null } }).data
  const resolveFirst = (answer: string, args: Record<string, unknown> = {}) => (_: FakeLlm.Request, i: number) =>
    i === 0 ? FakeLlm.toolCalls(["resolve_reference_target", args]) : FakeLlm.answer(answer)

  it.scoped("a reply quoting one of two links: \"open this\" resolves to the quoted link", () =>
    Effect.gen(function*() {
      const { feed, llm } = yield* setup(resolveFirst("That is plan B."))
      yield* feed({ update_id: 40_000, message: twoLinks })
      yield* feed(message("open this", {
        mention: true,
        id: 40_001,
        extra: { reply_to_message: twoLinks, quote: { text: "https://example.com/plan-b", position: 39, is_manual: true } }
      }))
      const data = resolvedBy(llm.requests()[1]!)
      assert.deepStrictEqual([data.status, data.best_match?.object_id], ["resolved", `${chat}/40000/link/1`])
    }).pipe(withMemory))

  it.scoped("\"my last photo\" is the sender's own last photo, though someone posted one since", () =>
    Effect.gen(function*() {
      const { feed, llm } = yield* setup(resolveFirst("Your photo.", {
        normalized_reference_hints: { ownership_hint: "mine", ordinal_hint: "last", target_kind_hint: "image" }
      }))
      const photo = (id: number, from: typeof F.alice | typeof F.bob) =>
        ({ update_id: id, message: inTopic(id, from, { photo: [{ file_id: `photo-${id}`, file_unique_id: `u${id}`, width: 640, height: 480 }] }) })
      yield* feed(photo(41_000, F.alice))
      yield* feed(photo(41_001, F.bob))
      yield* feed(message("describe my last photo", { mention: true, id: 41_002 }))
      const data = resolvedBy(llm.requests()[1]!)
      assert.deepStrictEqual([data.status, data.best_match?.object_id], ["resolved", `${chat}/41000/media.image`])
    }).pipe(withMemory))

  it.scoped("a reply to a pin notice means the pinned message", () =>
    Effect.gen(function*() {
      const { feed, llm } = yield* setup(resolveFirst("The release checklist."))
      const pinned = inTopic(42_000, F.bob, { text: "Checklist: https://example.com/checklist", entities: [{ offset: 11, length: 29, type: "url" }] })
      yield* feed({ update_id: 42_001, message: inTopic(42_001, F.bob, { pinned_message: pinned }) })
      yield* feed(message("what is this?", { mention: true, id: 42_002, extra: { reply_to_message: inTopic(42_001, F.bob, { pinned_message: pinned }) } }))
      const data = resolvedBy(llm.requests()[1]!)
      assert.deepStrictEqual([data.status, data.best_match?.object_id], ["resolved", `${chat}/42000/link`])
    }).pipe(withMemory))

  it.scoped("read_url reads the replied message's link and activates it, its title the label; a private address is refused", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(
        Effect.async<http.Server>((resume) => {
          const s = http.createServer((_, res) =>
            res.writeHead(200, { "content-type": "text/html" }).end("<title>Plan B</title><main><p>Ship on Friday.</p></main>"))
          s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
        }),
        (s) => Effect.async<void>((resume) => void s.close(() => resume(Effect.void)))
      )
      const url = `http://plans.example:${(server.address() as AddressInfo).port}/b`
      const dns = UrlReaderTesting.tableResolver({ "plans.example": ["127.0.0.1"], "intranet.example": ["10.0.0.7"] })
      const reader = UrlReader.make({ allow_hosts: ["plans.example"] }, { resolver: dns.resolver, connector: guard.connector })
      const withLink = inTopic(43_000, F.bob, { text: `Plan: ${url}`, entities: [{ offset: 6, length: url.length, type: "url" }] })
      const { feed, llm } = yield* setup((_, i) =>
        i === 0
          ? FakeLlm.toolCalls(["read_url", { url }, "a"], ["read_url", { url: "http://intranet.example/" }, "b"])
          : FakeLlm.answer("It says: ship on Friday.")
      ).pipe(Effect.provideService(UrlReader.UrlReader, reader))
      yield* feed({ update_id: 43_000, message: withLink })
      yield* feed(message("what does this link say?", { mention: true, id: 43_001, extra: { reply_to_message: withLink } }))
      const [read, refused] = toolMessages(llm.requests()[1]!).map((m) => JSON.parse(String(m["content"])) as Envelope.Envelope)
      assert.strictEqual(read!.status, "ok", JSON.stringify(read))
      const data = read!.data as DeixisToolkit.ReadUrlResult
      assert.deepStrictEqual([data.page.title, data.page.text, data.activated.object_id], ["Plan B", "Ship on Friday.", `${chat}/43000/link`])
      assert.deepStrictEqual([refused!.status, refused!.error?.code, (refused!.data as { reason: string }).reason], ["error", "ReadUrlError", "forbidden_address"])
      const listed = yield* Effect.flatMap(ActiveContext.ActiveContext, (a) =>
        a.list({ chat_id: chat, topic_id: "7", current_message_id: "43002", reply_to_message_id: null, sender_user_id: null, max_results: 5, include_inactive_debug: false }))
      assert.deepStrictEqual(listed.objects.map((o) => [o.object_id, o.title_or_label, o.why_active.includes("activated_by_url_fetch")]), [
        [`${chat}/43000/link`, "Plan B", true]
      ])
    }).pipe(withMemory))
})

