/**
 * `pnpm bench`: resolve and list latency (p50/p99), ingest throughput and memory per stored
 * message with 1k, 100k and 1M messages in one chat over 100 topics — beside a naive baseline
 * that scans the chat's whole history on every call. Not a test: it prints a table.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { ActiveContext } from "../src/ActiveContext.js"
import { ContextIngest } from "../src/ContextIngest.js"
import { decodeEvents } from "../src/ContextEvent.js"
import { type ContextObject, messageObject } from "../src/ContextObject.js"
import { ContextStore } from "../src/ContextStore.js"
import * as Deixis from "../src/Deixis.js"
import type { ListRequest } from "../src/ActiveContext.js"
import type { ResolveRequest } from "../src/ReferenceResolver.js"
import { decide, ReferenceResolver } from "../src/ReferenceResolver.js"
import * as Scoring from "../src/Scoring.js"

const gc = (globalThis as { gc?: () => void }).gc
const sizes = (process.env["BENCH_SIZES"] ?? "1000,100000,1000000").split(",").map(Number)
const TOPICS = 100
const CHAT = "-1001"
const T0 = Date.now() - 3_600_000

// Deterministic pseudo-random numbers, so runs are comparable.
let seed = 42
const rand = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  return seed / 0x7fffffff
}

/** Message i: every 10th carries a link, every 25th an image, every 200th a poll; some replies. */
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

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const us = (ns: number) => (ns / 1000).toFixed(1)

const time = (n: number, f: (i: number) => void) => {
  const samples: Array<number> = []
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint()
    f(i)
    samples.push(Number(process.hrtime.bigint() - start))
  }
  return samples.sort((a, b) => a - b)
}

/**
 * Times calls made from one running fiber, as a server's request handler makes them: the
 * cost of starting a fiber per call is not the tool's.
 */
const timeEffect = <A, E, R>(
  runtime: ManagedRuntime.ManagedRuntime<R, never>,
  n: number,
  f: (i: number) => Effect.Effect<A, E, R>
) =>
  runtime.runSync(Effect.gen(function*() {
    const samples: Array<number> = []
    for (let i = 0; i < n; i++) {
      const start = process.hrtime.bigint()
      yield* f(i)
      samples.push(Number(process.hrtime.bigint() - start))
    }
    return samples.sort((a, b) => a - b)
  }))

interface Row {
  readonly size: number
  readonly resolve: ReadonlyArray<number>
  readonly list: ReadonlyArray<number>
  readonly naiveResolve: ReadonlyArray<number>
  readonly naiveList: ReadonlyArray<number>
  readonly ingestPerSecond: number
  readonly decodeIngestPerSecond: number
  readonly bytesPerMessage: number
}

