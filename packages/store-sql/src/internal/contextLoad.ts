/**
 * Loading for `apply`: what a batch needs (`Wanted`, named by core's reducer run over nothing
 * loaded), and the rows of it read with one statement per table (`Loaded`).
 */
import { type ContextObject, type MessageMeta } from "@deixis/core/ContextObject"
import { positionLength } from "@deixis/core/Ids"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { bool, chunks, type ColumnType, num, type Row, type Scalar, str, strOrNull } from "./db.js"
import { type Fragment, sql, tuples } from "./statement.js"
import { type ContextSql, key, messageOf } from "./contextRows.js"

export interface PollRef {
  readonly chat_id: string
  readonly object_id: string
}
export interface Close {
  readonly event_id: string
  readonly at: number
}

/** What a batch needs loaded; grown when the reducer asks for something not loaded yet. */
export class Wanted {
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
    const k = key(chat, id)
    const pair = [chat, id] as const
    this.messages.set(k, pair)
    this.byMessage.set(k, pair)
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
export interface Loaded {
  readonly nextSeq: Map<string, number>
  /** Chat id → its revision as read under the batch's lock. */
  readonly revisions: Map<string, number>
  /** Chat id → whether it is a forum. */
  readonly forums: Map<string, boolean>
  /** Chat id → its title (null: none known). */
  readonly titles: Map<string, string | null>
  readonly messages: Map<string, MessageMeta | null>
  /** Message key → the `edited_at` of the newest edit applied to it (absent: none). */
  readonly edits: Map<string, number>
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
export const nothingLoaded = (): Loaded => ({
  nextSeq: new Map(),
  revisions: new Map(),
  forums: new Map(),
  titles: new Map(),
  messages: new Map(),
  edits: new Map(),
  objects: new Map(),
  byMessage: new Map(),
  polls: new Map(),
  closes: new Map(),
  seen: new Set(),
  seenLoaded: new Set(),
  seqs: new Map()
})

export interface Changes {
  readonly messages: Array<MessageMeta>
  /** Message key → the message and the `edited_at` of the edit just applied to it. */
  readonly edits: Map<string, readonly [chatId: string, messageId: string, editedAt: number]>
  /** Chat id → its new forum flag. */
  readonly forums: Map<string, boolean>
  /** Chat id → its new title. */
  readonly titles: Map<string, string>
  /** Object key → the object removed (an edit took away what it stood for). */
  readonly removed: Map<string, ContextObject>
  /** Object key → the object and whether it takes a new sequence number (new, or moved topic). */
  readonly objects: Map<string, { object: ContextObject; fresh: boolean }>
  readonly polls: Map<string, PollRef>
  readonly closes: Map<string, Close | null>
  readonly seen: Array<readonly [string, string]>
}

/** One read of `load`: a statement over keys passed in bulk as the table `k`. */
interface Read {
  readonly columns: ReadonlyArray<readonly [string, ColumnType]>
  readonly rows: ReadonlyArray<ReadonlyArray<Scalar>>
  readonly statement: (from: Fragment) => Fragment
}

export const makeLoad = ({ db, objectOf, probe }: ContextSql) => {
  /** Runs every read (`Db.bulkReads`), returning each one's rows (none for an absent read). */
  const readAll = (reads: ReadonlyArray<Read | undefined>): Effect.Effect<ReadonlyArray<ReadonlyArray<Row>>, SqlError> =>
    Effect.map(db.bulkReads(reads.filter((r): r is Read => r !== undefined)), (results) => {
      let at = 0
      return reads.map((r) => (r === undefined ? [] : results[at++]!))
    })

  /**
   * The rows `w` names. `lock`: inside the batch's transaction, the chats' rows are created in a
   * fixed order and (on PostgreSQL) locked first, so concurrent batches over the same chats run
   * one after the other; without, everything is read in one go (see `applyFunction`: the write
   * then checks that the chats' revisions have not moved), a chat without a row read as new.
   */
  const load = (w: Wanted, now: number, lock: boolean): Effect.Effect<Loaded, SqlError | string> =>
    Effect.gen(function*() {
      const chats = [...w.chats].sort()
      const nextSeq = new Map<string, number>()
      const revisions = new Map<string, number>()
      const forums = new Map<string, boolean>()
      const titles = new Map<string, string | null>()
      const chatRow = (r: Row) => {
        nextSeq.set(str(r["chat_id"]), num(r["next_seq"]))
        revisions.set(str(r["chat_id"]), num(r["revision"]))
        forums.set(str(r["chat_id"]), bool(r["is_forum"]))
        titles.set(str(r["chat_id"]), strOrNull(r["title"]))
      }
      if (lock) {
        for (const part of chunks(chats, 3)) {
          // Created and read in one statement: a chat already there is "updated" to what it was, so
          // its row comes back too, locked (PostgreSQL) in the order of the sorted values.
          const rows = yield* db.query(
            sql`INSERT INTO deixis_chats (chat_id, next_seq, created_at) VALUES ${tuples(part.map((c) => [c, 1, now]))}
              ON CONFLICT (chat_id) DO UPDATE SET revision = deixis_chats.revision
              RETURNING chat_id, next_seq, is_forum, revision, title`
          )
          for (const r of rows) chatRow(r)
        }
      }

      // Each table is read with one statement over the batch's keys passed in bulk (see rowsTables).
      const pollIds = [...w.polls]
      const [chatRows, messageRows, byMessageRows, objectRows, pollRows, seenRows] = yield* readAll([
        lock ? undefined : {
          columns: [["chat_id", "TEXT"]],
          rows: chats.map((c) => [c]),
          statement: (from) =>
            sql`SELECT c.chat_id, c.next_seq, c.is_forum, c.revision, c.title FROM ${from} ${probe("deixis_chats", "c", "c.chat_id = k.chat_id")}`
        },
        {
          columns: [["chat_id", "TEXT"], ["id_len", "INTEGER"], ["message_id", "TEXT"]],
          rows: [...w.messages.values()].map(([c, m]) => [c, positionLength(m), m]),
          statement: (from) =>
            sql`SELECT m.chat_id, m.message_id, m.topic, m.reply_to, m.sender, m.from_bot, m.sent_at, m.edited_at FROM ${from}
           ${probe("deixis_messages", "m", "m.chat_id = k.chat_id AND m.id_len = k.id_len AND m.message_id = k.message_id")}`
        },
        {
          columns: [["chat_id", "TEXT"], ["message_id", "TEXT"]],
          rows: [...w.byMessage.values()],
          statement: (from) =>
            sql`SELECT o.body, o.seq FROM ${from}
           ${probe("deixis_objects", "o", "o.chat_id = k.chat_id AND o.source_message_id = k.message_id")} ORDER BY o.seq`
        },
        {
          columns: [["chat_id", "TEXT"], ["object_id", "TEXT"]],
          rows: [...w.objects.values()],
          statement: (from) =>
            sql`SELECT o.body, o.seq FROM ${from} ${probe("deixis_objects", "o", "o.chat_id = k.chat_id AND o.object_id = k.object_id")}`
        },
        {
          // One statement for both lookups: the poll's object, and a close seen before the poll.
          columns: [["poll_id", "TEXT"]],
          rows: pollIds.map((id) => [id]),
          statement: (from) =>
            sql`SELECT 'p' AS part, p.poll_id, p.chat_id, p.object_id, CAST(NULL AS TEXT) AS event_id, CAST(NULL AS BIGINT) AS at
             FROM ${from} ${probe("deixis_polls", "p", "p.poll_id = k.poll_id")}
           UNION ALL
           SELECT 'c' AS part, c.poll_id, CAST(NULL AS TEXT), CAST(NULL AS TEXT), c.event_id, c.at
             FROM ${from} ${probe("deixis_poll_closes", "c", "c.poll_id = k.poll_id")}`
        },
        {
          columns: [["chat_id", "TEXT"], ["event_id", "TEXT"]],
          rows: [...w.seen.values()],
          statement: (from) =>
            sql`SELECT e.chat_id, e.event_id FROM ${from} ${probe("deixis_events", "e", "e.chat_id = k.chat_id AND e.event_id = k.event_id")}`
        }
      ])
      if (!lock) {
        for (const r of chatRows!) chatRow(r)
        // A chat without a row: as the row the write creates.
        for (const c of chats) {
          if (nextSeq.has(c)) continue
          nextSeq.set(c, 1)
          revisions.set(c, 0)
          forums.set(c, false)
          titles.set(c, null)
        }
      }

      const messages = new Map<string, MessageMeta | null>()
      const edits = new Map<string, number>()
      for (const k of w.messages.keys()) messages.set(k, null)
      for (const r of messageRows!) {
        const m = messageOf(str(r["chat_id"]), r)
        messages.set(key(m.chat_id, m.message_id), m)
        if (r["edited_at"] !== null && r["edited_at"] !== undefined) edits.set(key(m.chat_id, m.message_id), num(r["edited_at"]))
      }

      const objects = new Map<string, ContextObject | null>()
      const byMessage = new Map<string, Array<string>>()
      for (const k of w.objects.keys()) objects.set(k, null)
      for (const k of w.byMessage.keys()) byMessage.set(k, [])
      const seqs = new Map<string, number>()
      for (const row of [...byMessageRows!, ...objectRows!]) {
        const decoded = objectOf(row["body"])
        if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
        const o = decoded.right
        const ok = key(o.chat_id, o.object_id)
        if (objects.get(ok) !== undefined && objects.get(ok) !== null) continue
        objects.set(ok, o)
        seqs.set(ok, num(row["seq"]))
        const list = byMessage.get(key(o.chat_id, o.source_message_id))
        if (list !== undefined && !list.includes(ok)) list.push(ok)
      }

      const polls = new Map<string, PollRef | null>()
      const closes = new Map<string, Close | null>()
      for (const id of pollIds) {
        polls.set(id, null)
        closes.set(id, null)
      }
      for (const r of pollRows!) {
        if (r["part"] === "p") polls.set(str(r["poll_id"]), { chat_id: str(r["chat_id"]), object_id: str(r["object_id"]) })
        else closes.set(str(r["poll_id"]), { event_id: str(r["event_id"]), at: num(r["at"]) })
      }

      const seen = new Set<string>()
      const seenLoaded = new Set<string>(w.seen.keys())
      for (const r of seenRows!) seen.add(key(str(r["chat_id"]), str(r["event_id"])))
      return { nextSeq, revisions, forums, titles, messages, edits, objects, byMessage, polls, closes, seen, seenLoaded, seqs }
    })
  return load
}
