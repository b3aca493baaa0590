/**
 * `pnpm bench`: the bot as it ships — `node dist/main.js`, default configuration, logging at
 * its default level (Info) to a drained pipe — in a process of its own, against the fake Bot
 * API (`@deixis/telegraf/testing`) on loopback in this process, which answers at once. Only
 * the token, the API root, the store keys, a temporary data directory and the ops port differ
 * from an operator's start.
 *
 * The burst: 5,000 plain messages (each with a link) in 50 chats and 200 `/context` in 10 other
 * chats, queued at once. Measured: updates handled per second (until the bot's own
 * `deixis_bot_updates_total`, read alone every 10 ms, counts them all), the bot process's CPU time per update and bytes
 * written (from /proc, over the burst), and each `/context` answer's latency from its arrival
 * at the bot (getUpdates handing it out; for the webhook, the POST carrying it) to its
 * sendMessage reaching the fake. BENCH_RUNS bursts (default 6) into one bot process after a
 * warm-up of 520 updates: the cold figure is the first burst's, the warm one the fastest of the
 * later half (V8 optimizes the bot's code through the first few: a quarter of the process's CPU
 * in the first bursts was its optimizing compiler, see BENCHMARKS.md), per
 * store: memory, SQLite (the default file in the data directory), PostgreSQL (a fresh schema,
 * dropped after); long polling, then the webhook (the updates POSTed to the bot's webhook
 * route over 40 connections, as Telegram does) on memory and SQLite.
 *
 * Then the in-process floor (`burst.ts`, `pnpm bench:burst`) beside it.
 *
 * BENCH_STORES (default `memory,sqlite,pg`), BENCH_TRANSPORTS (default `polling,webhook`),
 * BENCH_RUNS, BENCH_BASE (`apps/telegram` of another checkout, built: its `dist/main.js` runs each
 * scenario too, started beside this one's, their bursts in turn — a before/after in one run), BENCH_FLOOR=0 skips the floor, BENCH_NODE_ARGS (node options for the bot's process,
 * e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), BENCH_BOT_ENV (`KEY=value …` added to the bot's
 * environment, for experiments: the figures are the default configuration's), BENCH_VARIANTS
 * (`KEY=value …|KEY=value …`: this checkout's bot once per variant, alternated), BENCH_SHOW_LOG=1
 * (the end of each bot's log), BENCH_TIMELINE=1 (each burst's getUpdates pages as served and its
 * answers per 50 ms), DEIXIS_TEST_PG_URL.
 */
import * as FakeBotApi from "@deixis/telegraf/testing"
import { type App, startApp, type Usage, usageSince } from "deixis-test-support/process"
import * as Effect from "effect/Effect"
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import { Agent, request } from "node:http"
import { createServer } from "node:net"
import * as os from "node:os"
import * as path from "node:path"

const here = import.meta.dirname
const appDir = path.join(here, "..")
const stores = (process.env["BENCH_STORES"] ?? "memory,sqlite,pg").split(",")
const transports = (process.env["BENCH_TRANSPORTS"] ?? "polling,webhook").split(",")
const runs = Math.max(1, Number(process.env["BENCH_RUNS"] ?? 6))
const pgUrl = process.env["DEIXIS_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const runId = Date.now().toString(36)
const webhookSecret = "bench-webhook-secret"
// For experiments only (the figures are the default configuration's): BENCH_BOT_ENV="KEY=value KEY=value".
const extraEnv = Object.fromEntries((process.env["BENCH_BOT_ENV"] ?? "").split(" ").filter((kv) => kv.includes("=")).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]))

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN

interface Update {
  readonly update_id: number
  readonly message: { readonly message_id: number; readonly chat: { readonly id: number }; readonly text: string }
}

let nextId = 1
const message = (chat: number, text: string, command: boolean): Update => {
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
    } as Update["message"]
  }
}
// The same burst as `burst.ts`: 5,000 plain messages in 50 chats, a /context in one of 10 other
// chats every 26th update (200 in all).
const plain = (i: number) => message(-1003000000000 - (i % 50), `see https://example.com/page/${nextId} for the details`, false)
const context = (i: number) => message(-1004000000000 - (i % 10), "/context", true)
const burst = (n = 5_200) => Array.from({ length: n }, (_, i) => (i % 26 === 25 ? context(i) : plain(i)))

