/**
 * The HistoryStore over SQL. A row's position is `(anchor_len, anchor, seq)`: core's message
 * order (length, then code points) followed by the per-chat append counter of items without a
 * message id. Every read is one indexed range scan in one chat and topic.
 */
import { HistoryItem, mergeVersions } from "@deixis/chathistory/HistoryItem"
import type { AppendResult, HistoryEntry, HistoryScope, HistoryStoreShape, HistoryStoreStats } from "@deixis/chathistory/HistoryStore"
import { externalIdOf } from "@deixis/chathistory/HistoryStore"
import { StoreError } from "@deixis/core/ContextStore"
import { migratedMessageId, positionLength } from "@deixis/core/Ids"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type Db, describe, num, type Param, type Row, str, topicKey } from "./db.js"

export interface HistorySettings {
  /** How long an item is kept after it was sent. */
  readonly history_retention: number
  /** Rows deleted per statement by a sweep. */
  readonly sweep_batch: number
}

const decodeItem = Schema.decodeUnknownEither(Schema.typeSchema(HistoryItem))

const itemOf = (body: unknown): Either.Either<HistoryItem, string> =>
  Either.flatMap(
    Either.try({ try: (): unknown => JSON.parse(str(body)), catch: () => "invalid JSON" }),
    (json) => Either.mapLeft(decodeItem(json), (e) => e.message)
  )

const failStore = (what: string) => (error: SqlError | string) =>
  new StoreError({ message: `history ${what} failed: ${typeof error === "string" ? error : describe(error)}` })

const columns = "anchor, seq, body"

