/**
 * Retention: a bot ingesting the same volume every day, swept daily, holds a bounded number
 * of rows — every table's count levels off instead of growing with the days.
 */
import { assert, describe, layer } from "@effect/vitest"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { ContextEventBatch, type ContextEventInput } from "@deixis/core/ContextEvent"
import { ContextStore } from "@deixis/core/ContextStore"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SqlStore from "../src/SqlStore.js"
import { pgLayerWithClient, sqliteLayerWithClient } from "./helpers.js"

const day = 24 * 3600 * 1000
const T0 = Date.parse("2026-01-01T00:00:00Z")
const decode = Schema.decodeUnknownSync(ContextEventBatch)
const tables = [
  "deixis_messages",
  "deixis_objects",
  "deixis_events",
  "deixis_polls",
  "deixis_history"
] as const

// Short retentions and a tiny sweep batch, so the test is small and sweeping takes many batches.
const retention = {
  object_retention: 2 * day,
  message_retention: 3 * day,
  event_retention: 2 * day,
  history_retention: 3 * day,
  sweep_batch: 7
}

const perDay = 30

const dayEvents = (chat: string, d: number): Array<ContextEventInput> => {
  const out: Array<ContextEventInput> = []
  for (let i = 0; i < perDay; i++) {
    const id = d * perDay + i + 1
    const at = new Date(T0 + d * day + i * 60_000).toISOString()
    out.push({
      type: "message_observed",
      chat_id: chat,
      message_id: id,
      topic_id: i % 3,
      sent_at: at,
      ...(i % 2 === 0 ? { links: [{ url: `https://example.com/${id}` }] } : {}),
      ...(i % 10 === 0 ? { poll: { poll_id: `${chat}-poll-${id}`, question: "Q?" } } : {})
    })
    if (i % 4 === 0) {
      out.push({ type: "object_activated", event_id: `act-${id}`, chat_id: chat, reason: "summarized", source_message_id: id, kind: "link", at })
    }
  }
  return out
}

const simulate = (chat: string) =>
  Effect.gen(function*() {
    const store = yield* ContextStore
    const history = yield* HistoryStore
    const sweeper = yield* SqlStore.Retention
    const sql = yield* SqlClient.SqlClient
    const counts: Array<ReadonlyArray<number>> = []
    for (let d = 0; d < 10; d++) {
      const now = T0 + d * day + day / 2
      yield* store.apply(decode(dayEvents(chat, d)), { now, ttl: TtlPolicy.defaultPolicy })
      for (let i = 0; i < perDay; i++) {
        yield* history.append({
          channel: "telegram",
          kind: "inbound_user",
          chat_id: chat,
          topic_id: null,
          chat_type: "group",
          message_id: String(d * perDay + i + 1),
          reply_to_message_id: null,
          bot_response_id: null,
          sent_at: T0 + d * day + i * 60_000,
          sender: { user_id: "1", username: null, nickname: "A", is_bot: false, display_ref: "A" },
          text: "hi",
          quote: null,
          attachments: []
        })
      }
      yield* sweeper.sweep(now)
      const row = yield* Effect.forEach(tables, (table) =>
        Effect.map(sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql(table)} WHERE chat_id = ${chat}`, (rows) => Number(rows[0]?.n)))
      counts.push(row)
    }
    return counts
  })

const levelsOff = (counts: ReadonlyArray<ReadonlyArray<number>>) => {
  const total = counts.length
  // From day 5 on, every day adds as many rows as the sweep removes: each table's count is flat.
  const settled = counts.slice(5)
  for (let t = 0; t < tables.length; t++) {
    const series = settled.map((row) => row[t]!)
    assert.isTrue(series.every((n) => n === series[0]), `${tables[t]} levels off: ${JSON.stringify(counts.map((r) => r[t]))}`)
    assert.isTrue(series[0]! > 0, `${tables[t]} keeps recent rows`)
    // At most the retention (3 days) plus the current day of rows; unswept, it would hold all ten days.
    assert.isAtMost(series[0]!, 4 * counts[0]![t]!, `${tables[t]} holds a few days, not all ${total}`)
  }
}

describe("retention", () => {
  layer(sqliteLayerWithClient(retention))("sqlite", (it) => {
    it.effect("row counts level off under a daily sweep in small batches", () =>
      Effect.map(simulate("retention-sqlite"), levelsOff))
  })
  layer(pgLayerWithClient(retention))("postgres", (it) => {
    it.effect("row counts level off under a daily sweep in small batches", () =>
      Effect.map(simulate("retention-pg"), levelsOff))
  })
})
