/**
 * The compiled bot as an operator runs it (`node dist/main.js`), in real processes against the
 * fake Bot API on loopback and a real PostgreSQL: two processes share one database and send
 * each of 200 reminders exactly once, including when one of them is SIGKILLed mid-run; two and
 * three webhook processes behind a round-robin load balancer handle each update once, in its
 * chat's order, whichever process received it; SIGTERM ends a process cleanly with exit code 0.
 */
import * as ReminderStore from "@deixis/core/ReminderStore"
import { SqlStore } from "@deixis/store-sql"
import * as FakeBotApi from "@deixis/telegraf/testing"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { beforeAll } from "vitest"
import { pgUrl as testPgUrl } from "deixis-test-support/pg"

const app = fileURLToPath(new URL("..", import.meta.url))
const root = path.join(app, "..", "..")
const pgUrl = testPgUrl()

// The compiled output of the bot and of the workspace packages it runs on, in dependency order.
// (Asynchronously: a synchronous build would block the test worker for a minute.)
beforeAll(async () => {
  const tsc = path.join(root, "node_modules", ".bin", "tsc")
  for (const dir of ["packages/core", "packages/chathistory", "packages/store-sql", "packages/telegraf", "packages/tools", "apps/telegram"]) {
    await promisify(execFile)(tsc, ["-p", path.join(root, dir, "tsconfig.build.json")])
  }
}, 600_000)

/** Real-time polling until `check` holds, for at most `ms` (then the test fails, naming `what`). */
const waitUntil = <E, R>(what: string, check: Effect.Effect<boolean, E, R>, ms: number, detail: () => string = () => "") =>
  Effect.gen(function*() {
    const end = Date.now() + ms
    while (Date.now() < end) {
      if (yield* check) return
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 20)))
    }
    assert.fail(`never happened within ${ms} ms: ${what}\n${detail()}`)
  })

interface Bot {
  readonly child: ChildProcess
  readonly output: () => string
  readonly exited: Promise<number | null>
}

const startBot = (env: Record<string, string>): Effect.Effect<Bot, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, ["dist/main.js"], {
        cwd: app,
        env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout!.on("data", (c: Buffer) => (output += c.toString()))
      child.stderr!.on("data", (c: Buffer) => (output += c.toString()))
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      return { child, output: () => output, exited }
    }),
    (bot) => Effect.sync(() => void (bot.child.exitCode === null && bot.child.signalCode === null && bot.child.kill("SIGKILL")))
  )

let schemaCounter = 0
const freshSchema = () => `deixis_bot_${Date.now().toString(36)}_${process.pid}_${++schemaCounter}`

/** The schema's stores for the test itself, dropped at the end. */
const pgStores = (schema: string) =>
  SqlStore.layerStores({ schema, sweep_interval: 0 }).pipe(
    Layer.provideMerge(
      Layer.provideMerge(
        Layer.scopedDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.addFinalizer(() => Effect.orDie(sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))))),
        SqlStore.layerPgClient({ url: pgUrl, schema, max_connections: 2 })
      )
    )
  )

const botEnv = (api: FakeBotApi.FakeBotApi, schema: string, token: string) => ({
  BOT_TOKEN: token,
  BOT_API_ROOT: api.apiRoot,
  BOT_WEBHOOK_URL: "https://bot.example.com/hook",
  BOT_WEBHOOK_PORT: "0",
  BOT_WEBHOOK_HOST: "127.0.0.1",
  BOT_OPS_PORT: "0",
  BOT_OPS_HOST: "127.0.0.1",
  // Longer than any send takes here, even on a loaded machine: a claim expires only when its holder died.
  BOT_REMINDER_LEASE: "10 seconds",
  BOT_REMINDER_POLL_INTERVAL: "100 millis",
  BOT_REMINDER_RETRY_DELAY: "1 second",
  DEIXIS_STORE: pgUrl,
  DEIXIS_PG_SCHEMA: schema,
  DEIXIS_PG_MAX_CONNECTIONS: "4",
  DEIXIS_STORE_SWEEP_INTERVAL: "0 millis",
  DEIXIS_SHUTDOWN_TIMEOUT: "2 seconds",
  DEIXIS_LOG_LEVEL: "Info"
})

