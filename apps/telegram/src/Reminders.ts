/**
 * Reminders: parsing `/remind`'s `<in>`, and the pending-reminder store the scheduler
 * reloads on start (so reminders survive a restart).
 *
 * Core keeps the reminder *object* (its activity, its `due_at`), but objects are swept a
 * while after they stop being active, and core has no "all due reminders" query; the
 * schedule itself therefore lives here. {@link layerPersistent} keeps it as one document in
 * whatever `ConversationStateStore` the deployment uses (SQLite by default), under a scope no
 * Telegram chat can have.
 *
 * @since 0.1.0
 */
import { Timestamp } from "@deixis/core/Ids"
import * as ConversationState from "@deixis/core/ConversationState"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

/**
 * A pending reminder.
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
 * The longest reminder text kept (Telegram's message limit leaves room for the prefix).
 *
 * @since 0.1.0
 * @category constants
 */
export const maxTextLength = 1000

/**
 * The furthest a relative `<in>` may reach.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxAheadMillis = 366 * 24 * 60 * 60 * 1000

const units = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const
const decodeTimestamp = Schema.decodeUnknownEither(Timestamp)

/**
 * `<in>` of `/remind`: `10m`, `2h`, `1d`, or an RFC 3339 date-time with offset
 * (`2026-12-01T09:00:00Z`), relative to `now` (epoch ms). The due time, or why not.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseWhen = (input: string, now: number): Either.Either<number, string> => {
  const relative = /^(\d{1,6})([mhd])$/.exec(input.trim())
  if (relative !== null) {
    const amount = Number(relative[1]) * units[relative[2] as keyof typeof units]
    return amount <= 0
      ? Either.left("the delay must be positive")
      : amount > maxAheadMillis
      ? Either.left("at most a year ahead")
      : Either.right(now + amount)
  }
  const absolute = decodeTimestamp(input.trim())
  if (Either.isLeft(absolute)) return Either.left("expected 10m, 2h, 1d or a date-time like 2026-12-01T09:00:00Z")
  if (absolute.right <= now) return Either.left("that time has passed")
  if (absolute.right - now > maxAheadMillis) return Either.left("at most a year ahead")
  return Either.right(absolute.right)
}

/**
 * `/remind <in> <text>`'s arguments: the due time and the text, or why not.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseRemind = (payload: string, now: number): Either.Either<{ readonly due_at: number; readonly text: string }, string> => {
  const trimmed = payload.trim()
  const space = trimmed.search(/\s/)
  if (trimmed === "" || space < 0) return Either.left("usage: /remind <10m|2h|1d|date-time> <text>")
  const text = trimmed.slice(space + 1).trim()
  return Either.map(parseWhen(trimmed.slice(0, space), now), (due_at) => ({
    due_at,
    text: text.length > maxTextLength ? text.slice(0, maxTextLength) : text
  }))
}

/**
 * The reminder store failed.
 *
 * @since 0.1.0
 * @category errors
 */
export class ReminderStoreError extends Data.TaggedError("ReminderStoreError")<{ readonly cause: unknown }> {}

/**
 * @since 0.1.0
 * @category models
 */
export interface ReminderStoreShape {
  readonly add: (reminder: Reminder) => Effect.Effect<void, ReminderStoreError>
  /** Removes a reminder; whether it was there. */
  readonly remove: (objectId: string) => Effect.Effect<boolean, ReminderStoreError>
  readonly get: (objectId: string) => Effect.Effect<Reminder | undefined, ReminderStoreError>
  readonly forChat: (chatId: string) => Effect.Effect<ReadonlyArray<Reminder>, ReminderStoreError>
  readonly all: Effect.Effect<ReadonlyArray<Reminder>, ReminderStoreError>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ReminderStore extends Context.Tag("@deixis/telegram-bot/ReminderStore")<ReminderStore, ReminderStoreShape>() {}

const fromList = (
  load: Effect.Effect<ReadonlyArray<Reminder>, ReminderStoreError>,
  save: (next: ReadonlyArray<Reminder>) => Effect.Effect<void, ReminderStoreError>
): Effect.Effect<ReminderStoreShape> =>
  Effect.map(Effect.makeSemaphore(1), (lock) => {
    const modify = <A>(f: (list: ReadonlyArray<Reminder>) => readonly [A, ReadonlyArray<Reminder> | null]) =>
      lock.withPermits(1)(
        Effect.flatMap(load, (list) => {
          const [result, next] = f(list)
          return next === null ? Effect.succeed(result) : Effect.as(save(next), result)
        })
      )
    return {
      add: (reminder) => modify((list) => [undefined, [...list.filter((r) => r.object_id !== reminder.object_id), reminder]]),
      remove: (objectId) =>
        modify((list) => {
          const next = list.filter((r) => r.object_id !== objectId)
          return [next.length < list.length, next.length < list.length ? next : null]
        }),
      get: (objectId) => Effect.map(load, (list) => list.find((r) => r.object_id === objectId)),
      forChat: (chatId) => Effect.map(load, (list) => list.filter((r) => r.chat_id === chatId)),
      all: load
    }
  })

/**
 * Pending reminders in memory (lost on restart).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<ReminderStore> = Layer.effect(
  ReminderStore,
  Effect.suspend(() => {
    let list: ReadonlyArray<Reminder> = []
    return fromList(Effect.sync(() => list), (next) => Effect.sync(() => void (list = next)))
  })
)

/**
 * The scope of the pending-reminder document in the `ConversationStateStore`: Telegram chat
 * ids are integers, so no chat can collide with it.
 *
 * @since 0.1.0
 * @category constants
 */
export const documentScope: ConversationState.ConversationScope = { chat_id: "deixis.telegram-bot", topic_id: "reminders" }

const Document = Schema.Struct({ reminders: Schema.Array(Reminder) })
const decodeDocument = Schema.decodeUnknownEither(Document)
const encodeDocument = Schema.encodeSync(Document)

/**
 * Pending reminders kept as one document in the `ConversationStateStore` in context, written
 * by compare-and-set: durable exactly when that store is.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPersistent: Layer.Layer<ReminderStore, never, ConversationState.ConversationStateStore> = Layer.effect(
  ReminderStore,
  Effect.gen(function*() {
    const store = yield* ConversationState.ConversationStateStore
    let revision = 0
    const load = store.get(documentScope).pipe(
      Effect.mapError((cause) => new ReminderStoreError({ cause })),
      Effect.map((found) => {
        if (found._tag === "None") {
          revision = 0
          return []
        }
        revision = found.value.revision
        return Either.getOrElse(Either.map(decodeDocument(found.value.state), (d) => d.reminders), () => [])
      })
    )
    const save = (next: ReadonlyArray<Reminder>) =>
      Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeMillis), (now) =>
        store.put({
          ...documentScope,
          topic_id: documentScope.topic_id,
          state: encodeDocument({ reminders: next }) as unknown as ConversationState.JsonObject,
          revision: revision + 1,
          updated_at: now,
          updated_by: null
        })).pipe(Effect.mapError((cause) => new ReminderStoreError({ cause })))
    return yield* fromList(load, save)
  })
)
