/**
 * The ReminderStore and the UpdateInbox over SQL. Claims are taken in one write transaction:
 * on PostgreSQL the rows are picked with `FOR UPDATE SKIP LOCKED`, so concurrent claimants in
 * any number of processes each take different rows without waiting on each other; on SQLite
 * the transaction holds the database's write lock (`BEGIN IMMEDIATE`).
 */
import { StoreError } from "@deixis/core/ContextStore"
import { migratedIdPrefix } from "@deixis/core/Ids"
import type { ClaimedReminder, Reminder, ReminderStoreShape } from "@deixis/core/ReminderStore"
import { Reminder as ReminderSchema } from "@deixis/core/ReminderStore"
import type { Handed, UpdateInboxShape } from "@deixis/core/UpdateInbox"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { chunks, type Db, describe, num, type Row, str, topicKey } from "./db.js"
import { storeError } from "./availability.js"
import { empty, list, raw, sql as fragment, tuples } from "./statement.js"

const fail = (what: string) => (error: SqlError | string): StoreError =>
  storeError(`${what} failed: ${typeof error === "string" ? error : describe(error)}`, error)

const decodeReminder = Schema.decodeUnknownEither(Schema.parseJson(ReminderSchema))
const encodeReminder = Schema.encodeSync(Schema.parseJson(ReminderSchema))

/** The body as stored; the chat id is the row's (a migrated reminder keeps its body). */
const reminderOf = (row: Row): Effect.Effect<Reminder, string> =>
  Either.match(decodeReminder(str(row["body"])), {
    onLeft: (e) => Effect.fail(`stored reminder unreadable: ${e.message}`),
    onRight: (r) => Effect.succeed({ ...r, chat_id: str(row["chat_id"]) })
  })