describe("the compiled bot in real processes", () => {
  it.live("two processes on one PostgreSQL send each of 200 reminders exactly once, one SIGKILLed mid-run", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ username: "deixis_bot" })
      const schema = freshSchema()
      const context = yield* Layer.build(pgStores(schema))
      const store = yield* Effect.provide(ReminderStore.ReminderStore, context)
      const start = Date.now() + 3_000
      // Reminder i ("r-i") is in one of 20 chats, from message i + 1.
      const chatOf = (i: number) => `-100${100 + (i % 20)}`
      const objectOf = (i: number) => `${chatOf(i)}/${i + 1}/reminder`
      yield* Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) =>
        store.add({
          object_id: objectOf(i),
          chat_id: chatOf(i),
          topic_id: null,
          source_message_id: String(i + 1),
          created_by_user_id: null,
          text: `r-${i}`,
          due_at: start + i * 15,
          created_at: Date.now()
        }), { discard: true })

      // Process A's sends hang once it has sent 30: it dies with calls Telegram never answered.
      let holdA = false
      const hang = api.hang("sendMessage", (c) => c.token === "123:A" && holdA)
      const a = yield* startBot(botEnv(api, schema, "123:A"))
      const b = yield* startBot(botEnv(api, schema, "123:B"))
      const byToken = (token: string) => api.delivered().filter((c) => c.token === token)
      yield* waitUntil("process A sends reminders", Effect.sync(() => byToken("123:A").length >= 30), 60_000, () => a.output() + b.output())
      holdA = true
      // Kill A only when none of its claims is between Telegram accepting the message and the
      // store recording it (that window is what "at least once" is about): every reminder is due
      // by then, A's sends hang (their claims expire and process B takes them over), and every
      // reminder A got delivered has left the store (A completed it). On a loaded machine that
      // bookkeeping can lag the delivery by seconds, so it is waited for, not guessed.
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, Math.max(0, start + 200 * 15 + 500 - Date.now()))))
      const completedByA = Effect.forEach(byToken("123:A"), (c) => {
        const i = Number(/r-(\d+)$/.exec(String(c.payload["text"]))![1])
        return Effect.map(store.get(chatOf(i), objectOf(i)), Option.isNone)
      }).pipe(Effect.map((done) => done.every(Boolean)), Effect.orDie)
      yield* waitUntil(
        "A's sends hang and every reminder A delivered is recorded as sent",
        Effect.map(completedByA, (done) => done && hang.held() > 0),
        30_000,
        () => `held ${hang.held()}, delivered by A ${byToken("123:A").length}`
      )
      const deliveredBeforeKill = byToken("123:A").length
      a.child.kill("SIGKILL")
      yield* Effect.promise(() => a.exited)

      yield* waitUntil(
        "all 200 reminders are delivered",
        Effect.sync(() => new Set(api.delivered().map((c) => c.payload["text"])).size >= 200),
        60_000,
        () => b.output()
      )
      // Anything still in flight lands before counting.
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 500)))
      const texts = api.delivered().map((c) => String(c.payload["text"]))
      const counts = new Map<string, number>()
      for (const t of texts) counts.set(t, (counts.get(t) ?? 0) + 1)
      assert.strictEqual(counts.size, 200)
      assert.deepStrictEqual([...counts].filter(([, n]) => n !== 1), [])
      assert.deepStrictEqual([...counts.keys()].sort(), Array.from({ length: 200 }, (_, i) => `⏰ Reminder: r-${i}`).sort())
      assert.strictEqual(byToken("123:A").length, deliveredBeforeKill)
      assert.isAbove(byToken("123:B").length, 0)
      assert.strictEqual((yield* store.stats(Date.now())).pending, 0)

      // SIGTERM: a clean stop, exit code 0.
      b.child.kill("SIGTERM")
      assert.strictEqual(yield* Effect.promise(() => b.exited), 0)
      assert.include(b.output(), "bot started")
      assert.include(b.output(), "bot stopped")
    }).pipe(Effect.scoped), 240_000)

  it.live("the compiled start command serves /healthz and /metrics, logs a start summary without secrets, and exits 0 on SIGTERM", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ username: "deixis_bot" })
      const bot = yield* startBot({
        BOT_TOKEN: "123:SECRET_TOKEN_VALUE",
        BOT_API_ROOT: api.apiRoot,
        BOT_OPS_PORT: "0",
        BOT_OPS_HOST: "127.0.0.1",
        DEIXIS_STORE: "memory",
        DEIXIS_LOG_LEVEL: "Info"
      })
      yield* waitUntil("the bot starts", Effect.sync(() => bot.output().includes("bot started")), 60_000, bot.output)
      const summary = bot.output()
      assert.include(summary, "username=@deixis_bot")
      assert.include(summary, "privacy_mode=\"on")
      assert.include(summary, "transport=\"long polling\"")
      assert.include(summary, "store=memory")
      assert.include(summary, "llm=off")
      assert.notInclude(summary, "SECRET_TOKEN_VALUE")
      const port = Number(/health=":(\d+)\//.exec(summary)![1])
      const health = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status))
      assert.strictEqual(health, 200)
      const metrics = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()))
      assert.include(metrics, "deixis_bot_updates_total")
      assert.include(metrics, `deixis_bot_reminders_pending{state="pending"} 0`)
      assert.include(metrics, "deixis_bot_process_cpu_user_seconds_total")
      api.pushUpdates({
        update_id: 1,
        message: { message_id: 1, from: { id: 5, is_bot: false, first_name: "A" }, chat: { id: 5, type: "private", first_name: "A" }, date: 1, text: "/help", entities: [{ type: "bot_command", offset: 0, length: 5 }] }
      })
      yield* waitUntil("the bot answers", Effect.sync(() => api.delivered().length === 1), 30_000, bot.output)
      bot.child.kill("SIGTERM")
      assert.strictEqual(yield* Effect.promise(() => bot.exited), 0)
      assert.include(bot.output(), "bot stopped")
    }).pipe(Effect.scoped), 120_000)

  it.live("an invalid configuration exits non-zero naming the key", () =>
    Effect.gen(function*() {
      const bot = yield* startBot({ BOT_TOKEN: "1:x", DEIXIS_STORE: "mysql://nope", BOT_OPS_PORT: "0" })
      assert.notStrictEqual(yield* Effect.promise(() => bot.exited), 0)
      assert.include(bot.output(), "DEIXIS_STORE")
    }).pipe(Effect.scoped), 60_000)

  for (const { kill, processes } of [{ processes: 2, kill: false }, { processes: 3, kill: false }, { processes: 2, kill: true }]) {
    it.live(
      `${processes} webhook processes behind a round-robin load balancer handle 5,000 updates in 50 chats once each, in each chat's order${
        kill ? ", one SIGKILLed mid-burst (its chats handed on after the lease)" : ""
      }`,
      () => loadBalanced(processes, kill).pipe(Effect.scoped),
      300_000
    )
  }
})

