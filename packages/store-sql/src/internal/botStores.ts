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
import type { Incoming, UpdateInboxShape } from "@deixis/core/UpdateInbox"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type Db, describe, num, type Row, str, topicKey } from "./db.js"
import { settles } from "./inbox.js"
import { sql as fragment } from "./statement.js"
import { storeError } from "./availability.js"

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
        ORDER BY CASE WHEN topic = ${topicKey(topic_id)} THEN 0 ELSE 1 END, due_at, object_id${C} LIMIT CAST(${Math.max(0, Math.floor(limit))} AS INTEGER)`.pipe(
        Effect.flatMap((rows) => Effect.forEach(rows, reminderOf)),
        Effect.mapError(fail("reminder list"))
      ),
    claimDue: ({ lease, limit, now, owner }) =>
      db.transaction(Effect.gen(function*() {
        const rows = yield* sql`SELECT chat_id, object_id, attempts, body FROM deixis_reminders WHERE next_at <= ${now}
          ORDER BY next_at, due_at, object_id${C} LIMIT CAST(${Math.max(0, Math.floor(limit))} AS INTEGER)${lock}`
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

// One id once, even when the batch repeats it.
const uniqueIds = (incoming: Incoming): Incoming => ({
  ...incoming,
  updates: [...new Map(incoming.updates.map((u) => [u.update_id, u] as const)).values()]
})

export const makeSqlUpdateInbox = (db: Db): UpdateInboxShape => ({
  receive: (incoming) => {
    const unique = uniqueIds(incoming)
    if (unique.updates.length === 0) return Effect.succeed({ fresh: [], handed: [], waiting: [] })
    return db.body("receive", unique).pipe(Effect.mapError(fail("update receive")))
  },
  settle: (settlement) =>
    settles(settlement) ? db.body("settle", settlement).pipe(Effect.mapError(fail("update settle"))) : Effect.succeed([]),
  // SQLite runs both bodies whole on its writer thread, in one transaction: one round trip where
  // two calls took two (and two commits). PostgreSQL has a server function per body (migration
  // 18), so a caller makes the two calls there.
  settleAndReceive: db.dialect.name !== "sqlite" ? undefined : (settlement, incoming) => {
    const unique = uniqueIds(incoming)
    return settles(settlement) || unique.updates.length > 0
      ? db.body("exchange", { settlement, incoming: unique }).pipe(Effect.mapError(fail("update settle and receive")))
      : Effect.succeed({ settled: [], received: { fresh: [], handed: [], waiting: [] } })
  },
  claimStale: (request) => db.body("claimStale", request).pipe(Effect.mapError(fail("update claim"))),
  sweep: (before, limit) =>
    db.run`DELETE FROM deixis_updates WHERE (source, update_id) IN (
        SELECT source, update_id FROM deixis_updates WHERE payload IS NULL AND received_at < ${before} LIMIT CAST(${Math.max(0, Math.floor(limit))} AS INTEGER)
      ) RETURNING update_id`.pipe(Effect.map((rows) => rows.length), Effect.mapError(fail("update sweep")))
})
