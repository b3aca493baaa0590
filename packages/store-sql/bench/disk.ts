/**
 * `BENCH_SUITES=disk`: what one recorded single-message update costs on SQLite, read from the
 * OS — bytes written to disk (`/proc/self/io` `write_bytes`, the writer thread included), the
 * process's CPU and the main thread's CPU (`/proc/self/task/<pid>/stat`) per update — over
 * DISK_UPDATES updates (default 10,000) into a database already holding DISK_MESSAGES
 * messages (default 100,000) in 50 chats. Each update is recorded as the Telegram recorder
 * does over HTTP: one unit of work with its context event and its history item, 10 at once.
 * DISK_INBOX=1 adds the bot's inbox around each (receive, then settle). Linux only.
 */
import * as HistoryItem from "@deixis/chathistory/HistoryItem"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { ContextIngest } from "@deixis/core/ContextIngest"
import { decodeEvents } from "@deixis/core/ContextEvent"
import * as Deixis from "@deixis/core/Deixis"
import { UpdateInbox } from "@deixis/core/UpdateInbox"
import { UnitOfWork } from "@deixis/core/UnitOfWork"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Sqlite from "../src/Sqlite.js"

const MESSAGES = Number(process.env["DISK_MESSAGES"] ?? 100_000)
const UPDATES = Number(process.env["DISK_UPDATES"] ?? 10_000)
const INBOX = process.env["DISK_INBOX"] === "1"
const SYNCHRONOUS = (process.env["DISK_SYNCHRONOUS"] ?? "normal") as "normal" | "full"
/** Chats the runs write to. */
export const CHATS = 50
const CONCURRENCY = 10
const T0 = Date.parse("2026-11-01T00:00:00Z")

const writeBytes = (): number => {
  const io = fs.readFileSync("/proc/self/io", "utf8")
  return Number(/write_bytes:\s*(\d+)/.exec(io)?.[1] ?? Number.NaN)
}

