/**
 * What an operator sees of the bot as a process (run from its sources, against the fake Bot
 * API on loopback): no log line of a failing run holds the token, at any level; a wrong token
 * is refused naming `BOT_TOKEN`; a stop with a send Telegram never answers ends within
 * `DEIXIS_SHUTDOWN_TIMEOUT`, exit 0, with the stop line last.
 */
import * as FakeBotApi from "@deixis/telegraf/testing"
import { assert, describe, it } from "@effect/vitest"
import { freePort } from "deixis-test-support/net"
import { type Running, start } from "deixis-test-support/process"
import * as Effect from "effect/Effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as TelegramSend from "../src/TelegramSend.js"

const app = join(import.meta.dirname, "..")
const version = (JSON.parse(readFileSync(join(app, "package.json"), "utf8")) as { version: string }).version

/** The bot from its sources, as `pnpm dev` runs it; killed (its whole group) at the end of the scope. */
const bot = (env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      start(process.execPath, ["--conditions=@deixis/source", "--import", "tsx", "src/main.ts"], {
        cwd: app,
        env: { BOT_OPS_PORT: "0", BOT_OPS_HOST: "127.0.0.1", DEIXIS_STORE: "memory", ...env }
      })
    ),
    (r) => Effect.sync(r.kill)
  )

const exited = (r: Running) => Effect.promise(() => r.exited)
const waitFor = (r: Running, pattern: RegExp, ms = 120_000) => Effect.promise(() => r.waitFor(pattern, ms))

const help = (id: number) => ({
  update_id: id,
  message: {
    message_id: id,
    from: { id: 5, is_bot: false, first_name: "A" },
    chat: { id: 5, type: "private", first_name: "A" },
    date: 1,
    text: "/help",
    entities: [{ type: "bot_command", offset: 0, length: 5 }]
  }
})

// The part of each token that is secret: what no line may show.
const secret = "SECRETvalue_9f2c"

describe("Bot API errors", () => {
  it("are scrubbed of the URL's token, whatever its shape, before anything logs or keeps them", () => {
    for (const token of [`123:${secret}`, `%20123:${secret}`, secret, `123:${secret}%0A`]) {
      const fetchError = new Error(`request to https://api.telegram.org/bot${token}/getMe failed, reason: getaddrinfo ENOTFOUND api.telegram.org`)
      const error = TelegramSend.classify("getMe", fetchError)
      assert.notInclude(error.description, secret)
      assert.include(error.description, "https://api.telegram.org/bot<redacted>/getMe failed")
      assert.notInclude(TelegramSend.classify("getFile", new Error(`GET https://api.telegram.org/file/bot${token}/photos/1.jpg 404`)).message, secret)
    }
  })
})

