/**
 * Prometheus metrics. What the bot counts is defined here as Effect metrics (as store-sql's
 * cache counters and the URL reader's are): updates by outcome and their latency, Bot API
 * failures by method and error code, reminders due, sent and dropped. The process has one
 * registry, built by {@link layer}: prom-client's, holding Node's process metrics, the gauges
 * read at scrape time (queue, busy chats, reminders pending) and every Effect metric of the
 * process (the bot's, the store's, the URL reader's) — `/metrics` on the operations server
 * renders it. No label carries a chat or user id.
 *
 * @since 0.1.0
 */
import { StoreMetrics } from "@deixis/store-sql"
import * as UrlReader from "@deixis/tools/UrlReader"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"
import * as MetricLabel from "effect/MetricLabel"
import type * as MetricPair from "effect/MetricPair"
import * as Prometheus from "prom-client"

const counterKey = (name: string, description: string) => MetricKey.counter(name, { description, incremental: true })
const noLabels: ReadonlyArray<MetricLabel.MetricLabel> = []

const updatesKey = counterKey(
  "deixis_bot_updates_total",
  "Updates received, by outcome (handled, duplicate, malformed, deferred, unrecorded, abandoned)"
)
/**
 * Outcomes of an update (the `outcome` label's values).
 *
 * @since 0.3.0
 * @category models
 */
export type UpdateOutcome = "handled" | "duplicate" | "malformed" | "deferred" | "unrecorded" | "abandoned"
// One metric per label set, built from its full key once: it keeps its registry hook, where
// `Metric.tagged` looks the key up on every update.
const updateCounters = new Map<string, Metric.Metric.Counter<number>>()
const updateCounter = (outcome: UpdateOutcome) => {
  let counter = updateCounters.get(outcome)
  if (counter === undefined) {
    counter = Metric.fromMetricKey(MetricKey.taggedWithLabels(updatesKey, [MetricLabel.make("outcome", outcome)]))
    updateCounters.set(outcome, counter)
  }
  return counter
}

/**
 * Counts `n` updates with an outcome.
 *
 * @since 0.3.0
 * @category metrics
 */
export const countUpdates = (outcome: UpdateOutcome, n: number): void => updateCounter(outcome).unsafeUpdate(n, noLabels)

/**
 * Updates counted with an outcome so far in this process (for tests).
 *
 * @since 0.3.0
 * @category metrics
 */
export const updatesCounted = (outcome: UpdateOutcome): number => {
  const state = updateCounter(outcome).unsafeValue(noLabels) as { readonly count: number }
  return state.count
}

const updateSeconds = Metric.fromMetricKey(MetricKey.histogram(
  "deixis_bot_update_duration_seconds",
  MetricBoundaries.fromIterable([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]),
  "Time from an update's arrival to the end of its handling (queueing included)"
))

/**
 * Records one update's time from arrival to the end of its handling.
 *
 * @since 0.3.0
 * @category metrics
 */
export const observeLatency = (seconds: number): void => updateSeconds.unsafeUpdate(seconds, noLabels)

const sendFailuresKey = counterKey(
  "deixis_bot_send_failures_total",
  "Failed Bot API call attempts, by method and error code (429, 400, 5xx, network, timeout)"
)
const sendFailures = new Map<string, Metric.Metric.Counter<number>>()

/**
 * Counts one failed Bot API attempt (`method` is a Bot API method name, `code` an error code
 * or `network` / `timeout`: bounded labels).
 *
 * @since 0.1.0
 * @category metrics
 */
export const sendFailed = (method: string, code: string): Effect.Effect<void> =>
  Effect.sync(() => {
    const id = `${method}\u0000${code}`
    let counter = sendFailures.get(id)
    if (counter === undefined) {
      counter = Metric.fromMetricKey(
        MetricKey.taggedWithLabels(sendFailuresKey, [MetricLabel.make("method", method), MetricLabel.make("code", code)])
      )
      sendFailures.set(id, counter)
    }
    counter.unsafeUpdate(1, noLabels)
  })

const plainCounter = (name: string, description: string) => {
  const counter = Metric.fromMetricKey(counterKey(name, description))
  return { inc: (n = 1): void => counter.unsafeUpdate(n, noLabels) }
}

/**
 * @since 0.1.0
 * @category metrics
 */
export const remindersClaimed = plainCounter("deixis_bot_reminders_due_total", "Due reminders claimed for sending by this process")

/**
 * @since 0.1.0
 * @category metrics
 */
