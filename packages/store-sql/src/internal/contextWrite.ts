/**
 * Writing: `apply` (core's reducer over the loaded rows, then one statement per table of what
 * changed, all in one transaction holding the batch's chats locked) and `migrateChat`.
 */
import type { ApplyResult, ContextEvent } from "@deixis/core/ContextEvent"
import type { SqlError } from "@effect/sql/SqlError"
import { type ContextObject, messageToMigratedChat, toMigratedChat } from "@deixis/core/ContextObject"
import { applyEvents, type StateWriter } from "@deixis/core/ContextReducer"
import type { ApplyOptions, StoreError } from "@deixis/core/ContextStore"
import { type ChatInfo, type MigrationResult, searchKey } from "@deixis/core/ChatInfo"
import { migratedMessageId, positionLength } from "@deixis/core/Ids"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { chunks, num, type Scalar, str, topicKey } from "./db.js"
import { join, list, raw, sql } from "./statement.js"
import { type Changes, type Loaded, makeLoad, nothingLoaded, Wanted } from "./contextLoad.js"
import {
  type ContextSql,
  failStore,
  makeBumpRevisions,
  key,
  messageOf,
  messageRow,
  messageRowColumns,
  objectColumns,
  objectRow,
  objectRowColumns
} from "./contextRows.js"
import { type ContextCache, type Touched, touchAll, untouched } from "./contextCache.js"
import { writeTitles } from "./chatDirectory.js"
import { unitOf } from "./unit.js"
import { optimisticOf, type Pending, type Processed } from "./unitState.js"

const noChanges = (): Changes => ({
  messages: [],
  edits: new Map(),
  forums: new Map(),
  titles: new Map(),
  removed: new Map(),
  objects: new Map(),
  polls: new Map(),
  closes: new Map(),
  seen: []
})

/**
 * Runs the reducer over loaded rows; what it asked for and was not loaded goes to `missing`.
 * `changes` accumulates: batches reduced one after the other over the same rows are applied as
 * if one after the other.
 */
