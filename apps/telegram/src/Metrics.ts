/**
 * Prometheus metrics (prom-client): updates handled and their latency, Bot API failures by
 * method and error code, queue depth per chat, reminders due and sent, plus Node's process
 * metrics. One registry per process; `/metrics` on the operations server renders it.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Prometheus from "prom-client"

/**
 * The registry `/metrics` serves.
 *
 * @since 0.1.0
 * @category registry
 */
export const registry = new Prometheus.Registry()
Prometheus.collectDefaultMetrics({ register: registry, prefix: "deixis_bot_" })

/**
 * @since 0.1.0
 * @category metrics
 */
export const updates = new Prometheus.Counter({
  name: "deixis_bot_updates_total",
  help: "Updates received, by outcome (handled, duplicate, malformed, deferred, unrecorded, abandoned)",
  labelNames: ["outcome"] as const,
  registers: [registry]
})

/**
 * @since 0.1.0
 * @category metrics
 */
export const updateSeconds = new Prometheus.Histogram({
  name: "deixis_bot_update_duration_seconds",
  help: "Time from an update's arrival to the end of its handling (queueing included)",
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry]
})

/**
 * @since 0.1.0
 * @category metrics
 */
export const sendFailures = new Prometheus.Counter({
  name: "deixis_bot_send_failures_total",
  help: "Failed Bot API call attempts, by method and error code (429, 400, 5xx, network, timeout)",
  labelNames: ["method", "code"] as const,
  registers: [registry]
})

/**
 * @since 0.1.0
 * @category metrics
 */
export const remindersClaimed = new Prometheus.Counter({
  name: "deixis_bot_reminders_due_total",
  help: "Due reminders claimed for sending by this process",
  registers: [registry]
})

/**
 * @since 0.1.0
 * @category metrics
 */
export const remindersSent = new Prometheus.Counter({
  name: "deixis_bot_reminders_sent_total",
  help: "Reminders sent by this process",
  registers: [registry]
})

/**
 * @since 0.1.0
 * @category metrics
 */
export const remindersDropped = new Prometheus.Counter({
  name: "deixis_bot_reminders_dropped_total",
  help: "Reminders given up (the chat refuses them: bot removed, chat gone)",
  registers: [registry]
})

/**
 * What the gauges read at scrape time (set by the running bot).
 *
 * @since 0.1.0
 * @category models
 */
export interface Probes {
  readonly queue: () => { readonly queued: number; readonly chats: number; readonly deepest: ReadonlyArray<readonly [string, number]> }
  readonly reminders: () => Promise<{ readonly pending: number; readonly due: number } | null>
}

let probes: Probes | null = null

/**
 * Points the gauges at a running bot (the last one set wins).
 *
 * @since 0.1.0
 * @category registry
 */
export const setProbes = (next: Probes | null): void => {
  probes = next
}

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
  name: "deixis_bot_chat_queue_depth",
  help: "Updates waiting or being handled in the ten busiest chats (and topics)",
  labelNames: ["chat"] as const,
  registers: [registry],
  collect() {
    this.reset()
    for (const [chat, depth] of probes?.queue().deepest ?? []) this.set({ chat }, depth)
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

/**
 * Counts one failed Bot API attempt.
 *
 * @since 0.1.0
 * @category metrics
 */
export const sendFailed = (method: string, code: string): Effect.Effect<void> => Effect.sync(() => sendFailures.inc({ method, code }))

/**
 * The registry in the Prometheus text format.
 *
 * @since 0.1.0
 * @category registry
 */
export const render: Effect.Effect<{ readonly contentType: string; readonly body: string }> = Effect.promise(async () => ({
  contentType: registry.contentType,
  body: await registry.metrics()
}))

/**
 * @since 0.3.0
 * @category metrics
 */
export const urlReads = new Prometheus.Counter({
  name: "deixis_bot_url_reads_total",
  help: "Pages read by the LLM's read_url tool, by outcome (ok, or why not: forbidden_address, timeout, …)",
  labelNames: ["outcome"] as const,
  registers: [registry]
})

/**
 * @since 0.3.0
 * @category metrics
 */
export const urlReadBytes = new Prometheus.Counter({
  name: "deixis_bot_url_read_bytes_total",
  help: "Body bytes read by the LLM's read_url tool",
  registers: [registry]
})

/**
 * Counts one read of `read_url` (the reader's `onRead`).
 *
 * @since 0.3.0
 * @category metrics
 */
export const recordRead = (record: { readonly outcome: string; readonly bytes: number }): void => {
  urlReads.inc({ outcome: record.outcome })
  urlReadBytes.inc(record.bytes)
}
