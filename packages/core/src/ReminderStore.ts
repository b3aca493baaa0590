/**
 * The pending-reminder schedule of a bot: reminders waiting to be sent, indexed by when they
 * are next due, claimed by a sender with a lease.
 *
 * A reminder is also a context object (its activity and `due_at` live in the
 * {@link ContextStore}); objects are swept a while after they stop being active, and nothing
 * there answers "which reminders are due now, across every chat". This port does:
 *
 * - `claimDue` hands each due reminder to one claimant at a time. The claim is a lease:
 *   the reminder is invisible to other claimants until `now + lease`; the claimant then
 *   `complete`s it (it leaves the store) or `retryAt`s it (it is due again later). A claimant
 *   that dies mid-send leaves its claims to expire, and another process sends them. On
 *   PostgreSQL claims are taken with `FOR UPDATE SKIP LOCKED`, so N bot processes send each
 *   reminder once (at least once if a process dies between a send and its `complete`).
 * - `migrateChat` moves a chat's reminders to a new chat id (a Telegram group upgraded to a
 *   supergroup), atomically and idempotently.
 *
 * Every adapter passes `@deixis/core/ReminderStoreTesting`'s contract suite.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { StoreError } from "./ContextStore.js"
import { migratedMessageId } from "./Ids.js"

/**
 * A pending reminder. Times are epoch milliseconds.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Reminder = Schema.Struct({
  object_id: Schema.String,
  chat_id: Schema.String,
  topic_id: Schema.NullOr(Schema.String),
  source_message_id: Schema.String,
  created_by_user_id: Schema.NullOr(Schema.String),
  text: Schema.String,
  due_at: Schema.Number,
  created_at: Schema.Number
})

/**
 * @since 0.1.0
 * @category models
 */
export type Reminder = typeof Reminder.Type

/**
 * A reminder handed to a claimant: `attempts` counts the claims before this one that ended
 * without `complete` (a failed send, or a claimant that died).
 *
 * @since 0.1.0
 * @category models
 */
export interface ClaimedReminder extends Reminder {
  readonly attempts: number
}

/**
 * What `claimDue` takes.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClaimRequest {
  /** Reminders whose next due time is at or before this are claimed. */
  readonly now: number
  /** Who claims (unique per process): only the owner may complete or release a claim. */
  readonly owner: string
  /** How long the claim holds, in milliseconds. */
  readonly lease: number
  /** At most this many, earliest first. */
  readonly limit: number
}

/**
 * Counts for monitoring.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReminderStats {
  readonly pending: number
  /** Pending and due at `now` (claimed ones included). */
  readonly due: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ReminderStoreShape {
  /** Stores a reminder, replacing one with the same chat and object id (its claim dropped). */
  readonly add: (reminder: Reminder) => Effect.Effect<void, StoreError>
  readonly get: (chatId: string, objectId: string) => Effect.Effect<Option.Option<Reminder>, StoreError>
  /** Removes a reminder (cancelled); whether it was there. */
  readonly remove: (chatId: string, objectId: string) => Effect.Effect<boolean, StoreError>
  /**
   * A chat's pending reminders, at most `limit`: those of `topic_id` first (the topicless
   * scope when null), then the rest of the chat, each part by due time.
   */
  readonly list: (
    chatId: string,
    options: { readonly topic_id: string | null; readonly limit: number }
  ) => Effect.Effect<ReadonlyArray<Reminder>, StoreError>
  /** Claims the due reminders no live claim holds, earliest first. */
  readonly claimDue: (request: ClaimRequest) => Effect.Effect<ReadonlyArray<ClaimedReminder>, StoreError>
  /**
   * The claim is still `owner`'s: it now holds until `until`. False when `owner` no longer
   * holds it (its lease ended and another claimant took it). A sender calls this right before
   * sending, so a claim that waited in a queue past its lease is not sent a second time.
   */
  readonly extend: (chatId: string, objectId: string, owner: string, until: number) => Effect.Effect<boolean, StoreError>
  /** The claimed reminder was sent: it leaves the store. False when `owner` no longer holds it. */
  readonly complete: (chatId: string, objectId: string, owner: string) => Effect.Effect<boolean, StoreError>
  /** The claimed reminder could not be sent: due again at `at`. False when `owner` no longer holds it. */
  readonly retryAt: (chatId: string, objectId: string, owner: string, at: number) => Effect.Effect<boolean, StoreError>
  /** When the earliest reminder is next due (claims included), if any: a scheduler sleeps until then. */
  readonly nextDueAt: Effect.Effect<Option.Option<number>, StoreError>
  readonly stats: (now: number) => Effect.Effect<ReminderStats, StoreError>
  /**
   * Moves every reminder of chat `from` to chat `to` in one step (claims dropped); a reminder
   * already under `to` with the same object id wins. A moved reminder's source message id
   * becomes its migrated form (`Ids.migratedMessageId`, as the context store re-keys the old
   * chat's messages), so it is never mistaken for a message of the new chat. Returns how many
   * moved; a second call moves none.
   */
  readonly migrateChat: (from: string, to: string) => Effect.Effect<number, StoreError>
}

