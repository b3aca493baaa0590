/**
 * `pnpm bench:burst`: the issue's figure — 5,000 plain messages in 50 chats and 200 `/context`
 * in 10 other chats, pushed at once (long polling, the fake Bot API on loopback answering at
 * once): updates handled per second, the process's CPU time per update (the fake's included),
 * and each `/context` answer's latency from the push to the reply reaching the fake.
 *
 * Beside it, the floor: the same updates' store work alone (each chat's updates recorded in
 * one `TelegramRecorder.recordBatch` unit of work, no bot), so a figure can be read against
 * what the store itself costs.
 *
 * `BENCH_STORES=memory` (or `sqlite`) runs one store only.
 * `BENCH_BASE=<apps/telegram of another checkout, built with pnpm bench>` runs the same
 * scenario against that checkout's code (a before/after in one run).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { PerformanceObserver } from "node:perf_hooks"
import { benchConfig } from "./config.js"
import { base, load, loadApp } from "./modules.js"

const [App, Bot, Runner, { StoreConfig }, { TelegramRecorder }, FakeBotApi, Effect, Duration, Logger, LogLevel, Option, Redacted] = await Promise.all([
  loadApp("App.js"),
  loadApp("Bot.js"),
  loadApp("Runner.js"),
  load("@deixis/store-sql"),
  load("@deixis/telegraf"),
  load("@deixis/telegraf/testing"),
  load("effect/Effect"),
  load("effect/Duration"),
  load("effect/Logger"),
  load("effect/LogLevel"),
  load("effect/Option"),
  load("effect/Redacted")
])

const config = (apiRoot: string) => benchConfig({ Duration, LogLevel, Option, Redacted }, apiRoot)

let nextId = 1
const message = (chat: number, text: string, command: boolean) => {
  const id = nextId++
  return {
    update_id: id,
    message: {
      message_id: id,
      from: { id: 1000 + (id % 50), is_bot: false, first_name: "User" },
      chat: { id: chat, type: "supergroup", title: "Bench" },
      date: Math.floor(Date.now() / 1000),
      text,
      entities: command
        ? [{ type: "bot_command", offset: 0, length: text.length }]
        : [{ type: "url", offset: 4, length: `https://example.com/page/${id}`.length }]
    }
  }
}
const plain = (i: number) => message(-1003000000000 - (i % 50), `see https://example.com/page/${nextId} for the details`, false)
const context = (i: number) => message(-1004000000000 - (i % 10), "/context", true)
/** 5,000 plain messages in 50 chats with a /context in one of 10 other chats every 25th. */
const burst = () => Array.from({ length: 5_200 }, (_, i) => (i % 26 === 25 ? context(i) : plain(i)))

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
// The process's GC pauses, as the shipped bot's `nodejs_gc_duration_seconds` counts them.
let gcPauseMs = 0
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcPauseMs += entry.duration
}).observe({ entryTypes: ["gc"] })
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

