/**
 * A database outage under a burst of updates: the bot (a process, from its sources) runs on a
 * PostgreSQL this test starts, stops for 10 s in the middle of the burst, and starts again —
 * never the shared server. Telegram's side is the fake Bot API on loopback, which drops the
 * updates below getUpdates' offset as Telegram does, and, for the webhook, a sender that
 * delivers each chat's updates in order and repeats any not answered 200, as Telegram does. An
 * update the bot confirmed without storing it would be lost: its command never answered.
 */
import { SqlStore } from "@deixis/store-sql"
import * as FakeBotApi from "@deixis/telegraf/testing"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { startEmbeddedPg, type EmbeddedPg } from "deixis-test-support/pg"
import { type Running, start } from "deixis-test-support/process"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { join } from "node:path"

const app = join(import.meta.dirname, "..")

/** The bot from its sources, as `pnpm dev` runs it, on `pg`; killed at the end of the scope. */
const bot = (api: FakeBotApi.FakeBotApi, pg: EmbeddedPg, env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      start(process.execPath, ["--conditions=@deixis/source", "--import", "tsx", "src/main.ts"], {
        cwd: app,
        env: {
          BOT_TOKEN: "123:OUTAGE",
          BOT_API_ROOT: api.apiRoot,
          BOT_OPS_PORT: "0",
          BOT_OPS_HOST: "127.0.0.1",
          DEIXIS_STORE: pg.url,
          DEIXIS_PG_MAX_CONNECTIONS: "4",
          DEIXIS_STORE_SWEEP_INTERVAL: "0 millis",
          DEIXIS_LOG_LEVEL: "Info",
          ...env
        }
      })
    ),
    (r) => Effect.sync(r.kill)
  )

const embeddedPg = Effect.acquireRelease(Effect.promise(() => startEmbeddedPg()), (pg) => Effect.promise(() => pg.destroy()))

const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

/** Real-time polling until `check` holds, for at most `ms` (then the test fails, naming `what`). */
const waitUntil = (what: string, check: () => boolean, ms: number, detail: () => string = () => "") =>
  Effect.gen(function*() {
    const end = Date.now() + ms
    while (Date.now() < end) {
      if (check()) return
      yield* sleep(50)
    }
    assert.fail(`never happened within ${ms} ms: ${what}\n${detail().slice(-3_000)}`)
  })

const chats = 20
/** The burst: 5,000 updates at 250 a second (2 s before the stop, 10 s of outage, 8 s after). */
const total = 5_000
const perSecond = 250
const chatId = (c: number) => -1003000000000 - c
/** Update `id` (1-based) is in chat `id % chats`; one in five is a command (/help), answered by a message. */
const isCommand = (id: number) => id % 5 === 0
const update = (id: number) => {
  const c = id % chats
  return {
    update_id: id,
    message: {
      message_id: id,
      from: { id: 9000 + c, is_bot: false, first_name: "U" },
      chat: { id: chatId(c), type: "supergroup", title: `Outage ${c}` },
      date: Math.floor(Date.now() / 1000),
      text: isCommand(id) ? "/help" : `message ${id}`,
      ...(isCommand(id) ? { entities: [{ type: "bot_command", offset: 0, length: 5 }] } : {})
    }
  }
}

/** The commands of updates 1..total answered: how many times each, by the message it replies to. */
const answers = (api: FakeBotApi.FakeBotApi) => {
  const counts = new Map<number, number>()
  for (const c of api.delivered("sendMessage")) {
    const to = (c.payload["reply_parameters"] as { readonly message_id?: number } | undefined)?.message_id
    if (typeof to === "number") counts.set(to, (counts.get(to) ?? 0) + 1)
  }
  return counts
}

/**
 * What the database holds once the bot caught up: updates recorded in the inbox (and how many of
 * them not done), user messages recorded (each once: the key is the message).
 */
const stored = (pg: EmbeddedPg) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.all({
      updates: sql<{ n: string }>`SELECT count(*) AS n FROM deixis_updates`,
      pending: sql<{ n: string }>`SELECT count(*) AS n FROM deixis_updates WHERE payload IS NOT NULL`,
      messages: sql<{ n: string }>`SELECT count(*) AS n FROM deixis_messages WHERE from_bot = 0`
    })).pipe(
      Effect.map((r) => ({ updates: Number(r.updates[0]!.n), pending: Number(r.pending[0]!.n), messages: Number(r.messages[0]!.n) })),
      Effect.provide(SqlStore.layerPgClient({ url: pg.url, max_connections: 1 })),
      Effect.orDie
    )