/** The sum of a metric's samples (every label) on the bot's ops server: a scrape of that metric alone (`?name[]=`). */
const metricSum = async (ops: string, name: string, exposed = name): Promise<number> => {
  const text = await fetch(`${ops}/metrics?name[]=${exposed}`).then((r) => r.text(), () => "")
  let sum = 0
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?(?:e-?\\d+)?)$`, "gm"))) sum += Number(m[1])
  return sum
}
/** Updates the bot has counted (`deixis_bot_updates_total`, every outcome). */
const updatesCounted = (ops: string) => metricSum(ops, "deixis_bot_updates_total")
/** The bot's time in GC pauses so far, in ms (prom-client's default `nodejs_gc_duration_seconds`). */
const gcMs = async (ops: string) => (await metricSum(ops, "deixis_bot_nodejs_gc_duration_seconds_sum", "deixis_bot_nodejs_gc_duration_seconds")) * 1000

/**
 * BENCH_TIMELINE=1: where a burst's time went, from the fake's side — each getUpdates page as it
 * was served (ms after the push, its size) and the /context answers reaching the fake per 50 ms.
 */
const timeline = (api: FakeBotApi.FakeBotApi, updates: ReadonlyArray<Update>, t0: number, repliesBefore: number, seconds: number) => {
  const pages = new Map<number, number>()
  for (const u of updates) {
    const at = api.servedAt(u.update_id)
    if (at !== undefined) pages.set(Math.round(at - t0), (pages.get(Math.round(at - t0)) ?? 0) + 1)
  }
  const sends = api.callsOf("sendMessage").slice(repliesBefore).map((c) => Math.floor((c.at - t0) / 50) * 50)
  const per = new Map<number, number>()
  for (const s of sends) per.set(s, (per.get(s) ?? 0) + 1)
  console.log(`timeline: ${Math.round(seconds * 1000)} ms; pages served at (ms: updates) ${[...pages].map(([t, n]) => `${t}:${n}`).join(" ")}`)
  console.log(`timeline: answers reaching the fake per 50 ms ${[...per].map(([t, n]) => `${t}:${n}`).join(" ")}`)
}

const storeEnv = (store: string, schemas: Array<string>): Record<string, string> => {
  switch (store) {
    case "memory":
      return { DEIXIS_STORE: "memory" }
    case "sqlite":
      return {} // The default: a SQLite file in DEIXIS_DATA_DIR.
    case "pg": {
      const schema = `deixis_bot_bench_${runId}_${schemas.length}`
      schemas.push(schema)
      return { DEIXIS_STORE: pgUrl, DEIXIS_PG_SCHEMA: schema }
    }
    default:
      throw new Error(`unknown store ${store} (memory, sqlite, pg)`)
  }
}

/** Posts updates to the webhook over `connections` keep-alive connections, in order; a refused one goes again. */
const webhookSender = (url: string, connections = 40) => {
  const target = new URL(url)
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const postedAt = new Map<number, number>()
  const post = (update: Update) =>
    new Promise<number>((resolve) => {
      const body = JSON.stringify(update)
      const req = request({
        agent, host: target.hostname, port: target.port, path: target.pathname, method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), "x-telegram-bot-api-secret-token": webhookSecret }
      }, (res) => {
        res.resume()
        res.on("end", () => resolve(res.statusCode ?? 0))
      })
      req.on("error", () => resolve(0))
      req.end(body)
    })
  const send = async (updates: ReadonlyArray<Update>) => {
    const queue = [...updates]
    let refused = 0
    await Promise.all(Array.from({ length: connections }, async () => {
      for (let u = queue.shift(); u !== undefined; u = queue.shift()) {
        if (!postedAt.has(u.update_id)) postedAt.set(u.update_id, performance.now())
        const status = await post(u)
        if (status !== 200) {
          refused++
          await sleep(50)
          queue.push(u)
        }
      }
    }))
    return refused
  }
  return { send, postedAt, close: () => agent.destroy() }
}

interface Burst {
  readonly rate: number
  readonly used: Usage
  /** This process's CPU time over the burst, in ms: the fake Bot API's (and the bench's own). */
  readonly fakeMs: number
  /** The bot's GC pauses over the burst, in ms. */
  readonly gcMs: number
  readonly updates: number
  readonly p50: number
  readonly p99: number
  readonly refused: number
}

const baseDir = process.env["BENCH_BASE"]
/** The bots compared: this checkout's, and BENCH_BASE's when set (each row says which). */
// BENCH_VARIANTS="KEY=value …|KEY=value …": this checkout's bot once per variant (its env added), alternated too.
const parseEnv = (text: string): Record<string, string> =>
  Object.fromEntries(text.split(" ").filter((kv) => kv.includes("=")).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]))
const variants = (process.env["BENCH_VARIANTS"] ?? "").split("|").map((v) => v.trim()).filter((v) => v !== "")
const mineBots = variants.length === 0
  ? [{ name: baseDir === undefined ? "" : "this", dir: appDir, env: {} }]
  : variants.map((v) => ({ name: v, dir: appDir, env: parseEnv(v) }))
const bots: ReadonlyArray<{ readonly name: string; readonly dir: string; readonly env: Record<string, string> }> = baseDir === undefined
  ? mineBots
  : [{ name: "base", dir: path.resolve(baseDir), env: {} }, ...mineBots]

/**
 * One bot started for the scope, warmed up with 520 updates: each run of its `burst` queues a
 * burst and measures it. The bot process lives on between bursts, so each finds the code V8 has
 * optimized so far: the first is the cold one, the later ones approach a bot that has run a while.
 */
const startBot = (store: string, transport: "polling" | "webhook", schemas: Array<string>, botDir: string, botEnv: Record<string, string>) =>
  Effect.gen(function*() {
    const api = yield* FakeBotApi.make({ username: "bench_bot", longPollMillis: 1000, date: Math.floor(Date.now() / 1000) })
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bot-bench-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    const opsPort = yield* Effect.promise(freePort)
    const hookPort = yield* Effect.promise(freePort)
    const ops = `http://127.0.0.1:${opsPort}`
    const app: App = yield* Effect.acquireRelease(
      Effect.promise(() =>
        startApp(path.join(botDir, "dist", "main.js"), {
          cwd: dir,
          env: {
            BOT_TOKEN: "123:BENCH",
            BOT_API_ROOT: api.apiRoot,
            BOT_OPS_PORT: String(opsPort),
            BOT_OPS_HOST: "127.0.0.1",
            DEIXIS_DATA_DIR: dir,
            ...(transport === "webhook"
              ? {
                BOT_WEBHOOK_URL: "https://bot.example.com/hook",
                BOT_WEBHOOK_PORT: String(hookPort),
                BOT_WEBHOOK_HOST: "127.0.0.1",
                BOT_WEBHOOK_SECRET: webhookSecret
              }
              : {}),
            ...storeEnv(store, schemas),
            ...extraEnv,
            ...botEnv
          },
          ready: `${ops}/readyz`,
          // For profiling the shipped process: BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof".
          nodeArgs: (process.env["BENCH_NODE_ARGS"] ?? "").split(" ").filter((a) => a !== "")
        })
      ),
      (app) =>
        Effect.promise(async () => {
          await app.stop()
          if (process.env["BENCH_SHOW_LOG"] === "1") console.log(app.output().slice(-4000))
        })
    )
    const hook = transport === "webhook" ? webhookSender(`http://127.0.0.1:${hookPort}/hook`) : undefined
    if (hook !== undefined) yield* Effect.addFinalizer(() => Effect.sync(hook.close))
    let counted = 0
    const push = (updates: ReadonlyArray<Update>) => (hook === undefined ? Promise.resolve(api.pushUpdates(...updates)).then(() => 0) : hook.send(updates))
    // Until the bot has counted `total` updates, asked every 10 ms. A full scrape costs the bot
    // 1–2 ms of CPU (prom-client's default metrics read /proc); the counter alone (`?name[]=`)
    // reads nothing of the process. The bench used to ask less often, when the rate so far said
    // the rest would be done — and after an answer phase, with recording held back, that rate
    // was low and the wait up to a second past the burst's end.
    const until = async (total: number) => {
      while ((await updatesCounted(ops)) < total) await sleep(10)
    }

    // Warm-up.
    const warm = burst(520)
    yield* Effect.promise(() => push(warm))
    counted += warm.length
    yield* Effect.promise(() => until(counted))

    return Effect.gen(function*() {
      const updates = burst()
      const commands = new Set(updates.filter((u) => u.message.text === "/context").map((u) => u.message.message_id))
      const repliesBefore = api.callsOf("sendMessage").length
      const gc0 = yield* Effect.promise(() => gcMs(ops))
      const before = app.usage()
      const fake0 = process.cpuUsage()
      const t0 = performance.now()
      const refused = yield* Effect.promise(() => push(updates))
      counted += updates.length
      yield* Effect.promise(async () => {
        while (api.callsOf("sendMessage").length - repliesBefore < commands.size) await sleep(5)
        await until(counted)
      })
      const seconds = (performance.now() - t0) / 1000
      const used = usageSince(before, app.usage())
      const fake = process.cpuUsage(fake0)
      const gc = (yield* Effect.promise(() => gcMs(ops))) - gc0
      const latencies = api.callsOf("sendMessage").slice(repliesBefore).flatMap((c) => {
        const replyTo = Number((c.payload["reply_parameters"] as { message_id?: number } | undefined)?.message_id)
        if (!commands.has(replyTo)) return []
        const arrived = hook === undefined ? api.servedAt(replyTo) : hook.postedAt.get(replyTo)
        return arrived === undefined ? [] : [c.at - arrived]
      }).sort((a, b) => a - b)
      if (process.env["BENCH_TIMELINE"] === "1") timeline(api, updates, t0, repliesBefore, seconds)
      const result: Burst = { rate: updates.length / seconds, used, fakeMs: (fake.user + fake.system) / 1000, gcMs: gc, updates: updates.length, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), refused }
      return result
    })
  })

