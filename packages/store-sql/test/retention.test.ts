/**
 * Retention: by default what deixis recorded is kept whatever its age (a year-old import stays);
 * with retentions set, a bot ingesting the same volume every day, swept daily, holds a bounded
 * number of rows — every table's count levels off instead of growing with the days; and every
 * scheduled sweep that removed something says what, per table, at Info.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { ContextEventBatch, type ContextEventInput } from "@deixis/core/ContextEvent"
import { ContextStore } from "@deixis/core/ContextStore"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as path from "node:path"
import * as Sqlite from "../src/Sqlite.js"
import * as SqlStore from "../src/SqlStore.js"
import { makeTempDir, pgLayerWithClient, sqliteLayerWithClient, tempDir } from "./helpers.js"

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

const item = (chat: string, id: number, sentAt: number) => ({
  channel: "telegram" as const,
  kind: "inbound_user" as const,
  chat_id: chat,
  topic_id: null,
  chat_type: "group",
  message_id: String(id),
  reply_to_message_id: null,
  bot_response_id: null,
  sent_at: sentAt,
  sender: { user_id: "1", username: null, nickname: "A", is_bot: false, display_ref: "A" },
  text: "hi",
  quote: null,
  attachments: []
})

/** A chat whose whole past was imported at `now`: every message sent a year before. */
const yearOld = (chat: string, now: number) =>
  Effect.gen(function*() {
    const sentAt = now - 365 * day
    const events = dayEvents(chat, 0).map((e) => e.type === "message_observed" ? { ...e, sent_at: new Date(sentAt).toISOString() } : e)
    yield* Effect.flatMap(ContextStore, (s) => s.apply(decode(events), { now, ttl: TtlPolicy.defaultPolicy }))
    yield* Effect.flatMap(HistoryStore, (h) => h.appendAll(Array.from({ length: perDay }, (_, i) => item(chat, i + 1, sentAt))))
  })

const countRows = (chat: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.forEach(tables, (table) =>
      Effect.map(sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql(table)} WHERE chat_id = ${chat}`, (rows) => Number(rows[0]?.n))))

/** With the default retention, a year-old chat is whole after sweeps a day apart: nothing of it goes. */
const keptByDefault = (chat: string) =>
  Effect.gen(function*() {
    yield* yearOld(chat, T0)
    const before = yield* countRows(chat)
    const sweeper = yield* SqlStore.Retention
    const first = yield* sweeper.sweep(T0 + 60_000)
    const second = yield* sweeper.sweep(T0 + day)
    assert.deepStrictEqual([first, second], [SqlStore.nothingSwept, SqlStore.nothingSwept])
    assert.deepStrictEqual(yield* countRows(chat), before)
    assert.isTrue(before.every((n, i) => tables[i] === "deixis_events" || n > 0), JSON.stringify(before))
  })

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

describe("the default retention keeps what was recorded, however old", () => {
  layer(sqliteLayerWithClient())("sqlite", (it) => {
    it.effect("a year-old chat, imported now, is whole after two sweeps", () => keptByDefault("kept-sqlite"))
  })
  layer(pgLayerWithClient())("postgres", (it) => {
    it.effect("a year-old chat, imported now, is whole after two sweeps", () => keptByDefault("kept-pg"))
  })
})

/** Waits, in real time, until `done()` holds. */
const until = (done: () => boolean): Effect.Effect<void> =>
  Effect.promise(async () => {
    while (!done()) await new Promise((resolve) => setTimeout(resolve, 5))
  })

describe("the scheduled sweep's log", () => {
  it.scoped("the retention in force at start, then each sweep that removed rows, per table, at Info; only a Debug line when nothing went", () =>
    Effect.gen(function*() {
      const lines: Array<{ level: string; message: unknown; annotations: Record<string, unknown> }> = []
      const capture = Logger.make(({ annotations, logLevel, message }) => {
        lines.push({ level: logLevel.label, message, annotations: Object.fromEntries(annotations) })
      })
      yield* TestClock.setTime(T0)
      // Debug too: the sweep fiber inherits the level of the fiber that built the layer.
      const stores = yield* Logger.withMinimumLogLevel(LogLevel.Debug)(Layer.build(
        Sqlite.layer({
          filename: path.join(makeTempDir(), "deixis.db"),
          sweep_interval: 60_000,
          message_retention: 30 * day,
          history_retention: 30 * day
        }).pipe(Layer.provide(Logger.replace(Logger.defaultLogger, capture)))
      ))
      // Both retentions on in a new file: each sweep's index is made at start, said first.
      assert.deepStrictEqual(lines.splice(0, 2), [
        {
          level: "INFO",
          message: ["store creating the retention sweep's index"],
          annotations: { index: "deixis_messages_sent", table: "deixis_messages", message_retention: "30d" }
        },
        {
          level: "INFO",
          message: ["store creating the retention sweep's index"],
          annotations: { index: "deixis_history_sent", table: "deixis_history", history_retention: "30d" }
        }
      ])
      const info = () => lines.filter((l) => l.level === "INFO")
      const debug = () => lines.filter((l) => l.level === "DEBUG")
      // A sweep's statements run on the writer thread: the test clock starts it, real time ends it.
      const sweeps = (n: number) => until(() => info().length + debug().length >= n + 1)
      yield* TestClock.adjust("1 second")
      yield* sweeps(1)
      // The first sweep ran and removed nothing: said at Debug only.
      assert.deepStrictEqual(lines.filter((l) => l.level === "DEBUG").map((l) => l.message), [["store sweep removed nothing"]])
      assert.deepStrictEqual(info(), [{
        level: "INFO",
        message: ["store retention"],
        annotations: { objects: "off", messages: "30d", history_items: "30d", event_ids: "7d", sweep_interval: "1m" }
      }])
      // A year-old import into a store that keeps 30 days of messages: the next sweep removes them.
      yield* yearOld("logged", T0).pipe(Effect.provide(stores))
      yield* TestClock.adjust("60 seconds")
      yield* sweeps(2)
      assert.deepStrictEqual(info().slice(1), [{
        level: "INFO",
        message: ["store sweep removed rows"],
        annotations: { objects: 0, messages: perDay, event_ids: 0, poll_ids: 0, poll_closes: 0, history_items: perDay }
      }])
      // The objects stay (their retention is off), and a sweep that removes nothing says nothing.
      assert.isAbove((yield* Effect.flatMap(ContextStore, (s) => s.snapshot("logged")).pipe(Effect.provide(stores))).objects.length, 0)
      yield* TestClock.adjust("60 seconds")
      yield* sweeps(3)
      assert.strictEqual(info().length, 2)
      assert.strictEqual(lines.filter((l) => l.level === "DEBUG").length, 2)
    }))
})

/** Which of the retention sweeps' indexes the database holds. */
const sweepIndexes = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ name: string }>`SELECT name FROM sqlite_schema WHERE type = 'index' AND name IN ('deixis_messages_sent', 'deixis_history_sent', 'deixis_objects_since')`.pipe(
      Effect.orElse(() =>
        sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema()
          AND indexname IN ('deixis_messages_sent', 'deixis_history_sent', 'deixis_objects_since')`
      )
    ),
    (rows) => rows.map((r) => r.name).sort()
  ))