const webhookSecret = "lb-webhook-secret"

/** A round-robin load balancer on loopback: each request to the next process (502 when it is gone). */
const balancer = (ports: ReadonlyArray<number>) =>
  Effect.acquireRelease(
    Effect.async<{ readonly server: http.Server; readonly port: number }>((resume) => {
      let next = 0
      const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
      const server = http.createServer((req, res) => {
        const port = ports[next++ % ports.length]!
        const upstream = http.request({ host: "127.0.0.1", port, path: req.url, method: req.method, headers: req.headers, agent }, (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers)
          r.pipe(res)
        })
        upstream.on("error", () => void (res.headersSent ? res.destroy() : res.writeHead(502).end()))
        req.pipe(upstream)
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, port: (server.address() as { port: number }).port })))
    }),
    ({ server }) => Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )

const loadBalanced = (processes: number, kill: boolean) =>
  Effect.gen(function*() {
    const api = yield* FakeBotApi.make({ username: "deixis_bot" })
    const schema = freshSchema()
    const context = yield* Layer.build(pgStores(schema))
    const sql = yield* Effect.provide(SqlClient.SqlClient, context)
    const bots = yield* Effect.forEach(Array.from({ length: processes }, (_, p) => p), (p) =>
      startBot({
        ...botEnv(api, schema, `123:P${p}`),
        BOT_WEBHOOK_SECRET: webhookSecret,
        // A killed process's chats go on after this (a live one extends its claims long before).
        BOT_UPDATE_LEASE: "10 seconds"
      }))
    const ports: Array<number> = []
    for (const bot of bots) {
      yield* waitUntil("the webhook process starts", Effect.sync(() => /on port (\d+)/.test(bot.output())), 60_000, bot.output)
      ports.push(Number(/on port (\d+)/.exec(bot.output())![1]))
    }
    const lb = yield* balancer(ports)

    // Telegram's side: each chat's updates one at a time (the next after the previous one's
    // 200, anything else retried), the chats in parallel. One in five is a command.
    const chats = 50
    const perChat = 100
    const chatId = (c: number) => -1002000000000 - c
    const idOf = (c: number, i: number) => 1 + i * chats + c
    const isCommand = (i: number) => i % 5 === 0
    const update = (c: number, i: number) => {
      const id = idOf(c, i)
      const text = isCommand(i) ? "/help" : `message ${i} of chat ${c}`
      return {
        update_id: id,
        message: {
          message_id: id,
          from: { id: 7000 + c, is_bot: false, first_name: "U" },
          chat: { id: chatId(c), type: "supergroup", title: `LB ${c}` },
          date: Math.floor(Date.now() / 1000),
          text,
          ...(isCommand(i) ? { entities: [{ type: "bot_command", offset: 0, length: 5 }] } : {})
        }
      }
    }
    let acknowledged = 0
    const deliver = (c: number) =>
      Effect.promise(async () => {
        for (let i = 0; i < perChat; i++) {
          const body = JSON.stringify(update(c, i))
          for (;;) {
            const status = await fetch(`http://127.0.0.1:${lb.port}/hook`, {
              method: "POST",
              headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": webhookSecret },
              body
            }).then((r) => r.text().then(() => r.status), () => 0)
            if (status === 200) break
            await new Promise((r) => setTimeout(r, 20))
          }
          acknowledged++
        }
      })
    const killer = kill
      ? Effect.gen(function*() {
        yield* waitUntil("a third of the burst is acknowledged", Effect.sync(() => acknowledged >= 1_500), 120_000)
        bots[0]!.child.kill("SIGKILL")
      })
      : Effect.void
    yield* Effect.all([Effect.forEach(Array.from({ length: chats }, (_, c) => c), deliver, { concurrency: "unbounded" }), killer], {
      concurrency: "unbounded"
    })

    // Every update is handled (marked done) once all are in.
    const total = chats * perChat
    const pending = sql<{ readonly n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(schema)}.deixis_updates WHERE payload IS NOT NULL`
    const all = sql<{ readonly n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(schema)}.deixis_updates`
    yield* waitUntil(
      "every update is handled",
      Effect.map(Effect.all([pending, all]), ([p, a]) => Number(p[0]!.n) === 0 && Number(a[0]!.n) === total).pipe(Effect.orDie),
      120_000,
      () => bots.map((b) => b.output()).join("\n")
    )
    yield* Effect.promise(() => new Promise((r) => setTimeout(r, 300)))

    // Each command answered once (a killed process's answer may be repeated by its successor,
    // never one of a live process), and each chat's answers in its order.
    const killed = kill ? "123:P0" : undefined
    const replies = api.delivered("sendMessage").map((c) => ({
      token: c.token,
      chat: Number(c.payload["chat_id"]),
      to: Number((c.payload["reply_parameters"] as { readonly message_id: number }).message_id)
    }))
    const live = replies.filter((r) => r.token !== killed)
    const commands = Array.from({ length: chats }, (_, c) => Array.from({ length: perChat }, (_, i) => i).filter(isCommand).map((i) => idOf(c, i))).flat()
    const answered = new Set(replies.map((r) => r.to))
    assert.deepStrictEqual(commands.filter((id) => !answered.has(id)), [], "every command is answered")
    const liveCounts = new Map<number, number>()
    for (const r of live) liveCounts.set(r.to, (liveCounts.get(r.to) ?? 0) + 1)
    const twice = [...liveCounts].filter(([, n]) => n > 1).map(([id]) => id)
    assert.deepStrictEqual(
      twice.slice(0, 5).map((id) => live.filter((r) => r.to === id).map((r) => r.token).join(" ")),
      [],
      `no command is answered twice by a live process (${twice.length}); ${
        bots.map((b) => (b.output().match(/left unfinished/g) ?? []).length).join(", ")
      } take-overs; ${bots.map((b) => b.output().split("\n").filter((l) => /WARN|ERROR/.test(l)).slice(0, 3).join("\n")).join("\n")}`
    )
    if (!kill) assert.strictEqual(replies.length, commands.length)
    const outOfOrder = Array.from({ length: chats }, (_, c) => c).filter((c) => {
      const order = live.filter((r) => r.chat === chatId(c)).map((r) => r.to)
      return order.some((id, k) => k > 0 && id < order[k - 1]!)
    })
    assert.deepStrictEqual(outOfOrder, [], "each chat's answers come in its order")
    // More than one process did the work.
    assert.isAbove(new Set(replies.map((r) => r.token)).size, 1)
  })
