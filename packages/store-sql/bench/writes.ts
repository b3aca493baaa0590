/**
 * The write suites of `pnpm bench`, each store in a fresh process:
 *
 * - **Concurrent ingest**: 10 writers at once, each applying one-event batches (one new
 *   message) through core's `ContextIngest`, into 50 chats: events/s, and the process's CPU
 *   time per write.
 * - **Resolve under writes**: resolve in one chat (2,000 messages over 20 topics) at 100/s
 *   for a while, then again while 200 one-message writes/s land in 50 other chats: p50 / p99,
 *   each latency from the call's scheduled start (a call that waits behind another counts its
 *   wait), as a bot's handler would see it.
 *
 * SQLite runs with `synchronous=normal` and `full`, each with group commit off (every write its
 * own transaction, as before it) and on, side by side in one run.
 *
 * Environment: BENCH_WRITE_STORES (default every store below), BENCH_WRITE_SECONDS (default 5,
 * per resolve phase), BENCH_WRITES_PER_WRITER (default 200), DEIXIS_TEST_PG_URL.
 */
import * as ContextStore from "@deixis/core/ContextStore"
import { ContextIngest } from "@deixis/core/ContextIngest"
import { decodeEvents } from "@deixis/core/ContextEvent"
import * as Deixis from "@deixis/core/Deixis"
import { ReferenceResolver } from "@deixis/core/ReferenceResolver"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { groupCommitEnabled } from "../src/internal/groupCommit.js"
import * as SqlStore from "../src/SqlStore.js"
import * as child from "./child.js"

const PG_URL = process.env["DEIXIS_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const SECONDS = Number(process.env["BENCH_WRITE_SECONDS"] ?? 5)
const PER_WRITER = Number(process.env["BENCH_WRITES_PER_WRITER"] ?? 200)
const WRITERS = 10
const OTHER_CHATS = 50
const READ_CHAT = "-2001"
const READ_MESSAGES = 2000
const READ_TOPICS = 20
const RESOLVES_PER_SECOND = 100
const WRITES_PER_SECOND = 200

interface Store {
  readonly id: string
  readonly label: string
  readonly groupCommit: boolean
}

const stores: ReadonlyArray<Store> = [
  { id: "memory", label: "memory", groupCommit: true },
  { id: "sqlite-normal-single", label: "SQLite normal, group commit off", groupCommit: false },
  { id: "sqlite-normal", label: "SQLite normal (default)", groupCommit: true },
  { id: "sqlite-full-single", label: "SQLite full, group commit off", groupCommit: false },
  { id: "sqlite-full", label: "SQLite full", groupCommit: true },
  { id: "pg", label: "PostgreSQL (loopback)", groupCommit: true }
]

const Result = Schema.Struct({
  id: Schema.String,
  ingestPerSecond: Schema.Number,
  /** CPU time of this process per write during the ingest, in µs (the machine's load moves it less than the wall clock). */
  cpuPerWrite: Schema.Number,
  idle: Schema.Array(Schema.Number),
  loaded: Schema.Array(Schema.Number),
  writesPerSecond: Schema.Number
})
type Result = typeof Result.Type

const T0 = Date.now() - 3_600_000
let seed = 7
const rand = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  return seed / 0x7fffffff
}

const decode = (raw: ReadonlyArray<unknown>) => {
  const decoded = decodeEvents(raw)
  if (decoded._tag === "Left") throw new Error(decoded.left.message)
  return decoded.right
}

const message = (chat: string, id: number, topic: number, at: number) => ({
  type: "message_observed",
  chat_id: chat,
  topic_id: String(topic),
  message_id: String(id),
  sender_user_id: String(1000 + (id % 50)),
  sent_at: new Date(at).toISOString(),
  ...(id > READ_TOPICS && id % 3 === 0 ? { reply_to_message_id: String(id - READ_TOPICS) } : {}),
  ...(id % 10 === 0 ? { links: [{ url: `https://example.com/${chat}/${id}` }] } : {})
})