const reduce = (
  events: ReadonlyArray<ContextEvent>,
  options: ApplyOptions,
  s: Loaded,
  missing: Wanted,
  changes: Changes = noChanges()
) => {
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
      const k = key(m.chat_id, m.message_id)
      s.messages.set(k, m)
      if (!s.byMessage.has(k)) s.byMessage.set(k, [])
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
    editedAt: (chatId, messageId) => {
      const k = key(chatId, messageId)
      if (!s.messages.has(k)) missing.message(chatId, messageId)
      return s.edits.get(k)
    },
    putEditedAt: (chatId, messageId, editedAt) => {
      const k = key(chatId, messageId)
      s.edits.set(k, editedAt)
      changes.edits.set(k, [chatId, messageId, editedAt])
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
      // `unknownChat(chatId)` with what is loaded, as one object.
      const info: ChatInfo = { chat_id: chatId, is_forum: isForum, title: s.titles.get(chatId) ?? null, migrated_to: null, migrated_at: null }
      return info
    },
    putChat: (info) => {
      if (s.forums.get(info.chat_id) !== info.is_forum) {
        s.forums.set(info.chat_id, info.is_forum)
        changes.forums.set(info.chat_id, info.is_forum)
      }
      if (info.title !== null && s.titles.get(info.chat_id) !== info.title) {
        s.titles.set(info.chat_id, info.title)
        changes.titles.set(info.chat_id, info.title)
      }
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
  const result = applyEvents(writer, events, options.now, options.ttl, options.kinds)
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

/**
 * What a batch writes besides its changes as they are: its objects' rows with their sequence
 * numbers (a new or moved object takes its chat's next one), the chats' next sequence numbers,
 * and what changed in each chat (`changed`: every chat written to gets a new revision).
 */
const plan = (changes: Changes, s: Loaded) => {
  const touchedChats = new Set<string>()
  const objectRows: Array<ReadonlyArray<Scalar>> = []
  for (const [k, { fresh, object: o }] of changes.objects) {
    let seq = s.seqs.get(k)
    if (fresh || seq === undefined) {
      seq = s.nextSeq.get(o.chat_id) ?? 1
      s.nextSeq.set(o.chat_id, seq + 1)
      touchedChats.add(o.chat_id)
    }
    objectRows.push(objectRow(o, seq))
  }
  const nextSeqs = [...touchedChats].map((c) => [c, s.nextSeq.get(c) ?? 1] as const)
  // The revision of every chat whose messages or objects changed, in this same transaction, so
  // every store's cache of those chats (this process's and others') sees the write; and what
  // the write touched in each, for this process's cache to keep the rest.
  const changed = new Map<string, Touched>()
  const touchedIn = (chatId: string) => {
    let t = changed.get(chatId)
    if (t === undefined) changed.set(chatId, t = untouched())
    return t
  }
  const touchObject = (o: ContextObject) => {
    const t = touchedIn(o.chat_id)
    t.topics.add(topicKey(o.topic_id))
    if (o.active_until !== null) t.activeTopics.add(topicKey(o.topic_id))
    t.sources.add(o.source_message_id)
    if (o.created_by_user_id !== undefined) t.creators.add(o.created_by_user_id)
  }
  for (const chatId of changes.forums.keys()) touchedIn(chatId).everything = true
  for (const m of changes.messages) {
    const t = touchedIn(m.chat_id)
    t.messages.push(m)
    t.topics.add(topicKey(m.topic_id))
  }
  for (const o of changes.removed.values()) touchObject(o)
  for (const [k, { object }] of changes.objects) {
    touchObject(object)
    const before = s.objects.get(k)
    if (before !== undefined && before !== null) touchObject(before)
  }
  // A chat written to otherwise (an event id, a title) gets a new revision too, with nothing of
  // what a cache keeps touched: a batch that read the chat before this write then sees it moved.
  for (const [chatId] of changes.seen) touchedIn(chatId)
  for (const chatId of changes.titles.keys()) touchedIn(chatId)
  return { objectRows, nextSeqs, changed }
}

/** Whether a batch writes nothing at all (every event a duplicate). */
const writesNothing = (c: Changes) =>
  c.messages.length === 0 && c.edits.size === 0 && c.forums.size === 0 && c.titles.size === 0 && c.removed.size === 0 &&
  c.objects.size === 0 && c.polls.size === 0 && c.closes.size === 0 && c.seen.length === 0

/** Rows as JSON objects of `columns` (what `jsonb_to_recordset` reads). */
const records = (columns: ReadonlyArray<readonly [string, unknown]>, rows: ReadonlyArray<ReadonlyArray<Scalar>>) =>
  rows.map((row) => {
    const out: Record<string, Scalar> = {}
    for (let i = 0; i < columns.length; i++) out[columns[i]![0]] = row[i] ?? null
    return out
  })

/** The argument of `deixis_apply` (migration 14): the chats read at their revisions, and every row to write. */
const applyArgument = (changes: Changes, s: Loaded, p: ReturnType<typeof plan>, chats: Iterable<string>, now: number) => ({
  now,
  chats: [...chats].map((chat_id) => ({ chat_id, revision: s.revisions.get(chat_id) ?? 0 })),
  messages: records(messageRowColumns, changes.messages.map(messageRow)),
  edits: [...changes.edits.values()].map(([chat_id, message_id, edited_at]) => ({
    chat_id,
    id_len: positionLength(message_id),
    message_id,
    edited_at
  })),
  removed: [...changes.removed.values()].map((o) => ({ chat_id: o.chat_id, object_id: o.object_id })),
  forums: [...changes.forums].map(([chat_id, isForum]) => ({ chat_id, is_forum: isForum ? 1 : 0 })),
  titles: [...changes.titles].map(([chat_id, title]) => ({ chat_id, title, title_key: searchKey(title) })),
  objects: records(objectRowColumns, p.objectRows),
  polls: [...changes.polls].map(([poll_id, ref]) => ({ poll_id, chat_id: ref.chat_id, object_id: ref.object_id })),
  cleared: [...changes.closes].filter(([, c]) => c === null).map(([id]) => id),
  closes: [...changes.closes].flatMap(([poll_id, c]) => (c === null ? [] : [{ poll_id, event_id: c.event_id, at: c.at }])),
  seen: changes.seen.map(([chat_id, event_id]) => ({ chat_id, event_id })),
  seqs: p.nextSeqs.map(([chat_id, next_seq]) => ({ chat_id, next_seq })),
  bump: [...p.changed.keys()]
})

/** A batch waiting in its chats' lane (see `inLane`), answered when written. */
interface Member {
  readonly events: ReadonlyArray<ContextEvent>
  readonly options: ApplyOptions
  readonly done: Deferred.Deferred<ApplyResult | undefined, SqlError | string>
}

/** Times a batch is read and reduced again after a concurrent write moved its chats, before it takes the locks up front. */
const applyAttempts = 4

export const makeWrite = (ctx: ContextSql, cache: ContextCache) => {
  const { bulk, d, db, objectOf } = ctx
  const load = makeLoad(ctx)
  const bumpRevisions = makeBumpRevisions(db)

  /** One statement per table over the batch's rows passed in bulk (see rowsTables). */
  const write = (changes: Changes, s: Loaded, now: number) =>
    Effect.gen(function*() {
      const p = plan(changes, s)
      if (changes.messages.length > 0) {
        // `WHERE true` keeps SQLite from reading ON CONFLICT as a join constraint of the SELECT.
        yield* bulk(
          messageRowColumns,
          changes.messages.map(messageRow),
          (from) =>
            sql`INSERT INTO deixis_messages (chat_id, id_len, message_id, topic, reply_len, reply_to, sender, from_bot, sent_at)
           SELECT * FROM ${from} WHERE true ON CONFLICT DO NOTHING`
        )
      }
      // After the insert: an edit of a message not seen before stores both.
      for (const [chatId, messageId, editedAt] of changes.edits.values()) {
        yield* db.query(
          sql`UPDATE deixis_messages SET edited_at = ${editedAt} WHERE chat_id = ${chatId} AND id_len = ${positionLength(messageId)} AND message_id = ${messageId}`)
      }
      for (const part of chunks([...changes.removed.values()], 2)) {
        yield* db.query(
          sql`DELETE FROM deixis_objects WHERE ${join(part.map((o) => sql`(chat_id = ${o.chat_id} AND object_id = ${o.object_id})`), " OR ")}`
        )
      }
      for (const [chatId, isForum] of changes.forums) {
        yield* db.query(sql`UPDATE deixis_chats SET is_forum = ${isForum ? 1 : 0} WHERE chat_id = ${chatId}`)
      }
      yield* writeTitles(db, changes.titles)
      const { changed, nextSeqs, objectRows } = p
      if (objectRows.length > 0) {
        yield* bulk(
          objectRowColumns,
          objectRows,
          (from) =>
            sql`INSERT INTO deixis_objects (${raw(objectColumns)}) SELECT * FROM ${from} WHERE true
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
            sql`INSERT INTO deixis_polls (poll_id, chat_id, object_id, stored_at) SELECT * FROM ${from} WHERE true
           ON CONFLICT (poll_id) DO UPDATE SET chat_id = excluded.chat_id, object_id = excluded.object_id, stored_at = excluded.stored_at`
        )
      }
      const cleared = [...changes.closes].filter(([, c]) => c === null).map(([id]) => id)
      for (const part of chunks(cleared, 1)) {
        yield* db.query(sql`DELETE FROM deixis_poll_closes WHERE poll_id IN ${list(part)}`)
      }
      const pending = [...changes.closes].flatMap(([id, c]) => (c === null ? [] : [[id, c] as const]))
      if (pending.length > 0) {
        yield* bulk(
          [["poll_id", "TEXT"], ["event_id", "TEXT"], ["at", "BIGINT"], ["stored_at", "BIGINT"]],
          pending.map(([id, c]) => [id, c.event_id, c.at, now]),
          (from) =>
            sql`INSERT INTO deixis_poll_closes (poll_id, event_id, at, stored_at) SELECT * FROM ${from} WHERE true
           ON CONFLICT (poll_id) DO UPDATE SET event_id = excluded.event_id, at = excluded.at, stored_at = excluded.stored_at`
        )
      }
      if (changes.seen.length > 0) {
        yield* bulk(
          [["chat_id", "TEXT"], ["event_id", "TEXT"], ["seen_at", "BIGINT"]],
          changes.seen.map(([c, e]) => [c, e, now]),
          (from) =>
            sql`INSERT INTO deixis_events (chat_id, event_id, seen_at) SELECT * FROM ${from} WHERE true ON CONFLICT DO NOTHING`
        )
      }
      for (const part of chunks(nextSeqs, 3)) {
        yield* db.query(
          sql`UPDATE deixis_chats SET next_seq = CASE chat_id ${
            join(part.map(([c, next]) => sql`WHEN ${c} THEN CAST(${next} AS BIGINT)`), " ")
          } ELSE next_seq END WHERE chat_id IN ${list(part.map(([c]) => c))}`
        )
      }
      const unit = yield* unitOf(db)
      if (unit === undefined) {
        yield* bumpRevisions([...changed.keys()])
        return [...changed].map(([chatId, touched]) => ({ chatId, from: s.revisions.get(chatId) ?? 0, touched }))
      }
      // In a unit of work: a chat's revision moves once per unit (the first write to it), and the
      // cache follows everything the unit wrote once it committed (see unit.ts).
      let ofUnit = unit.written.get(cache)
      if (ofUnit === undefined) unit.written.set(cache, ofUnit = new Map())
      const first: Array<string> = []
      for (const [chatId, touched] of changed) {
        const pending = ofUnit.get(chatId)
        if (pending !== undefined) {
          touchAll(pending.touched, touched)
          continue
        }
        first.push(chatId)
        ofUnit.set(chatId, { from: s.revisions.get(chatId) ?? 0, touched })
      }
      yield* bumpRevisions(first)
      return []
    })

  /**
   * Batches reduced one after the other over the rows they read (their changes accumulated).
   * What they read comes from the reducer itself: run once over nothing loaded (no I/O), it asks
   * for every row the events name, the objects their messages will carry included. Reads that
   * depend on what is stored (a poll close naming only its poll) are asked for by the rounds
   * below; each round loads everything asked for so far, and a round that asks for nothing new
   * is final.
   */
  const reduceAll = (batches: ReadonlyArray<Pick<Member, "events" | "options">>, lock: boolean) =>
    Effect.gen(function*() {
      const now = batches[batches.length - 1]!.options.now
      const wanted = new Wanted()
      // What the naming runs change is dropped, and nothing they read comes from it: one for all.
      const named = noChanges()
      for (const b of batches) reduce(b.events, b.options, nothingLoaded(), wanted, named)
      for (let round = 0;; round++) {
        const loaded = yield* load(wanted, now, lock)
        const missing = new Wanted()
        const changes = noChanges()
        const results = batches.map((b) => reduce(b.events, b.options, loaded, missing, changes).result)
        const before = wanted.size()
        merge(wanted, missing)
        if (wanted.size() === before || round >= 8) return { changes, results, loaded, chats: wanted.chats }
      }
    })

  /** The batch in one transaction that takes its chats' locks before it reads. */
  const applyLocked = (events: ReadonlyArray<ContextEvent>, options: ApplyOptions) =>
    db.transaction(Effect.gen(function*() {
      const { changes, loaded, results } = yield* reduceAll([{ events, options }], true)
      return { result: results[0]!, written: yield* write(changes, loaded, options.now) }
    }))

  /**
   * Batches as one read and one write (`deixis_apply`, migration 14): two round trips, one when
   * every event is a duplicate. The batches are reduced one after the other over the rows read
   * once, and written together. The write compares the chats' revisions with the ones read; when
   * another write moved one in between, the batches are read and reduced again, and after
   * `applyAttempts` the result is undefined (each then runs as `applyLocked`, which always
   * completes). On success this process's cache follows the write.
   */
  const applyTogether = (group: ReadonlyArray<Member>) =>
    Effect.gen(function*() {
      const now = group[group.length - 1]!.options.now
      for (let attempt = 0; attempt < applyAttempts; attempt++) {
        const { changes, chats, loaded, results } = yield* reduceAll(group, false)
        if (writesNothing(changes)) return results
        const p = plan(changes, loaded)
        if (yield* db.call!("apply", applyArgument(changes, loaded, p, chats, now))) {
          for (const [chatId, touched] of p.changed) cache.wrote(chatId, loaded.revisions.get(chatId) ?? 0, touched)
          return results
        }
      }
      return undefined
    })

  /**
   * This process's batches over the same chats, applied in turn, and those that arrive while one
   * is being written applied together after it (at most `maxGroup`): one read and one write for
   * all of them, where one after the other they would only move each other's revisions and read
   * again. Other processes' writes are what the revision check is for.
   */
  const lanes = new Map<string, Array<Member>>()
  const maxGroup = 64
  const inLane = (events: ReadonlyArray<ContextEvent>, options: ApplyOptions) =>
    Effect.gen(function*() {
      const named = new Wanted()
      reduce(events, options, nothingLoaded(), named)
      const lane = [...named.chats].sort().join("\u0000")
      const done = yield* Deferred.make<ApplyResult | undefined, SqlError | string>()
      const queue = lanes.get(lane)
      if (queue !== undefined) queue.push({ events, options, done })
      else {
        const started: Array<Member> = [{ events, options, done }]
        lanes.set(lane, started)
        yield* Effect.forkDaemon(drain(lane, started))
      }
      return yield* Deferred.await(done)
    })
  const drain = (lane: string, queue: Array<Member>) =>
    Effect.gen(function*() {
      while (queue.length > 0) yield* settle(queue.splice(0, maxGroup))
      lanes.delete(lane)
    })
  /** Applies a group and answers each member; a group that fails is applied member by member, so a failure is its batch's alone. */
  const settle = (group: ReadonlyArray<Member>): Effect.Effect<void> =>
    Effect.flatMap(Effect.exit(applyTogether(group)), (exit) => {
      if (Exit.isSuccess(exit)) {
        const results = exit.value
        return Effect.forEach(group, (m, i) => Deferred.succeed(m.done, results?.[i]), { discard: true })
      }
      return group.length > 1
        ? Effect.forEach(group, (m) => settle([m]), { discard: true })
        : Deferred.failCause(group[0]!.done, exit.cause)
    })

  /**
   * The batches of an optimistic group's members (see unitState.ts), in the members' order:
   * read once without locks and reduced one after the other, as `applyTogether` does; the write
   * is left to the group's one call (`deixis_unit`), which checks the revisions read here.
   */
  const processGroup = (requests: ReadonlyArray<unknown>): Effect.Effect<Processed<ApplyResult>, SqlError | string> =>
    Effect.gen(function*() {
      const batches = requests as ReadonlyArray<Pick<Member, "events" | "options">>
      const { changes, chats, loaded, results } = yield* reduceAll(batches, false)
      if (writesNothing(changes)) return { results, write: undefined }
      const p = plan(changes, loaded)
      const written = new Map<string, Pending>()
      for (const [chatId, touched] of p.changed) written.set(chatId, { from: loaded.revisions.get(chatId) ?? 0, touched })
      const chatsChanged = new Set([...changes.forums.keys(), ...changes.titles.keys()])
      return { results, write: applyArgument(changes, loaded, p, chats, batches[batches.length - 1]!.options.now), written, chatsChanged }
    })

  const failApply = failStore("apply")
  const apply = (events: ReadonlyArray<ContextEvent>, options: ApplyOptions): Effect.Effect<ApplyResult, StoreError> => {
    if (events.length === 0) return Effect.succeed({ applied: 0, duplicates: 0, skipped: [] })
    return Effect.withFiberRuntime<ApplyResult, StoreError>((fiber) => {
      const outside = Option.isNone(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))
      const unit = outside ? optimisticOf(fiber, db.sql) : undefined
      // A member of an optimistic group only hands its batch to the group (read, reduced and
      // written with the others'): no span of its own, the unit of work's span covers it (a
      // span per recorded update cost more than the hand-off).
      if (unit !== undefined) return Effect.mapError(unit.group!.submit(unit, "context", cache, { events, options }, processGroup), failApply)
      return applyAlone(outside, events, options)
    })
  }

  /** A batch on its own (outside a unit, or in a transaction): its own write, under its own span. */
  const applyAlone = (
    outside: boolean,
    events: ReadonlyArray<ContextEvent>,
    options: ApplyOptions
  ): Effect.Effect<ApplyResult, StoreError> => {
    const applied = outside && db.call !== undefined
      ? Effect.flatMap(inLane(events, options), (result) =>
        result === undefined ? applyLocked(events, options) : Effect.succeed({ result, written: [] }))
      : applyLocked(events, options)
    // Committed: this process's cache follows its own write (see ContextCache.wrote). Inside a
    // unit of work the unit does that after its commit (`written` is empty). Inside a caller's
    // own transaction this was only a savepoint, which may still roll back: the cache is left at
    // the old revision, which the committed write moves past.
    return Effect.map(applied, ({ result, written }) => {
      if (outside) for (const w of written) cache.wrote(w.chatId, w.from, w.touched)
      return result
    }).pipe(
      Effect.mapError(failApply),
      // No stack trace captured for the span: it would cost a write more than its statements.
      Effect.withSpan("SqlContextStore.apply", { captureStackTrace: false })
    )
  }

  const migrateChat = (from: string, to: string, at: number): Effect.Effect<MigrationResult, StoreError> =>
    from === to ? Effect.succeed({ migrated: false, moved: 0 }) : db.transaction(Effect.gen(function*() {
      // Both chats' rows, locked in a fixed order (as apply takes them), so no batch interleaves.
      const pair = [from, to].sort()
      yield* db.query(sql`INSERT INTO deixis_chats (chat_id, next_seq, created_at) VALUES (${pair[0]!}, 1, ${at}), (${pair[1]!}, 1, ${at}) ON CONFLICT (chat_id) DO NOTHING`)
      yield* db.query(sql`SELECT chat_id FROM deixis_chats WHERE chat_id IN ${list(pair)} ORDER BY chat_id${d.C}${d.forUpdate}`)
      const done = yield* db.query(sql`SELECT to_chat_id FROM deixis_chat_migrations WHERE chat_id = ${from}`)
      if (done.length > 0) return { migrated: false, moved: 0 }
      yield* db.query(sql`INSERT INTO deixis_chat_migrations (chat_id, to_chat_id, migrated_at) VALUES (${from}, ${to}, ${at})`)
      yield* bumpRevisions(pair)

      // Messages: re-keyed, so the new chat's own ids (from 1 again) never meet the old ones.
      const messageRows = yield* db.query(
        sql`SELECT message_id, topic, reply_to, sender, from_bot, sent_at, edited_at FROM deixis_messages WHERE chat_id = ${from}`)
      yield* bulk(
        messageRowColumns,
        messageRows.map((r) => messageRow(messageToMigratedChat(messageOf(from, r), to))),
        (rows) =>
          sql`INSERT INTO deixis_messages (chat_id, id_len, message_id, topic, reply_len, reply_to, sender, from_bot, sent_at)
           SELECT * FROM ${rows} WHERE true ON CONFLICT DO NOTHING`
      )
      for (const r of messageRows) {
        if (r["edited_at"] === null || r["edited_at"] === undefined) continue
        const id = migratedMessageId(str(r["message_id"]))
        yield* db.query(
          sql`UPDATE deixis_messages SET edited_at = ${num(r["edited_at"])} WHERE chat_id = ${to} AND id_len = ${positionLength(id)} AND message_id = ${id}`)
      }
      yield* db.query(sql`DELETE FROM deixis_messages WHERE chat_id = ${from}`)

      // Objects: ids stay; they come before the new chat's own in the order of storage.
      const objectRows = yield* db.query(sql`SELECT body FROM deixis_objects WHERE chat_id = ${from} ORDER BY seq`)
      const lowest = yield* db.query(sql`SELECT MIN(seq) AS low FROM deixis_objects WHERE chat_id = ${to}`)
      const low = lowest[0]?.["low"] === null || lowest[0]?.["low"] === undefined ? 1 : num(lowest[0]["low"])
      const base = Math.min(low, 1) - objectRows.length
      const moved: Array<ReadonlyArray<Scalar>> = []
      for (let i = 0; i < objectRows.length; i++) {
        const decoded = objectOf(objectRows[i]!["body"])
        if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
        moved.push(objectRow(toMigratedChat(decoded.right, to), base + i))
      }
      yield* bulk(
        objectRowColumns,
        moved,
        (rows) => sql`INSERT INTO deixis_objects (${raw(objectColumns)}) SELECT * FROM ${rows} WHERE true ON CONFLICT (chat_id, object_id) DO NOTHING`
      )
      yield* db.query(sql`DELETE FROM deixis_objects WHERE chat_id = ${from}`)

      // Poll ids and the event ids already applied follow the chat.
      yield* db.query(sql`UPDATE deixis_polls SET chat_id = ${to} WHERE chat_id = ${from}`)
      yield* db.query(
        sql`INSERT INTO deixis_events (chat_id, event_id, seen_at) SELECT ${to}, event_id, seen_at FROM deixis_events WHERE chat_id = ${from}
         ON CONFLICT DO NOTHING`)
      yield* db.query(sql`DELETE FROM deixis_events WHERE chat_id = ${from}`)
      return { migrated: true, moved: messageRows.length + objectRows.length }
    })).pipe(Effect.mapError(failStore("migrateChat")), Effect.withSpan("SqlContextStore.migrateChat"))

  return { apply, migrateChat }
}
