/**
 * Prometheus metrics. The process's one registry is Effect's: request counts and latency
 * histograms, the SQL store's cache counters (`StoreMetrics`) and the URL reader's metrics,
 * all listed from the start; the stores' sizes (gauges) and evictions (counters) are read at
 * scrape time. Counters are exposed as counters; no label carries a chat or user id.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { ContextStore } from "@deixis/core"
import { HistoryStore } from "@deixis/chathistory"
import { StoreMetrics } from "@deixis/store-sql"
import * as UrlReader from "@deixis/tools/UrlReader"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"
import * as MetricLabel from "effect/MetricLabel"
import type * as MetricPair from "effect/MetricPair"

const requestsKey = MetricKey.counter("deixis_http_requests_total", {
  description: "HTTP requests by method, route and status",
  incremental: true
})
const latencyKey = MetricKey.histogram(
  "deixis_http_request_duration_seconds",
  MetricBoundaries.fromIterable([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]),
  "HTTP request latency by method and route"
)

export const requests = Metric.fromMetricKey(requestsKey)
export const latency = Metric.fromMetricKey(latencyKey)

// One metric per label set, built from its full key: such a metric keeps its registry hook,
// where `Metric.tagged` builds a key and looks it up in the registry on every update.
const label = MetricLabel.make
const noLabels: ReadonlyArray<MetricLabel.MetricLabel> = []

/** Records the requests of one method and route: `(status, seconds) => void`. */
type Recorder = (status: number, seconds: number) => void

const makeRecorder = (method: string, route: string): Recorder => {
  const histogram = Metric.fromMetricKey(
    MetricKey.taggedWithLabels(latencyKey, [label("method", method), label("route", route)])
  )
  const counters = new Map<number, Metric.Metric.Counter<number>>()
  return (status, seconds) => {
    let counter = counters.get(status)
    if (counter === undefined) {
      counter = Metric.fromMetricKey(
        MetricKey.taggedWithLabels(requestsKey, [label("method", method), label("route", route), label("status", String(status))])
      )
      counters.set(status, counter)
    }
    counter.unsafeUpdate(1, noLabels)
    histogram.unsafeUpdate(seconds, noLabels)
  }
}

const recorders = new Map<string, Map<string, Recorder>>()

// The recorder of one method and route, built once and kept.
const recorder = (method: string, route: string): Recorder => {
  let byRoute = recorders.get(method)
  if (byRoute === undefined) {
    byRoute = new Map()
    recorders.set(method, byRoute)
  }
  let record = byRoute.get(route)
  if (record === undefined) {
    record = makeRecorder(method, route)
    byRoute.set(route, record)
  }
  return record
}

/**
 * Counts one request and records its latency, synchronously, outside any fiber: the pipeline
 * calls it once per answer (`Pipeline.ts`). (The service sets no fiber-level metric labels, so
 * this is what `Metric.update` would record.) `method` and `route` must be bounded labels — a
 * route's template or `unmatched`, and `Routes.methodLabel` — never raw request values.
 *
 * @since 0.2.0
 * @category recording
 */
export const recordNow = (method: string, route: string, status: number, seconds: number): void =>
  recorder(method, route)(status, seconds)

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")
const labels = (tags: ReadonlyArray<{ readonly key: string; readonly value: string }>, extra = "") => {
  const parts = tags.map((t) => `${t.key}="${escapeLabel(t.value)}"`)
  if (extra !== "") parts.push(extra)
  return parts.length === 0 ? "" : `{${parts.join(",")}}`
}