/** The main thread's user + system CPU, in milliseconds (clock ticks of 10 ms). */
const mainThreadCpu = (): number => {
  const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

const chatOf = (n: number) => String(-100_200_000 - (n % CHATS))

/** The database a run starts from: `perChat` messages in each of `chats` chats, with their history, 500 to a unit. */
export const preload = (chats: number, perChat: number) =>
  Effect.gen(function*() {
    const ingest = yield* ContextIngest
    const history = yield* HistoryStore
    const unit = yield* UnitOfWork
    for (let c = 0; c < chats; c++) {
      const chat = chatOf(c)
      for (let from = 1; from <= perChat; from += 500) {
        const ids = Array.from({ length: Math.min(500, perChat - from + 1) }, (_, k) => from + k)
        yield* unit.run(Effect.zipRight(
          ingest.apply(decode(ids.map((id) => event(chat, id, T0 + id * 1000)))),
          history.appendAll(ids.map((id) => item(chat, id, T0 + id * 1000)))
        ))
      }
    }
  })

/**
 * Records the run's update `n` (a new message in chat `n % CHATS`, after the `perChat` preloaded)
 * as the Telegram recorder writes it — one unit of work — between the inbox's receive and settle
 * when `withInbox`.
 */
export const recordUpdate = (perChat: number, withInbox: boolean) => (n: number) =>
  Effect.gen(function*() {
    const ingest = yield* ContextIngest
    const history = yield* HistoryStore
    const unit = yield* UnitOfWork
    const inbox = yield* UpdateInbox
    const chat = chatOf(n)
    const id = perChat + 1 + Math.floor(n / CHATS)
    const at = T0 + id * 1000
    const owner = "bench"
    if (withInbox) {
      yield* inbox.receive({
        source: "bench",
        updates: [{ update_id: n + 1, chat, payload: JSON.stringify({ update_id: n + 1, message: { text: `message ${id}` } }) }],
        owner,
        now: Date.now(),
        lease: 60_000
      })
    }
    yield* unit.run(Effect.zipRight(ingest.apply(decode([event(chat, id, at)])), history.appendAll([item(chat, id, at)])))
    if (withInbox) {
      yield* inbox.settle({ source: "bench", owner, now: Date.now(), lease: 60_000, done: [n + 1], returned: [], hold: [], release: [chat], stall: [] })
    }
  })

export const event = (chat: string, id: number, at: number) => ({
  type: "message_observed",
  chat_id: chat,
  topic_id: null,
  message_id: String(id),
  sender_user_id: String(1000 + (id % 50)),
  sent_at: new Date(at).toISOString()
})

export const item = (chat: string, id: number, at: number): HistoryItem.HistoryItem => ({
  channel: "telegram",
  kind: "inbound_user",
  chat_id: chat,
  topic_id: null,
  chat_type: "supergroup",
  message_id: String(id),
  reply_to_message_id: null,
  bot_response_id: null,
  sent_at: at,
  sender: { user_id: String(1000 + (id % 50)), username: "alice", nickname: "Alice", is_bot: false, display_ref: "[Alice](tg:@alice)" },
  text: `one line of chat, message ${id}`,
  quote: null,
  attachments: []
})

export const decode = (raw: ReadonlyArray<unknown>) => {
  const decoded = decodeEvents(raw)
  if (decoded._tag === "Left") throw new Error(decoded.left.message)
  return decoded.right
}

export const diskSuite = async (): Promise<string> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bench-disk-"))
  const filename = path.join(dir, "bench.db")
  const stores = Sqlite.layer({ filename, sweep_interval: 0, synchronous: SYNCHRONOUS })
  const runtime = ManagedRuntime.make(Layer.mergeAll(
    Deixis.layerWith(stores),
    stores,
    Logger.minimumLogLevel(LogLevel.None)
  ))
  const result = await runtime.runPromise(Effect.gen(function*() {
    // The database: MESSAGES messages in CHATS chats, with their history, in batches.
    const perChat = Math.ceil(MESSAGES / CHATS)
    yield* preload(CHATS, perChat)
    // Let the load's checkpoint (the writer thread's, after a second of quiet) settle before measuring.
    yield* Effect.sleep("2500 millis")
    let next = 0
    const record = recordUpdate(perChat, INBOX)
    const bytes = writeBytes()
    // Bytes written when half the updates were recorded: does the cost grow with the database?
    let recorded = 0
    let half = bytes
    const cpu = process.cpuUsage()
    const main = mainThreadCpu()
    const started = performance.now()
    yield* Effect.forEach(Array.from({ length: CONCURRENCY }, () => 0), () =>
      Effect.gen(function*() {
        while (next < UPDATES) {
          yield* record(next++)
          if (++recorded === Math.ceil(UPDATES / 2)) half = writeBytes()
        }
      }), { concurrency: "unbounded", discard: true })
    const seconds = (performance.now() - started) / 1000
    const used = process.cpuUsage(cpu)
    // The idle checkpoint's bytes (after a second of quiet) belong to the updates too.
    yield* Effect.sleep("2500 millis")
    return {
      perSecond: UPDATES / seconds,
      bytes: (writeBytes() - bytes) / UPDATES,
      halves: [(half - bytes) / Math.ceil(UPDATES / 2), (writeBytes() - half) / Math.floor(UPDATES / 2)],
      cpu: (used.user + used.system) / 1000 / UPDATES,
      main: (mainThreadCpu() - main) / UPDATES
    }
  }))
  await runtime.dispose()
  const size = fs.readdirSync(dir).map((f) => `${f} ${(fs.statSync(path.join(dir, f)).size / 1e6).toFixed(1)} MB`).join(", ")
  fs.rmSync(dir, { recursive: true, force: true })
  return [
    `SQLite (synchronous=${SYNCHRONOUS}${INBOX ? ", inbox" : ""}): ${UPDATES} single-message updates into ${MESSAGES} messages, ${CONCURRENCY} at once`,
    "",
    "| updates/s | disk written per update (first half, second half) | process CPU per update | main thread CPU per update |",
    "|---:|---:|---:|---:|",
    `| ${result.perSecond.toFixed(0)} | ${(result.bytes / 1024).toFixed(1)} KB (${result.halves.map((b) => (b / 1024).toFixed(1)).join(", ")}) | ${result.cpu.toFixed(2)} ms | ${result.main.toFixed(2)} ms |`,
    "",
    `files after: ${size}`
  ].join("\n")
}

if (process.argv[1]?.endsWith("disk.ts") || process.argv[1]?.endsWith("disk.js")) {
  diskSuite().then((table) => console.log(table), (error) => {
    console.error(error)
    process.exit(1)
  })
}
