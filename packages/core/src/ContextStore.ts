/**
 * The ContextStore port: objects and the message metadata the tools read. Adapters apply
 * events through the shared reducer and build the bounded candidate pool the tools score;
 * `@deixis/core/ContextStoreTesting` exports the contract suite every adapter passes.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import { defaultsOf, millis, positiveInt, retention } from "./internal/config.js"
import * as Effect from "effect/Effect"
import * as Supervisor from "./Supervisor.js"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ChatInfo, ChatPage, ChatQuery, MigrationResult } from "./ChatInfo.js"
import type { ApplyResult, ContextEvent } from "./ContextEvent.js"
import type { ContextObject, MessageMeta, PoolTier as ContextObjectPoolTier } from "./ContextObject.js"
import { httpStatus } from "./Errors.js"
import type { ObjectKind } from "./ObjectKind.js"
import { makeMemoryStore } from "./internal/memoryStore.js"
import type { Registry } from "./KindRegistry.js"
import type { TtlPolicyShape } from "./TtlPolicy.js"

/**
 * A storage failure (the store did not answer, or answered wrongly).
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreError extends Schema.TaggedError<StoreError>()(
  "StoreError",
  { message: Schema.String },
  httpStatus(503)
) {}

/**
 * How far the candidate pool reaches. Every bound keeps a tool call's cost independent of
 * how much history the chat has.
 *
 * @since 0.1.0
 * @category models
 */
export interface PoolLimits {
  /** Messages of reply chain walked from the reply target (the target counts). */
  readonly chain_depth: number
  /** The most recently created objects of the scope taken, whatever their kind. */
  readonly recent_objects: number
  /** For each preferred kind, the most recently created objects of that kind taken. */
  readonly recent_per_kind: number
  /** The most recent plain messages of the scope taken as `message` candidates. */
  readonly recent_messages: number
  /** When ownership matters, the sender's most recently created objects taken. */
  readonly owned: number
  /**
   * When the request's own scope has nothing active, the objects active elsewhere in the chat
   * taken: those active longest (latest `active_until`), then by object id. (The SQL stores read
   * at most 64.)
   */
  readonly fallback_active: number
}

/**
 * A request for candidates in one chat.
 *
 * @since 0.1.0
 * @category models
 */
export interface PoolQuery {
  readonly chat_id: string
  readonly topic_id: string | null
  readonly current_message_id: string
  readonly reply_to_message_id: string | null
  readonly sender_user_id: string | null
  /** When set, only objects of these kinds are candidates. */
  readonly kinds: ReadonlyArray<ObjectKind> | undefined
  /** Kinds looked up deeper (a kind hint). */
  readonly prefer_kinds: ReadonlyArray<ObjectKind>
  /** Take the sender's own recent objects (an ownership hint). */
  readonly include_owned: boolean
  /** Only objects active at `now` (list_active_context_objects). */
  readonly active_only: boolean
  /** Keep expired objects as they are instead of their messages (debug listings). */
  readonly keep_expired?: boolean | undefined
  readonly now: number
  readonly limits: PoolLimits
}

/**
 * Where a candidate was found (stated beside `ContextObject`, which both modules import).
 *
 * @since 0.1.0
 * @category models
 */
export type PoolTier = ContextObjectPoolTier

/**
 * @since 0.1.0
 * @category models
 */
export interface PoolEntry {
  readonly object: ContextObject
  readonly tier: PoolTier
}

/**
 * The bounded set of candidates for one request. `fallback` is true when the request's own
 * scope had no active object and other topics of the chat were searched: all of their
 * candidates when nothing at all is known of the request's scope, their active objects
 * otherwise.
 *
 * An object whose activity expired is not a candidate itself: its source message is, as a
 * plain `message` (or `bot_message`) candidate.
 *
 * @since 0.1.0
 * @category models
 */
export interface CandidatePool {
  readonly entries: ReadonlyArray<PoolEntry>
  readonly chain: ReadonlyArray<string>
  readonly fallback: boolean
  /**
   * The topic the pool was built for: the request's, or in a forum the General topic when
   * the request names none. Score and report the scope with it.
   */
  readonly topic_id: string | null
}