/**
 * The port.
 *
 * @since 0.1.0
 * @category tags
 */
export class ReminderStore extends Context.Tag("@deixis/core/ReminderStore")<ReminderStore, ReminderStoreShape>() {}

interface Row {
  reminder: Reminder
  next_at: number
  owner: string | null
  attempts: number
}

const key = (chatId: string, objectId: string) => `${chatId}\u0000${objectId}`

const byDue = (a: Reminder, b: Reminder) =>
  a.due_at - b.due_at || (a.object_id < b.object_id ? -1 : a.object_id > b.object_id ? 1 : 0)

/**
 * An in-memory store (lost on restart): one map per built layer. Claims work as in the SQL
 * adapters, so one process behaves the same over either.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (): ReminderStoreShape => {
  const rows = new Map<string, Row>()
  const held = (row: Row | undefined, owner: string): row is Row => row !== undefined && row.owner === owner
  return {
    add: (reminder) =>
      Effect.sync(() => {
        rows.set(key(reminder.chat_id, reminder.object_id), { reminder, next_at: reminder.due_at, owner: null, attempts: 0 })
      }),
    get: (chatId, objectId) => Effect.sync(() => Option.fromNullable(rows.get(key(chatId, objectId))?.reminder)),
    remove: (chatId, objectId) => Effect.sync(() => rows.delete(key(chatId, objectId))),
    list: (chatId, { limit, topic_id }) =>
      Effect.sync(() => {
        const mine = [...rows.values()].map((r) => r.reminder).filter((r) => r.chat_id === chatId)
        const here = mine.filter((r) => r.topic_id === topic_id).sort(byDue)
        const rest = mine.filter((r) => r.topic_id !== topic_id).sort(byDue)
        return [...here, ...rest].slice(0, Math.max(0, limit))
      }),
    claimDue: ({ lease, limit, now, owner }) =>
      Effect.sync(() => {
        const due = [...rows.values()].filter((r) => r.next_at <= now).sort((a, b) =>
          a.next_at - b.next_at || byDue(a.reminder, b.reminder)
        ).slice(0, Math.max(0, limit))
        return due.map((row) => {
          const attempts = row.attempts
          row.owner = owner
          row.next_at = now + lease
          row.attempts = attempts + 1
          return { ...row.reminder, attempts }
        })
      }),
    extend: (chatId, objectId, owner, until) =>
      Effect.sync(() => {
        const row = rows.get(key(chatId, objectId))
        if (!held(row, owner)) return false
        row.next_at = until
        return true
      }),
    complete: (chatId, objectId, owner) =>
      Effect.sync(() => held(rows.get(key(chatId, objectId)), owner) && rows.delete(key(chatId, objectId))),
    retryAt: (chatId, objectId, owner, at) =>
      Effect.sync(() => {
        const row = rows.get(key(chatId, objectId))
        if (!held(row, owner)) return false
        row.owner = null
        row.next_at = at
        return true
      }),
    nextDueAt: Effect.sync(() => {
      let min: number | undefined
      for (const row of rows.values()) if (min === undefined || row.next_at < min) min = row.next_at
      return Option.fromNullable(min)
    }),
    stats: (now) =>
      Effect.sync(() => {
        let due = 0
        for (const row of rows.values()) if (row.reminder.due_at <= now) due++
        return { pending: rows.size, due }
      }),
    migrateChat: (from, to) =>
      Effect.sync(() => {
        if (from === to) return 0
        let moved = 0
        for (const [k, row] of [...rows]) {
          if (row.reminder.chat_id !== from) continue
          rows.delete(k)
          const target = key(to, row.reminder.object_id)
          if (rows.has(target)) continue
          const reminder = { ...row.reminder, chat_id: to, source_message_id: migratedMessageId(row.reminder.source_message_id) }
          rows.set(target, { reminder, next_at: row.reminder.due_at, owner: null, attempts: row.attempts })
          moved++
        }
        return moved
      })
  }
}

/**
 * The in-memory adapter as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<ReminderStore> = Layer.sync(ReminderStore, makeMemory)

/**
 * Core's store error, which every call fails with.
 *
 * @since 0.1.0
 * @category errors
 */
export { StoreError }