/** Effect's metric registry in the Prometheus text exposition format. */
export const renderRegistry = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const byName = new Map<string, Array<MetricPair.MetricPair.Untyped>>()
  for (const pair of pairs) {
    const list = byName.get(pair.metricKey.name) ?? []
    list.push(pair)
    byName.set(pair.metricKey.name, list)
  }
  let out = ""
  for (const [name, list] of [...byName].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const first = list[0]!
    const description = first.metricKey.description._tag === "Some" ? first.metricKey.description.value : name
    const state = first.metricState as { readonly _tag?: unknown }
    // A counter that may go down (not `incremental`, as Effect's own `effect_fiber_active`) is
    // a gauge; a counter's name ends in `_total`.
    const incremental = (first.metricKey.keyType as { readonly incremental?: boolean }).incremental === true
    const type = "buckets" in state ? "histogram" : "count" in state ? (incremental ? "counter" : "gauge") : "value" in state ? "gauge" : undefined
    if (type === undefined) continue
    const exposed = type === "counter" && !name.endsWith("_total") ? `${name}_total` : name
    out += `# HELP ${exposed} ${description}\n# TYPE ${exposed} ${type}\n`
    for (const pair of list) {
      const tags = pair.metricKey.tags
      const s = pair.metricState as unknown as {
        readonly count?: number
        readonly value?: number
        readonly buckets?: ReadonlyArray<readonly [number, number]>
        readonly sum?: number
      }
      if (type === "histogram") {
        for (const [boundary, cumulative] of s.buckets ?? []) {
          out += `${name}_bucket${labels(tags, `le="${Number.isFinite(boundary) ? boundary : "+Inf"}"`)} ${cumulative}\n`
        }
        if (!(s.buckets ?? []).some(([b]) => !Number.isFinite(b))) {
          out += `${name}_bucket${labels(tags, "le=\"+Inf\"")} ${s.count ?? 0}\n`
        }
        out += `${name}_sum${labels(tags)} ${s.sum ?? 0}\n${name}_count${labels(tags)} ${s.count ?? 0}\n`
      } else {
        out += `${exposed}${labels(tags)} ${"count" in s ? s.count : s.value}\n`
      }
    }
  }
  return out
}

const gauge = (name: string, help: string, value: number) => `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${name} ${value}\n`
const counter = (name: string, help: string, value: number) => `# HELP ${name} ${help}\n# TYPE ${name} counter\n${name} ${value}\n`

// Everything the process measures is listed from the start (at 0), not only once first
// counted: the store's cache counters and the URL reader's metrics.
let registered = false
const registerAll = () => {
  if (registered) return
  registered = true
  for (const metric of StoreMetrics.all) metric.unsafeValue(noLabels)
  UrlReader.reads.unsafeValue(noLabels)
  UrlReader.bytesRead.unsafeValue(noLabels)
  UrlReader.readSeconds.unsafeValue(noLabels)
}

/** GET /metrics. */
export const handler = Effect.gen(function*() {
  registerAll()
  const context = yield* ContextStore.ContextStore
  const history = yield* HistoryStore.HistoryStore
  const [cs, hs, pairs] = yield* Effect.all([context.stats, history.stats, Metric.snapshot])
  let body = renderRegistry(pairs)
  body += gauge("deixis_context_chats", "Chats in the context store", cs.chats)
  body += gauge("deixis_context_messages", "Messages in the context store", cs.messages)
  body += gauge("deixis_context_objects", "Objects in the context store", cs.objects)
  body += counter("deixis_context_evicted_chats_total", "Chats evicted from the context store", cs.evicted_chats)
  body += counter("deixis_context_evicted_messages_total", "Messages evicted from the context store", cs.evicted_messages)
  body += counter("deixis_context_evicted_objects_total", "Objects evicted from the context store", cs.evicted_objects)
  body += counter("deixis_context_swept_objects_total", "Objects swept from the context store", cs.swept_objects)
  body += gauge("deixis_history_chats", "Chats in the history store", hs.chats)
  body += gauge("deixis_history_items", "Items in the history store", hs.items)
  body += counter("deixis_history_evicted_chats_total", "Chats evicted from the history store", hs.evicted_chats)
  body += counter("deixis_history_evicted_items_total", "Items evicted from the history store", hs.evicted_items)
  return HttpServerResponse.text(body, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
})