/**
 * The warm bursts of a bot's runs: the later half (from burst ⌊runs/2⌋ + 1 on, the last one at
 * least) — V8 is still optimizing the bot's code through the first ones.
 */
const warmOf = (bursts: ReadonlyArray<Burst>): ReadonlyArray<Burst> => bursts.slice(Math.min(Math.floor(bursts.length / 2), bursts.length - 1))
/** The fastest of some bursts (its CPU and latency with it). */
const fastest = (bursts: ReadonlyArray<Burst>): Burst => [...bursts].sort((a, b) => b.rate - a.rate)[0]!
const cpuPerUpdate = (b: Burst) => (b.used.userMs + b.used.systemMs) / b.updates

const n0 = (x: number) => Math.round(x).toLocaleString("en-US")

const main = Effect.gen(function*() {
  const schemas: Array<string> = []
  const rows: Array<{ store: string; transport: string; runs: Array<Burst> }> = []
  const t0 = performance.now()
  try {
    for (const transport of transports) {
      for (const store of stores) {
        // The webhook on memory and SQLite (PostgreSQL's polling figure says what it adds).
        if (transport === "webhook" && store === "pg") continue
        // Every bot compared (before and after, variants) started together, their bursts taken
        // in turn, so each sees the same load on the machine and each warms up as it would alone.
        const mine = bots.map((bot) => ({ store: bot.name === "" ? store : `${store} (${bot.name})`, transport, runs: [] as Array<Burst> }))
        rows.push(...mine)
        yield* Effect.scoped(Effect.gen(function*() {
          const started = yield* Effect.forEach(bots, (bot) => startBot(store, transport as "polling" | "webhook", schemas, bot.dir, bot.env))
          for (let run = 0; run < runs; run++) {
            for (const [i, burst] of started.entries()) mine[i]!.runs.push(yield* burst)
          }
        }))
      }
    }
  } finally {
    for (const schema of schemas) {
      try {
        execFileSync("psql", [pgUrl, "-q", "-c", `DROP SCHEMA IF EXISTS "${schema}" CASCADE`], { stdio: "ignore" })
      } catch {
        console.error(`could not drop schema ${schema}; drop it by hand`)
      }
    }
  }
  const load = os.loadavg().map((l) => l.toFixed(2)).join(" ")
  console.log(
    `\napps/telegram, the shipped process (node dist/main.js, default configuration, logging at Info to a drained pipe) against the fake Bot API on loopback — ` +
      `Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? "?"}, ${new Date().toISOString().slice(0, 16)}Z, load average at the end ${load}\n`
  )
  const warmFrom = Math.min(Math.floor(runs / 2), runs - 1) + 1
  const warmBursts = warmFrom === runs ? `burst ${runs}` : `bursts ${warmFrom}–${runs}`
  console.log(
    `5,000 messages in 50 chats + 200 /context in 10 other chats, queued at once, ${runs} times into one bot process after 520 to warm up. ` +
      `Warm: the fastest of ${warmBursts} (its CPU and latency beside it); cold: the first burst, while V8 is still optimizing the bot's code\n`
  )
  console.log("| store | transport | updates/s, warm | bot process CPU ms/update (user+sys) | of it in GC pauses | fake Bot API's CPU ms/update | disk KB/update | /context p50 / p99 ms from arrival | cold: the first burst | every burst in order (updates/s @ CPU ms/update (/context p99 ms)) |")
  console.log("|---|---|---:|---:|---:|---:|---:|---:|---|---|")
  const summary = (r: Burst) => `${n0(r.rate)} @ ${cpuPerUpdate(r).toFixed(3)} (p99 ${r.p99.toFixed(0)})`
  for (const row of rows) {
    const best = fastest(warmOf(row.runs))
    const per = (x: number) => (x / best.updates).toFixed(3)
    console.log(
      `| ${row.store} | ${row.transport} | ${n0(best.rate)} | ${per(best.used.userMs + best.used.systemMs)} (${per(best.used.userMs)}+${per(best.used.systemMs)}) | ${per(best.gcMs)} | ${per(best.fakeMs)} | ` +
        `${(best.used.writeBytes / best.updates / 1024).toFixed(1)} | ${best.p50.toFixed(0)} / ${best.p99.toFixed(0)} | ${summary(row.runs[0]!)} | ${row.runs.map(summary).join(", ")} |` +
        (best.refused > 0 ? ` ${best.refused} POSTs refused (503) and sent again` : "")
    )
  }
  console.log("\ntargets (issue #34), warm (cold in brackets):")
  const polling = (s: string) => rows.find((r) => (r.store === s || r.store === `${s} (this)`) && r.transport === "polling")
  const memory = polling("memory")
  const sqlite = polling("sqlite")
  if (sqlite !== undefined) {
    const warm = fastest(warmOf(sqlite.runs))
    const cold = sqlite.runs[0]!
    console.log(
      `- SQLite ${n0(warm.rate)} updates/s (${n0(cold.rate)}) — target ≥ 3,000; ${cpuPerUpdate(warm).toFixed(2)} ms CPU/update (${cpuPerUpdate(cold).toFixed(2)}) — target ≤ 0.3`
    )
  }
  if (memory !== undefined) console.log(`- memory ${n0(fastest(warmOf(memory.runs)).rate)} updates/s (${n0(memory.runs[0]!.rate)}) — target ≥ 6,000`)
  for (const row of rows) {
    console.log(`- ${row.store} ${row.transport}: /context p99 ${fastest(warmOf(row.runs)).p99.toFixed(0)} ms (${row.runs[0]!.p99.toFixed(0)}) from arrival — target ≤ 100 ms`)
  }
  console.log("\nThe machine is shared: absolute rates move with the other load on it; compare ratios within one run. The fake Bot API runs in the bench's process, not the bot's.")
  console.log(`shipped runs took ${((performance.now() - t0) / 1000).toFixed(0)} s`)
})

Effect.runPromise(main).then(
  async () => {
    if (process.env["BENCH_FLOOR"] !== "0") {
      // The in-process floor, printed after (its own process).
      console.log("\nin-process floor (`pnpm bench:burst`: the bot composed in the bench's own process, logging off, the fake Bot API beside it; CPU is the whole process's):")
      await new Promise<void>((resolve) => {
        const child = spawn(process.execPath, [path.join(appDir, ".bench", "bench", "burst.js")], {
          stdio: ["ignore", "inherit", "inherit"],
          // This checkout's floor (burst.ts would run BENCH_BASE's code).
          env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "BENCH_BASE")), BENCH_STORES: stores.filter((s) => s !== "pg").join(",") }
        })
        child.once("exit", () => resolve())
      })
    }
    process.exit(0)
  },
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