describe("the retention sweeps' indexes", () => {
  // Only a sweep reads messages and history items by sent_at, objects by since: with those
  // retentions off (the default) no recorded message writes an entry for it.
  layer(sqliteLayerWithClient())("sqlite, retention off", (it) => {
    it.effect("no index by sent_at or since", () => Effect.map(sweepIndexes, (names) => assert.deepStrictEqual(names, [])))
  })
  layer(pgLayerWithClient())("postgres, retention off", (it) => {
    it.effect("no index by sent_at or since", () => Effect.map(sweepIndexes, (names) => assert.deepStrictEqual(names, [])))
  })
  layer(sqliteLayerWithClient({ message_retention: 3 * day }))("sqlite, message retention on", (it) => {
    it.effect("the messages' index by sent_at, not the history's", () =>
      Effect.map(sweepIndexes, (names) => assert.deepStrictEqual(names, ["deixis_messages_sent"])))
  })
  layer(pgLayerWithClient(retention))("postgres, every retention on", (it) => {
    it.effect("the three indexes", () =>
      Effect.map(sweepIndexes, (names) => assert.deepStrictEqual(names, ["deixis_history_sent", "deixis_messages_sent", "deixis_objects_since"])))
  })
  it.scoped("a database whose retention is turned on at a later start gets its index then, and keeps it when the retention is turned off again", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "deixis.db")
      const start = (options: Partial<SqlStore.RetentionOptions>) =>
        Effect.scoped(Effect.provide(
          Effect.zip(sweepIndexes, Effect.flatMap(SqlStore.Retention, (r) => r.sweep(T0))),
          SqlStore.layerStores({ sweep_interval: 0, ...options }).pipe(Layer.provideMerge(Sqlite.layerClient({ filename })))
        ))
      const [off] = yield* start({})
      const [on, swept] = yield* start({ history_retention: 3 * day })
      const [again] = yield* start({ history_retention: 3 * day })
      const [offAgain] = yield* start({})
      assert.deepStrictEqual([off, on, again, offAgain], [[], ["deixis_history_sent"], ["deixis_history_sent"], ["deixis_history_sent"]])
      assert.deepStrictEqual(swept, SqlStore.nothingSwept)
    }))
})

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