/**
 * Everything a store holds for one chat, in a canonical order (messages by id position,
 * objects by id): for contract tests, exports and debugging.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChatSnapshot {
  readonly messages: ReadonlyArray<MessageMeta>
  readonly objects: ReadonlyArray<ContextObject>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface StoreStats {
  readonly chats: number
  readonly messages: number
  readonly objects: number
  readonly evicted_chats: number
  readonly evicted_messages: number
  readonly evicted_objects: number
  readonly swept_objects: number
}

/**
 * What a batch is applied under: the time, the TTL policy whose rules the reducer follows
 * (the store keeps what it wrote, such as `active_until`, and never applies rules of its own),
 * and the kind registry (the built-ins when absent).
 *
 * @since 0.1.0
 * @category models
 */
export interface ApplyOptions {
  readonly now: number
  readonly ttl: TtlPolicyShape
  readonly kinds?: Registry | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ContextStoreShape {
  /** Applies a batch in order through the shared reducer. */
  readonly apply: (events: ReadonlyArray<ContextEvent>, options: ApplyOptions) => Effect.Effect<ApplyResult, StoreError>
  /** Builds the bounded candidate pool for one request. */
  readonly pool: (query: PoolQuery) => Effect.Effect<CandidatePool, StoreError>
  readonly message: (chatId: string, messageId: string) => Effect.Effect<Option.Option<MessageMeta>, StoreError>
  readonly object: (chatId: string, objectId: string) => Effect.Effect<Option.Option<ContextObject>, StoreError>
  /** The reply chain from `messageId` upward, at most `depth` messages, nearest first. */
  readonly replyChain: (
    chatId: string,
    messageId: string,
    depth: number
  ) => Effect.Effect<ReadonlyArray<MessageMeta>, StoreError>
  readonly snapshot: (chatId: string) => Effect.Effect<ChatSnapshot, StoreError>
  /** What is known of a chat: whether it is a forum, its title, and where it migrated. */
  readonly chat: (chatId: string) => Effect.Effect<ChatInfo, StoreError>
  /**
   * One page of the chats the store holds (`ChatInfo.ChatSummary`: id, title, when its newest
   * message was sent, counts), newest `last_message_at` first, chats without messages last, ties
   * by chat id; filtered by `search` (a title ignoring case, or a part of the id). Pages follow
   * each other by `next` (keyset: a chat written between two pages may move, never repeats on
   * the page it moved from).
   */
  readonly chats: (query: ChatQuery) => Effect.Effect<ChatPage, StoreError>
  /**
   * Moves every message, object, poll-id mapping and applied event id of chat `from` to chat
   * `to` (a Telegram group upgraded to a supergroup), atomically, once: message ids become
   * `Ids.migratedMessageId(id)` (the new chat numbers its messages from 1 again) and are
   * placed before the new chat's own; object ids stay. The migration is recorded on `from`
   * (`chat(from).migrated_to`); calling it again moves nothing and returns `migrated: false`.
   */
  readonly migrateChat: (from: string, to: string, at: number) => Effect.Effect<MigrationResult, StoreError>
  /** Removes objects inactive for longer than the retention (none when it is off); returns how many. */
  readonly sweep: (now: number) => Effect.Effect<number, StoreError>
  readonly stats: Effect.Effect<StoreStats, StoreError>
}

/**
 * The ContextStore port.
 *
 * @since 0.1.0
 * @category tags
 */
export class ContextStore extends Context.Tag("@deixis/core/ContextStore")<ContextStore, ContextStoreShape>() {}

/**
 * Options of the in-memory adapter. Every cap bounds memory: past `max_messages_per_chat`
 * or `max_objects_per_chat` a chat's oldest entries go; past `max_messages_total` or
 * `max_chats` the least recently used chat goes whole. Every eviction is counted.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryStoreOptions {
  readonly max_chats: number
  readonly max_messages_per_chat: number
  readonly max_objects_per_chat: number
  readonly max_messages_total: number
  readonly max_event_ids_per_chat: number
  /**
   * How long an object is kept after it stops being active (or, never activated, after it was
   * created); 0: kept (until a cap evicts it).
   */
  readonly object_retention: number
  /** How often the layer sweeps (and reports what was removed); 0 turns the scheduled sweep off. */
  readonly sweep_interval: number
}

