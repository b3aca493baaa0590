/**
 * `pnpm bench`: resolve and list latency (p50/p99, through core's ReferenceResolver and
 * ActiveContext) and the context store cache's hit ratio over those calls (with the calls that
 * missed it at least once counted and timed apart), with 100k stored messages in one chat over 100 topics, and batched ingest
 * throughput — memory, SQLite and PostgreSQL side by side in one run. Not a test: it prints a
 * table (Markdown) for the README.
 *
 * Then the write suites (bench/writes.ts): concurrent one-event writers, and resolve latency
 * with and without writes in other chats, per store. BENCH_SUITES picks (default reads,writes);
 * `disk` adds bench/disk.ts (SQLite: disk written and CPU per recorded update, from the OS);
 * `pages` adds bench/pages.ts (SQLite: the pages one recorded update writes, by table and index).
 *
 * Environment: BENCH_MESSAGES (default 100000), BENCH_CALLS (default 2000 per tool and engine),
 * BENCH_ENGINES (default memory,sqlite,pg), DEIXIS_TEST_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/test; the bench works in a schema of its own, dropped after),
 * BENCH_KEEP=1 (keep that schema and the SQLite file, to EXPLAIN queries over the data).
 */
import { ActiveContext, type ListRequest } from "@deixis/core/ActiveContext"
import { ContextIngest } from "@deixis/core/ContextIngest"
import { type ContextEvent, decodeEvents } from "@deixis/core/ContextEvent"
import * as ContextStore from "@deixis/core/ContextStore"
import * as Deixis from "@deixis/core/Deixis"
import { ReferenceResolver, type ResolveRequest } from "@deixis/core/ReferenceResolver"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { cacheHits, cacheMisses } from "../src/internal/contextCache.js"
import * as SqlStore from "../src/SqlStore.js"
import * as child from "./child.js"
import { diskSuite } from "./disk.js"
import { pagesSuite } from "./pages.js"
import { writesSuite } from "./writes.js"

const SIZE = Number(process.env["BENCH_MESSAGES"] ?? 100_000)
const CALLS = Number(process.env["BENCH_CALLS"] ?? 2000)
const ENGINES = (process.env["BENCH_ENGINES"] ?? "memory,sqlite,pg").split(",")
const SUITES = (process.env["BENCH_SUITES"] ?? "reads,writes").split(",")
const PG_URL = process.env["DEIXIS_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
/** Keep the PostgreSQL schema (and the SQLite file) afterwards, to EXPLAIN queries over the data. */
const KEEP = process.env["BENCH_KEEP"] === "1"
const TOPICS = 100
const CHAT = "-1001"
/** Messages per batch; with the activations near the end a batch stays within core's 1000 events. */
const PER_BATCH = 900
const T0 = Date.now() - 3_600_000

// Deterministic pseudo-random numbers, so runs are comparable.
let seed = 42
const rand = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  return seed / 0x7fffffff
}

/** Message i (as core's bench): every 10th carries a link, every 25th an image, every 200th a poll; some replies. */
const messageEvent = (i: number, at: number): unknown => ({
  type: "message_observed",
  chat_id: CHAT,
  topic_id: String(i % TOPICS),
  message_id: String(i),
  sender_user_id: String(1000 + (i % 50)),
  sent_at: new Date(at).toISOString(),
  ...(i > TOPICS && i % 3 === 0 ? { reply_to_message_id: String(i - TOPICS) } : {}),
  ...(i % 10 === 0 ? { links: [{ url: `https://example.com/${i}`, title: `Article ${i}` }] } : {}),
  ...(i % 25 === 0 ? { media: [{ kind: "media.image", file_id: `file-${i}` }] } : {}),
  ...(i % 200 === 0 ? { poll: { poll_id: `poll-${i}`, question: `Poll ${i}?` } } : {})
})

