/**
 * The one recording path for Telegram traffic. Every entrance — the Telegraf middleware,
 * `apps/http`'s `POST /v1/telegram/updates`, a bot's own sent messages — calls this module;
 * apps only compose it.
 *
 * {@link record} takes a raw `Update` (JSON, or Telegraf's object) to everything deixis keeps,
 * in one call: the mapper's events into core (`ContextIngest`), its history items into the
 * `HistoryStore` as the write policy says, a reaction placed in the reacted message's topic,
 * the bot's answers as `bot_response_id`, and a group's upgrade to a supergroup as a move of
 * the chat's data in every store. It is idempotent per update — a redelivered update changes
 * nothing — and never fails on what an update holds: an update it cannot use is skipped
 * with a Debug log. {@link recordBatch} does the same for many updates with one write per
 * store. Each call is one unit of work (core's `UnitOfWork`): over the SQL stores, one
 * transaction, committed when the call returns, or rolled back whole when a store fails.
 *
 * @since 0.1.0
 */
import type { ChatInfo } from "@deixis/core/ChatInfo"
import type { ApplyResult } from "@deixis/core/ContextEvent"
import { ContextIngest } from "@deixis/core/ContextIngest"
import { ContextStore, StoreError } from "@deixis/core/ContextStore"
import { ConversationStateStore } from "@deixis/core/ConversationState"
import * as HistoryItem from "@deixis/chathistory/HistoryItem"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import * as WritePolicy from "@deixis/chathistory/WritePolicy"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as UnitOfWork from "@deixis/core/UnitOfWork"
import type { ChatMigration, MapOptions, MappedUpdate, MessageScope } from "./UpdateMapper.js"
import { mapMessage, mapUpdate, toMigratedChats } from "./UpdateMapper.js"

/**
 * A store outside deixis' own three that keeps data by chat and must follow a chat's
 * migration (a bot's pending reminders): `(from, to) => moved count`, idempotent.
 *
 * @since 0.1.0
 * @category models
 */
export type ChatMigrator = (from: string, to: string) => Effect.Effect<number, StoreError>

/**
 * The extra stores a migration moves, after deixis' own. Empty unless provided:
 * `Effect.provideService(ChatMigrators, [reminderStore.migrateChat])`.
 *
 * @since 0.1.0
 * @category tags
 */
export class ChatMigrators extends Context.Reference<ChatMigrators>()("@deixis/telegraf/ChatMigrators", {
  defaultValue: (): ReadonlyArray<ChatMigrator> => []
}) {}

/**
 * What recording needs: core's ingest and store, the history store with its write policy,
 * and the conversation-state store (a migration moves it too).
 *
 * @since 0.1.0
 * @category models
 */
export type Services = ContextIngest | ContextStore | HistoryStore | WritePolicy.WritePolicy | ConversationStateStore

/**
 * Options of every recording call: the bot's identity (its messages are outbound; what
 * addresses it is a triggered run) and the group mode of the write policy.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordOptions extends MapOptions {
  /** The write-policy mode; the `WritePolicy` default (`DEIXIS_HISTORY_MODE`) when absent. */
  readonly mode?: WritePolicy.GroupMode | undefined
}

/**
 * What recording one update of a batch did.
 *
 * @since 0.1.0
 * @category models
 */
export interface Recorded {
  readonly mapped: MappedUpdate
  /**
   * History items written or replaced (the write policy may keep fewer than mapped; a copy the
   * store holds a higher version of is unchanged, not counted).
   */
  readonly recorded: number
  /** The migration this update made, when it was a group's upgrade: whether it moved anything now. */
  readonly migrated?: { readonly from_chat_id: string; readonly to_chat_id: string; readonly migrated: boolean }
}

/**
 * What recording one update did: {@link Recorded}, and core's answer for its events (null
 * when it had none).
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordResult extends Recorded {
  readonly applied: ApplyResult | null
}

/**
 * What recording a batch did: each update's part, core's answer for all their events (the
 * indexes of `skipped` count the batch's events in order), and the history items written.
 *
 * @since 0.1.0
 * @category models
 */
export interface BatchResult {
  readonly updates: ReadonlyArray<Recorded>
  readonly applied: ApplyResult
  readonly recorded: number
}

const annotations = (mapped: MappedUpdate) => ({
  update_id: mapped.update_id ?? "none",
  update_type: mapped.update_type ?? "unknown",
  chat_id: mapped.scope?.chat_id ?? "none",
  topic_id: mapped.scope?.topic_id ?? "none"
})