const resolveRequest = (i: number) => {
  const current = READ_MESSAGES - Math.floor(rand() * 500)
  return {
    chat_id: READ_CHAT,
    topic_id: String(current % READ_TOPICS),
    current_message_id: String(current + 1),
    reply_to_message_id: i % 3 === 0 ? String(current - READ_TOPICS) : null,
    sender_user_id: "1001",
    raw_user_text: "",
    max_candidates: 3,
    record_touch: false,
    normalized_reference_hints: {}
  }
}

/** Calls `f(i)` at `perSecond` for `seconds`, each in its own fiber; each sample is ms from its scheduled start to its end. */
const paced = <E, R>(perSecond: number, seconds: number, f: (i: number) => Effect.Effect<unknown, E, R>) =>
  Effect.gen(function*() {
    const samples: Array<number> = []
    const fibers: Array<Fiber.RuntimeFiber<unknown, E>> = []
    const start = performance.now()
    const count = Math.round(perSecond * seconds)
    for (let i = 0; i < count; i++) {
      const at = start + (i * 1000) / perSecond
      // A timer may fire a little early: never start a call before its time.
      while (performance.now() < at) yield* Effect.sleep(`${Math.max(1, at - performance.now())} millis`)
      fibers.push(yield* Effect.fork(Effect.tap(f(i), () => Effect.sync(() => samples.push(performance.now() - at)))))
    }
    yield* Fiber.joinAll(fibers)
    return { samples: samples.sort((a, b) => a - b), seconds: (performance.now() - start) / 1000 }
  })

const measure = (store: Store, layer: Layer.Layer<ContextStore.ContextStore, unknown>) =>
  Effect.gen(function*() {
    const runtime = ManagedRuntime.make(Layer.mergeAll(Deixis.layerWith(layer), Logger.minimumLogLevel(LogLevel.None)))
    const result = yield* Effect.promise(() =>
      runtime.runPromise(Effect.gen(function*() {
        const ingest = yield* ContextIngest
        const resolver = yield* ReferenceResolver
        // The read chat, in batches.
        for (let from = 1; from <= READ_MESSAGES; from += 500) {
          const raw: Array<unknown> = []
          for (let id = from; id < from + 500 && id <= READ_MESSAGES; id++) {
            raw.push(message(READ_CHAT, id, id % READ_TOPICS, T0 + id * 1000))
          }
          yield* ingest.apply(decode(raw))
        }

        // Concurrent ingest: 10 writers, one new message per batch, 50 chats.
        let next = 0
        const single = (chat: number) => {
          const id = ++next
          return ingest.apply(decode([message(String(-3000 - chat), id, 1, T0 + id)]))
        }
        const started = performance.now()
        const cpu = process.cpuUsage()
        yield* Effect.forEach(
          Array.from({ length: WRITERS }, (_, w) => w),
          (w) => Effect.forEach(Array.from({ length: PER_WRITER }, (_, i) => i), (i) => single((w * 5 + i) % OTHER_CHATS), { discard: true }),
          { concurrency: "unbounded", discard: true }
        )
        const ingestPerSecond = (WRITERS * PER_WRITER) / ((performance.now() - started) / 1000)
        const used = process.cpuUsage(cpu)
        const cpuPerWrite = (used.user + used.system) / (WRITERS * PER_WRITER)

        // Resolve at 100/s, warm first; then the same under 200 one-message writes/s in 50 other chats.
        yield* Effect.forEach(Array.from({ length: 300 }, (_, i) => i), (i) => resolver.resolve(resolveRequest(i)), { discard: true })
        const idle = yield* paced(RESOLVES_PER_SECOND, SECONDS, (i) => resolver.resolve(resolveRequest(i)))
        const writer = yield* Effect.fork(paced(WRITES_PER_SECOND, SECONDS, (i) => single(i % OTHER_CHATS)))
        const loaded = yield* paced(RESOLVES_PER_SECOND, SECONDS, (i) => resolver.resolve(resolveRequest(i)))
        const writes = yield* Fiber.join(writer)
        const out: Result = {
          id: store.id,
          ingestPerSecond,
          cpuPerWrite,
          idle: idle.samples,
          loaded: loaded.samples,
          writesPerSecond: writes.samples.length / writes.seconds
        }
        return out
      }).pipe(Effect.locally(groupCommitEnabled, store.groupCommit)))
    )
    yield* Effect.promise(() => runtime.dispose())
    return result
  })

