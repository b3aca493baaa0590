/**
 * `pnpm bench:mixed` (in-process): the whole bot — long polling, the update inbox, the dispatcher, Telegraf, the
 * deixis middleware, the command handlers, the replies — against a fake Bot API on loopback
 * that answers at once.
 *
 * 1. Throughput: 20,000 updates over 200 chats (topics), four in five plain messages with a
 *    link (recorded, no reply), one in five a command that replies (`/context`, `/what`,
 *    `/remind`, `/help`), pushed at once; updates handled per second.
 * 2. Added latency: commands pushed at a steady rate (200 per second on memory, 50 on SQLite); for each, the time from the
 *    moment Telegram has it (pushed to the fake's queue) to the moment the bot's reply
 *    reaches the fake: p50 / p90 / p99 / max.
 *
 * Each on the memory store and on a SQLite file. Logging off. Numbers vary with the machine.
 */
import { StoreConfig } from "@deixis/store-sql"
import * as FakeBotApi from "@deixis/telegraf/testing"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as App from "../src/App.js"
import * as Bot from "../src/Bot.js"
import type { BotConfig } from "../src/BotConfig.js"
import * as Runner from "../src/Runner.js"
import { benchConfig } from "./config.js"

const config = (apiRoot: string): BotConfig => benchConfig({ Duration, LogLevel, Option, Redacted }, apiRoot)

const chats = 200
let nextId = 1
const update = (i: number, command: boolean) => {
  const id = nextId++
  const chat = -1001000000000 - (i % chats)
  const commands = ["/context", "/what link", "/remind in 2 hours check the build", "/help"]
  const text = command ? commands[i % commands.length]! : `see https://example.com/page/${id} for the details`
  return {
    update_id: id,
    message: {
      message_id: id,
      from: { id: 1000 + (i % 50), is_bot: false, first_name: "User" },
      chat: { id: chat, type: "supergroup", is_forum: true, title: "Bench" },
      date: Math.floor(Date.now() / 1000),
      message_thread_id: 7,
      is_topic_message: true,
      text,
      entities: command
        ? [{ type: "bot_command", offset: 0, length: text.split(" ")[0]!.length }]
        : [{ type: "url", offset: 4, length: `https://example.com/page/${id}`.length }]
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

const scenario = (label: string, choice: StoreConfig.StoreChoice, rate: number) =>
  Effect.gen(function*() {
    const api = yield* FakeBotApi.make({ username: "bench_bot", longPollMillis: 1000, date: Math.floor(Date.now() / 1000) })
    const bot = yield* Bot.make(config(api.apiRoot))
    const running = yield* Runner.launch(bot, { ...config(api.apiRoot), owner: "bench" })

    // Warm-up.
    api.pushUpdates(...Array.from({ length: 500 }, (_, i) => update(i, i % 5 === 0)))
    yield* Effect.promise(async () => {
      while (api.calls().filter((c) => c.method === "sendMessage").length < 100) await sleep(5)
    })
    yield* running.dispatcher.idle

    // 1. Throughput.
    const n = 20_000
    const repliesBefore = api.callsOf("sendMessage").length
    const batch = Array.from({ length: n }, (_, i) => update(i, i % 5 === 0))
    const lastId = batch.at(-1)!.update_id
    const t0 = performance.now()
    api.pushUpdates(...batch)
    yield* Effect.promise(async () => {
      // Every command replies once; the last update's reply, or its handling, ends the run.
      while (api.callsOf("sendMessage").length - repliesBefore < n / 5) await sleep(2)
    })
    yield* running.dispatcher.idle
    const seconds = (performance.now() - t0) / 1000
    void lastId

    // 2. Added latency at a steady rate.
    const count = 2_000
    const pushedAt = new Map<number, number>()
    const start = performance.now()
    for (let i = 0; i < count; i++) {
      const due = start + (i * 1000) / rate
      const wait = due - performance.now()
      if (wait > 0) yield* Effect.promise(() => sleep(wait))
      const u = update(i, true)
      pushedAt.set(u.message.message_id, performance.now())
      api.pushUpdates(u)
    }
    yield* Effect.promise(async () => {
      const done = () =>
        api.callsOf("sendMessage").filter((c) => pushedAt.has(Number((c.payload["reply_parameters"] as { message_id: number } | undefined)?.message_id))).length
      while (done() < count) await sleep(5)
    })
    const latencies = api.callsOf("sendMessage").flatMap((c) => {
      const replyTo = Number((c.payload["reply_parameters"] as { message_id: number } | undefined)?.message_id)
      const at = pushedAt.get(replyTo)
      return at === undefined ? [] : [c.at - at]
    }).sort((a, b) => a - b)
    const ms = (x: number) => `${x.toFixed(1)} ms`
    console.log(
      `${label.padEnd(8)} throughput ${Math.round(n / seconds).toLocaleString("en-US")} updates/s (${n} in ${seconds.toFixed(2)} s)` +
        ` | added latency at ${rate}/s: p50 ${ms(percentile(latencies, 0.5))}, p90 ${ms(percentile(latencies, 0.9))}, p99 ${ms(percentile(latencies, 0.99))}, max ${ms(latencies.at(-1)!)}`
    )
  }).pipe(
    Effect.scoped,
    Effect.provide(App.services(StoreConfig.layer(choice))),
    Logger.withMinimumLogLevel(LogLevel.None)
  )

const main = Effect.gen(function*() {
  console.log(`node ${process.version}, ${os.cpus().length} cpus (${os.cpus()[0]?.model ?? "?"}), ${new Date().toISOString().slice(0, 10)}`)
  yield* scenario("memory", { _tag: "memory" }, 200)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bot-bench-"))
  try {
    // A rate the SQLite store sustains (every command is several fsync'd transactions).
    yield* scenario("sqlite", { _tag: "sqlite", filename: path.join(dir, "bench.sqlite") }, 50)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

Effect.runPromise(main).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
