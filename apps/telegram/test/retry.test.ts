/**
 * A posting method is retried only when the request provably never reached Telegram, or on
 * 429: a connection reset after the request was sent may have posted, so it is not repeated;
 * a refused connection posted nothing, so it is.
 */
import * as FakeBotApi from "@deixis/telegraf/testing"
import { assert, describe, it } from "@effect/vitest"
import { freePort } from "deixis-test-support/net"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as net from "node:net"
import * as Bot from "../src/Bot.js"
import * as TelegramSend from "../src/TelegramSend.js"
import { config, F, sleeperIn, withMemory } from "./utils/harness.js"

const send = { chat_id: F.forum.id, text: "hello" }

describe("apps/telegram: retrying a posting method", () => {
  it.scoped("a connection reset after sendMessage was sent is not retried: it may have posted", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const bot = yield* Bot.make(config(api.apiRoot))
      api.resetNext("sendMessage")
      const exit = yield* Effect.exit(bot.api.call("sendMessage", send))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.include(String(exit.cause), "sendMessage failed: network")
      // Telegram got it once; nothing is waiting to send it again.
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
      yield* TestClock.adjust("1 hour")
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
    }).pipe(withMemory))

  it.scoped("a refused connection is retried (nothing was posted), and the message is posted once", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      // The bot talks to a port where nothing listens yet: its first attempt is refused.
      const port = yield* Effect.promise(() => freePort())
      const bot = yield* Bot.make(config(`http://127.0.0.1:${port}`))
      const sending = yield* Effect.fork(bot.api.call("sendMessage", send))
      const policy = config("").send
      yield* sleeperIn(policy.baseDelay)
      assert.strictEqual(api.callsOf("sendMessage").length, 0)
      // Then the Bot API answers on that port (a relay to the fake one), and the retry gets through.
      const upstream = new URL(api.apiRoot)
      const relay = net.createServer((client) => {
        const server = net.connect(Number(upstream.port), upstream.hostname)
        client.pipe(server).pipe(client)
        client.on("error", () => server.destroy())
        server.on("error", () => client.destroy())
      })
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void relay.listen(port, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.async<void>((resume) => void relay.close(() => resume(Effect.void)))
      )
      yield* TestClock.adjust(policy.baseDelay)
      yield* Fiber.join(sending)
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
      assert.strictEqual(api.delivered().length, 1)
    }).pipe(withMemory))

  it("the rule: posting methods are retried on 429 or a connection never made; others on 5xx and network errors too", () => {
    const policy = config("").send
    const error = (method: string, code: number | null, extra: Partial<{ unsent: boolean; timed_out: boolean; retry_after: number }> = {}) =>
      new TelegramSend.SendError({ method, code, description: "x", retry_after: extra.retry_after ?? null, ...extra })
    const retried = (e: TelegramSend.SendError) => TelegramSend.retryDelay(e, 0, policy)._tag === "Some"
    assert.isTrue(retried(error("sendMessage", 429, { retry_after: 1 })))
    assert.isTrue(retried(error("sendMessage", null, { unsent: true })))
    assert.isFalse(retried(error("sendMessage", null)))
    assert.isFalse(retried(error("sendMessage", null, { timed_out: true })))
    assert.isFalse(retried(error("sendMessage", 502)))
    assert.isFalse(retried(error("copyMessage", null)))
    assert.isTrue(retried(error("editMessageText", 502)))
    assert.isTrue(retried(error("sendChatAction", null)))
    assert.isTrue(TelegramSend.neverSent({ code: "ECONNREFUSED" }))
    assert.isTrue(TelegramSend.neverSent(Object.assign(new TypeError("fetch failed"), { cause: { code: "ENOTFOUND" } })))
    assert.isTrue(TelegramSend.neverSent({ code: "ERR_SSL_WRONG_VERSION_NUMBER" }))
    assert.isFalse(TelegramSend.neverSent({ code: "ECONNRESET" }))
    assert.isFalse(TelegramSend.neverSent({ code: "ETIMEDOUT" }))
  })
})