/**
 * The checks both transports share, once the burst is in and the database back (`restartedAt`,
 * `performance.now()`, when updates up to `sentBefore` had been sent). Reports how long after
 * the restart the first answer went out and the commands sent before it were all answered.
 */
const settled = (api: FakeBotApi.FakeBotApi, pg: EmbeddedPg, running: Running, restartedAt: number, sentBefore: number) =>
  Effect.gen(function*() {
    const commands = Array.from({ length: total }, (_, i) => i + 1).filter(isCommand)
    yield* waitUntil("every command is answered", () => commands.every((id) => answers(api).has(id)), 60_000, running.output)
    const sends = api.delivered("sendMessage").map((c) => ({ at: c.at, to: (c.payload["reply_parameters"] as { readonly message_id?: number } | undefined)?.message_id ?? 0 }))
    const firstAfter = Math.min(...sends.filter((s) => s.at >= restartedAt).map((s) => s.at)) - restartedAt
    const backlog = Math.max(...sends.filter((s) => s.to <= sentBefore).map((s) => s.at)) - restartedAt
    if (process.env["T_TIMELINE"]) {
      const per = new Map<number, number>()
      for (const s of sends) if (s.at >= restartedAt) per.set(Math.floor((s.at - restartedAt) / 1000), (per.get(Math.floor((s.at - restartedAt) / 1000)) ?? 0) + 1)
      console.log("answers per second after the restart:", [...per].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}:${v}`).join(" "))
    }
    // A moment for an answer sent twice to show.
    yield* sleep(500)
    const counts = answers(api)
    assert.deepStrictEqual([...counts].filter(([, n]) => n > 1), [], "no answer sent twice")
    assert.deepStrictEqual([...counts.keys()].filter((id) => !isCommand(id)), [])
    // Every update acknowledged (by the offset or a 200) is stored, handled and its message kept:
    // none lost, none left pending. Settling trails the last answer by a moment.
    let db = yield* stored(pg)
    for (let i = 0; i < 100 && db.pending > 0; i++) {
      yield* sleep(100)
      db = yield* stored(pg)
    }
    assert.deepStrictEqual(db, { updates: total, pending: 0, messages: total })
    const lines = running.output().split("\n")
    const outage = lines.filter((l) => l.includes("store outage"))
    const recovery = lines.filter((l) => l.includes("store recovered"))
    console.log([...outage, ...recovery].join("\n"))
    assert.strictEqual(outage.length, 1, "the outage is logged once")
    assert.strictEqual(recovery.length, 1, "the recovery is logged once")
    // Nothing logged per failed request at Warning or above besides those (the store's two lines).
    const perRequest = lines.filter((l) => /level=(WARN|ERROR|FATAL)/.test(l) && !l.includes("store outage"))
    assert.deepStrictEqual(perRequest.slice(0, 5), [])
    return `first answer ${firstAfter.toFixed(0)} ms after the database was back, every command sent before then answered ${backlog.toFixed(0)} ms after it`
  })

describe("PostgreSQL outage under the bot", () => {
  it.live("long polling: stopped 10 s mid-burst, the bot confirms nothing it could not store, catches up after, answers each command once, logs the outage and the recovery once each", () =>
    Effect.gen(function*() {
      const pg = yield* embeddedPg
      const api = yield* FakeBotApi.make({ username: "deixis_bot" })
      const running = yield* bot(api, pg)
      yield* Effect.promise(() => running.waitFor(/bot started/, 60_000))
      let pushed = 0
      // Paced by the clock, not by sleeps (a loaded machine stretches those): every update due by now.
      const began = performance.now()
      const pusher = Effect.gen(function*() {
        while (pushed < total) {
          const due = Math.min(total, Math.floor(((performance.now() - began) * perSecond) / 1000))
          while (pushed < due) api.pushUpdates(update(++pushed))
          yield* sleep(20)
        }
      })
      const fiber = yield* Effect.fork(pusher)
      yield* sleep(2_000)
      yield* Effect.promise(() => pg.stop())
      const handledBefore = answers(api).size
      yield* sleep(10_000)
      const answeredDuring = answers(api).size
      yield* Effect.promise(() => pg.start())
      const restartedAt = performance.now()
      const sentBefore = pushed
      yield* Fiber.join(fiber)
      const recovery = yield* settled(api, pg, running, restartedAt, sentBefore)
      console.log(`polling: ${total} updates, ${handledBefore} commands answered before the stop, ${answeredDuring - handledBefore} during it; ${recovery}`)
    }).pipe(Effect.scoped), 150_000)

  it.live("webhook: stopped 10 s mid-burst, updates it could not store are not answered 200 (Telegram repeats them), it catches up after, answers each command once, logs the outage and the recovery once each", () =>
    Effect.gen(function*() {
      const pg = yield* embeddedPg
      const api = yield* FakeBotApi.make({ username: "deixis_bot" })
      const secret = "outage-webhook-secret"
      const running = yield* bot(api, pg, {
        BOT_WEBHOOK_URL: "https://bot.example.com/hook",
        BOT_WEBHOOK_PORT: "0",
        BOT_WEBHOOK_HOST: "127.0.0.1",
        BOT_WEBHOOK_SECRET: secret
      })
      yield* Effect.promise(() => running.waitFor(/on port (\d+)/, 60_000))
      const port = Number(/on port (\d+)/.exec(running.output())![1])
      const statuses = new Map<number, number>()
      let stopped = false
      const refusedDuring: Array<number> = []
      // The update each chat is at.
      const sent = Array.from({ length: chats }, () => 0)
      let ackedDuring = 0
      // Telegram's side: each chat's updates in order, the next once the previous one was
      // answered 200; anything else is repeated after a pause.
      const began = performance.now()
      const deliver = (c: number) =>
        Effect.promise(async () => {
          for (let id = c === 0 ? chats : c; id <= total; id += chats) {
            // Paced by the clock (each chat its share of the rate): a chat behind — after the
            // outage — sends its backlog without pausing, as Telegram does.
            const due = began + ((id - 1) * 1000) / perSecond
            const wait = due - performance.now()
            if (wait > 0) await new Promise((r) => setTimeout(r, wait))
            sent[c] = id
            for (;;) {
              const status = await fetch(`http://127.0.0.1:${port}/hook`, {
                method: "POST",
                headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
                body: JSON.stringify(update(id)),
                signal: AbortSignal.timeout(20_000)
              }).then((r) => r.text().then(() => r.status), () => 0)
              statuses.set(status, (statuses.get(status) ?? 0) + 1)
              if (status === 200) {
                if (stopped) ackedDuring++
                break
              }
              if (stopped) refusedDuring.push(status)
              await new Promise((r) => setTimeout(r, 200))
            }
          }
        })
      const burst = yield* Effect.fork(Effect.forEach(Array.from({ length: chats }, (_, c) => c), deliver, { concurrency: "unbounded" }))
      yield* sleep(2_000)
      yield* Effect.promise(() => pg.stop())
      // Answers in flight when the database stopped settle within the first second.
      yield* sleep(1_000)
      stopped = true
      yield* sleep(9_000)
      stopped = false
      yield* Effect.promise(() => pg.start())
      const restartedAt = performance.now()
      const sentBefore = Math.max(...sent)
      yield* Fiber.join(burst)
      const recovery = yield* settled(api, pg, running, restartedAt, sentBefore)
      console.log(`webhook: ${total} updates, deliveries by status ${JSON.stringify([...statuses])}; during the outage ${ackedDuring} answered 200, ${refusedDuring.length} refused (${[...new Set(refusedDuring)].join(",")}); ${recovery}`)
      assert.strictEqual(ackedDuring, 0, "nothing is confirmed while the database is down")
      assert.isAbove(refusedDuring.length, 0)
      assert.notInclude(refusedDuring, 500)
      // No delivery at all was answered 500: a 503 (Telegram retries) or a 200.
      assert.deepStrictEqual([...statuses.keys()].filter((status) => status !== 200 && status !== 503), [])
    }).pipe(Effect.scoped), 150_000)
})