/** Batch `b` of typed events, decoded outside every timed region. */
const batchAt = (b: number): ReadonlyArray<ContextEvent> => {
  const raw: Array<unknown> = []
  for (let i = b * PER_BATCH + 1; i <= Math.min(SIZE, (b + 1) * PER_BATCH); i++) {
    raw.push(messageEvent(i, T0 + (i / SIZE) * 3_000_000))
    // The bot acts on some objects near the end of the history: those are the active ones.
    if (i > SIZE - 2000 && i % 10 === 0) {
      raw.push({ type: "object_activated", event_id: `a${i}`, chat_id: CHAT, reason: "summarized", source_message_id: String(i), kind: "link" })
    }
  }
  const decoded = decodeEvents(raw)
  if (decoded._tag === "Left") {
    console.error(decoded.left.message)
    process.exit(1)
  }
  return decoded.right
}
const batchCount = Math.ceil(SIZE / PER_BATCH)

const request = (i: number) => {
  const current = SIZE - Math.floor(rand() * Math.min(SIZE, 5000))
  const topic = String(current % TOPICS)
  const reply = i % 3 === 0 && current > TOPICS ? String(current - TOPICS) : null
  const hint = (["article", "image", "poll", undefined] as const)[i % 4]
  return { current, topic, reply, hint }
}
const resolveRequest = (i: number): ResolveRequest => {
  const r = request(i)
  return {
    chat_id: CHAT,
    topic_id: r.topic,
    current_message_id: String(r.current + 1),
    reply_to_message_id: r.reply,
    sender_user_id: "1001",
    raw_user_text: "",
    max_candidates: 3,
    record_touch: false,
    normalized_reference_hints: r.hint === undefined ? {} : { target_kind_hint: r.hint }
  }
}
const listRequest = (i: number): ListRequest => {
  const r = request(i)
  return {
    chat_id: CHAT,
    topic_id: r.topic,
    current_message_id: String(r.current + 1),
    reply_to_message_id: r.reply,
    sender_user_id: "1001",
    max_results: 5,
    include_inactive_debug: false
  }
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const ms = (ns: number) => (ns / 1e6).toFixed(2)

const missCount = Effect.map(Metric.value(cacheMisses), (m) => m.count)

/**
 * Times calls made one after another from one fiber, as a request handler makes them; with
 * `missed`, the samples of the calls during which the cache missed at least once are also
 * collected there (the miss count is read outside the timed region).
 */
const timeCalls = <A, E, R>(n: number, f: (i: number) => Effect.Effect<A, E, R>, missed?: Array<number>) =>
  Effect.gen(function*() {
    const samples: Array<number> = []
    for (let i = 0; i < n; i++) {
      const before = missed === undefined ? 0 : yield* missCount
      const start = process.hrtime.bigint()
      yield* f(i)
      const t = Number(process.hrtime.bigint() - start)
      samples.push(t)
      if (missed !== undefined && (yield* missCount) > before) missed.push(t)
    }
    missed?.sort((a, b) => a - b)
    return samples.sort((a, b) => a - b)
  })

const ResultSchema = Schema.Struct({
  engine: Schema.String,
  ingestPerSecond: Schema.Number,
  resolve: Schema.Array(Schema.Number),
  list: Schema.Array(Schema.Number),
  stored: Schema.Number,
  /** The samples of the calls that missed the cache at least once (resolve and list together). */
  missed: Schema.Array(Schema.Number),
  /** Cache hits / lookups over the timed calls (null: the engine has no cache). */
  hitRatio: Schema.NullOr(Schema.Number),
  /** Live traffic: resolves right after a message was written, in its topic and in another. */
  liveSame: Schema.Array(Schema.Number),
  liveOther: Schema.Array(Schema.Number),
  liveHitRatio: Schema.NullOr(Schema.Number)
})
type Result = typeof ResultSchema.Type

const gc = (globalThis as { gc?: () => void }).gc

const run = (engine: string, store: Layer.Layer<ContextStore.ContextStore, unknown>) =>
  Effect.gen(function*() {
    const runtime = ManagedRuntime.make(Layer.mergeAll(Deixis.layerWith(store), Logger.minimumLogLevel(LogLevel.None)))
    const result = yield* Effect.promise(() =>
      runtime.runPromise(Effect.gen(function*() {
        const ingest = yield* ContextIngest
        const resolver = yield* ReferenceResolver
        const active = yield* ActiveContext
        const contextStore = yield* ContextStore.ContextStore
        let events = 0
        let nanos = 0
        for (let b = 0; b < batchCount; b++) {
          const batch = batchAt(b)
          const start = process.hrtime.bigint()
          yield* ingest.apply(batch)
          nanos += Number(process.hrtime.bigint() - start)
          events += batch.length
          if (b % 200 === 199) console.error(`${engine}: ${events.toLocaleString("en-US")} events`)
        }
        const stats = yield* contextStore.stats
        gc?.()
        const lookups = Effect.all([Metric.value(cacheHits), Metric.value(cacheMisses)]).pipe(
          Effect.map(([h, m]) => ({ hits: h.count, misses: m.count }))
        )
        yield* timeCalls(Math.max(50, CALLS / 4), (i) => resolver.resolve(resolveRequest(i)))
        const before = yield* lookups
        const missed: Array<number> = []
        const resolve = yield* timeCalls(CALLS, (i) => resolver.resolve(resolveRequest(i)), missed)
        yield* timeCalls(Math.max(50, CALLS / 4), (i) => active.list(listRequest(i)))
        const list = yield* timeCalls(CALLS, (i) => active.list(listRequest(i)), missed)
        const after = yield* lookups
        const hits = after.hits - before.hits
        const total = hits + after.misses - before.misses

        // Live traffic: a message arrives in a topic (written, untimed; a tenth carry a link),
        // then a resolve is timed — half of them about that message in its topic (the bot answering
        // it), half in another topic of the chat (a forum's other conversations going on).
        const liveSame: Array<number> = []
        const liveOther: Array<number> = []
        const liveCalls = Math.max(50, CALLS / 2)
        const liveStart = yield* lookups
        for (let i = 0; i < liveCalls; i++) {
          const id = SIZE + 1 + i
          const topic = String(Math.floor(rand() * TOPICS))
          const decoded = decodeEvents([{
            type: "message_observed",
            chat_id: CHAT,
            topic_id: topic,
            message_id: String(id),
            sender_user_id: String(1000 + (id % 50)),
            sent_at: new Date(T0 + 3_000_000 + i).toISOString(),
            ...(i % 10 === 0 ? { links: [{ url: `https://example.com/live/${id}` }] } : {})
          }])
          if (decoded._tag === "Left") return yield* Effect.die(decoded.left)
          yield* ingest.apply(decoded.right)
          const same = i % 2 === 0
          const request = resolveRequest(i)
          const at = same ? { ...request, topic_id: topic, current_message_id: String(id + 1), reply_to_message_id: i % 3 === 0 ? String(id) : null } : request
          const start = process.hrtime.bigint()
          yield* resolver.resolve(at)
          ;(same ? liveSame : liveOther).push(Number(process.hrtime.bigint() - start))
        }
        const liveEnd = yield* lookups
        const liveHits = liveEnd.hits - liveStart.hits
        const liveTotal = liveHits + liveEnd.misses - liveStart.misses
        return {
          liveSame: liveSame.sort((a, b) => a - b),
          liveOther: liveOther.sort((a, b) => a - b),
          liveHitRatio: liveTotal === 0 ? null : liveHits / liveTotal,
          engine,
          ingestPerSecond: events / (nanos / 1e9),
          resolve,
          list,
          stored: stats.messages,
          missed: missed.sort((a, b) => a - b),
          hitRatio: total === 0 ? null : hits / total
        }
      }))
    )
    yield* Effect.promise(() => runtime.dispose())
    return result
  })

/** One engine, in this process: its result as one JSON line on stdout. */
const measureOne = (engine: string) =>
  Effect.gen(function*() {
    if (engine === "memory") {
      return yield* run("memory", ContextStore.layerMemory({
        sweep_interval: 0,
        max_messages_per_chat: 2_000_000,
        max_objects_per_chat: 500_000,
        max_messages_total: 4_000_000
      }))
    }
    if (engine === "sqlite") {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bench-"))
      const layer = SqlStore.layerContextStore({ sweep_interval: 0 }).pipe(
        Layer.provide(SqlStore.layerSqliteClient({ filename: path.join(dir, "bench.db") }))
      )
      const result = yield* run("SQLite (file, WAL, synchronous=NORMAL)", layer)
      if (KEEP) console.error(`kept ${path.join(dir, "bench.db")}`)
      else fs.rmSync(dir, { recursive: true, force: true })
      return result
    }
    const schema = `deixis_bench_${Date.now().toString(36)}`
    const layer = SqlStore.layerContextStore({ sweep_interval: 0, schema }).pipe(
      Layer.provide(SqlStore.layerPgClient({ url: PG_URL, schema, max_connections: 4 }))
    )
    const result = yield* run("PostgreSQL (loopback)", layer)
    if (KEEP) {
      console.error(`kept schema ${schema}`)
      return result
    }
    yield* child.dropSchema(PG_URL, schema)
    return result
  })

/** Each engine in a fresh process, one after the other, so no engine pays for another's heap. */
const inChild = (engine: string) =>
  child.inChild(fileURLToPath(import.meta.url), { BENCH_CHILD: engine }, ResultSchema, engine)

const main = Effect.gen(function*() {
  const engine = process.env["BENCH_CHILD"]
  if (engine !== undefined) {
    const result = yield* measureOne(engine)
    console.log(JSON.stringify(result))
    return
  }
  if (process.env["BENCH_WRITES_CHILD"] !== undefined) return
  if (!SUITES.includes("reads")) {
    if (SUITES.includes("writes")) yield* writesSuite
    if (SUITES.includes("disk")) console.log(yield* Effect.promise(diskSuite))
    if (SUITES.includes("pages")) console.log(yield* Effect.promise(pagesSuite))
    return
  }
  const results: Array<Result> = []
  for (const engine of ENGINES) results.push(yield* inChild(engine))
  console.log(`\n@deixis/store-sql benchmark — ${SIZE.toLocaleString("en-US")} messages in one chat over ${TOPICS} topics, ` +
    `batches of ${PER_BATCH} messages; Node ${process.version}, ${os.cpus().length} CPUs, ${new Date().toISOString().slice(0, 10)}\n`)
  console.log(
    "| engine | stored messages | ingest (events/s) | resolve p50 / p99 (ms) | list p50 / p99 (ms) | cache hit ratio | calls that missed: n, p50 / p99 (ms) |"
  )
  console.log("|---|---:|---:|---:|---:|---:|---:|")
  for (const r of results) {
    console.log(`| ${r.engine} | ${r.stored.toLocaleString("en-US")} | ${Math.round(r.ingestPerSecond).toLocaleString("en-US")} | ${
      ms(percentile(r.resolve, 0.5))
    } / ${ms(percentile(r.resolve, 0.99))} | ${ms(percentile(r.list, 0.5))} / ${ms(percentile(r.list, 0.99))} | ${
      r.hitRatio === null ? "—" : `${(r.hitRatio * 100).toFixed(1)}%`
    } | ${r.missed.length === 0 ? "—" : `${r.missed.length}, ${ms(percentile(r.missed, 0.5))} / ${ms(percentile(r.missed, 0.99))}`} |`)
  }
  console.log(`\nLive traffic: ${Math.max(50, CALLS / 2)} resolves, each right after a message was written into a random topic`)
  console.log("| engine | resolve in the written topic p50 / p99 (ms) | resolve in another topic p50 / p99 (ms) | cache hit ratio |")
  console.log("|---|---:|---:|---:|")
  for (const r of results) {
    console.log(`| ${r.engine} | ${ms(percentile(r.liveSame, 0.5))} / ${ms(percentile(r.liveSame, 0.99))} | ${
      ms(percentile(r.liveOther, 0.5))
    } / ${ms(percentile(r.liveOther, 0.99))} | ${r.liveHitRatio === null ? "—" : `${(r.liveHitRatio * 100).toFixed(1)}%`} |`)
  }
  console.log("\nTargets at 100k messages: p99 <= 1 ms (SQLite) and <= 3 ms (PostgreSQL) for both tools; ingest >= 20,000 events/s (SQLite) and >= 5,000 events/s (PostgreSQL).")
  if (SUITES.includes("writes")) yield* writesSuite
  if (SUITES.includes("disk")) console.log(yield* Effect.promise(diskSuite))
})

Effect.runPromise(main).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