export const remindersSent = plainCounter("deixis_bot_reminders_sent_total", "Reminders sent by this process")

/**
 * @since 0.1.0
 * @category metrics
 */
export const remindersDropped = plainCounter("deixis_bot_reminders_dropped_total", "Reminders given up (the chat refuses them: bot removed, chat gone)")

/**
 * @since 0.3.0
 * @category metrics
 */
export const urlReads = counterKey(
  "deixis_bot_url_reads_total",
  "Pages read by the LLM's read_url tool, by outcome (ok, or why not: forbidden_address, timeout, …)"
)
const urlReadCounters = new Map<string, Metric.Metric.Counter<number>>()

/**
 * @since 0.3.0
 * @category metrics
 */
export const urlReadBytes = plainCounter("deixis_bot_url_read_bytes_total", "Body bytes read by the LLM's read_url tool")

/**
 * Counts one read of `read_url` (the reader's `onRead`).
 *
 * @since 0.3.0
 * @category metrics
 */
export const recordRead = (record: { readonly outcome: string; readonly bytes: number }): void => {
  let counter = urlReadCounters.get(record.outcome)
  if (counter === undefined) {
    counter = Metric.fromMetricKey(MetricKey.taggedWithLabels(urlReads, [MetricLabel.make("outcome", record.outcome)]))
    urlReadCounters.set(record.outcome, counter)
  }
  counter.unsafeUpdate(1, noLabels)
  urlReadBytes.inc(record.bytes)
}

/**
 * What the gauges read at scrape time (set by the running bot).
 *
 * @since 0.1.0
 * @category models
 */
export interface Probes {
  readonly queue: () => { readonly queued: number; readonly chats: number; readonly deepest: number }
  readonly reminders: () => Promise<{ readonly pending: number; readonly due: number } | null>
}

/**
 * The process's registry: renders it, and points its gauges at a running bot.
 *
 * @since 0.3.0
 * @category tags
 */
export class Registry extends Context.Tag("@deixis/telegram-bot/Metrics/Registry")<Registry, {
  /**
   * The exposition; with `names`, only the metrics of those names (`/metrics?name[]=…`, as
   * Prometheus' Python client filters): no other metric is collected, Node's process metrics
   * (which read /proc) included.
   */
  readonly render: (names?: ReadonlyArray<string>) => Effect.Effect<{ readonly contentType: string; readonly body: string }>
  /** Points the gauges at a running bot until the scope closes. */
  readonly probe: (probes: Probes) => Effect.Effect<void, never, import("effect/Scope").Scope>
}>() {}

type PairState = {
  readonly count?: number
  readonly value?: number
  readonly buckets?: ReadonlyArray<readonly [number, number]>
  readonly sum?: number
}

// An Effect metric's type as Prometheus sees it (frequencies and summaries are not used here):
// a counter that may go down (not `incremental`, as Effect's own `effect_fiber_active`) is a gauge.
const typeOf = (pair: MetricPair.MetricPair.Untyped): "counter" | "gauge" | "histogram" | undefined => {
  const state = pair.metricState as object
  if ("buckets" in state) return "histogram"
  if ("count" in state) return (pair.metricKey.keyType as { readonly incremental?: boolean }).incremental === true ? "counter" : "gauge"
  return "value" in state ? "gauge" : undefined
}

// The name Prometheus shows: a counter's ends in `_total` (the exposition format's convention).
const exposedName = (name: string, type: string) => (type === "counter" && !name.endsWith("_total") ? `${name}_total` : name)

const labelsOf = (pair: MetricPair.MetricPair.Untyped): Record<string, string> =>
  Object.fromEntries(pair.metricKey.tags.map((t) => [t.key, t.value]))

// An Effect metric as a prom-client metric: read from the latest snapshot at each scrape.
const bridged = (name: string, type: "counter" | "gauge" | "histogram", latest: () => ReadonlyArray<MetricPair.MetricPair.Untyped>) => ({
  name: exposedName(name, type),
  get: async () => {
    const pairs = latest().filter((p) => p.metricKey.name === name)
    const first = pairs[0]
    const help = first !== undefined && first.metricKey.description._tag === "Some" ? first.metricKey.description.value : name
    const values: Array<{ readonly metricName?: string; readonly labels: Record<string, string | number>; readonly value: number }> = []
    for (const pair of pairs) {
      const labels = labelsOf(pair)
      const s = pair.metricState as unknown as PairState
      if (type === "histogram") {
        let infinite = false
        for (const [boundary, cumulative] of s.buckets ?? []) {
          if (!Number.isFinite(boundary)) infinite = true
          values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: Number.isFinite(boundary) ? boundary : "+Inf" }, value: cumulative })
        }
        if (!infinite) values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: "+Inf" }, value: s.count ?? 0 })
        values.push({ metricName: `${name}_sum`, labels, value: s.sum ?? 0 })
        values.push({ metricName: `${name}_count`, labels, value: s.count ?? 0 })
      } else values.push({ labels, value: ("count" in s ? s.count : s.value) ?? 0 })
    }
    return { name: exposedName(name, type), help, type, values, aggregator: "sum" as const }
  }
})