describe("the bot as an operator runs it", () => {
  it.live("a token of the wrong shape, or none, is refused naming BOT_TOKEN and never shown; exit 1", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [Record<string, string>, string]> = [
        [{}, "BOT_TOKEN is not set: set it to the token @BotFather gave"],
        [{ BOT_TOKEN: `123-${secret}` }, "BOT_TOKEN has the wrong shape"],
        [{ BOT_TOKEN: secret }, "BOT_TOKEN has the wrong shape"],
        [{ BOT_TOKEN: `123:${secret} x` }, "BOT_TOKEN has the wrong shape"],
        [{ BOT_TOKEN: `123:${secret}/getMe?` }, "BOT_TOKEN has the wrong shape"],
        [{ BOT_TOKEN: "   " }, "BOT_TOKEN is empty"]
      ]
      for (const [env, said] of cases) {
        const r = yield* bot({ ...env, DEIXIS_LOG_LEVEL: "All" })
        assert.strictEqual((yield* exited(r)).code, 1, r.output())
        const fatal = r.output().split("\n").filter((l) => l.includes("level=FATAL"))
        assert.strictEqual(fatal.length, 1, r.output())
        assert.include(fatal[0], `the bot cannot run: ${said}`)
        assert.notInclude(r.output(), secret)
        // Not `Missing data at BOT_TOKEN: "<redacted>"`: nothing secret enters these lines.
        assert.notInclude(r.output(), "<redacted>")
      }
    }).pipe(Effect.scoped), 300_000)

  for (const level of ["All", "Debug", "Info"]) {
    it.live(`${level}: no line of a failing run holds the token — a pasted token with a leading space and a closed port, Telegram's 401 and 404`, () =>
      Effect.gen(function*() {
        // A network error: fetch's message names the URL, `/bot%20123:…/getMe` — a shape
        // Telegraf's own redaction does not match.
        const closed = yield* Effect.promise(() => freePort())
        const network = yield* bot({ BOT_TOKEN: ` 123:${secret}`, BOT_API_ROOT: `http://127.0.0.1:${closed}`, BOT_SEND_MAX_ATTEMPTS: "2", BOT_SEND_BASE_DELAY: "10 millis", DEIXIS_LOG_LEVEL: level })
        assert.strictEqual((yield* exited(network)).code, 1, network.output())
        assert.include(network.output(), "BOT_TOKEN had leading or trailing whitespace, which was ignored")
        assert.include(network.output(), "getMe failed: network")
        assert.include(network.output(), "/bot<redacted>/getMe")

        // Telegram refuses the token: 401 from getMe, and 404 (what it answers a malformed token).
        const refusals: ReadonlyArray<FakeBotApi.Failure> = [
          { error_code: 401, description: "Unauthorized" },
          { error_code: 404, description: "Not Found" }
        ]
        const outputs = [network.output()]
        for (const failure of refusals) {
          const api = yield* FakeBotApi.make({ username: "deixis_bot" })
          api.failNext("getMe", failure)
          const refused = yield* bot({ BOT_TOKEN: `123:${secret}`, BOT_API_ROOT: api.apiRoot, DEIXIS_LOG_LEVEL: level })
          assert.strictEqual((yield* exited(refused)).code, 1, refused.output())
          assert.include(refused.output(), `getMe failed: ${failure.error_code}`)
          outputs.push(refused.output())
        }
        for (const output of outputs) {
          assert.notInclude(output, secret)
          assert.strictEqual(output.split("\n").filter((l) => l.includes("level=FATAL")).length, 1, output)
          // Stack traces at Debug and finer only.
          assert.strictEqual(/\bat .*\.ts:\d+/.test(output), level !== "Info", output)
        }
      }).pipe(Effect.scoped), 300_000)
  }

  it.live("SIGTERM with a send Telegram never answers, at the default DEIXIS_SHUTDOWN_TIMEOUT: exit 0 within it (plus slack), the stop line last", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ username: "deixis_bot" })
      api.hang("sendMessage")
      const dir = mkdtempSync(join(tmpdir(), "deixis-bot-operator-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const r = yield* bot({ BOT_TOKEN: `123:${secret}`, BOT_API_ROOT: api.apiRoot, DEIXIS_STORE: `sqlite:${join(dir, "bot.sqlite")}`, DEIXIS_LOG_LEVEL: "info" })
      yield* waitFor(r, /bot started/)
      const started = r.output().split("\n").find((l) => l.includes("bot started"))!
      assert.include(started, `version=${version}`)
      assert.include(started, `store="sqlite ${join(dir, "bot.sqlite")}"`)
      api.pushUpdates(help(1))
      yield* api.waitFor("sendMessage")
      const signalled = Date.now()
      r.signal("SIGTERM")
      const exit = yield* exited(r)
      assert.deepStrictEqual([exit.code, exit.signal], [0, null], r.output())
      // The documented 8 seconds, plus slack for a loaded machine; nothing finer is asserted.
      assert.isBelow(exit.at - signalled, 8_000 + 4_000, r.output())
      const lines = r.output().trim().split("\n")
      assert.match(lines.at(-1)!, /message="bot stopped" reason=SIGTERM took_ms=\d+$/, r.output())
      assert.include(r.output(), "shutdown timeout: interrupting updates still being handled")
      assert.notInclude(r.output(), secret)
    }).pipe(Effect.scoped), 180_000)

  it.live("a second signal during the stop is absorbed: still exit 0", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ username: "deixis_bot" })
      api.hang("sendMessage")
      const r = yield* bot({ BOT_TOKEN: `123:${secret}`, BOT_API_ROOT: api.apiRoot, DEIXIS_SHUTDOWN_TIMEOUT: "3 seconds", DEIXIS_LOG_LEVEL: "Warning" })
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
      api.pushUpdates(help(1))
      yield* api.waitFor("sendMessage")
      r.signal("SIGINT")
      yield* Effect.sleep("200 millis")
      r.signal("SIGINT")
      r.signal("SIGTERM")
      const exit = yield* exited(r)
      assert.deepStrictEqual([exit.code, exit.signal], [0, null], r.output())
    }).pipe(Effect.scoped), 180_000)
})

