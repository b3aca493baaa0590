/**
 * The Bot API client (`TelegramSend.client`): a JSON call goes out as one request and comes
 * back as Telegraf's would — the result, Telegram's refusal as a `TelegramError` (its code,
 * description and parameters), a 5xx by its status — with null fields left out of the body.
 */
import * as FakeBotApi from "@deixis/telegraf/testing"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { TelegramError } from "telegraf"
import * as TelegramSend from "../src/TelegramSend.js"
import { config, F } from "./utils/harness.js"

const refusal = (promise: Promise<unknown>) =>
  Effect.promise(() => promise.then(() => assert.fail("the call succeeded"), (error: unknown) => error))

describe("apps/telegram: the Bot API client", () => {
  it.scoped("a call's result, and its body without null fields", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const telegram = TelegramSend.client("123:TOKEN", api.apiRoot)
      const sent = yield* Effect.promise(() => telegram.callApi("sendMessage", { chat_id: F.forum.id, text: "hi", reply_markup: null } as never))
      assert.strictEqual((sent as { text?: string }).text, "hi")
      const call = api.callsOf("sendMessage")[0]!
      assert.strictEqual(call.token, "123:TOKEN")
      assert.deepStrictEqual(call.payload, { chat_id: F.forum.id, text: "hi" })
      // Telegraf's own methods (what a handler's context calls) take the same path.
      const me = yield* Effect.promise(() => telegram.getMe())
      assert.strictEqual(me.id, F.botId)
    }))

  it.scoped("Telegram's refusal is a TelegramError with its code, description and parameters; a 5xx is its status", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const telegram = TelegramSend.client("123:TOKEN", api.apiRoot)
      api.failNext("sendMessage", { error_code: 429, description: "Too Many Requests: retry after 7", parameters: { retry_after: 7 } })
      const limited = yield* refusal(telegram.callApi("sendMessage", { chat_id: F.forum.id, text: "hi" } as never))
      assert.instanceOf(limited, TelegramError)
      const classified = TelegramSend.classify("sendMessage", limited)
      assert.deepStrictEqual([classified.code, classified.retry_after, classified.description], [429, 7, "Too Many Requests: retry after 7"])
      api.failNext("sendMessage", { error_code: 502, description: "Bad Gateway" })
      const bad = TelegramSend.classify("sendMessage", yield* refusal(telegram.callApi("sendMessage", { chat_id: F.forum.id, text: "hi" } as never)))
      assert.strictEqual(bad.code, 502)
      // An unknown chat's 400, as Telegram words it.
      const empty = TelegramSend.classify("sendMessage", yield* refusal(telegram.callApi("sendMessage", { text: "hi" } as never)))
      assert.deepStrictEqual([empty.code, empty.description], [400, "Bad Request: chat_id is empty"])
    }))

  it.scoped("a connection reset is a network error that may have posted; a refused one never did", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      api.resetNext("sendMessage")
      const reset = TelegramSend.classify(
        "sendMessage",
        yield* refusal(TelegramSend.client("123:TOKEN", api.apiRoot).callApi("sendMessage", { chat_id: F.forum.id, text: "hi" } as never))
      )
      assert.deepStrictEqual([reset.code, reset.unsent], [null, false])
      const exit = yield* Effect.exit(TelegramSend.send(
        "sendMessage",
        (signal) => TelegramSend.client("123:TOKEN", "http://127.0.0.1:1").callApi("sendMessage", { chat_id: 1, text: "hi" } as never, { signal } as never),
        { ...config("").send, maxAttempts: 1 }
      ))
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.unsent === true)
    }))

  it.live("on the live clock, a call without an answer in time fails as timed out; one answered in time succeeds", () =>
    Effect.scoped(Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const telegram = TelegramSend.client("123:TOKEN", api.apiRoot)
      const policy = { ...config("").send, maxAttempts: 1, timeout: Duration.millis(200) }
      const call = (text: string) =>
        TelegramSend.send("sendMessage", (signal) => telegram.callApi("sendMessage", { chat_id: F.forum.id, text } as never, { signal } as never), policy)
      const held = api.hang("sendMessage", (c) => c.payload["text"] === "held")
      const exit = yield* Effect.exit(call("held"))
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.timed_out === true)
      held.release()
      const sent = yield* call("in time")
      assert.strictEqual((sent as { text?: string }).text, "in time")
    })))
})