/**
 * The process's registry (one per process: Node's default metrics can be collected into one
 * registry only once).
 *
 * @since 0.3.0
 * @category layers
 */
export const layer: Layer.Layer<Registry> = Layer.sync(Registry, () => {
  const registry = new Prometheus.Registry()
  // Node's process metrics, but for three gauges prom-client names `…_total` (a counter's
  // suffix: promtool refuses it); their labelled twins (`…_active_handles{type}`) stay.
  const defaults = new Prometheus.Registry()
  Prometheus.collectDefaultMetrics({ register: defaults, prefix: "deixis_bot_" })
  for (const metric of defaults.getMetricsAsArray() as unknown as ReadonlyArray<Prometheus.Metric & { readonly name: string; readonly type: string }>) {
    if (metric.type === "counter" || !metric.name.endsWith("_total")) registry.registerMetric(metric)
  }
  let probes: Probes | null = null
  new Prometheus.Gauge({
    name: "deixis_bot_queued_updates",
    help: "Updates waiting or being handled",
    registers: [registry],
    collect() {
      this.set(probes?.queue().queued ?? 0)
    }
  })
  new Prometheus.Gauge({
    name: "deixis_bot_busy_chats",
    help: "Chats (and topics) with updates waiting or being handled",
    registers: [registry],
    collect() {
      this.set(probes?.queue().chats ?? 0)
    }
  })
  new Prometheus.Gauge({
    name: "deixis_bot_deepest_chat_queue_depth",
    help: "Updates waiting or being handled in the busiest chat (or topic)",
    registers: [registry],
    collect() {
      this.set(probes?.queue().deepest ?? 0)
    }
  })
  new Prometheus.Gauge({
    name: "deixis_bot_reminders_pending",
    help: "Reminders in the store, and those already due",
    labelNames: ["state"] as const,
    registers: [registry],
    async collect() {
      const counts = await (probes?.reminders() ?? Promise.resolve(null))
      if (counts !== null) {
        this.set({ state: "pending" }, counts.pending)
        this.set({ state: "due" }, counts.due)
      }
    }
  })
  // Everything the process measures is shown from the start (at 0), not only once first
  // counted: the bot's counters, the store's, the URL reader's.
  countUpdates("handled", 0)
  remindersClaimed.inc(0)
  remindersSent.inc(0)
  remindersDropped.inc(0)
  for (const metric of StoreMetrics.all) metric.unsafeValue(noLabels)
  UrlReader.reads.unsafeValue(noLabels)
  UrlReader.bytesRead.unsafeValue(noLabels)
  UrlReader.readSeconds.unsafeValue(noLabels)
  let latest: ReadonlyArray<MetricPair.MetricPair.Untyped> = []
  const known = new Set<string>()
  return {
    render: (names) =>
      Effect.flatMap(Metric.snapshot, (pairs) =>
        Effect.promise(async () => {
          latest = pairs
          for (const pair of pairs) {
            const name = pair.metricKey.name
            const type = typeOf(pair)
            if (known.has(name) || type === undefined) continue
            known.add(name)
            registry.registerMetric(bridged(name, type, () => latest) as unknown as Prometheus.Metric)
          }
          if (names === undefined) return { contentType: registry.contentType, body: await registry.metrics() }
          // A name the registry does not hold is left out, as Prometheus' filters do.
          const held = [...new Set(names)].filter((name) => registry.getSingleMetric(name) !== undefined)
          const parts = await Promise.all(held.map((name) => registry.getSingleMetricAsString(name)))
          return { contentType: registry.contentType, body: parts.length === 0 ? "" : `${parts.join("\n\n")}\n` }
        })),
    probe: (next) =>
      Effect.acquireRelease(Effect.sync(() => void (probes = next)), () => Effect.sync(() => void (probes = null)))
  }
})