// Whether a Debug line would be kept: the mapper's notes are Debug, and an update of a sender
// without a username carries one — building their Effects (two `annotateLogs`, each a fiber-ref
// change in and out that hashes both annotation maps) cost more than recording a plain message.
const debugEnabled = (fiber: { readonly getFiberRef: <A>(ref: FiberRef.FiberRef<A>) => A }): boolean =>
  LogLevel.lessThanEqual(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), LogLevel.Debug)

const logMapped = (mapped: MappedUpdate): Effect.Effect<void> =>
  // Most updates have nothing to say: no Effect is built for them (this runs for every update).
  mapped.warnings.length === 0 && mapped.skipped === undefined ? Effect.void : Effect.all([
    mapped.warnings.length === 0 ? Effect.void : Effect.logDebug("update mapped with warnings").pipe(
      Effect.annotateLogs({ warnings: mapped.warnings.length, first_warning: mapped.warnings[0] ?? "" })
    ),
    mapped.skipped === undefined ? Effect.void : Effect.logDebug("update skipped").pipe(
      Effect.annotateLogs({ reason: mapped.skipped })
    )
  ], { discard: true }).pipe(Effect.annotateLogs(annotations(mapped)))

/**
 * Moves a chat's data to its new id in every store — core's (which records the migration,
 * once), the history, the conversation state, then any {@link ChatMigrators} — each store
 * atomically, every step idempotent. Returns whether core moved anything now.
 *
 * @since 0.1.0
 * @category recording
 */
export const migrateChat = (
  migration: ChatMigration,
  at?: number
): Effect.Effect<boolean, StoreError, ContextStore | HistoryStore | ConversationStateStore> =>
  Effect.gen(function*() {
    const { from_chat_id: from, to_chat_id: to } = migration
    const now = at ?? (yield* Clock.currentTimeMillis)
    const core = yield* (yield* ContextStore).migrateChat(from, to, now)
    const items = yield* (yield* HistoryStore).migrateChat(from, to)
    const states = yield* (yield* ConversationStateStore).migrateChat(from, to).pipe(
      Effect.mapError((e) => new StoreError({ message: e.message }))
    )
    let extra = 0
    for (const migrator of yield* ChatMigrators) extra += yield* migrator(from, to)
    yield* Effect.logInfo("chat migrated").pipe(Effect.annotateLogs({
      from_chat_id: from,
      to_chat_id: to,
      migrated: core.migrated,
      moved: core.moved,
      history_items: items,
      states,
      extra
    }))
    return core.migrated
  })

// A reaction carries no thread: it belongs where the reacted message is.
const needsPlace = (item: HistoryItem.HistoryItem) =>
  item.topic_id === null && item.message_id === null && item.reply_to_message_id !== null
const placeItem = (item: HistoryItem.HistoryItem) =>
  Effect.flatMap(ContextStore, (store) => store.message(item.chat_id, item.reply_to_message_id!)).pipe(
    Effect.map(Option.match({ onNone: () => item, onSome: (meta) => ({ ...item, topic_id: meta.topic_id }) }))
  )

/** Whether an update names a basic group (the only chats that migrate): see {@link redirectMigrated}. */
const ofGroup = (mapped: MappedUpdate): boolean => {
  if (mapped.scope?.chat_type === "group") return true
  for (const item of mapped.history) if (item.chat_type === "group") return true
  if (mapped.retractions !== undefined) for (const r of mapped.retractions) if (r.chat_type === "group") return true
  return false
}

/**
 * An update of a chat that migrated (a late or redelivered update of a group that became a
 * supergroup) is recorded where the chat's data now is, under the ids the migration gave its
 * messages, so it neither revives the old chat nor meets the new chat's own ids. Only basic
 * groups migrate: other chats are never looked up.
 *
 * @since 0.1.0
 * @category recording
 */
export const redirectMigrated = (mapped: MappedUpdate): Effect.Effect<MappedUpdate, StoreError, ContextStore> => {
  const groups = new Set<string>()
  for (const item of mapped.history) if (item.chat_type === "group") groups.add(item.chat_id)
  for (const r of mapped.retractions ?? []) if (r.chat_type === "group") groups.add(r.chat_id)
  if (mapped.scope?.chat_type === "group") groups.add(mapped.scope.chat_id)
  return groups.size === 0 ? Effect.succeed(mapped) : Effect.gen(function*() {
    const store = yield* ContextStore
    const moved = new Map<string, string>()
    for (const chat of groups) {
      const info = yield* store.chat(chat)
      if (info.migrated_to !== null) moved.set(chat, info.migrated_to)
    }
    return moved.size === 0 ? mapped : toMigratedChats(mapped, moved)
  })
}