export const makeSqlHistoryStore = (db: Db, settings: HistorySettings) => {
  const C = db.C
  // PostgreSQL text cannot hold NUL: such an id was never stored, so it finds nothing.
  const storable = (id: string) => db.dialect !== "pg" || !id.includes("\u0000")
  const position = `anchor_len, anchor${C}, seq`
  const desc = `anchor_len DESC, anchor${C} DESC, seq DESC`
  const asc = `anchor_len, anchor${C}, seq`

  const entriesOf = (rows: ReadonlyArray<Row>): Either.Either<Array<HistoryEntry>, string> => {
    const out: Array<HistoryEntry> = []
    for (const r of rows) {
      const item = itemOf(r["body"])
      if (Either.isLeft(item)) return Either.left(item.left)
      out.push({ item: item.right, anchor: str(r["anchor"]), seq: num(r["seq"]) })
    }
    return Either.right(out)
  }

  /** Rows come newest first; entries are returned oldest first. */
  const oldestFirst = (rows: ReadonlyArray<Row>) => Either.map(entriesOf(rows), (entries) => entries.reverse())

  const find = (scope: HistoryScope, externalId: unknown) =>
    Effect.gen(function*() {
      const id = Option.filter(externalIdOf(externalId), storable)
      if (Option.isNone(id)) return Option.none<Row>()
      // By message id first; only when no item has it, by the id of the bot's response.
      const byId = yield* db.query(`SELECT topic, ${columns} FROM deixis_history WHERE chat_id = ? AND message_id = ?`, [
        scope.chat_id,
        id.value
      ])
      const row = byId[0] ??
        (yield* db.query(
          `SELECT topic, ${columns} FROM deixis_history WHERE chat_id = ? AND response_id = ? ORDER BY seq DESC LIMIT 1`,
          [scope.chat_id, id.value]
        ))[0]
      return row !== undefined && str(row["topic"]) === topicKey(scope.topic_id) ? Option.some(row) : Option.none<Row>()
    })

  /** One append, inside the caller's transaction. */
  const appendOne = (incoming: HistoryItem): Effect.Effect<AppendResult, SqlError | string> =>
    Effect.gen(function*() {
      // The chat's counter row: its update serialises appends to one chat across processes.
      const counter = yield* db.query(
        `INSERT INTO deixis_history_chats (chat_id, seq) VALUES (?, 1)
         ON CONFLICT (chat_id) DO UPDATE SET seq = deixis_history_chats.seq + 1 RETURNING seq`,
        [incoming.chat_id]
      )
      const id = incoming.message_id
      if (id !== null) {
        const existing = yield* db.query(`SELECT body FROM deixis_history WHERE chat_id = ? AND message_id = ?`, [
          incoming.chat_id,
          id
        ])
        const stored = existing[0]
        if (stored !== undefined) {
          // The higher version of the message wins; a replaced item keeps its position and its topic.
          const before = yield* itemOf(stored["body"])
          const item = mergeVersions(before, incoming)
          if (item === undefined) return "unchanged" as const
          yield* db.query(
            `UPDATE deixis_history SET reply_to = ?, response_id = ?, sent_at = ?, rev = rev + 1, body = ?
             WHERE chat_id = ? AND message_id = ?`,
            [item.reply_to_message_id, item.bot_response_id, item.sent_at, JSON.stringify(item), item.chat_id, id]
          )
          return "replaced" as const
        }
      } else if (incoming.event_id !== undefined) {
        const known = yield* db.query(`SELECT 1 AS found FROM deixis_history WHERE chat_id = ? AND event_id = ?`, [
          incoming.chat_id,
          incoming.event_id
        ])
        if (known.length > 0) return "unchanged" as const
      }
      const topic = topicKey(incoming.topic_id)
      let anchor = id
      let seq = 0
      if (anchor === null) {
        // Right after the newest message its topic holds.
        const newest = yield* db.query(
          `SELECT anchor FROM deixis_history WHERE chat_id = ? AND topic = ? AND seq = 0 ORDER BY ${desc} LIMIT 1`,
          [incoming.chat_id, topic]
        )
        anchor = newest[0] === undefined ? "" : str(newest[0]["anchor"])
        seq = num(counter[0]?.["seq"])
      }
      const params: ReadonlyArray<Param> = [
        incoming.chat_id,
        topic,
        positionLength(anchor),
        anchor,
        seq,
        id,
        incoming.reply_to_message_id,
        incoming.bot_response_id,
        id === null ? incoming.event_id ?? null : null,
        incoming.sent_at,
        JSON.stringify(incoming)
      ]
      yield* db.query(
        `INSERT INTO deixis_history (chat_id, topic, anchor_len, anchor, seq, message_id, reply_to, response_id, event_id, sent_at, rev, body)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`,
        params
      )
      return "appended" as const
    })

  const append = (incoming: HistoryItem): Effect.Effect<AppendResult, StoreError> =>
    db.transaction(appendOne(incoming)).pipe(Effect.mapError(failStore("append")))

  const appendAll = (items: ReadonlyArray<HistoryItem>): Effect.Effect<ReadonlyArray<AppendResult>, StoreError> =>
    items.length === 0
      ? Effect.succeed([])
      : db.transaction(Effect.forEach(items, appendOne)).pipe(Effect.mapError(failStore("appendAll")))

  const migrateChat = (from: string, to: string): Effect.Effect<number, StoreError> =>
    from === to ? Effect.succeed(0) : db.transaction(Effect.gen(function*() {
      // Both chats' counters, locked in a fixed order.
      for (const chatId of [from, to].sort()) {
        yield* db.query(
          `INSERT INTO deixis_history_chats (chat_id, seq) VALUES (?, 0)
           ON CONFLICT (chat_id) DO UPDATE SET seq = deixis_history_chats.seq RETURNING seq`,
          [chatId]
        )
      }
      const rows = yield* db.query(
        `SELECT topic, anchor, seq, message_id, event_id, body FROM deixis_history WHERE chat_id = ? ORDER BY ${asc}`,
        [from]
      )
      const rekey = (v: string | null) => (v === null ? null : migratedMessageId(v))
      let moved = 0
      for (const r of rows) {
        const item = yield* itemOf(r["body"])
        const messageId = rekey(item.message_id)
        if (messageId !== null) {
          const taken = yield* db.query(`SELECT 1 AS found FROM deixis_history WHERE chat_id = ? AND message_id = ?`, [to, messageId])
          if (taken.length > 0) continue
        }
        const next: HistoryItem = {
          ...item,
          chat_id: to,
          message_id: messageId,
          reply_to_message_id: rekey(item.reply_to_message_id),
          bot_response_id: rekey(item.bot_response_id)
        }
        // An item placed before any message ("" anchor) goes before the old chat's messages.
        const anchor = migratedMessageId(str(r["anchor"]))
        const inserted = yield* db.query(
          `INSERT INTO deixis_history (chat_id, topic, anchor_len, anchor, seq, message_id, reply_to, response_id, event_id, sent_at, rev, body)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?) ON CONFLICT DO NOTHING RETURNING 1 AS ok`,
          [
            to,
            str(r["topic"]),
            positionLength(anchor),
            anchor,
            num(r["seq"]),
            messageId,
            next.reply_to_message_id,
            next.bot_response_id,
            r["event_id"] === null || r["event_id"] === undefined ? null : str(r["event_id"]),
            next.sent_at,
            JSON.stringify(next)
          ]
        )
        moved += inserted.length
      }
      yield* db.query(`DELETE FROM deixis_history WHERE chat_id = ?`, [from])
      yield* db.query(
        `UPDATE deixis_history_chats SET seq = (SELECT MAX(seq) FROM deixis_history_chats WHERE chat_id IN (?, ?)) WHERE chat_id = ?`,
        [from, to, to]
      )
      yield* db.query(`DELETE FROM deixis_history_chats WHERE chat_id = ?`, [from])
      return moved
    })).pipe(Effect.mapError(failStore("migrateChat")))

  const lookup = (scope: HistoryScope, externalId: string | number) =>
    find(scope, externalId).pipe(
      Effect.flatMap((row) =>
        Option.match(row, {
          onNone: () => Effect.succeed(Option.none<HistoryEntry>()),
          onSome: (r) => Effect.map(entriesOf([r]), (entries) => Option.fromNullable(entries[0]))
        })
      ),
      Effect.mapError(failStore("lookup"))
    )

  const around = (scope: HistoryScope, externalId: string | number, window: { readonly before: number; readonly after: number }) =>
    Effect.gen(function*() {
      const found = yield* find(scope, externalId)
      if (Option.isNone(found)) return []
      const anchor = str(found.value["anchor"])
      const seq = num(found.value["seq"])
      const topic = topicKey(scope.topic_id)
      const at: ReadonlyArray<Param> = [positionLength(anchor), anchor, seq]
      const before = Math.max(0, window.before)
      const after = Math.max(0, window.after)
      const older = before === 0 ? [] : yield* db.query(
        `SELECT ${columns} FROM deixis_history WHERE chat_id = ? AND topic = ? AND (${position}) < (?, ?, ?) ORDER BY ${desc} LIMIT ?`,
        [scope.chat_id, topic, ...at, before]
      )
      const newer = after === 0 ? [] : yield* db.query(
        `SELECT ${columns} FROM deixis_history WHERE chat_id = ? AND topic = ? AND (${position}) > (?, ?, ?) ORDER BY ${asc} LIMIT ?`,
        [scope.chat_id, topic, ...at, after]
      )
      return yield* entriesOf([...[...older].reverse(), found.value, ...newer])
    }).pipe(Effect.mapError(failStore("around")))

  const recent = (scope: HistoryScope, n: number, options?: { readonly before?: string | undefined }) =>
    Effect.gen(function*() {
      if (n <= 0) return []
      const topic = topicKey(scope.topic_id)
      const before = options?.before
      const rows = before === undefined
        ? yield* db.query(`SELECT ${columns} FROM deixis_history WHERE chat_id = ? AND topic = ? ORDER BY ${desc} LIMIT ?`, [
          scope.chat_id,
          topic,
          n
        ])
        : yield* db.query(
          `SELECT ${columns} FROM deixis_history WHERE chat_id = ? AND topic = ? AND (${position}) < (?, ?, 0) ORDER BY ${desc} LIMIT ?`,
          [scope.chat_id, topic, positionLength(before), before, n]
        )
      return yield* oldestFirst(rows)
    }).pipe(Effect.mapError(failStore("recent")))

  const replies = (
    scope: HistoryScope,
    messageId: string,
    options: { readonly limit: number; readonly before?: string | undefined }
  ) =>
    Effect.gen(function*() {
      if (options.limit <= 0) return []
      const topic = topicKey(scope.topic_id)
      const before = options.before
      const rows = before === undefined
        ? yield* db.query(
          `SELECT ${columns} FROM deixis_history WHERE chat_id = ? AND reply_to = ? AND topic = ? ORDER BY ${desc} LIMIT ?`,
          [scope.chat_id, messageId, topic, options.limit]
        )
        : yield* db.query(
          `SELECT ${columns} FROM deixis_history WHERE chat_id = ? AND reply_to = ? AND topic = ? AND (${position}) < (?, ?, 0)
           ORDER BY ${desc} LIMIT ?`,
          [scope.chat_id, messageId, topic, positionLength(before), before, options.limit]
        )
      return yield* oldestFirst(rows)
    }).pipe(Effect.mapError(failStore("replies")))

  const recordResponse = (scope: HistoryScope, messageId: string | number, responseId: string | number) =>
    db.transaction(Effect.gen(function*() {
      const id = Option.filter(externalIdOf(messageId), storable)
      const response = Option.filter(externalIdOf(responseId), storable)
      if (Option.isNone(id) || Option.isNone(response)) return false
      const rows = yield* db.query(`SELECT topic, body FROM deixis_history WHERE chat_id = ? AND message_id = ?`, [
        scope.chat_id,
        id.value
      ])
      const row = rows[0]
      if (row === undefined || str(row["topic"]) !== topicKey(scope.topic_id)) return false
      const item = yield* itemOf(row["body"])
      const next: HistoryItem = { ...item, bot_response_id: response.value }
      yield* db.query(
        `UPDATE deixis_history SET response_id = ?, rev = rev + 1, body = ? WHERE chat_id = ? AND message_id = ?`,
        [response.value, JSON.stringify(next), scope.chat_id, id.value]
      )
      return true
    })).pipe(Effect.mapError(failStore("recordResponse")))

  const counters = { evicted_items: 0 }

  /** Removes items sent longer than the retention ago, `sweep_batch` rows per transaction. */
  const sweep = (now: number): Effect.Effect<number, StoreError> =>
    Effect.gen(function*() {
      let total = 0
      for (;;) {
        const rows = yield* db.transaction(db.query(
          `DELETE FROM deixis_history WHERE (chat_id, topic, anchor_len, anchor, seq) IN (
             SELECT chat_id, topic, anchor_len, anchor, seq FROM deixis_history WHERE sent_at <= ? LIMIT ?
           ) RETURNING 1 AS gone`,
          [now - settings.history_retention, settings.sweep_batch]
        ))
        total += rows.length
        if (rows.length < settings.sweep_batch) break
      }
      counters.evicted_items += total
      return total
    }).pipe(Effect.mapError(failStore("sweep")))

  const stats: Effect.Effect<HistoryStoreStats, StoreError> = db.query(
    `SELECT (SELECT count(*) FROM deixis_history_chats) AS chats, (SELECT count(*) FROM deixis_history) AS items`
  ).pipe(
    Effect.map((rows) => ({
      chats: num(rows[0]?.["chats"]),
      items: num(rows[0]?.["items"]),
      evicted_chats: 0,
      evicted_items: counters.evicted_items
    })),
    Effect.mapError(failStore("stats"))
  )

  const store: HistoryStoreShape = { append, appendAll, lookup, around, recent, replies, recordResponse, migrateChat, stats }
  return { store, sweep }
}
