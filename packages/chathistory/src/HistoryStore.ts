/**
 * The HistoryStore port: history items by chat and topic, looked up by external id and
 * read by position.
 *
 * Position is message-id order (core's `compareMessageIds`: `"9"` before `"10"`), never
 * timestamp order: Telegram stamps whole seconds, so timestamps tie. An item without a
 * message id (a reaction, a system note) is placed right after the newest message its scope
 * held when it was appended: its position is `(anchor, seq)` with `anchor` that message's id
 * and `seq` a per-chat counter (messages have `seq` 0).
 *
 * Every read is scoped by chat and topic (`topic_id` null is the topicless chat or a forum's
 * General topic). An invalid external id (empty, too long, not an integer) finds nothing; it
 * never fails. `@deixis/chathistory/HistoryStoreTesting` holds the contract suite every
 * adapter passes.
 *
 * @since 0.1.0
 */
import type { StoreError } from "@deixis/core/ContextStore"
import { defaultsOf, millis, positiveInt } from "@deixis/core/ConfigKeys"
import { compareMessageIds } from "@deixis/core/Ids"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Supervisor from "@deixis/core/Supervisor"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { HistoryItem } from "./HistoryItem.js"
import { externalIdOf as internalExternalIdOf } from "./internal/externalId.js"
import { makeMemoryStore } from "./internal/memoryStore.js"

/**
 * A storage failure: core's `StoreError` (status 503), shared by every store of deixis.
 *
 * @since 0.1.0
 * @category errors
 */
export { StoreError } from "@deixis/core/ContextStore"

/**
 * A conversation: one chat, one topic (null: no topic).
 *
 * @since 0.1.0
 * @category models
 */
export interface HistoryScope {
  readonly chat_id: string
  readonly topic_id: string | null
}

/**
 * A stored item and its position `(anchor, seq)`.
 *
 * @since 0.1.0
 * @category models
 */
export interface HistoryEntry {
  readonly item: HistoryItem
  /** The item's message id; for an item without one, the id of the message it follows. */
  readonly anchor: string
  /** 0 for a message; for an item without a message id, its per-chat append counter. */
  readonly seq: number
}

/**
 * A position: an entry, or a message id as a bound (`{ anchor: id, seq: 0 }`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Position {
  readonly anchor: string
  readonly seq: number
}

/**
 * Orders positions: by anchor (message-id order), then by seq.
 *
 * @since 0.1.0
 * @category ordering
 */
export const comparePositions = (a: Position, b: Position): number =>
  compareMessageIds(a.anchor, b.anchor) || a.seq - b.seq

/**
 * The identity of an entry within its chat: the message id, or the position of an item
 * without one. Two reads of the same item give the same key.
 *
 * @since 0.1.0
 * @category ordering
 */
export const entryKey = (entry: HistoryEntry): string =>
  entry.item.message_id ?? `${entry.anchor}#${entry.seq}`

/**
 * Whether an append added an item, replaced the item with the same message id (an edit, a
 * redelivered update), or left the stored item as it was: the incoming copy adds nothing
 * (`HistoryItem.mergeVersions`: a copy seen only in a reply, an older edit). An item without
 * a message id whose `event_id` is stored replaces that item, in its position, when it is
 * newer (`HistoryItem.replacesEventItem`: a changed reaction); a redelivered or older copy
 * leaves it unchanged. Edits apply by `edited_at`,
 * whatever order they arrive in; two of the same second, the later arrival wins. A replaced
 * item keeps its position, its topic, and its `bot_response_id` when the new copy has none.
 *
 * @since 0.1.0
 * @category models
 */
export type AppendResult = "appended" | "replaced" | "unchanged"

/**
 * That the bot answered message `message_id` of `scope` with message `response_id` (what
 * `recordResponse` records).
 *
 * @since 0.1.0
 * @category models
 */