/**
 * Records mapped updates, in order, as one unit of work (core's `UnitOfWork`: one SQL
 * transaction over SQL stores, committed before this returns): consecutive updates share one
 * write per store; a migration is applied between the updates before and after it.
 */
const store = (
  mappedUpdates: ReadonlyArray<MappedUpdate>,
  options: RecordOptions
): Effect.Effect<BatchResult, StoreError, Services> =>
  Effect.flatMap(UnitOfWork.UnitOfWork, (unit) => unit.run(storeAll(mappedUpdates, options, unit.callsAtOnce === true)))

const storeAll = (
  mappedUpdates: ReadonlyArray<MappedUpdate>,
  options: RecordOptions,
  atOnce: boolean
): Effect.Effect<BatchResult, StoreError, Services> =>
  Effect.gen(function*() {
    const ingest = yield* ContextIngest
    const history = yield* HistoryStore
    const settings = yield* WritePolicy.WritePolicy
    const mode = options.mode ?? settings.default_mode
    const out: Array<Recorded> = []
    const total = { applied: 0, duplicates: 0, skipped: [] as Array<ApplyResult["skipped"][number]> }
    let offset = 0
    let i = 0
    while (i < mappedUpdates.length) {
      // A run of updates up to (not including) the next migration.
      let j = i
      while (j < mappedUpdates.length && mappedUpdates[j]!.migration === undefined) j++
      const slice = i === 0 && j === mappedUpdates.length ? mappedUpdates : mappedUpdates.slice(i, j)
      // Most runs name no basic group: nothing to look up, no Effect per update.
      const run = slice.some(ofGroup) ? yield* Effect.forEach(slice, redirectMigrated) : slice
      if (run.length > 0) {
        const all = run.length === 1 ? run[0]!.events : run.flatMap((mapped) => mapped.events)
        // The mapper builds events only of the registry's own kinds: a refusal is a bug, not input to report.
        const apply = all.length === 0 ? undefined : Effect.catchTag(ingest.apply(all), "InvalidEvent", (error) => Effect.die(error))
        const kept: Array<HistoryItem.HistoryItem> = []
        const owners: Array<number> = []
        for (let k = 0; k < run.length; k++) {
          const mapped = run[k]!
          for (const item of mapped.history) {
            if (!WritePolicy.shouldRecord(mode, item.kind, mapped.addressed || HistoryItem.isOutbound(item))) continue
            kept.push(item)
            owners.push(k)
          }
        }
        // The bot's answers of the run (a reply recorded with `recordSent`) go with its items: one write.
        const responses = !run.some((mapped) => mapped.responses !== undefined && mapped.responses.length > 0) ? [] : run.flatMap((mapped) =>
          (mapped.responses ?? []).map((r) => ({ scope: { chat_id: r.chat_id, topic_id: r.topic_id }, message_id: r.message_id, response_id: r.response_id }))
        )
        const append = (items: ReadonlyArray<HistoryItem.HistoryItem>) =>
          responses.length === 0 ? history.appendAll(items) : history.appendAllResponding(items, responses)
        // Where the unit of work reads for both at once (`callsAtOnce`: a SQL store on PostgreSQL),
        // the events and the items go to the stores at once, neither waiting for the other —
        // unless a reaction without a thread must first be placed where its message is, which
        // the run's events may record.
        const placing = kept.some(needsPlace)
        const [applied, results] = atOnce && apply !== undefined && kept.length > 0 && !placing
          ? yield* UnitOfWork.both(apply, append(kept))
          : [
            apply === undefined ? undefined : yield* apply,
            yield* append(placing ? yield* Effect.forEach(kept, (item) => (needsPlace(item) ? placeItem(item) : Effect.succeed(item))) : kept)
          ] as const
        if (applied !== undefined) {
          total.applied += applied.applied
          total.duplicates += applied.duplicates
          for (const skip of applied.skipped) {
            total.skipped.push({ ...skip, index: skip.index + offset, path: skip.path.replace(/^\[\d+\]/, `[${skip.index + offset}]`) })
          }
          offset += all.length
        }
        const written = run.map(() => 0)
        results.forEach((r, k) => {
          if (r !== "unchanged") written[owners[k]!]!++
        })
        // After the run's items: a reaction given and withdrawn in one run goes; one withdrawn and
        // given again stays (the store compares the times).
        for (let k = 0; k < run.length; k++) {
          for (const r of run[k]!.retractions ?? []) {
            if (yield* history.retract(r.chat_id, r.event_id, r.at)) written[k]!++
          }
        }
        run.forEach((mapped, k) => {
          out.push({ mapped, recorded: written[k]! })
        })
      }
      if (j < mappedUpdates.length) {
        const mapped = mappedUpdates[j]!
        const migrated = yield* migrateChat(mapped.migration!)
        out.push({ mapped, recorded: 0, migrated: { ...mapped.migration!, migrated } })
      }
      i = j + 1
    }
    return { updates: out, applied: total, recorded: out.reduce((n, r) => n + r.recorded, 0) }
  })

