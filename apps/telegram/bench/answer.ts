/**
 * `pnpm bench:answer`: what one `/context` answer with its record costs, the bot otherwise
 * idle — its update read by long polling, recorded, answered, the reply sent and recorded.
 * The bot runs in this process; the fake Bot API in a child process of its own, so the CPU
 * printed is the bot's alone (this process's, the driver's few IPC messages included) beside
 * the fake's. Each `/context` is pushed once the previous one is answered, in one of 10 chats.
 *
 * Beside the stores, its floor (`BENCH_FLOOR=0` leaves it out): a bare Telegraf bot, with
 * Telegraf's own polling and client on a keep-alive agent, that answers the same `/context`
 * with the text the bot sends in an empty topic and records nothing — what any Telegraf bot
 * pays this machine for an answer.
 *
 * `BENCH_STORES` (default `memory,sqlite`), `BENCH_ANSWERS` (measured, default 300, after as
 * many to warm up), `BENCH_BASE=<apps/telegram of another checkout>` (its code instead of this
 * one's, built with `tsc -p tsconfig.bench.json`). For a profile of the bot:
 * `node --cpu-prof --cpu-prof-dir=/tmp/prof .bench/bench/answer.js`.
 */
import { fork } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type * as TelegrafModule from "telegraf"
import { benchConfig } from "./config.js"
import { base, load, loadApp } from "./modules.js"

const cpuMs = (u = process.cpuUsage()) => (u.user + u.system) / 1000

/** To the fake: push these updates one by one, each once the previous one is answered. */
type ToFake = { readonly answer: ReadonlyArray<unknown> }
type FromFake = { readonly apiRoot: string } | { readonly cpuMs: number; readonly requests: number }

if (process.argv[2] === "fake") {
  // The fake Bot API's process: pushes the updates it is sent one by one, each once the bot
  // answered the previous one (sendMessage), then says what that cost it.
  const [FakeBotApi, Effect] = await Promise.all([load("@deixis/telegraf/testing"), load("effect/Effect")])
  const send = (m: FromFake) => process.send!(m)
  await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const api = yield* FakeBotApi.make({ username: "bench_bot", longPollMillis: 1000, date: Math.floor(Date.now() / 1000) })
    send({ apiRoot: api.apiRoot })
    yield* Effect.async(() => {
      process.on("message", async (m: ToFake) => {
        const cpu0 = cpuMs()
        const requests0 = api.calls().length + api.polls().total
        for (const update of m.answer) {
          const before = api.callsOf("sendMessage").length
          api.pushUpdates(update)
          await Effect.runPromise(api.waitFor("sendMessage", undefined, before + 1))
        }
        send({ cpuMs: cpuMs() - cpu0, requests: api.calls().length + api.polls().total - requests0 })
      })
      process.on("disconnect", () => process.exit(0))
    })
  })))
} else {
  const [App, Bot, Runner, { StoreConfig }, Effect, Duration, Logger, LogLevel, Option, Redacted, { Telegraf }] = await Promise.all([
    loadApp("App.js"),
    loadApp("Bot.js"),
    loadApp("Runner.js"),
    load("@deixis/store-sql"),
    load("effect/Effect"),
    load("effect/Duration"),
    load("effect/Logger"),
    load("effect/LogLevel"),
    load("effect/Option"),
    load("effect/Redacted"),
    load("telegraf")
  ])
  const answers = Number(process.env["BENCH_ANSWERS"] ?? 300)
  const fake = fork(fileURLToPath(import.meta.url), ["fake"], { execArgv: [] })
  const waiting: Array<(m: FromFake) => void> = []
  fake.on("message", (m: FromFake) => waiting.shift()?.(m))
  const ask = (m: ToFake | undefined) =>
    new Promise<FromFake>((resolve) => {
      waiting.push(resolve)
      if (m !== undefined) fake.send(m)
    })
  const { apiRoot } = (await ask(undefined)) as { apiRoot: string }

  let nextId = 1
  const context = () => {
    const id = nextId++
    const text = "/context"
    return {
      update_id: id,
      message: {
        message_id: id,
        from: { id: 1000 + (id % 50), is_bot: false, first_name: "User" },
        chat: { id: -1004000000000 - (id % 10), type: "supergroup", title: "Bench" },
        date: Math.floor(Date.now() / 1000),
        text,
        entities: [{ type: "bot_command", offset: 0, length: text.length }]
      }
    }
  }
  const config = benchConfig({ Duration, LogLevel, Option, Redacted }, apiRoot)
  const answerAll = (n: number) =>
    ask({ answer: Array.from({ length: n }, context) }) as Promise<{ cpuMs: number; requests: number }>
  const report = (label: string, cpu: number, fake: { cpuMs: number; requests: number }) =>
    console.log(
      `${label} bot ${(cpu / answers).toFixed(3)} ms CPU` +
        ` | the fake Bot API ${(fake.cpuMs / answers).toFixed(3)} ms for ${(fake.requests / answers).toFixed(1)} requests`
    )

  const scenario = (label: string, choice: unknown) =>
    Effect.gen(function*() {
      const bot = yield* Bot.make(config)
      const running = yield* Runner.launch(bot, { ...config, owner: "bench" })
      // Warm-up.
      yield* Effect.promise(() => answerAll(answers))
      yield* running.dispatcher.idle
      const cpu0 = cpuMs()
      const fake = yield* Effect.promise(() => answerAll(answers))
      yield* running.dispatcher.idle
      report(`${label.padEnd(7)} one answer with its record, idle:`, cpuMs() - cpu0, fake)
    }).pipe(Effect.scoped, Effect.provide(App.services(StoreConfig.layer(choice))), Logger.withMinimumLogLevel(LogLevel.None))

  // The floor: Telegraf alone, answering each `/context` as a reply with the text the bot sends
  // in an empty topic, recording nothing; its connections kept alive, as the bot's are.
  const bare = async () => {
    const telegraf = new (Telegraf as typeof TelegrafModule.Telegraf)("123:BENCH", {
      telegram: { apiRoot, agent: new http.Agent({ keepAlive: true }) }
    })
    const text = "Nothing is in focus here right now.\n\n" +
      "Things come into focus when someone works with them: reply to one with /what, or use /poll or /remind."
    telegraf.command("context", (ctx) => ctx.reply(text, { reply_parameters: { message_id: ctx.message.message_id } }))
    await new Promise<void>((resolve, reject) => {
      telegraf.launch(() => resolve()).catch(reject)
    })
    await answerAll(answers)
    const cpu0 = cpuMs()
    const fake = await answerAll(answers)
    report("floor   one answer by Telegraf alone, nothing recorded:", cpuMs() - cpu0, fake)
    telegraf.stop("bench")
  }

  const main = Effect.gen(function*() {
    console.log(`node ${process.version}, ${os.cpus().length} cpus, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}, code: ${base}`)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bot-answer-"))
    try {
      const stores = (process.env["BENCH_STORES"] ?? "memory,sqlite").split(",")
      for (const label of stores) {
        yield* scenario(label, label === "sqlite" ? { _tag: "sqlite", filename: path.join(dir, "answer.sqlite") } : { _tag: label })
      }
      if (process.env["BENCH_FLOOR"] !== "0") yield* Effect.promise(bare)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  Effect.runPromise(main).then(() => process.exit(0), (error: unknown) => {
    console.error(error)
    process.exit(1)
  })
}