describe("the bot stopped in the middle of a burst", () => {
  const remind = (i: number) => ({
    update_id: 1000 + i,
    message: {
      message_id: 1000 + i,
      from: { id: 500 + (i % 30), is_bot: false, first_name: "A" },
      chat: { id: 500 + (i % 30), type: "private", first_name: "A" },
      date: 1,
      text: `/remind in ${10 + i} minutes task ${i}`,
      entities: [{ type: "bot_command", offset: 0, length: 7 }]
    }
  })
  const taskOf = (text: unknown) => /task (\d+)/.exec(String(text))?.[1]

  it.live("SIGTERM mid-burst, then a restart on the same store: every update is answered, none twice", () =>
    Effect.gen(function*() {
      const total = 600
      const api = yield* FakeBotApi.make({ username: "deixis_bot" })
      const dir = mkdtempSync(join(tmpdir(), "deixis-bot-sigterm-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const env = {
        BOT_TOKEN: `123:${secret}`,
        BOT_API_ROOT: api.apiRoot,
        DEIXIS_STORE: `sqlite:${join(dir, "bot.sqlite")}`,
        // A small queue: most of the burst is still at Telegram when the signal comes.
        BOT_QUEUE_CAPACITY: "40",
        DEIXIS_LOG_LEVEL: "Warning"
      }
      const answers = () => api.callsOf("sendMessage").filter((c) => taskOf(c.payload["text"]) !== undefined)
      const first = yield* bot(env)
      api.pushUpdates(...Array.from({ length: total }, (_, i) => remind(i)))
      yield* Effect.promise(() => new Promise<void>((resolve) => {
        const check = setInterval(() => {
          if (answers().length >= 40) {
            clearInterval(check)
            resolve()
          }
        }, 2)
      }))
      first.signal("SIGTERM")
      const stopped = yield* exited(first)
      assert.deepStrictEqual([stopped.code, stopped.signal], [0, null], first.output())
      const beforeRestart = answers().length
      assert.isBelow(beforeRestart, total, "the burst was over before the signal: nothing was stopped in its middle")

      const second = yield* bot(env)
      // Bounded generously (a loaded machine), so a bot that never catches up fails with its output.
      const caughtUp = yield* Effect.promise(() => new Promise<boolean>((resolve) => {
        const giveUp = setTimeout(() => {
          clearInterval(check)
          resolve(false)
        }, 120_000)
        const check = setInterval(() => {
          if (new Set(answers().map((c) => taskOf(c.payload["text"]))).size >= total) {
            clearInterval(check)
            clearTimeout(giveUp)
            resolve(true)
          }
        }, 20)
      }))
      assert.isTrue(caughtUp, `not every update was answered after the restart (${new Set(answers().map((c) => taskOf(c.payload["text"]))).size} of ${total}); ${second.output()}`)
      // Whatever else the second process would send lands before counting.
      second.signal("SIGTERM")
      assert.strictEqual((yield* exited(second)).code, 0, second.output())
      const counts = new Map<string, number>()
      for (const c of answers()) {
        const task = taskOf(c.payload["text"])!
        counts.set(task, (counts.get(task) ?? 0) + 1)
      }
      assert.strictEqual(counts.size, total)
      assert.deepStrictEqual([...counts].filter(([, n]) => n !== 1), [], `answered twice; ${first.output()}\n${second.output()}`)
    }).pipe(Effect.scoped), 300_000)
})