const runSize = (size: number): Row => {
  const quiet = Logger.minimumLogLevel(LogLevel.None)
  const runtime = ManagedRuntime.make(Layer.mergeAll(
    Deixis.layerMemory({
      store: {
        sweep_interval: 0,
        max_messages_per_chat: 2_000_000,
        max_objects_per_chat: 500_000,
        max_messages_total: 4_000_000
      }
    }),
    quiet
  ))
  const ingest = runtime.runSync(ContextIngest)
  const resolver = runtime.runSync(ReferenceResolver)
  const active = runtime.runSync(ActiveContext)
  const store = runtime.runSync(ContextStore)

  // Decode outside the timed region: the typed-ingest figure is the store's own cost.
  gc?.()
  const heapBefore = process.memoryUsage().heapUsed
  let events = 0
  let ingestNanos = 0
  for (let start = 1; start <= size; start += 1000) {
    const raw: Array<unknown> = []
    for (let i = start; i < Math.min(start + 1000, size + 1); i++) {
      raw.push(messageEvent(i, T0 + (i / size) * 3_000_000))
      // The bot acts on some objects near the end of the history: those are the active ones.
      if (i > size - 2000 && i % 10 === 0) {
        raw.push({ type: "object_activated", event_id: `a${i}`, chat_id: CHAT, reason: "summarized", source_message_id: String(i), kind: "link" })
      }
    }
    for (let from = 0; from < raw.length; from += 1000) {
      const decoded = decodeEvents(raw.slice(from, from + 1000))
      if (decoded._tag === "Left") throw new Error(decoded.left.message)
      events += decoded.right.length
      const started = process.hrtime.bigint()
      runtime.runSync(ingest.apply(decoded.right))
      ingestNanos += Number(process.hrtime.bigint() - started)
    }
  }
  const ingestSeconds = ingestNanos / 1e9
  gc?.()
  const bytesPerMessage = (process.memoryUsage().heapUsed - heapBefore) / size

  // Untrusted JSON-shaped input through the decoder, on a second chat.
  const sample = Math.min(size, 100_000)
  const raw = Array.from({ length: sample }, (_, i) => ({ ...(messageEvent(i + 1, T0) as object), chat_id: "decode" }))
  const decodeStart = process.hrtime.bigint()
  for (let start = 0; start < sample; start += 1000) runtime.runSync(ingest.ingest(raw.slice(start, start + 1000)))
  const decodeSeconds = Number(process.hrtime.bigint() - decodeStart) / 1e9

  const calls = 20_000
  const request = (i: number) => {
    const current = size - Math.floor(rand() * Math.min(size, 5000))
    const topic = String(current % TOPICS)
    const reply = i % 3 === 0 && current > TOPICS ? String(current - TOPICS) : null
    const hint = (["article", "image", "poll", undefined] as const)[i % 4]
    return { current, topic, reply, hint }
  }
  const resolveRequest = (i: number): ResolveRequest => {
    const r = request(i)
    return {
      chat_id: CHAT, topic_id: r.topic, current_message_id: String(r.current + 1), reply_to_message_id: r.reply,
      sender_user_id: "1001", raw_user_text: "", max_candidates: 3, record_touch: false,
      normalized_reference_hints: r.hint === undefined ? {} : { target_kind_hint: r.hint }
    }
  }
  const listRequest = (i: number): ListRequest => {
    const r = request(i)
    return {
      chat_id: CHAT, topic_id: r.topic, current_message_id: String(r.current + 1), reply_to_message_id: r.reply,
      sender_user_id: "1001", max_results: 5, include_inactive_debug: false
    }
  }
  // Warm up, then measure.
  timeEffect(runtime, 5000, (i) => resolver.resolve(resolveRequest(i)))
  const resolveSamples = timeEffect(runtime, calls, (i) => resolver.resolve(resolveRequest(i)))
  timeEffect(runtime, 5000, (i) => active.list(listRequest(i)))
  const listSamples = timeEffect(runtime, calls, (i) => active.list(listRequest(i)))

  // The naive baseline: every call scans the chat's whole history and scores it.
  const snapshot = runtime.runSync(store.snapshot(CHAT))
  const now = Date.now()
  const carriers = new Set(snapshot.objects.map((o) => o.source_message_id))
  const naiveEntries = (topic: string, activeOnly: boolean) => {
    const out: Array<{ object: ContextObject; tier: "home" }> = []
    for (const o of snapshot.objects) {
      if (o.topic_id === topic && (!activeOnly || (o.active_until !== null && o.active_until > now))) out.push({ object: o, tier: "home" })
    }
    if (!activeOnly) {
      for (const m of snapshot.messages) {
        if (m.topic_id === topic && !carriers.has(m.message_id)) out.push({ object: messageObject(m), tier: "home" })
      }
    }
    return out
  }
  const naiveCalls = size >= 1_000_000 ? 30 : size >= 100_000 ? 200 : 5000
  const naiveResolve = time(naiveCalls, (i) => {
    const r = resolveRequest(i)
    const scored = Scoring.defaultScoring.scoreAll(naiveEntries(r.topic_id!, false), {
      now, topic_id: r.topic_id, sender_user_id: r.sender_user_id, hints: r.normalized_reference_hints
    })
    decide(Scoring.defaultScoring, r, scored, false, 0)
  })
  const naiveList = time(naiveCalls, (i) => {
    const r = listRequest(i)
    Scoring.defaultScoring.scoreAll(naiveEntries(r.topic_id!, true), {
      now, topic_id: r.topic_id, sender_user_id: r.sender_user_id, hints: {}
    }).slice(0, 5)
  })
  runtime.runSync(Effect.void)
  void runtime.dispose()
  return {
    size,
    resolve: resolveSamples,
    list: listSamples,
    naiveResolve,
    naiveList,
    ingestPerSecond: events / ingestSeconds,
    decodeIngestPerSecond: sample / decodeSeconds,
    bytesPerMessage
  }
}

// A throwaway pass first, so the measured runs see compiled code, not the JIT warming up.
runSize(2000)
const rows = sizes.map((size) => {
  const row = runSize(size)
  console.error(`measured ${size} messages`)
  return row
})
console.log(`\n@deixis/core benchmark — Node ${process.version}, ${new Date().toISOString().slice(0, 10)}\n`)
console.log("| messages in chat | resolve p50 / p99 (µs) | list p50 / p99 (µs) | naive resolve p50 / p99 (µs) | naive list p50 / p99 (µs) | ingest, typed (events/s) | ingest, decoded (events/s) | heap per message (bytes) |")
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|")
for (const r of rows) {
  console.log(`| ${r.size.toLocaleString("en-US")} | ${us(percentile(r.resolve, 0.5))} / ${us(percentile(r.resolve, 0.99))} | ${us(percentile(r.list, 0.5))} / ${us(percentile(r.list, 0.99))} | ${us(percentile(r.naiveResolve, 0.5))} / ${us(percentile(r.naiveResolve, 0.99))} | ${us(percentile(r.naiveList, 0.5))} / ${us(percentile(r.naiveList, 0.99))} | ${Math.round(r.ingestPerSecond).toLocaleString("en-US")} | ${Math.round(r.decodeIngestPerSecond).toLocaleString("en-US")} | ${Math.round(r.bytesPerMessage)} |`)
}
console.log("\nTargets: p99 <= 50 µs for both tools at every size; typed ingest >= 200,000 events/s; <= 600 bytes per stored message.")
