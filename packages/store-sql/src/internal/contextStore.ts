/**
 * The ContextStore over SQL. `apply` asks core's shared reducer which rows a batch reads (a run
 * over nothing loaded), loads them with one statement per table, runs the reducer over them
 * through a synchronous `StateWriter`, and writes back what changed — all in one transaction
 * holding the batch's chats locked. `pool` builds the bounded candidate
 * pool of the memory adapter with one indexed query (two when the request's topic is unknown
 * and the rest of the chat is searched): on SQLite a UNION of bounded parts, on PostgreSQL the
 * `deixis_pool` function (same parts, plans kept per connection).
 */
import type { ApplyResult, ContextEvent } from "@deixis/core/ContextEvent"
import { type ContextObject, isActive, type MessageMeta, messageObject } from "@deixis/core/ContextObject"
import { applyEvent, type StateWriter } from "@deixis/core/ContextReducer"
import type {
  ApplyOptions,
  CandidatePool,
  ChatSnapshot,
  ContextStoreShape,
  PoolEntry,
  PoolQuery,
  PoolTier,
  StoreStats
} from "@deixis/core/ContextStore"
import { StoreError } from "@deixis/core/ContextStore"
import { type ChatInfo, effectiveTopic, type MigrationResult, unknownChat } from "@deixis/core/ChatInfo"
import { compareMessageIds, migratedMessageId, positionLength } from "@deixis/core/Ids"
import type { ObjectKind } from "@deixis/core/ObjectKind"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  bool,
  chunks,
  type Db,
  describe,
  marks,
  num,
  type ColumnType,
  type Param,
  type Row,
  rowsTables,
  type Scalar,
  str,
  strOrNull,
  topicKey,
  topicOf,
  tuples
} from "./db.js"
import { ContextObject as ContextObjectSchema } from "@deixis/core/ContextObject"
import { storable, storableObjectId } from "./ids.js"

export interface ContextSettings {
  /** How long an object is kept after it stops being active (or, never activated, after it was created). */
  readonly object_retention: number
  /** How long a message's metadata is kept after it was sent. */
  readonly message_retention: number
  /** How long an applied event id (and a poll id, a pending poll close) is remembered. */
  readonly event_retention: number
  /** Rows deleted per statement by a sweep. */
  readonly sweep_batch: number
}

const decodeObject = Schema.decodeUnknownEither(Schema.typeSchema(ContextObjectSchema))

const parseJson = (text: string): Either.Either<unknown, string> =>
  Either.try({ try: (): unknown => JSON.parse(text), catch: () => "invalid JSON" })

// Pools read the same few hundred bodies over and over: decoded objects (immutable values) are
// kept by their exact JSON text, so a hot object is validated once, not on every call.
const decoded = new Map<string, ContextObject>()
const maxDecoded = 20_000

/** A stored object back from its JSON body; a row that does not decode is a storage failure. */
const objectOf = (body: unknown): Either.Either<ContextObject, string> => {
  const text = str(body)
  const known = decoded.get(text)
  if (known !== undefined) return Either.right(known)
  const result = Either.flatMap(parseJson(text), (json) => Either.mapLeft(decodeObject(json), (e) => e.message))
  if (Either.isRight(result)) {
    if (decoded.size >= maxDecoded) decoded.clear()
    decoded.set(text, result.right)
  }
  return result
}

const messageOf = (chatId: string, row: Row): MessageMeta => ({
  chat_id: chatId,
  message_id: str(row["mid"] ?? row["message_id"]),
  topic_id: topicOf(row["topic"]),
  reply_to_message_id: strOrNull(row["reply_to"]),
  sender_user_id: strOrNull(row["sender"]),
  from_bot: bool(row["from_bot"]),
  sent_at: num(row["sent_at"])
})

const failStore = (what: string) => (error: SqlError | string) =>
  new StoreError({ message: `${what} failed: ${typeof error === "string" ? error : describe(error)}` })

/** A composite key that cannot collide, whatever characters ids hold. */
const key = (a: string, b: string) => `${a.length}:${a}${b}`

const objectColumns = "chat_id, object_id, seq, kind, topic, source_message_id, created_by, active_until, since, body"

interface PollRef {
  readonly chat_id: string
  readonly object_id: string
}
interface Close {
  readonly event_id: string
  readonly at: number
}

/** What a batch needs loaded; grown when the reducer asks for something not loaded yet. */
class Wanted {
  readonly chats = new Set<string>()
  readonly messages = new Map<string, readonly [string, string]>()
  readonly byMessage = new Map<string, readonly [string, string]>()
  readonly objects = new Map<string, readonly [string, string]>()
  readonly polls = new Set<string>()
  readonly seen = new Map<string, readonly [string, string]>()
  size() {
    return this.chats.size + this.messages.size + this.byMessage.size + this.objects.size + this.polls.size + this.seen.size
  }
  message(chat: string, id: string) {
    this.chats.add(chat)
    this.messages.set(key(chat, id), [chat, id])
    this.byMessage.set(key(chat, id), [chat, id])
  }
  object(chat: string, id: string) {
    this.chats.add(chat)
    this.objects.set(key(chat, id), [chat, id])
  }
  event(chat: string, id: string) {
    this.chats.add(chat)
    this.seen.set(key(chat, id), [chat, id])
  }
}

/** The rows of one batch, as loaded, then as the reducer changes them. */
interface Loaded {
  readonly nextSeq: Map<string, number>
  /** Chat id → whether it is a forum. */
  readonly forums: Map<string, boolean>
  readonly messages: Map<string, MessageMeta | null>
  readonly objects: Map<string, ContextObject | null>
  /** Message key → keys of its objects, in the order they were stored. */
  readonly byMessage: Map<string, Array<string>>
  readonly polls: Map<string, PollRef | null>
  readonly closes: Map<string, Close | null>
  readonly seen: Set<string>
  readonly seenLoaded: Set<string>
  /** Object key → its stored sequence number. */
  readonly seqs: Map<string, number>
}

/** Nothing loaded: the reducer run over it names, as missing, every row a batch reads. */
const nothingLoaded = (): Loaded => ({
  nextSeq: new Map(),
  forums: new Map(),
  messages: new Map(),
  objects: new Map(),
  byMessage: new Map(),
  polls: new Map(),
  closes: new Map(),
  seen: new Set(),
  seenLoaded: new Set(),
  seqs: new Map()
})

interface Changes {
  readonly messages: Array<MessageMeta>
  /** Chat id → its new forum flag. */
  readonly forums: Map<string, boolean>
  /** Object key → the object removed (an edit took away what it stood for). */
  readonly removed: Map<string, ContextObject>
  /** Object key → the object and whether it takes a new sequence number (new, or moved topic). */
  readonly objects: Map<string, { object: ContextObject; fresh: boolean }>
  readonly polls: Map<string, PollRef>
  readonly closes: Map<string, Close | null>
  readonly seen: Array<readonly [string, string]>
}