const scenario = (label: string, choice: unknown) =>
  Effect.gen(function*() {
    const api = yield* FakeBotApi.make({ username: "bench_bot", longPollMillis: 1000, date: Math.floor(Date.now() / 1000) })
    const bot = yield* Bot.make(config(api.apiRoot))
    const running = yield* Runner.launch(bot, { ...config(api.apiRoot), owner: "bench" })
    // Warm-up.
    api.pushUpdates(...burst().slice(0, 520))
    yield* Effect.promise(async () => {
      while (api.callsOf("sendMessage").length < 20) await sleep(5)
    })
    yield* running.dispatcher.idle
    const results = []
    for (let run = 0; run < 3; run++) {
      const updates = burst()
      const commands = new Set(updates.filter((u) => u.message.text === "/context").map((u) => u.update_id))
      const before = api.callsOf("sendMessage").length
      const cpu0 = cpuMs()
      const gc0 = gcPauseMs
      const t0 = performance.now()
      api.pushUpdates(...updates)
      yield* Effect.promise(async () => {
        while (api.callsOf("sendMessage").length - before < commands.size) await sleep(2)
      })
      yield* running.dispatcher.idle
      const seconds = (performance.now() - t0) / 1000
      const cpu = cpuMs() - cpu0
      const latencies = api.callsOf("sendMessage").slice(before).map((c: { at: number }) => c.at - t0).sort((a: number, b: number) => a - b)
      results.push({ rate: updates.length / seconds, cpu: cpu / updates.length, gc: (gcPauseMs - gc0) / updates.length, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) })
    }
    // One answer with its record, the process otherwise idle: 100 `/context`, each pushed once the
    // previous is answered; the process's CPU per answer (the fake Bot API's share included).
    const answers = 100
    const cpuBefore = cpuMs()
    for (let i = 0; i < answers; i++) {
      const before = api.callsOf("sendMessage").length
      api.pushUpdates(context(i))
      yield* api.waitFor("sendMessage", undefined, before + 1)
    }
    yield* running.dispatcher.idle
    const perAnswer = (cpuMs() - cpuBefore) / answers
    const best = results.sort((a, b) => b.rate - a.rate)[0]!
    console.log(`${label.padEnd(8)} one answer with its record, idle: ${perAnswer.toFixed(2)} ms CPU (the fake Bot API's share included)`)
    console.log(
      `${label.padEnd(8)} burst ${Math.round(best.rate).toLocaleString("en-US")} updates/s, ${best.cpu.toFixed(2)} ms CPU/update (${best.gc.toFixed(3)} in GC pauses)` +
        ` | /context answered p50 ${best.p50.toFixed(0)} ms, p99 ${best.p99.toFixed(0)} ms after the push (best of 3)`
    )
  }).pipe(Effect.scoped, Effect.provide(App.services(StoreConfig.layer(choice))), Logger.withMinimumLogLevel(LogLevel.None))

/** The floor: each chat's updates of the burst recorded in one unit of work, no bot. */
const floor = (label: string, choice: unknown) =>
  Effect.gen(function*() {
    const results = []
    for (let run = 0; run < 3; run++) {
      const updates = burst()
      const byChat = new Map<number, Array<unknown>>()
      for (const u of updates) byChat.set(u.message.chat.id, [...(byChat.get(u.message.chat.id) ?? []), u])
      const cpu0 = cpuMs()
      const t0 = performance.now()
      for (const chat of byChat.values()) {
        for (let i = 0; i < chat.length; i += 32) yield* TelegramRecorder.recordBatch(chat.slice(i, i + 32), { botId: "1" })
      }
      results.push({ rate: updates.length / ((performance.now() - t0) / 1000), cpu: (cpuMs() - cpu0) / updates.length })
    }
    const best = results.sort((a, b) => b.rate - a.rate)[0]!
    console.log(`${label.padEnd(8)} floor ${Math.round(best.rate).toLocaleString("en-US")} updates/s, ${best.cpu.toFixed(3)} ms CPU/update (store work alone, runs of 32)`)
  }).pipe(Effect.scoped, Effect.provide(App.services(StoreConfig.layer(choice))), Logger.withMinimumLogLevel(LogLevel.None))

const main = Effect.gen(function*() {
  console.log(`node ${process.version}, ${os.cpus().length} cpus, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}, code: ${base}`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bot-burst-"))
  try {
    const stores = (process.env["BENCH_STORES"] ?? "memory,sqlite").split(",")
    for (const [label, choice] of [["memory", { _tag: "memory" }], ["sqlite", { _tag: "sqlite", filename: path.join(dir, "burst.sqlite") }]] as const) {
      if (!stores.includes(label)) continue
      yield* scenario(label, choice)
      if (label === "sqlite") fs.rmSync(path.join(dir, "burst.sqlite"), { force: true })
      yield* floor(label, label === "sqlite" ? { _tag: "sqlite", filename: path.join(dir, "floor.sqlite") } : choice)
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

Effect.runPromise(main).then(() => process.exit(0), (error: unknown) => {
  console.error(error)
  process.exit(1)
})
