/**
 * The compiled bot as an operator runs it (`node dist/main.js`), in real processes against the
 * fake Bot API on loopback and a real PostgreSQL: two processes share one database and send
 * each of 200 reminders exactly once, including when one of them is SIGKILLed mid-run; SIGTERM
 * ends a process cleanly with exit code 0.
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
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { beforeAll } from "vitest"

const app = fileURLToPath(new URL("..", import.meta.url))
const root = path.join(app, "..", "..")
const pgUrl = process.env["DEIXIS_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

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
})