export const makeSqlContextStore = (db: Db, settings: ContextSettings): ContextStoreShape => {
  const C = db.C
  const pg = db.dialect === "pg"

  // ---------------------------------------------------------------------------
  // apply
  // ---------------------------------------------------------------------------

  /**
   * The keys `k` joined to the rows of `table` matching `on`, one index probe per key: on SQLite a
   * CROSS JOIN fixes that order; on PostgreSQL a LATERAL subquery (OFFSET 0 keeps the planner from
   * flattening it), since without statistics it may hash-join the whole table instead.
   */
  const probe = (table: string, alias: string, on: string) =>
    pg ? `CROSS JOIN LATERAL (SELECT * FROM ${table} ${alias} WHERE ${on} OFFSET 0) AS ${alias}` : `CROSS JOIN ${table} ${alias} ON ${on}`
  /** Runs `statement` over `rows` passed in bulk as the table `k` (see rowsTables); returns every row it returns. */
  const bulk = (
    columns: ReadonlyArray<readonly [string, ColumnType]>,
    rows: ReadonlyArray<ReadonlyArray<Scalar>>,
    statement: (from: string) => string,
    uses = 1
  ): Effect.Effect<ReadonlyArray<Row>, SqlError> =>
    rows.length === 0 ? Effect.succeed([]) : Effect.map(
      Effect.forEach(rowsTables(db.dialect, columns, rows), (k) =>
        db.query(statement(k.from), uses === 1 ? k.params : Array.from({ length: uses }, () => k.params).flat(1))),
      (results) => results.length === 1 ? results[0]! : results.flat()
    )

  const load = (w: Wanted, now: number): Effect.Effect<Loaded, SqlError | string> =>
    Effect.gen(function*() {
      const chats = [...w.chats].sort()
      const nextSeq = new Map<string, number>()
      const forums = new Map<string, boolean>()
      for (const part of chunks(chats, 3)) {
        // Chat rows are created in a fixed order and (on PostgreSQL) locked, so concurrent batches over
        // the same chats run one after the other instead of interleaving their reads and writes.
        yield* db.query(
          `INSERT INTO deixis_chats (chat_id, next_seq, created_at) VALUES ${tuples(part.length, 3)} ON CONFLICT (chat_id) DO NOTHING`,
          part.flatMap((c) => [c, 1, now])
        )
        const rows = yield* db.query(
          `SELECT chat_id, next_seq, is_forum FROM deixis_chats WHERE chat_id IN ${marks(part.length)} ORDER BY chat_id${C}${
            pg ? " FOR UPDATE" : ""
          }`,
          part
        )
        for (const r of rows) {
          nextSeq.set(str(r["chat_id"]), num(r["next_seq"]))
          forums.set(str(r["chat_id"]), bool(r["is_forum"]))
        }
      }

      // Each table is read with one statement over the batch's keys passed in bulk (see rowsTables).
      const messages = new Map<string, MessageMeta | null>()
      for (const k of w.messages.keys()) messages.set(k, null)
      if (w.messages.size > 0) {
        const rows = yield* bulk(
          [["chat_id", "TEXT"], ["id_len", "INTEGER"], ["message_id", "TEXT"]],
          [...w.messages.values()].map(([c, m]) => [c, positionLength(m), m]),
          (from) =>
            `SELECT m.chat_id, m.message_id, m.topic, m.reply_to, m.sender, m.from_bot, m.sent_at FROM ${from}
           ${probe("deixis_messages", "m", "m.chat_id = k.chat_id AND m.id_len = k.id_len AND m.message_id = k.message_id")}`
        )
        for (const r of rows) {
          const m = messageOf(str(r["chat_id"]), r)
          messages.set(key(m.chat_id, m.message_id), m)
        }
      }

      const objects = new Map<string, ContextObject | null>()
      const byMessage = new Map<string, Array<string>>()
      for (const k of w.objects.keys()) objects.set(k, null)
      for (const k of w.byMessage.keys()) byMessage.set(k, [])
      const seqs = new Map<string, number>()
      const addObject = (row: Row) =>
        Either.map(objectOf(row["body"]), (o) => {
          const ok = key(o.chat_id, o.object_id)
          if (objects.get(ok) !== undefined && objects.get(ok) !== null) return
          objects.set(ok, o)
          seqs.set(ok, num(row["seq"]))
          const list = byMessage.get(key(o.chat_id, o.source_message_id))
          if (list !== undefined && !list.includes(ok)) list.push(ok)
        })
      if (w.byMessage.size > 0) {
        const rows = yield* bulk(
          [["chat_id", "TEXT"], ["message_id", "TEXT"]],
          [...w.byMessage.values()],
          (from) =>
            `SELECT o.body, o.seq FROM ${from}
           ${probe("deixis_objects", "o", "o.chat_id = k.chat_id AND o.source_message_id = k.message_id")} ORDER BY o.seq`
        )
        for (const r of rows) yield* addObject(r)
      }
      if (w.objects.size > 0) {
        const rows = yield* bulk(
          [["chat_id", "TEXT"], ["object_id", "TEXT"]],
          [...w.objects.values()],
          (from) =>
            `SELECT o.body, o.seq FROM ${from} ${probe("deixis_objects", "o", "o.chat_id = k.chat_id AND o.object_id = k.object_id")}`
        )
        for (const r of rows) yield* addObject(r)
      }

      const polls = new Map<string, PollRef | null>()
      const closes = new Map<string, Close | null>()
      const pollIds = [...w.polls]
      for (const id of pollIds) {
        polls.set(id, null)
        closes.set(id, null)
      }
      if (pollIds.length > 0) {
        // One statement for both lookups: the poll's object, and a close seen before the poll.
        const rows = yield* bulk(
          [["poll_id", "TEXT"]],
          pollIds.map((id) => [id]),
          (from) =>
            `SELECT 'p' AS part, p.poll_id, p.chat_id, p.object_id, CAST(NULL AS TEXT) AS event_id, CAST(NULL AS BIGINT) AS at
             FROM ${from} ${probe("deixis_polls", "p", "p.poll_id = k.poll_id")}
           UNION ALL
           SELECT 'c' AS part, c.poll_id, CAST(NULL AS TEXT), CAST(NULL AS TEXT), c.event_id, c.at
             FROM ${from} ${probe("deixis_poll_closes", "c", "c.poll_id = k.poll_id")}`, 2
        )
        for (const r of rows) {
          if (r["part"] === "p") polls.set(str(r["poll_id"]), { chat_id: str(r["chat_id"]), object_id: str(r["object_id"]) })
          else closes.set(str(r["poll_id"]), { event_id: str(r["event_id"]), at: num(r["at"]) })
        }
      }

      const seen = new Set<string>()
      const seenLoaded = new Set<string>(w.seen.keys())
      if (w.seen.size > 0) {
        const rows = yield* bulk(
          [["chat_id", "TEXT"], ["event_id", "TEXT"]],
          [...w.seen.values()],
          (from) =>
            `SELECT e.chat_id, e.event_id FROM ${from} ${probe("deixis_events", "e", "e.chat_id = k.chat_id AND e.event_id = k.event_id")}`
        )
        for (const r of rows) seen.add(key(str(r["chat_id"]), str(r["event_id"])))
      }
      return { nextSeq, forums, messages, objects, byMessage, polls, closes, seen, seenLoaded, seqs }
    })

  /** Runs the reducer over loaded rows; what it asked for and was not loaded goes to `missing`. */
  const reduce = (events: ReadonlyArray<ContextEvent>, options: ApplyOptions, s: Loaded, missing: Wanted) => {
    const changes: Changes = {
      messages: [],
      forums: new Map(),
      removed: new Map(),
      objects: new Map(),
      polls: new Map(),
      closes: new Map(),
      seen: []
    }
    const writer: StateWriter = {
      message: (chatId, messageId) => {
        const found = s.messages.get(key(chatId, messageId))
        if (found === undefined) missing.message(chatId, messageId)
        return found ?? undefined
      },
      object: (chatId, objectId) => {
        const found = s.objects.get(key(chatId, objectId))
        if (found === undefined) missing.object(chatId, objectId)
        return found ?? undefined
      },
      objectsOfMessage: (chatId, messageId) => {
        const list = s.byMessage.get(key(chatId, messageId))
        if (list === undefined) {
          missing.message(chatId, messageId)
          return []
        }
        const out: Array<ContextObject> = []
        for (const k of list) {
          const o = s.objects.get(k)
          if (o !== undefined && o !== null) out.push(o)
        }
        return out
      },
      pollObject: (pollId) => {
        const found = s.polls.get(pollId)
        if (found === undefined) missing.polls.add(pollId)
        if (found !== undefined && found !== null && !s.nextSeq.has(found.chat_id)) missing.chats.add(found.chat_id)
        return found ?? undefined
      },
      seen: (chatId, eventId) => {
        const k = key(chatId, eventId)
        if (!s.seenLoaded.has(k)) missing.event(chatId, eventId)
        return s.seen.has(k)
      },
      putMessage: (m) => {
        s.messages.set(key(m.chat_id, m.message_id), m)
        if (!s.byMessage.has(key(m.chat_id, m.message_id))) s.byMessage.set(key(m.chat_id, m.message_id), [])
        changes.messages.push(m)
      },
      putObject: (o, previous) => {
        const k = key(o.chat_id, o.object_id)
        s.objects.set(k, o)
        const list = s.byMessage.get(key(o.chat_id, o.source_message_id))
        if (list !== undefined && !list.includes(k)) list.push(k)
        const before = changes.objects.get(k)
        // Stored again after a removal in this batch: a new object, with a new place in the order.
        const renewed = changes.removed.delete(k)
        const fresh = renewed || previous === undefined || previous.topic_id !== o.topic_id || (before?.fresh ?? false)
        changes.objects.set(k, { object: o, fresh })
        if (!s.nextSeq.has(o.chat_id)) missing.chats.add(o.chat_id)
      },
      removeObject: (o) => {
        const k = key(o.chat_id, o.object_id)
        s.objects.set(k, null)
        const list = s.byMessage.get(key(o.chat_id, o.source_message_id))
        if (list !== undefined) {
          const i = list.indexOf(k)
          if (i >= 0) list.splice(i, 1)
        }
        changes.objects.delete(k)
        changes.removed.set(k, o)
      },
      chat: (chatId) => {
        const isForum = s.forums.get(chatId)
        if (isForum === undefined) {
          missing.chats.add(chatId)
          return undefined
        }
        return { ...unknownChat(chatId), is_forum: isForum }
      },
      putChat: (info) => {
        s.forums.set(info.chat_id, info.is_forum)
        changes.forums.set(info.chat_id, info.is_forum)
        if (!s.nextSeq.has(info.chat_id)) missing.chats.add(info.chat_id)
      },
      putPoll: (pollId, chatId, objectId) => {
        const ref = { chat_id: chatId, object_id: objectId }
        s.polls.set(pollId, ref)
        changes.polls.set(pollId, ref)
      },
      pendingPollClose: (pollId) => {
        const found = s.closes.get(pollId)
        if (found === undefined) missing.polls.add(pollId)
        return found ?? undefined
      },
      putPendingPollClose: (pollId, close) => {
        s.closes.set(pollId, close ?? null)
        changes.closes.set(pollId, close ?? null)
      },
      markSeen: (chatId, eventId) => {
        const k = key(chatId, eventId)
        if (s.seen.has(k)) return
        s.seen.add(k)
        s.seenLoaded.add(k)
        changes.seen.push([chatId, eventId])
        if (!s.nextSeq.has(chatId)) missing.chats.add(chatId)
      }
    }
    let applied = 0
    let duplicates = 0
    const skipped: Array<ApplyResult["skipped"][number]> = []
    for (let i = 0; i < events.length; i++) {
      const outcome = applyEvent(writer, events[i]!, options.now, options.ttl)
      if (outcome._tag === "applied") applied++
      else if (outcome._tag === "duplicate") duplicates++
      else skipped.push({ index: i, path: `[${i}].${outcome.path}`, message: outcome.message })
    }
    const result: ApplyResult = { applied, duplicates, skipped }
    return { result, changes }
  }

  const merge = (into: Wanted, from: Wanted) => {
    for (const c of from.chats) into.chats.add(c)
    for (const [k, v] of from.messages) into.messages.set(k, v)
    for (const [k, v] of from.byMessage) into.byMessage.set(k, v)
    for (const [k, v] of from.objects) into.objects.set(k, v)
    for (const p of from.polls) into.polls.add(p)
    for (const [k, v] of from.seen) into.seen.set(k, v)
  }

  /** One statement per table over the batch's rows passed in bulk (see rowsTables). */
  const write = (changes: Changes, s: Loaded, now: number) =>
    Effect.gen(function*() {
      if (changes.messages.length > 0) {
        // `WHERE true` keeps SQLite from reading ON CONFLICT as a join constraint of the SELECT.
        yield* bulk(
          [
            ["chat_id", "TEXT"],
            ["id_len", "INTEGER"],
            ["message_id", "TEXT"],
            ["topic", "TEXT"],
            ["reply_len", "INTEGER"],
            ["reply_to", "TEXT"],
            ["sender", "TEXT"],
            ["from_bot", "INTEGER"],
            ["sent_at", "BIGINT"]
          ],
          changes.messages.map((m) => [
            m.chat_id,
            positionLength(m.message_id),
            m.message_id,
            topicKey(m.topic_id),
            m.reply_to_message_id === null ? null : positionLength(m.reply_to_message_id),
            m.reply_to_message_id,
            m.sender_user_id,
            m.from_bot ? 1 : 0,
            m.sent_at
          ]),
          (from) =>
            `INSERT INTO deixis_messages (chat_id, id_len, message_id, topic, reply_len, reply_to, sender, from_bot, sent_at)
           SELECT * FROM ${from} WHERE true ON CONFLICT DO NOTHING`
        )
      }
      for (const part of chunks([...changes.removed.values()], 2)) {
        yield* db.query(
          `DELETE FROM deixis_objects WHERE ${part.map(() => "(chat_id = ? AND object_id = ?)").join(" OR ")}`,
          part.flatMap((o) => [o.chat_id, o.object_id])
        )
      }
      for (const [chatId, isForum] of changes.forums) {
        yield* db.query(`UPDATE deixis_chats SET is_forum = ? WHERE chat_id = ?`, [isForum ? 1 : 0, chatId])
      }
      const touchedChats = new Set<string>()
      const objectRows: Array<ReadonlyArray<Scalar>> = []
      for (const [k, { fresh, object: o }] of changes.objects) {
        let seq = s.seqs.get(k)
        if (fresh || seq === undefined) {
          seq = s.nextSeq.get(o.chat_id) ?? 1
          s.nextSeq.set(o.chat_id, seq + 1)
          touchedChats.add(o.chat_id)
        }
        objectRows.push([
          o.chat_id,
          o.object_id,
          seq,
          o.kind,
          topicKey(o.topic_id),
          o.source_message_id,
          o.created_by_user_id ?? null,
          o.active_until,
          o.active_until ?? o.created_at,
          JSON.stringify(o)
        ])
      }
      if (objectRows.length > 0) {
        yield* bulk(
          [
            ["chat_id", "TEXT"],
            ["object_id", "TEXT"],
            ["seq", "BIGINT"],
            ["kind", "TEXT"],
            ["topic", "TEXT"],
            ["source_message_id", "TEXT"],
            ["created_by", "TEXT"],
            ["active_until", "BIGINT"],
            ["since", "BIGINT"],
            ["body", "TEXT"]
          ],
          objectRows,
          (from) =>
            `INSERT INTO deixis_objects (${objectColumns}) SELECT * FROM ${from} WHERE true
           ON CONFLICT (chat_id, object_id) DO UPDATE SET
             seq = excluded.seq, kind = excluded.kind, topic = excluded.topic,
             source_message_id = excluded.source_message_id, created_by = excluded.created_by,
             active_until = excluded.active_until, since = excluded.since, body = excluded.body`
        )
      }
      if (changes.polls.size > 0) {
        yield* bulk(
          [["poll_id", "TEXT"], ["chat_id", "TEXT"], ["object_id", "TEXT"], ["stored_at", "BIGINT"]],
          [...changes.polls].map(([id, ref]) => [id, ref.chat_id, ref.object_id, now]),
          (from) =>
            `INSERT INTO deixis_polls (poll_id, chat_id, object_id, stored_at) SELECT * FROM ${from} WHERE true
           ON CONFLICT (poll_id) DO UPDATE SET chat_id = excluded.chat_id, object_id = excluded.object_id, stored_at = excluded.stored_at`
        )
      }
      const cleared = [...changes.closes].filter(([, c]) => c === null).map(([id]) => id)
      for (const part of chunks(cleared, 1)) {
        yield* db.query(`DELETE FROM deixis_poll_closes WHERE poll_id IN ${marks(part.length)}`, part)
      }
      const pending = [...changes.closes].flatMap(([id, c]) => (c === null ? [] : [[id, c] as const]))
      if (pending.length > 0) {
        yield* bulk(
          [["poll_id", "TEXT"], ["event_id", "TEXT"], ["at", "BIGINT"], ["stored_at", "BIGINT"]],
          pending.map(([id, c]) => [id, c.event_id, c.at, now]),
          (from) =>
            `INSERT INTO deixis_poll_closes (poll_id, event_id, at, stored_at) SELECT * FROM ${from} WHERE true
           ON CONFLICT (poll_id) DO UPDATE SET event_id = excluded.event_id, at = excluded.at, stored_at = excluded.stored_at`
        )
      }
      if (changes.seen.length > 0) {
        yield* bulk(
          [["chat_id", "TEXT"], ["event_id", "TEXT"], ["seen_at", "BIGINT"]],
          changes.seen.map(([c, e]) => [c, e, now]),
          (from) =>
            `INSERT INTO deixis_events (chat_id, event_id, seen_at) SELECT * FROM ${from} WHERE true ON CONFLICT DO NOTHING`
        )
      }
      const chats = [...touchedChats]
      for (const part of chunks(chats, 3)) {
        yield* db.query(
          `UPDATE deixis_chats SET next_seq = CASE chat_id ${
            part.map(() => "WHEN ? THEN CAST(? AS BIGINT)").join(" ")
          } ELSE next_seq END WHERE chat_id IN ${marks(part.length)}`,
          [...part.flatMap((c) => [c, s.nextSeq.get(c) ?? 1]), ...part]
        )
      }
    })

  const apply = (events: ReadonlyArray<ContextEvent>, options: ApplyOptions): Effect.Effect<ApplyResult, StoreError> => {
    if (events.length === 0) return Effect.succeed({ applied: 0, duplicates: 0, skipped: [] })
    return db.transaction(Effect.gen(function*() {
      // What the batch reads, from the reducer itself: run once over nothing loaded (no I/O), it asks for
      // every row its events name, the objects their messages will carry included. Reads that depend
      // on what is stored (a poll close naming only its poll) are asked for by the rounds below.
      const wanted = new Wanted()
      reduce(events, options, nothingLoaded(), wanted)
      // Each round loads everything asked for so far; a round that asks for nothing new is final.
      for (let round = 0;; round++) {
        const loaded = yield* load(wanted, options.now)
        const missing = new Wanted()
        const { changes, result } = reduce(events, options, loaded, missing)
        const before = wanted.size()
        merge(wanted, missing)
        if (wanted.size() === before || round >= 8) {
          yield* write(changes, loaded, options.now)
          return result
        }
      }
    })).pipe(Effect.mapError(failStore("apply")), Effect.withSpan("SqlContextStore.apply"))
  }

  // ---------------------------------------------------------------------------
  // pool
  // ---------------------------------------------------------------------------

  // Typed NULLs: PostgreSQL resolves UNION column types arm by arm and cannot match text with numbers.
  const nulls =
    "CAST(NULL AS TEXT) AS mid, CAST(NULL AS TEXT) AS topic, CAST(NULL AS TEXT) AS reply_to, CAST(NULL AS TEXT) AS sender, " +
    "CAST(NULL AS INTEGER) AS from_bot, CAST(NULL AS BIGINT) AS sent_at, CAST(NULL AS INTEGER) AS depth, CAST(NULL AS INTEGER) AS has_objects"
  const objectPart = (tag: string, from: string) => `SELECT '${tag}' AS part, body, ${nulls} FROM (${from}) AS p_${tag}`
  const messagePart = (tag: string, from: string) =>
    `SELECT '${tag}' AS part, CAST(NULL AS TEXT) AS body, message_id AS mid, topic, reply_to, sender, CAST(from_bot AS INTEGER) AS from_bot, sent_at,
       CAST(NULL AS INTEGER) AS depth, CAST(NULL AS INTEGER) AS has_objects FROM (${from}) AS p_${tag}`
  const hasObjects = (alias: string) =>
    `EXISTS (SELECT 1 FROM deixis_objects o WHERE o.chat_id = ${alias}.chat_id AND o.source_message_id = ${alias}.message_id)`

  /** The parts of one scope: the request's topic (`home`), or the rest of the chat (`fallback`). */
  const scopeParts = (q: PoolQuery, home: boolean, parts: Array<string>, params: Array<Param>) => {
    const topic = topicKey(q.topic_id)
    const inScope = home ? "topic = ?" : "topic <> ?"
    const kinds = q.kinds
    const kindFilter = kinds === undefined ? "" : kinds.length === 0 ? " AND 1 = 0" : ` AND kind IN ${marks(kinds.length)}`
    const kindParams: ReadonlyArray<Param> = kinds ?? []
    const scoped = home ? "chat_id = ? AND topic = ?" : "chat_id = ?"
    const scopedParams: ReadonlyArray<Param> = home ? [q.chat_id, topic] : [q.chat_id]
    // Active objects of the scope (bounded: an active set is small by construction).
    parts.push(objectPart(
      "a",
      `SELECT body FROM deixis_objects WHERE ${scoped} AND active_until > ? AND ${inScope}${kindFilter} ORDER BY active_until DESC LIMIT 64`
    ))
    params.push(...scopedParams, q.now, topic, ...kindParams)
    if (q.active_only) return
    const window = (n: number) => Math.max(0, n) * 8
    // The most recent objects: a window of the newest n×8, filtered, n taken (as the memory adapter scans).
    parts.push(objectPart(
      "r",
      `SELECT body, seq FROM (SELECT body, seq, kind, topic FROM deixis_objects WHERE ${scoped} ORDER BY seq DESC LIMIT ?) AS w
       WHERE ${inScope}${kindFilter} ORDER BY seq DESC LIMIT ?`
    ))
    params.push(...scopedParams, window(q.limits.recent_objects), topic, ...kindParams, q.limits.recent_objects)
    const prefer = kinds === undefined ? q.prefer_kinds : [...new Set([...q.prefer_kinds, ...kinds])]
    prefer.forEach((kind, i) => {
      if (kinds !== undefined && !kinds.includes(kind)) return
      parts.push(objectPart(
        `k${i}`,
        `SELECT body, seq FROM (SELECT body, seq, topic FROM deixis_objects WHERE ${scoped} AND kind = ? ORDER BY seq DESC LIMIT ?) AS w
         WHERE ${inScope} ORDER BY seq DESC LIMIT ?`
      ))
      params.push(...scopedParams, kind, window(q.limits.recent_per_kind), topic, q.limits.recent_per_kind)
    })
    if (q.include_owned && q.sender_user_id !== null) {
      parts.push(objectPart(
        "o",
        `SELECT body, seq FROM (SELECT body, seq, kind, topic FROM deixis_objects WHERE chat_id = ? AND created_by = ? ORDER BY seq DESC LIMIT ?) AS w
         WHERE ${inScope}${kindFilter} ORDER BY seq DESC LIMIT ?`
      ))
      params.push(q.chat_id, q.sender_user_id, window(q.limits.owned), topic, ...kindParams, q.limits.owned)
    }
    const wantsMessages = kinds === undefined || kinds.includes("message") || kinds.includes("bot_message")
    if (wantsMessages && q.limits.recent_messages > 0) {
      const bot = kinds === undefined || (kinds.includes("message") && kinds.includes("bot_message"))
        ? ""
        : kinds.includes("message")
        ? " AND w.from_bot = 0"
        : " AND w.from_bot = 1"
      // Plain messages by position, in a window of the newest 64: not the current one, and not one
      // that carries objects (those objects stand for it).
      parts.push(messagePart(
        "m",
        `SELECT * FROM (SELECT chat_id, id_len, message_id, topic, reply_to, sender, from_bot, sent_at FROM deixis_messages${
          home ? " INDEXED BY deixis_messages_topic" : ""
        }
           WHERE ${scoped} ORDER BY id_len DESC, message_id DESC LIMIT 64) AS w
         WHERE w.${inScope} AND w.message_id <> ?${bot} AND NOT ${hasObjects("w")}
         ORDER BY w.id_len DESC, w.message_id DESC LIMIT ?`
      ))
      params.push(...scopedParams, topic, q.current_message_id, q.limits.recent_messages)
    }
  }

  const chainParts = (q: PoolQuery, parts: Array<string>, params: Array<Param>): string => {
    const reply = q.reply_to_message_id
    if (reply === null || q.limits.chain_depth <= 0) return ""
    params.push(positionLength(reply), reply, q.chat_id, q.limits.chain_depth)
    // CROSS JOIN fixes SQLite's join order: walk from the chain into the tables, never the reverse.
    const cte = `WITH RECURSIVE chain(depth, id_len, message_id) AS (
        SELECT 1, CAST(? AS INTEGER), CAST(? AS TEXT)
        UNION ALL
        SELECT c.depth + 1, m.reply_len, m.reply_to FROM chain c
          CROSS JOIN deixis_messages m ON m.chat_id = ? AND m.id_len = c.id_len AND m.message_id = c.message_id
        WHERE c.depth < ? AND m.reply_to IS NOT NULL
      ) `
    parts.push(
      `SELECT 'c' AS part, CAST(NULL AS TEXT) AS body, m.message_id AS mid, m.topic, m.reply_to, m.sender, CAST(m.from_bot AS INTEGER) AS from_bot,
         m.sent_at, c.depth AS depth,
         CASE WHEN ${hasObjects("m")} THEN 1 ELSE 0 END AS has_objects
       FROM chain c CROSS JOIN deixis_messages m ON m.chat_id = ? AND m.id_len = c.id_len AND m.message_id = c.message_id`
    )
    params.push(q.chat_id)
    parts.push(objectPart(
      "co",
      `SELECT o.body, o.seq FROM chain c
         CROSS JOIN deixis_messages m ON m.chat_id = ? AND m.id_len = c.id_len AND m.message_id = c.message_id
         CROSS JOIN deixis_objects o ON o.chat_id = ? AND o.source_message_id = m.message_id
       ORDER BY c.depth, o.seq LIMIT 256`
    ))
    params.push(q.chat_id, q.chat_id)
    return cte
  }

  const existsPart = (q: PoolQuery, parts: Array<string>, params: Array<Param>) => {
    parts.push(
      `SELECT 'e' AS part, CAST(NULL AS TEXT) AS body, ${nulls} WHERE EXISTS (SELECT 1 FROM deixis_messages WHERE chat_id = ? AND topic = ?)
         OR EXISTS (SELECT 1 FROM deixis_objects WHERE chat_id = ? AND topic = ?)`
    )
    const topic = topicKey(q.topic_id)
    params.push(q.chat_id, topic, q.chat_id, topic)
  }

  /** The rows of the pool's parts for the request's scope (with the chain), or for the rest of the chat. */
  const scopeRows = (q: PoolQuery, fallback: boolean) => {
    if (pg) {
      const reply = fallback ? null : q.reply_to_message_id
      return db.query(
        `SELECT * FROM deixis_pool(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BOOLEAN), CAST(? AS TEXT), CAST(? AS TEXT),
           CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BOOLEAN),
           CAST(? AS BOOLEAN), CAST(? AS BIGINT), CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS INTEGER))`,
        [
          q.chat_id,
          topicKey(q.topic_id),
          fallback ? "true" : "false",
          q.current_message_id,
          reply,
          reply === null ? null : positionLength(reply),
          q.limits.chain_depth,
          q.sender_user_id,
          q.kinds ?? null,
          q.kinds === undefined ? q.prefer_kinds : [...new Set([...q.prefer_kinds, ...q.kinds])],
          q.include_owned ? "true" : "false",
          q.active_only ? "true" : "false",
          q.now,
          Math.max(0, q.limits.recent_objects),
          Math.max(0, q.limits.recent_per_kind),
          Math.max(0, q.limits.recent_messages),
          Math.max(0, q.limits.owned)
        ]
      )
    }
    const parts: Array<string> = []
    const params: Array<Param> = []
    const cte = fallback ? "" : chainParts(q, parts, params)
    if (!fallback) existsPart(q, parts, params)
    scopeParts(q, !fallback, parts, params)
    return db.query(cte + parts.join("\nUNION ALL\n"), params)
  }

  const pool = (query: PoolQuery): Effect.Effect<CandidatePool, StoreError> =>
    Effect.gen(function*() {
      if (!storable(query.chat_id, query.topic_id, query.current_message_id, query.reply_to_message_id, query.sender_user_id)) {
        return { entries: [], chain: [], fallback: false, topic_id: query.topic_id }
      }
      // In a forum, a request without a topic is in the General topic.
      const isForum = query.topic_id === null ? yield* forumOf(query.chat_id) : false
      const topicId = effectiveTopic(query.topic_id, isForum)
      const q: PoolQuery = topicId === query.topic_id ? query : { ...query, topic_id: topicId }
      const out = new Map<string, PoolEntry>()
      const kindOk = (kind: ObjectKind) => q.kinds === undefined || q.kinds.includes(kind)
      const expired = (o: ContextObject) => q.keep_expired !== true && o.active_until !== null && o.active_until <= q.now
      // An expired object stands aside for its message (resolved below), whatever the kind filter says of it.
      const accept = (o: ContextObject) => (q.active_only ? kindOk(o.kind) && isActive(o, q.now) : kindOk(o.kind) || expired(o))
      const add = (o: ContextObject, tier: PoolTier) => {
        if (!out.has(o.object_id)) out.set(o.object_id, { object: o, tier })
      }
      /** Adds the accepted objects of `rows`; a row that does not decode is returned as the failure. */
      const collectObjects = (rows: ReadonlyArray<Row>, tier: PoolTier): string | undefined => {
        for (const r of rows) {
          const o = objectOf(r["body"])
          if (Either.isLeft(o)) return o.left
          if (accept(o.right)) add(o.right, tier)
        }
        return undefined
      }
      const collectMessages = (rows: ReadonlyArray<Row>, tier: PoolTier) => {
        for (const r of rows) {
          const o = messageObject(messageOf(q.chat_id, r))
          if (kindOk(o.kind)) add(o, tier)
        }
      }
      const byPart = (rows: ReadonlyArray<Row>) => {
        const parts = new Map<string, Array<Row>>()
        for (const r of rows) {
          const tag = str(r["part"])
          const list = parts.get(tag)
          if (list === undefined) parts.set(tag, [r])
          else list.push(r)
        }
        return parts
      }
      const collectScope = (parts: Map<string, Array<Row>>, tier: PoolTier): Effect.Effect<void, string> => {
        for (const [tag, rows] of parts) {
          if (tag === "a" || tag === "r" || tag === "o" || tag.startsWith("k")) {
            const failure = collectObjects(rows, tier)
            if (failure !== undefined) return Effect.fail(failure)
          }
        }
        collectMessages(parts.get("m") ?? [], tier)
        return Effect.void
      }

      const rows = byPart(yield* scopeRows(q, false))

      // 1. The reply target and its chain, whatever topic they are in.
      const chainRows = [...(rows.get("c") ?? [])].sort((a, b) => num(a["depth"]) - num(b["depth"]))
      const chainObjects = new Map<string, Array<ContextObject>>()
      for (const r of rows.get("co") ?? []) {
        const o = objectOf(r["body"])
        if (Either.isLeft(o)) return yield* Effect.fail(o.left)
        const list = chainObjects.get(o.right.source_message_id)
        if (list === undefined) chainObjects.set(o.right.source_message_id, [o.right])
        else list.push(o.right)
      }
      const chain: Array<string> = []
      for (const r of chainRows) {
        const m = messageOf(q.chat_id, r)
        if (chain.includes(m.message_id)) break
        const tier: PoolTier = chain.length === 0 ? "reply_target" : "reply_chain"
        chain.push(m.message_id)
        for (const o of chainObjects.get(m.message_id) ?? []) if (accept(o)) add(o, tier)
        if (!q.active_only && m.message_id !== q.current_message_id && num(r["has_objects"]) === 0) {
          const o = messageObject(m)
          if (kindOk(o.kind)) add(o, tier)
        }
      }

      // 2. The request's own scope.
      yield* collectScope(rows, "home")

      // 3. The rest of the chat when the request's own scope has no active object: everything when
      // nothing at all is known of it, otherwise only what is active there.
      const homeActive = (rows.get("a") ?? []).some((r) => {
        const o = objectOf(r["body"])
        return Either.isRight(o) && kindOk(o.right.kind) && isActive(o.right, q.now)
      })
      const fallback = !homeActive
      if (fallback) {
        const everything = !rows.has("e")
        yield* collectScope(byPart(yield* scopeRows(everything ? q : { ...q, active_only: true }, true)), "fallback")
      }

      // Objects whose activity expired give way to the messages they came from.
      const entries = [...out.values()]
      const stale = entries.filter((e) => expired(e.object) && e.object.source_message_id !== q.current_message_id)
      const sources = stale.length === 0
        ? new Map<string, MessageMeta>()
        : yield* messagesOf(q.chat_id, [...new Set(stale.map((e) => e.object.source_message_id))])
      const final: Array<PoolEntry> = []
      const taken = new Set<string>()
      for (const e of entries) {
        let entry = e
        if (expired(e.object)) {
          const m = sources.get(e.object.source_message_id)
          if (m === undefined || m.message_id === q.current_message_id) continue
          const stand = messageObject(m)
          if (!kindOk(stand.kind)) continue
          entry = { object: stand, tier: e.tier }
        }
        if (taken.has(entry.object.object_id)) continue
        taken.add(entry.object.object_id)
        final.push(entry)
      }
      return { entries: final, chain, fallback, topic_id: topicId }
    }).pipe(Effect.mapError(failStore("pool")), Effect.withSpan("SqlContextStore.pool"))

  /** Whether a chat is a forum (false for a chat never seen). */
  const forumOf = (chatId: string) =>
    Effect.map(
      db.query(`SELECT is_forum FROM deixis_chats WHERE chat_id = ?`, [chatId]),
      (rows) => rows[0] !== undefined && bool(rows[0]["is_forum"])
    )

  /** The stored metadata of some messages of one chat, by id. */
  const messagesOf = (chatId: string, ids: ReadonlyArray<string>) =>
    Effect.map(
      bulk(
        [["chat_id", "TEXT"], ["id_len", "INTEGER"], ["message_id", "TEXT"]],
        ids.map((id) => [chatId, positionLength(id), id]),
        (from) =>
          `SELECT m.message_id, m.topic, m.reply_to, m.sender, m.from_bot, m.sent_at FROM ${from}
           ${probe("deixis_messages", "m", "m.chat_id = k.chat_id AND m.id_len = k.id_len AND m.message_id = k.message_id")}`
      ),
      (rows) => {
        const out = new Map<string, MessageMeta>()
        for (const r of rows) {
          const m = messageOf(chatId, r)
          out.set(m.message_id, m)
        }
        return out
      }
    )

  // ---------------------------------------------------------------------------
  // reads, sweep, stats
  // ---------------------------------------------------------------------------

  const message = (chatId: string, messageId: string) =>
    !storable(chatId, messageId) ? Effect.succeed(Option.none<MessageMeta>()) : db.query(
      `SELECT message_id, topic, reply_to, sender, from_bot, sent_at FROM deixis_messages WHERE chat_id = ? AND id_len = ? AND message_id = ?`,
      [chatId, positionLength(messageId), messageId]
    ).pipe(
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => messageOf(chatId, r))),
      Effect.mapError(failStore("message"))
    )

  const object = (chatId: string, objectId: string) =>
    !storable(chatId) || !storableObjectId(objectId) ? Effect.succeed(Option.none<ContextObject>()) : db.query(`SELECT body FROM deixis_objects WHERE chat_id = ? AND object_id = ?`, [chatId, objectId]).pipe(
      Effect.mapError(failStore("object")),
      Effect.flatMap((rows) => {
        const row = rows[0]
        if (row === undefined) return Effect.succeed(Option.none<ContextObject>())
        return Either.match(objectOf(row["body"]), {
          onLeft: (e) => Effect.fail(failStore("object")(e)),
          onRight: (o) => Effect.succeed(Option.some(o))
        })
      })
    )

  const replyChain = (chatId: string, messageId: string, depth: number) =>
    depth <= 0 || !storable(chatId, messageId) ? Effect.succeed([]) : db.query(
      `WITH RECURSIVE chain(depth, id_len, message_id) AS (
         SELECT 1, CAST(? AS INTEGER), CAST(? AS TEXT)${C}
         UNION ALL
         SELECT c.depth + 1, m.reply_len, m.reply_to FROM chain c
           JOIN deixis_messages m ON m.chat_id = ? AND m.id_len = c.id_len AND m.message_id = c.message_id
         WHERE c.depth < ? AND m.reply_to IS NOT NULL
       )
       SELECT c.depth, m.message_id, m.topic, m.reply_to, m.sender, m.from_bot, m.sent_at
       FROM chain c JOIN deixis_messages m ON m.chat_id = ? AND m.id_len = c.id_len AND m.message_id = c.message_id
       ORDER BY c.depth`,
      [positionLength(messageId), messageId, chatId, depth, chatId]
    ).pipe(
      Effect.map((rows) => {
        const out: Array<MessageMeta> = []
        for (const r of rows) {
          const m = messageOf(chatId, r)
          if (out.some((x) => x.message_id === m.message_id)) break
          out.push(m)
        }
        return out
      }),
      Effect.mapError(failStore("replyChain"))
    )

  const snapshot = (chatId: string): Effect.Effect<ChatSnapshot, StoreError> =>
    Effect.gen(function*() {
      if (!storable(chatId)) return { messages: [], objects: [] }
      const messageRows = yield* db.query(
        `SELECT message_id, topic, reply_to, sender, from_bot, sent_at FROM deixis_messages WHERE chat_id = ?`,
        [chatId]
      )
      const objectRows = yield* db.query(`SELECT body FROM deixis_objects WHERE chat_id = ?`, [chatId])
      const objects: Array<ContextObject> = []
      for (const r of objectRows) {
        const o = objectOf(r["body"])
        if (Either.isLeft(o)) return yield* Effect.fail(o.left)
        objects.push(o.right)
      }
      return {
        messages: messageRows.map((r) => messageOf(chatId, r)).sort((a, b) => compareMessageIds(a.message_id, b.message_id)),
        objects: objects.sort((a, b) => (a.object_id < b.object_id ? -1 : a.object_id > b.object_id ? 1 : 0))
      }
    }).pipe(Effect.mapError(failStore("snapshot")))

  const chat = (chatId: string): Effect.Effect<ChatInfo, StoreError> =>
    db.query(
      `SELECT (SELECT is_forum FROM deixis_chats WHERE chat_id = ?) AS is_forum,
              (SELECT to_chat_id FROM deixis_chat_migrations WHERE chat_id = ?) AS to_chat,
              (SELECT migrated_at FROM deixis_chat_migrations WHERE chat_id = ?) AS migrated_at`,
      [chatId, chatId, chatId]
    ).pipe(
      Effect.map((rows): ChatInfo => {
        const r = rows[0] ?? {}
        return {
          chat_id: chatId,
          is_forum: bool(r["is_forum"]),
          migrated_to: strOrNull(r["to_chat"]),
          migrated_at: r["migrated_at"] === null || r["migrated_at"] === undefined ? null : num(r["migrated_at"])
        }
      }),
      Effect.mapError(failStore("chat"))
    )

  const migrateChat = (from: string, to: string, at: number): Effect.Effect<MigrationResult, StoreError> =>
    from === to ? Effect.succeed({ migrated: false, moved: 0 }) : db.transaction(Effect.gen(function*() {
      // Both chats' rows, locked in a fixed order (as apply takes them), so no batch interleaves.
      const pair = [from, to].sort()
      yield* db.query(`INSERT INTO deixis_chats (chat_id, next_seq, created_at) VALUES (?, 1, ?), (?, 1, ?) ON CONFLICT (chat_id) DO NOTHING`, [
        pair[0]!, at, pair[1]!, at
      ])
      yield* db.query(`SELECT chat_id FROM deixis_chats WHERE chat_id IN (?, ?) ORDER BY chat_id${C}${pg ? " FOR UPDATE" : ""}`, pair)
      const done = yield* db.query(`SELECT to_chat_id FROM deixis_chat_migrations WHERE chat_id = ?`, [from])
      if (done.length > 0) return { migrated: false, moved: 0 }
      yield* db.query(`INSERT INTO deixis_chat_migrations (chat_id, to_chat_id, migrated_at) VALUES (?, ?, ?)`, [from, to, at])

      // Messages: re-keyed, so the new chat's own ids (from 1 again) never meet the old ones.
      const messageRows = yield* db.query(
        `SELECT message_id, topic, reply_to, sender, from_bot, sent_at FROM deixis_messages WHERE chat_id = ?`,
        [from]
      )
      yield* bulk(
        [
          ["chat_id", "TEXT"],
          ["id_len", "INTEGER"],
          ["message_id", "TEXT"],
          ["topic", "TEXT"],
          ["reply_len", "INTEGER"],
          ["reply_to", "TEXT"],
          ["sender", "TEXT"],
          ["from_bot", "INTEGER"],
          ["sent_at", "BIGINT"]
        ],
        messageRows.map((r) => {
          const id = migratedMessageId(str(r["message_id"]))
          const reply = strOrNull(r["reply_to"])
          const replyTo = reply === null ? null : migratedMessageId(reply)
          return [to, positionLength(id), id, str(r["topic"]), replyTo === null ? null : positionLength(replyTo), replyTo, strOrNull(r["sender"]), bool(r["from_bot"]) ? 1 : 0, num(r["sent_at"])]
        }),
        (rows) =>
          `INSERT INTO deixis_messages (chat_id, id_len, message_id, topic, reply_len, reply_to, sender, from_bot, sent_at)
           SELECT * FROM ${rows} WHERE true ON CONFLICT DO NOTHING`
      )
      yield* db.query(`DELETE FROM deixis_messages WHERE chat_id = ?`, [from])

      // Objects: ids stay; they come before the new chat's own in the order of storage.
      const objectRows = yield* db.query(`SELECT body FROM deixis_objects WHERE chat_id = ? ORDER BY seq`, [from])
      const lowest = yield* db.query(`SELECT MIN(seq) AS low FROM deixis_objects WHERE chat_id = ?`, [to])
      const low = lowest[0]?.["low"] === null || lowest[0]?.["low"] === undefined ? 1 : num(lowest[0]["low"])
      const base = Math.min(low, 1) - objectRows.length
      const moved: Array<ReadonlyArray<Scalar>> = []
      for (let i = 0; i < objectRows.length; i++) {
        const decoded = objectOf(objectRows[i]!["body"])
        if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
        const o: ContextObject = { ...decoded.right, chat_id: to, source_message_id: migratedMessageId(decoded.right.source_message_id) }
        moved.push([
          o.chat_id, o.object_id, base + i, o.kind, topicKey(o.topic_id), o.source_message_id, o.created_by_user_id ?? null,
          o.active_until, o.active_until ?? o.created_at, JSON.stringify(o)
        ])
      }
      yield* bulk(
        [
          ["chat_id", "TEXT"],
          ["object_id", "TEXT"],
          ["seq", "BIGINT"],
          ["kind", "TEXT"],
          ["topic", "TEXT"],
          ["source_message_id", "TEXT"],
          ["created_by", "TEXT"],
          ["active_until", "BIGINT"],
          ["since", "BIGINT"],
          ["body", "TEXT"]
        ],
        moved,
        (rows) => `INSERT INTO deixis_objects (${objectColumns}) SELECT * FROM ${rows} WHERE true ON CONFLICT (chat_id, object_id) DO NOTHING`
      )
      yield* db.query(`DELETE FROM deixis_objects WHERE chat_id = ?`, [from])

      // Poll ids and the event ids already applied follow the chat.
      yield* db.query(`UPDATE deixis_polls SET chat_id = ? WHERE chat_id = ?`, [to, from])
      yield* db.query(
        `INSERT INTO deixis_events (chat_id, event_id, seen_at) SELECT ?, event_id, seen_at FROM deixis_events WHERE chat_id = ?
         ON CONFLICT DO NOTHING`,
        [to, from]
      )
      yield* db.query(`DELETE FROM deixis_events WHERE chat_id = ?`, [from])
      return { migrated: true, moved: messageRows.length + objectRows.length }
    })).pipe(Effect.mapError(failStore("migrateChat")), Effect.withSpan("SqlContextStore.migrateChat"))

  const counters = { evicted_messages: 0, swept_objects: 0 }

  /** Deletes rows matching `where` in batches of `sweep_batch`, each its own statement; returns the count. */
  const sweepTable = (table: string, keyColumns: string, where: string, params: ReadonlyArray<Param>) =>
    Effect.gen(function*() {
      let total = 0
      for (;;) {
        // Each batch is its own short write transaction, so ingest never waits long behind a sweep.
        const rows = yield* db.transaction(db.query(
          `DELETE FROM ${table} WHERE (${keyColumns}) IN (SELECT ${keyColumns} FROM ${table} WHERE ${where} LIMIT ?) RETURNING 1 AS gone`,
          [...params, settings.sweep_batch]
        ))
        total += rows.length
        if (rows.length < settings.sweep_batch) return total
      }
    })

  const sweep = (now: number) =>
    Effect.gen(function*() {
      const objects = yield* sweepTable("deixis_objects", "chat_id, object_id", "since <= ?", [now - settings.object_retention])
      const messages = yield* sweepTable("deixis_messages", "chat_id, id_len, message_id", "sent_at <= ?", [
        now - settings.message_retention
      ])
      const horizon = now - settings.event_retention
      yield* sweepTable("deixis_events", "chat_id, event_id", "seen_at <= ?", [horizon])
      yield* sweepTable("deixis_polls", "poll_id", "stored_at <= ?", [Math.min(horizon, now - settings.object_retention)])
      yield* sweepTable("deixis_poll_closes", "poll_id", "stored_at <= ?", [horizon])
      counters.swept_objects += objects
      counters.evicted_messages += messages
      return objects
    }).pipe(Effect.mapError(failStore("sweep")), Effect.withSpan("SqlContextStore.sweep"))

  const stats: Effect.Effect<StoreStats, StoreError> = db.query(
    `SELECT (SELECT count(*) FROM deixis_chats) AS chats, (SELECT count(*) FROM deixis_messages) AS messages,
            (SELECT count(*) FROM deixis_objects) AS objects`
  ).pipe(
    Effect.map((rows) => {
      const r = rows[0] ?? {}
      return {
        chats: num(r["chats"]),
        messages: num(r["messages"]),
        objects: num(r["objects"]),
        evicted_chats: 0,
        evicted_messages: counters.evicted_messages,
        evicted_objects: 0,
        swept_objects: counters.swept_objects
      }
    }),
    Effect.mapError(failStore("stats"))
  )

  return {
    apply,
    pool,
    message,
    object,
    replyChain,
    snapshot,
    chat,
    migrateChat,
    sweep,
    stats
  }
}