const measureOne = (store: Store) =>
  Effect.gen(function*() {
    if (store.id === "memory") {
      return yield* measure(store, ContextStore.layerMemory({ sweep_interval: 0 }))
    }
    if (store.id.startsWith("sqlite")) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bench-writes-"))
      const synchronous = store.id.includes("full") ? "full" as const : "normal" as const
      const layer = SqlStore.layerContextStore({ sweep_interval: 0 }).pipe(
        Layer.provide(SqlStore.layerSqliteClient({ filename: path.join(dir, "bench.db"), synchronous }))
      )
      const result = yield* measure(store, layer)
      fs.rmSync(dir, { recursive: true, force: true })
      return result
    }
    const schema = `deixis_bench_w_${Date.now().toString(36)}`
    const layer = SqlStore.layerContextStore({ sweep_interval: 0, schema }).pipe(
      Layer.provide(SqlStore.layerPgClient({ url: PG_URL, schema, max_connections: 10 }))
    )
    const result = yield* measure(store, layer)
    yield* child.dropSchema(PG_URL, schema)
    return result
  })

const inChild = (store: Store) =>
  child.inChild(fileURLToPath(import.meta.url), { BENCH_WRITES_CHILD: store.id }, Result, store.id)

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN
const f2 = (n: number) => n.toFixed(2)
const int = (n: number) => Math.round(n).toLocaleString("en-US")

/** The write suites: every store of BENCH_WRITE_STORES in a fresh process, then two Markdown tables. */
export const writesSuite = Effect.gen(function*() {
  const wanted = (process.env["BENCH_WRITE_STORES"] ?? stores.map((s) => s.id).join(",")).split(",")
  const results: Array<readonly [Store, Result]> = []
  for (const store of stores.filter((s) => wanted.includes(s.id))) {
    const load = os.loadavg()[0]!.toFixed(1)
    const result = yield* inChild(store)
    console.error(`${store.id}: done (load ${load} → ${os.loadavg()[0]!.toFixed(1)})`)
    results.push([store, result])
  }
  const memory = results.find(([s]) => s.id === "memory")?.[1]
  console.log(`\nWrites: ${WRITERS} concurrent writers × ${PER_WRITER} one-message batches into ${OTHER_CHATS} chats; ` +
    `resolve at ${RESOLVES_PER_SECOND}/s for ${SECONDS} s in one chat (${READ_MESSAGES} messages), idle, then with ${WRITES_PER_SECOND} one-message writes/s in ${OTHER_CHATS} other chats`)
  console.log("| store | ingest, 10 writers (events/s) | × memory | CPU per write (µs) | resolve idle p50 / p99 (ms) | resolve under writes p50 / p99 (ms) | p99 under writes ÷ idle | writes/s achieved |")
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|")
  for (const [store, r] of results) {
    console.log(`| ${store.label} | ${int(r.ingestPerSecond)} | ${memory === undefined ? "—" : (r.ingestPerSecond / memory.ingestPerSecond).toFixed(2)} | ${int(r.cpuPerWrite)} | ${
      f2(percentile(r.idle, 0.5))
    } / ${f2(percentile(r.idle, 0.99))} | ${f2(percentile(r.loaded, 0.5))} / ${f2(percentile(r.loaded, 0.99))} | ${
      (percentile(r.loaded, 0.99) / percentile(r.idle, 0.99)).toFixed(2)
    } | ${int(r.writesPerSecond)} |`)
  }
  console.log("\nTargets (issue 26): resolve p99 under writes ≤ 2× idle on every store; SQLite ingest ≥ 0.6× memory.")
})

const childStore = process.env["BENCH_WRITES_CHILD"]
if (childStore !== undefined) {
  const store = stores.find((s) => s.id === childStore)
  Effect.runPromise(store === undefined ? Effect.die(`unknown store ${childStore}`) : measureOne(store)).then(
    (result) => console.log(JSON.stringify(result)),
    (error: unknown) => {
      console.error(error)
      process.exitCode = 1
    }
  )
}