/**
 * Records one update. Fails only when a store fails (logged and retried by the caller as it
 * sees fit); never on what the update holds.
 *
 * @since 0.1.0
 * @category recording
 */
export const record = (update: unknown, options: RecordOptions = {}): Effect.Effect<RecordResult, StoreError, Services> =>
  Effect.suspend(() => single(mapUpdate(update, options), options))

const single = (mapped: MappedUpdate, options: RecordOptions): Effect.Effect<RecordResult, StoreError, Services> =>
  Effect.zipRight(
    Effect.withFiberRuntime<void>((fiber) => debugEnabled(fiber) ? logMapped(mapped) : Effect.void),
    Effect.map(store([mapped], options), (result): RecordResult => ({
      ...result.updates[0]!,
      applied: mapped.events.length === 0 ? null : result.applied
    }))
  ).pipe(Effect.annotateLogs(annotations(mapped)))

/**
 * Records many updates (a `getUpdates` page, a webhook batch) in order, with one write per
 * store for each run of updates between migrations. An update the mapper cannot use is
 * skipped, never failing the others.
 *
 * @since 0.1.0
 * @category recording
 */
export const recordBatch = (
  updates: ReadonlyArray<unknown>,
  options: RecordOptions = {}
): Effect.Effect<BatchResult, StoreError, Services> =>
  Effect.suspend(() => recordMapped(updates.map((u) => mapUpdate(u, options)), options))

/**
 * Records updates already mapped (`UpdateMapper.mapUpdate` with the same options), in order,
 * as {@link recordBatch} does: for an entrance that maps each update once at intake and
 * passes the mapped form on (ordering, preemption, recording).
 *
 * @since 0.3.0
 * @category recording
 */
export const recordMapped = (
  mapped: ReadonlyArray<MappedUpdate>,
  options: RecordOptions = {}
): Effect.Effect<BatchResult, StoreError, Services> =>
  Effect.withFiberRuntime((fiber) => {
    const logs = debugEnabled(fiber) ? mapped.map(logMapped).filter((log) => log !== Effect.void) : []
    return logs.length === 0 ? store(mapped, options) : Effect.zipRight(Effect.all(logs, { discard: true }), store(mapped, options))
  })

/**
 * Records a message the bot sent (the `Message` a send method returned): an outbound
 * `message_observed` (its poll mapped to the chat, so a later `poll` update closes it) and an
 * `outbound_agent` history item. When it answers a user's message — `answering`, or the
 * message it replies to — that message's `bot_response_id` is set. `botId` must be the
 * sender's id.
 *
 * @since 0.1.0
 * @category recording
 */
export const recordSent = (
  message: unknown,
  options: RecordOptions & { readonly botId: string; readonly answering?: MessageScope | undefined }
): Effect.Effect<RecordResult, StoreError, Services> =>
  Effect.suspend(() => {
    const mapped = mapMessage(message, options)
    const scope = mapped.scope
    const answering = options.answering
    const withAnswer: MappedUpdate = answering === undefined || scope === undefined || answering.chat_id !== scope.chat_id ||
        (mapped.responses ?? []).length > 0
      ? mapped
      : {
        ...mapped,
        responses: [{
          chat_id: answering.chat_id,
          topic_id: answering.topic_id,
          message_id: answering.message_id,
          response_id: scope.message_id
        }]
      }
    return single(withAnswer, options)
  })

/**
 * What deixis knows of a chat (forum, migration), for entrances that place a request without
 * a topic.
 *
 * @since 0.1.0
 * @category reading
 */
export const chatInfo = (chatId: string): Effect.Effect<ChatInfo, StoreError, ContextStore> =>
  Effect.flatMap(ContextStore, (store) => store.chat(chatId))