/**
 * The in-memory adapter's configuration, read from `DEIXIS_STORE_*` keys.
 *
 * @since 0.1.0
 * @category config
 */
export const memoryConfig: Config.Config<MemoryStoreOptions> = Config.all({
  max_chats: positiveInt("STORE_MAX_CHATS", 10_000),
  max_messages_per_chat: positiveInt("STORE_MAX_MESSAGES_PER_CHAT", 100_000),
  max_objects_per_chat: positiveInt("STORE_MAX_OBJECTS_PER_CHAT", 20_000),
  max_messages_total: positiveInt("STORE_MAX_MESSAGES_TOTAL", 2_000_000),
  max_event_ids_per_chat: positiveInt("STORE_MAX_EVENT_IDS_PER_CHAT", 10_000),
  object_retention: retention("STORE_OBJECT_RETENTION", "off"),
  sweep_interval: millis("STORE_SWEEP_INTERVAL", "1 minute")
}).pipe(Config.nested("DEIXIS"))

/**
 * @since 0.1.0
 * @category constants
 */
export const memoryDefaults: MemoryStoreOptions = defaultsOf(memoryConfig)

/**
 * A new in-memory store (no scheduled sweep; call `sweep` yourself).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options: Partial<MemoryStoreOptions> = {}): ContextStoreShape =>
  makeMemoryStore({ ...memoryDefaults, ...options })

/**
 * Sweeps every `interval`, and says at Info what left the store since the last sweep: objects
 * past their retention, and what the caps evicted meanwhile (at Debug only when nothing left).
 */
const scheduledSweep = (store: ContextStoreShape, interval: number) =>
  interval <= 0 ? Effect.void : Effect.gen(function*() {
    let before = yield* Effect.orDie(store.stats)
    const once = Effect.gen(function*() {
      const swept = yield* store.sweep(yield* Clock.currentTimeMillis)
      const after = yield* store.stats
      const removed = {
        swept_objects: swept,
        evicted_chats: after.evicted_chats - before.evicted_chats,
        evicted_messages: after.evicted_messages - before.evicted_messages,
        evicted_objects: after.evicted_objects - before.evicted_objects
      }
      before = after
      yield* removed.swept_objects + removed.evicted_chats + removed.evicted_messages + removed.evicted_objects > 0
        ? Effect.logInfo("memory context store removed entries").pipe(Effect.annotateLogs(removed))
        : Effect.logDebug("memory context store removed nothing")
    }).pipe(Effect.catchAll((e) => Effect.logWarning("memory context store sweep failed").pipe(Effect.annotateLogs({ error: e.message }))))
    // Supervised: a defect (a bug) restarts it, logged, rather than ending the sweeps quietly.
    yield* Supervisor.forkRestarting("the memory context store sweep", once.pipe(Effect.repeat(Schedule.spaced(Duration.millis(interval)))))
  })

/**
 * The in-memory adapter, indexed by chat, topic, kind, source message, creator and
 * recency, with a scheduled sweep while the layer lives.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options: Partial<MemoryStoreOptions> = {}): Layer.Layer<ContextStore> =>
  Layer.scoped(
    ContextStore,
    Effect.suspend(() => {
      const settings = { ...memoryDefaults, ...options }
      const store = makeMemoryStore(settings)
      return Effect.as(scheduledSweep(store, settings.sweep_interval), store)
    })
  )

/**
 * The in-memory adapter configured from `DEIXIS_STORE_*` keys.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemoryConfig = (
  overrides: Partial<MemoryStoreOptions> = {}
): Layer.Layer<ContextStore, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(memoryConfig, (settings) => layerMemory({ ...settings, ...overrides })))