export const makeSqlReminderStore = (db: Db): ReminderStoreShape => {
  const sql = db.run
  const { C, skipLocked: lock } = db.dialect
  // The body of a moved reminder: its source message id in migrated form (a constant prefix).
  const migratedBody = db.dialect.jsonSetString("body", "source_message_id", (id) => fragment`${migratedIdPrefix} || ${id}`)
  return {
    add: (r) =>
      sql`INSERT INTO deixis_reminders (chat_id, object_id, topic, due_at, next_at, owner, attempts, body)
        VALUES (${r.chat_id}, ${r.object_id}, ${topicKey(r.topic_id)}, ${r.due_at}, ${r.due_at}, NULL, 0, ${encodeReminder(r)})
        ON CONFLICT (chat_id, object_id) DO UPDATE SET topic = excluded.topic, due_at = excluded.due_at,
          next_at = excluded.next_at, owner = NULL, attempts = 0, body = excluded.body`.pipe(Effect.asVoid, Effect.mapError(fail("reminder add"))),
    get: (chatId, objectId) =>
      sql`SELECT chat_id, body FROM deixis_reminders WHERE chat_id = ${chatId} AND object_id = ${objectId}`.pipe(
        Effect.flatMap((rows) => rows[0] === undefined ? Effect.succeed(Option.none()) : Effect.map(reminderOf(rows[0]), Option.some)),
        Effect.mapError(fail("reminder get"))
      ),
    remove: (chatId, objectId) =>
      sql`DELETE FROM deixis_reminders WHERE chat_id = ${chatId} AND object_id = ${objectId} RETURNING object_id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.mapError(fail("reminder remove"))
      ),
    list: (chatId, { limit, topic_id }) =>
      sql`SELECT chat_id, body FROM deixis_reminders WHERE chat_id = ${chatId}
        ORDER BY CASE WHEN topic = ${topicKey(topic_id)} THEN 0 ELSE 1 END, due_at, object_id${C} LIMIT ${Math.max(0, Math.floor(limit))}`.pipe(
        Effect.flatMap((rows) => Effect.forEach(rows, reminderOf)),
        Effect.mapError(fail("reminder list"))
      ),
    claimDue: ({ lease, limit, now, owner }) =>
      db.transaction(Effect.gen(function*() {
        const rows = yield* sql`SELECT chat_id, object_id, attempts, body FROM deixis_reminders WHERE next_at <= ${now}
          ORDER BY next_at, due_at, object_id${C} LIMIT ${Math.max(0, Math.floor(limit))}${lock}`
        const out: Array<ClaimedReminder> = []
        for (const row of rows) {
          yield* sql`UPDATE deixis_reminders SET owner = ${owner}, next_at = ${now + lease}, attempts = attempts + 1
            WHERE chat_id = ${str(row["chat_id"])} AND object_id = ${str(row["object_id"])}`
          out.push({ ...(yield* reminderOf(row)), attempts: num(row["attempts"]) })
        }
        return out
      })).pipe(Effect.mapError(fail("reminder claim"))),
    extend: (chatId, objectId, owner, until) =>
      sql`UPDATE deixis_reminders SET next_at = ${until}
        WHERE chat_id = ${chatId} AND object_id = ${objectId} AND owner = ${owner} RETURNING object_id`.pipe(Effect.map((rows) => rows.length > 0), Effect.mapError(fail("reminder extend"))),
    complete: (chatId, objectId, owner) =>
      sql`DELETE FROM deixis_reminders WHERE chat_id = ${chatId} AND object_id = ${objectId} AND owner = ${owner} RETURNING object_id`.pipe(Effect.map((rows) => rows.length > 0), Effect.mapError(fail("reminder complete"))),
    retryAt: (chatId, objectId, owner, at) =>
      sql`UPDATE deixis_reminders SET owner = NULL, next_at = ${at}
        WHERE chat_id = ${chatId} AND object_id = ${objectId} AND owner = ${owner} RETURNING object_id`.pipe(Effect.map((rows) => rows.length > 0), Effect.mapError(fail("reminder retry"))),
    nextDueAt: sql`SELECT MIN(next_at) AS m FROM deixis_reminders`.pipe(
      Effect.map((rows) => {
        const m = rows[0]?.["m"]
        return m === null || m === undefined ? Option.none() : Option.some(num(m))
      }),
      Effect.mapError(fail("reminder next due"))
    ),
    stats: (now) =>
      sql`SELECT COUNT(*) AS pending, COALESCE(SUM(CASE WHEN due_at <= ${now} THEN 1 ELSE 0 END), 0) AS due FROM deixis_reminders`
        .pipe(
          Effect.map((rows) => ({ pending: num(rows[0]?.["pending"] ?? 0), due: num(rows[0]?.["due"] ?? 0) })),
          Effect.mapError(fail("reminder stats"))
        ),
    migrateChat: (from, to) =>
      from === to ? Effect.succeed(0) : db.transaction(Effect.gen(function*() {
        // A reminder already under the new id wins; the claim does not move (it is due for anyone
        // again); the source message id takes its migrated form, as the context store's messages do.
        const moved = yield* sql`INSERT INTO deixis_reminders (chat_id, object_id, topic, due_at, next_at, owner, attempts, body)
          SELECT ${to}, object_id, topic, due_at, due_at, NULL, attempts, ${migratedBody} FROM deixis_reminders WHERE chat_id = ${from}
          ON CONFLICT (chat_id, object_id) DO NOTHING RETURNING object_id`
        yield* sql`DELETE FROM deixis_reminders WHERE chat_id = ${from}`
        return moved.length
      })).pipe(Effect.mapError(fail("reminder chat migration")))
  }
}

export const makeSqlUpdateInbox = (db: Db): UpdateInboxShape => {
  const sql = db.run
  const { C, forUpdate, skipLocked } = db.dialect
  const handedOf = (row: Row): Handed => ({
    update_id: num(row["update_id"]),
    chat: str(row["chat"]),
    payload: str(row["payload"]),
    attempts: num(row["attempts"]) + 1
  })
  const markHanded = (source: string, ids: ReadonlyArray<number>, until: number) =>
    Effect.forEach(
      chunks(ids, 1),
      (chunk) => sql`UPDATE deixis_updates SET lease_until = ${until}, attempts = attempts + 1 WHERE source = ${source} AND update_id IN ${list(chunk)}`,
      { discard: true }
    )
  // The updates of `chats` not done (`waitingOnly`: those not handed), oldest first, handed to
  // the caller in the same transaction: each hand-out one more attempt.
  const handPending = (source: string, chats: ReadonlyArray<string>, waitingOnly: boolean, until: number) =>
    Effect.gen(function*() {
      if (chats.length === 0) return []
      const out: Array<Handed> = []
      for (const chunk of chunks(chats, 1)) {
        const rows = yield* sql`SELECT update_id, chat, payload, attempts FROM deixis_updates
          WHERE source = ${source} AND chat IN ${list(chunk)} AND payload IS NOT NULL${waitingOnly ? raw(" AND lease_until IS NULL") : empty}`
        for (const row of rows) out.push(handedOf(row))
      }
      yield* markHanded(source, out.map((h) => h.update_id), until)
      return out.sort((a, b) => a.update_id - b.update_id)
    })
  // Chats claimed with nothing to hand over (their updates were done meanwhile) are released at once.
  const releaseIdle = (source: string, owner: string, chats: ReadonlyArray<string>, handed: ReadonlyArray<Handed>) => {
    const busy = new Set(handed.map((h) => h.chat))
    return Effect.forEach(
      chunks(chats.filter((chat) => !busy.has(chat)).sort(), 1),
      (chunk) => sql`DELETE FROM deixis_update_chats WHERE source = ${source} AND owner = ${owner} AND waiting = 0 AND chat IN ${list(chunk)}`,
      { discard: true }
    )
  }
  return {
    receive: ({ lease, now, owner, source, updates }) => {
      // One id once, even when the batch repeats it.
      const unique = [...new Map(updates.map((u) => [u.update_id, u] as const)).values()]
      if (unique.length === 0) return Effect.succeed({ fresh: [], handed: [], waiting: [] })
      return db.transaction(Effect.gen(function*() {
        const fresh: Array<number> = []
        for (const chunk of chunks(unique, 7)) {
          // Waiting (`lease_until` null, no attempt yet) until handed below.
          const rows = yield* sql`INSERT INTO deixis_updates (source, update_id, chat, received_at, lease_until, attempts, payload) VALUES ${
            tuples(chunk.map((u) => [source, u.update_id, u.chat, now, null, 0, u.payload]))
          } ON CONFLICT (source, update_id) DO NOTHING RETURNING update_id`
          for (const row of rows) fresh.push(num(row["update_id"]))
        }
        if (fresh.length === 0) return { fresh, handed: [], waiting: [] }
        const byId = new Map(unique.map((u) => [u.update_id, u] as const))
        const chats = [...new Set(fresh.map((id) => byId.get(id)!.chat))].sort()
        // The claims as they stand, locked (PostgreSQL) in sorted order; on SQLite the
        // transaction holds the write lock.
        const before = new Map<string, Row>()
        for (const chunk of chunks(chats, 1)) {
          const rows = yield* sql`SELECT chat, owner, lease_until, waiting FROM deixis_update_chats
            WHERE source = ${source} AND chat IN ${list(chunk)} ORDER BY chat${C}${forUpdate}`
          for (const row of rows) before.set(str(row["chat"]), row)
        }
        const held = (row: Row | undefined) => row !== undefined && str(row["owner"]) !== owner && num(row["lease_until"]) > now
        const claimed = new Set<string>()
        for (const chunk of chunks(chats.filter((chat) => !held(before.get(chat))), 5)) {
          // A claim inserted meanwhile by another process (unseen above) stays theirs.
          const rows = yield* sql`INSERT INTO deixis_update_chats (source, chat, owner, lease_until, waiting) VALUES ${
            tuples(chunk.map((chat) => [source, chat, owner, now + lease, 0]))
          } ON CONFLICT (source, chat) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until, waiting = 0
            WHERE deixis_update_chats.owner = excluded.owner OR deixis_update_chats.lease_until <= ${now} RETURNING chat`
          for (const row of rows) claimed.add(str(row["chat"]))
        }
        const waiting = chats.filter((chat) => !claimed.has(chat))
        for (const chunk of chunks(waiting, 1)) {
          yield* sql`UPDATE deixis_update_chats SET waiting = 1 WHERE source = ${source} AND chat IN ${list(chunk)}`
        }
        // Taken over from another owner: every update not done; held with updates waiting: those;
        // otherwise only the fresh ones.
        const takenOver: Array<string> = []
        const withWaiting: Array<string> = []
        for (const chat of claimed) {
          const row = before.get(chat)
          if (row === undefined) continue
          if (str(row["owner"]) !== owner) takenOver.push(chat)
          else if (num(row["waiting"]) !== 0) withWaiting.push(chat)
        }
        const until = now + lease
        const handed: Array<Handed> = [
          ...(yield* handPending(source, takenOver, false, until)),
          ...(yield* handPending(source, withWaiting, true, until))
        ]
        const plain = fresh.flatMap((id) => {
          const u = byId.get(id)!
          return claimed.has(u.chat) && !takenOver.includes(u.chat) && !withWaiting.includes(u.chat) ? [u] : []
        })
        yield* markHanded(source, plain.map((u) => u.update_id), until)
        for (const u of plain) handed.push({ update_id: u.update_id, chat: u.chat, payload: u.payload, attempts: 1 })
        return { fresh, handed: handed.sort((a, b) => a.update_id - b.update_id), waiting }
      })).pipe(Effect.mapError(fail("update receive")))
    },
    settle: ({ done, hold, lease, now, owner, release, returned, source, stall }) =>
      done.length + returned.length + hold.length + release.length + stall.length === 0
        ? Effect.succeed([])
        : db.transaction(Effect.gen(function*() {
          const until = now + lease
          for (const chunk of chunks(done, 1)) {
            yield* sql`UPDATE deixis_updates SET payload = NULL, lease_until = NULL WHERE source = ${source} AND update_id IN ${list(chunk)}`
          }
          const givenBack = new Set<string>()
          for (const chunk of chunks(returned, 1)) {
            const rows = yield* sql`UPDATE deixis_updates SET lease_until = NULL, attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END
              WHERE source = ${source} AND update_id IN ${list(chunk)} AND payload IS NOT NULL AND lease_until IS NOT NULL RETURNING chat`
            for (const row of rows) givenBack.add(str(row["chat"]))
          }
          // Claims are locked in sorted order (as `receive` takes them): no two writers deadlock.
          for (const chunk of chunks([...givenBack].sort(), 1)) {
            yield* sql`UPDATE deixis_update_chats SET waiting = 1 WHERE source = ${source} AND chat IN ${list(chunk)}`
          }
          for (const chunk of chunks([...hold].sort(), 1)) {
            yield* sql`UPDATE deixis_update_chats SET lease_until = ${until} WHERE source = ${source} AND owner = ${owner} AND chat IN ${list(chunk)}`
          }
          for (const chunk of chunks([...stall].sort(), 1)) {
            yield* sql`UPDATE deixis_update_chats SET owner = '', lease_until = ${until}, waiting = 1
              WHERE source = ${source} AND owner = ${owner} AND chat IN ${list(chunk)}`
          }
          const kept: Array<string> = []
          for (const chunk of chunks([...release].sort(), 1)) {
            yield* sql`DELETE FROM deixis_update_chats WHERE source = ${source} AND owner = ${owner} AND waiting = 0 AND chat IN ${list(chunk)}`
            const rows = yield* sql`UPDATE deixis_update_chats SET waiting = 0, lease_until = ${until}
              WHERE source = ${source} AND owner = ${owner} AND waiting = 1 AND chat IN ${list(chunk)} RETURNING chat`
            for (const row of rows) kept.push(str(row["chat"]))
          }
          const handed = yield* handPending(source, kept, true, until)
          yield* releaseIdle(source, owner, kept, handed)
          return handed
        })).pipe(Effect.mapError(fail("update settle"))),
    claimStale: ({ lease, limit, now, owner, source }) =>
      db.transaction(Effect.gen(function*() {
        const rows = yield* sql`SELECT chat FROM deixis_update_chats WHERE source = ${source} AND lease_until <= ${now}
          ORDER BY lease_until, chat${C} LIMIT ${Math.max(0, Math.floor(limit))}${skipLocked}`
        const chats = rows.map((row) => str(row["chat"]))
        for (const chunk of chunks(chats, 1)) {
          yield* sql`UPDATE deixis_update_chats SET owner = ${owner}, lease_until = ${now + lease}, waiting = 0
            WHERE source = ${source} AND chat IN ${list(chunk)}`
        }
        const handed = yield* handPending(source, chats, false, now + lease)
        yield* releaseIdle(source, owner, chats, handed)
        return handed
      })).pipe(Effect.mapError(fail("update claim"))),
    sweep: (before, limit) =>
      sql`DELETE FROM deixis_updates WHERE (source, update_id) IN (
          SELECT source, update_id FROM deixis_updates WHERE payload IS NULL AND received_at < ${before} LIMIT ${Math.max(0, Math.floor(limit))}
        ) RETURNING update_id`.pipe(Effect.map((rows) => rows.length), Effect.mapError(fail("update sweep")))
  }
}