export interface HistoryResponse {
  readonly scope: HistoryScope
  readonly message_id: string | number
  readonly response_id: string | number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface HistoryStoreStats {
  readonly chats: number
  readonly items: number
  readonly evicted_chats: number
  readonly evicted_items: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface HistoryStoreShape {
  /**
   * Adds an item, or replaces the item of the chat with the same message id by its merge with
   * the new copy (see {@link AppendResult}); an item without a message id whose `event_id` is
   * already stored replaces it only when newer.
   */
  readonly append: (item: HistoryItem) => Effect.Effect<AppendResult, StoreError>
  /**
   * Removes the item without a message id stored under `eventId` in chat `chatId` (a reaction
   * withdrawn), unless it is newer than `at` (a reaction given again after the withdrawal, its
   * update arriving first). True when an item was removed; a removal of an item never stored
   * removes nothing and stores nothing.
   */
  readonly retract: (chatId: string, eventId: string, at: number) => Effect.Effect<boolean, StoreError>
  /** Appends items in order, atomically (one transaction in a SQL store). */
  readonly appendAll: (items: ReadonlyArray<HistoryItem>) => Effect.Effect<ReadonlyArray<AppendResult>, StoreError>
  /**
   * `appendAll`, then `recordResponse` of each response, in order, atomically: one write in a
   * SQL store (in a unit of work, part of the unit's one write — a bot's reply and the link
   * from the message it answers recorded together). The items' results.
   */
  readonly appendAllResponding: (
    items: ReadonlyArray<HistoryItem>,
    responses: ReadonlyArray<HistoryResponse>
  ) => Effect.Effect<ReadonlyArray<AppendResult>, StoreError>
  /**
   * The item whose message id is `externalId`, or else the inbound item whose
   * `bot_response_id` is `externalId` (the bot's reply was not stored as an item).
   */
  readonly lookup: (
    scope: HistoryScope,
    externalId: string | number
  ) => Effect.Effect<Option.Option<HistoryEntry>, StoreError>
  /**
   * The item `lookup` finds and up to `before` items before it and `after` items after it,
   * by position, oldest first; empty when nothing is found.
   */
  readonly around: (
    scope: HistoryScope,
    externalId: string | number,
    window: { readonly before: number; readonly after: number }
  ) => Effect.Effect<ReadonlyArray<HistoryEntry>, StoreError>
  /** The newest `n` items (positioned before message `before` when given), oldest first. */
  readonly recent: (
    scope: HistoryScope,
    n: number,
    options?: { readonly before?: string | undefined }
  ) => Effect.Effect<ReadonlyArray<HistoryEntry>, StoreError>
  /**
   * The newest `limit` items replying to message `messageId` (positioned before message
   * `before` when given), oldest first.
   */
  readonly replies: (
    scope: HistoryScope,
    messageId: string,
    options: { readonly limit: number; readonly before?: string | undefined }
  ) => Effect.Effect<ReadonlyArray<HistoryEntry>, StoreError>
  /**
   * Records that the bot answered message `messageId` with message `responseId` (sets the
   * item's `bot_response_id`). False when the message is not stored.
   */
  readonly recordResponse: (
    scope: HistoryScope,
    messageId: string | number,
    responseId: string | number
  ) => Effect.Effect<boolean, StoreError>
  /**
   * Moves every item of chat `from` to chat `to` (a Telegram group upgraded to a supergroup),
   * atomically: message ids (and reply and response ids) become `Ids.migratedMessageId(id)`,
   * placing the old items before the new chat's own; an item `to` already holds stays. Returns
   * how many items moved; a second call moves nothing.
   */
  readonly migrateChat: (from: string, to: string) => Effect.Effect<number, StoreError>
  readonly stats: Effect.Effect<HistoryStoreStats, StoreError>
}

/**
 * The HistoryStore port.
 *
 * @since 0.1.0
 * @category tags
 */
export class HistoryStore extends Context.Tag("@deixis/chathistory/HistoryStore")<HistoryStore, HistoryStoreShape>() {}


/**
 * An external id as the store keys it: the string form of a valid message id, or none for
 * an invalid one — anything core's one id rule refuses (empty, over 128 characters, control
 * characters, a lone surrogate, a non-integer or unsafe number). Nothing can have been stored
 * under such an id, so a lookup finds nothing without asking the store. For adapters.
 *
 * @since 0.1.0
 * @category utils
 */
export const externalIdOf: (input: unknown) => Option.Option<string> = internalExternalIdOf

/**
 * Options of the in-memory adapter. Past `max_items_per_chat` a chat's earliest appended
 * items go; past `max_items_total` or `max_chats` the chat written least recently goes whole.
 * Every eviction is counted in `stats`.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryOptions {
  readonly max_chats: number
  readonly max_items_per_chat: number
  readonly max_items_total: number
  /**
   * How often the layer says at Info what its caps evicted since it last said (at Debug when
   * nothing was); 0: never. The context store's sweep interval.
   */
  readonly sweep_interval: number
}

/**
 * The in-memory adapter's configuration, read from `DEIXIS_HISTORY_STORE_*` keys.
 *
 * @since 0.1.0
 * @category config
 */
export const memoryConfig: Config.Config<MemoryOptions> = Config.all({
  max_chats: positiveInt("HISTORY_STORE_MAX_CHATS", 10_000),
  max_items_per_chat: positiveInt("HISTORY_STORE_MAX_ITEMS_PER_CHAT", 5_000),
  max_items_total: positiveInt("HISTORY_STORE_MAX_ITEMS_TOTAL", 2_000_000),
  sweep_interval: millis("STORE_SWEEP_INTERVAL", "1 minute")
}).pipe(Config.nested("DEIXIS"))

/**
 * The defaults: the configuration read with no keys set.
 *
 * @since 0.1.0
 * @category constants
 */
export const memoryDefaults: MemoryOptions = defaultsOf(memoryConfig)

/**
 * A new in-memory store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options: Partial<MemoryOptions> = {}): HistoryStoreShape =>
  makeMemoryStore({ ...memoryDefaults, ...options })

/** Every `interval`, says at Info what the caps evicted since the last time (nothing: at Debug). */
const reportEvictions = (store: HistoryStoreShape, interval: number) =>
  interval <= 0 ? Effect.void : Effect.gen(function*() {
    let before = yield* Effect.orDie(store.stats)
    const once = Effect.gen(function*() {
      const after = yield* store.stats
      const evicted = {
        evicted_chats: after.evicted_chats - before.evicted_chats,
        evicted_items: after.evicted_items - before.evicted_items
      }
      before = after
      yield* evicted.evicted_chats + evicted.evicted_items > 0
        ? Effect.logInfo("memory history store evicted entries").pipe(Effect.annotateLogs(evicted))
        : Effect.logDebug("memory history store evicted nothing")
    }).pipe(Effect.catchAll((e) => Effect.logWarning("memory history store report failed").pipe(Effect.annotateLogs({ error: e.message }))))
    // Supervised: a defect (a bug) restarts it, logged, rather than ending the reports quietly.
    yield* Supervisor.forkRestarting("the memory history store report", once.pipe(Effect.delay(Duration.millis(interval)), Effect.forever))
  })

/**
 * The in-memory adapter: per-topic arrays in position order, id and reply indexes per chat,
 * bounded by its caps; what they evict is said at Info every `sweep_interval`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options: Partial<MemoryOptions> = {}): Layer.Layer<HistoryStore> =>
  Layer.scoped(
    HistoryStore,
    Effect.suspend(() => {
      const store = makeMemory(options)
      return Effect.as(reportEvictions(store, options.sweep_interval ?? memoryDefaults.sweep_interval), store)
    })
  )

/**
 * The in-memory adapter configured from `DEIXIS_HISTORY_STORE_*` keys.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemoryConfig = (
  overrides: Partial<MemoryOptions> = {}
): Layer.Layer<HistoryStore, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(memoryConfig, (settings) => layerMemory({ ...settings, ...overrides })))
