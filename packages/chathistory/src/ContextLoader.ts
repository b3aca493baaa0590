/**
 * Conversation-context loading: what history an LLM gets with the current message.
 *
 * It runs on every message — there is no session cache, so a long-running process always
 * sees the latest history and the latest gap. For the current message it loads:
 *
 * - the last `recency_window` items of the conversation (chat and topic), whatever their age;
 * - when the message replies to one: the reply target and `reply_context_window` items before
 *   and after it, by position (not timestamp);
 * - optionally the reply chain above the target, bounded by `chain_max_messages` (the target
 *   counts), with up to `chain_side_replies_per_message` other replies to each chain message
 *   and `chain_side_replies_total` in all; the report names each bound that cut it;
 * - all of it de-duplicated by message id, ordered by position, and only items positioned
 *   before the current message (which is rendered separately);
 * - the gap since the previous item of the conversation, and a gap note with a human-readable
 *   duration only when the gap exceeds `gap_threshold_minutes`.
 *
 * A reply target missing from the store is logged at debug level and the context is loaded
 * without it. An invalid external id finds nothing; nothing throws.
 *
 * @since 0.1.0
 */
import { defaultsOf } from "@deixis/core/ConfigKeys"
import { InvalidRequest, pathOf } from "@deixis/core/Errors"
import { ChatId, MessageId, OptionalTopicId, Timestamp } from "@deixis/core/Ids"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { HistoryItem } from "./HistoryItem.js"
import type { HistoryEntry, HistoryScope, HistoryStoreShape, StoreError } from "./HistoryStore.js"
import { HistoryStore } from "./HistoryStore.js"
import * as internal from "./internal/loader.js"

/**
 * The loader's settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface ContextLoaderSettings {
  /** Always include the last N items, regardless of age. */
  readonly recency_window: number
  /** Items before and after the reply target. */
  readonly reply_context_window: number
  /** Signal a gap longer than this many minutes. */
  readonly gap_threshold_minutes: number
  /** Follow the reply chain above the reply target. */
  readonly reply_chain: boolean
  /** Messages of chain, the reply target included. */
  readonly chain_max_messages: number
  /** Other replies taken for each chain message. */
  readonly chain_side_replies_per_message: number
  /** Other replies taken for the whole chain. */
  readonly chain_side_replies_total: number
}

const count = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be a non-negative integer`, validation: (n) => n >= 0 })
  )

/**
 * The loader's configuration, read from `DEIXIS_CONTEXT_*` keys.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<ContextLoaderSettings> = Config.all({
  recency_window: count("CONTEXT_RECENCY_WINDOW", 10),
  reply_context_window: count("CONTEXT_REPLY_CONTEXT_WINDOW", 3),
  gap_threshold_minutes: Config.number("CONTEXT_GAP_THRESHOLD_MINUTES").pipe(
    Config.withDefault(15),
    Config.validate({
      message: "CONTEXT_GAP_THRESHOLD_MINUTES must be a non-negative number",
      validation: (n) => Number.isFinite(n) && n >= 0
    })
  ),
  reply_chain: Config.boolean("CONTEXT_REPLY_CHAIN").pipe(Config.withDefault(true)),
  chain_max_messages: Config.integer("CONTEXT_CHAIN_MAX_MESSAGES").pipe(
    Config.withDefault(8),
    Config.validate({ message: "CONTEXT_CHAIN_MAX_MESSAGES must be a positive integer", validation: (n) => n >= 1 })
  ),
  chain_side_replies_per_message: count("CONTEXT_CHAIN_SIDE_REPLIES_PER_MESSAGE", 3),
  chain_side_replies_total: count("CONTEXT_CHAIN_SIDE_REPLIES_TOTAL", 12)
}).pipe(Config.nested("DEIXIS"))

/**
 * The defaults: the configuration read with no keys set.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: ContextLoaderSettings = defaultsOf(config)

/**
 * The current message, as far as loading needs it. `sent_at` (RFC 3339 on the wire) is the
 * Clock's now when absent.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LoadRequest = Schema.Struct({
  chat_id: ChatId,
  topic_id: OptionalTopicId,
  message_id: MessageId,
  reply_to_message_id: Schema.optionalWith(Schema.NullOr(MessageId), { default: () => null }),
  sent_at: Schema.optional(Timestamp)
}).annotations({ identifier: "LoadRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export type LoadRequest = typeof LoadRequest.Type

const decodeLoadRequest = Schema.decodeUnknownEither(LoadRequest)

/**
 * Decodes an untrusted request; fails with core's `InvalidRequest` naming the field.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeRequest = (input: unknown): Effect.Effect<LoadRequest, InvalidRequest> =>
  Effect.suspend(() => {
    const result = decodeLoadRequest(input)
    return result._tag === "Right"
      ? Effect.succeed(result.right)
      : Effect.fail(new InvalidRequest(pathOf(result.left)))
  })

/**
 * Why an item is in the context.
 *
 * @since 0.1.0
 * @category models
 */
export type Source = "recent" | "reply_target" | "reply_context" | "reply_chain" | "side_reply"

/**
 * A loaded item with its position and the reasons it is there.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadedEntry extends HistoryEntry {
  readonly sources: ReadonlyArray<Source>
}

/**
 * A bound of the reply-chain walk.
 *
 * @since 0.1.0
 * @category models
 */
export type ChainBound = "chain_max_messages" | "side_replies_per_message" | "side_replies_total"

/**
 * What the reply-chain walk found.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChainReport {
  /** The chain from the reply target upward, nearest first. */
  readonly message_ids: ReadonlyArray<string>
  /** Other replies to chain messages, in the order they were taken. */
  readonly side_reply_ids: ReadonlyArray<string>
  /** Each bound that cut the walk; empty when nothing was cut. */
  readonly truncated_by: ReadonlyArray<ChainBound>
  /** The parent the walk stopped at because the store does not hold it. */
  readonly missing_parent_id: string | null
}

/**
 * The reply target: none asked for, found, or not in the store.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReplyReport {
  readonly target_id: string | null
  readonly status: "none" | "found" | "not_found"
}

/**
 * The gap since the previous item of the conversation.
 *
 * @since 0.1.0
 * @category models
 */
export interface Gap {
  /** Milliseconds from the previous item to the current message (never negative). */
  readonly ms: number
  readonly previous_message_id: string | null
  readonly previous_sent_at: number
  readonly exceeds_threshold: boolean
}

/**
 * A loaded context.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadedContext {
  readonly scope: HistoryScope
  readonly message_id: string
  /** By position, each message once. */
  readonly entries: ReadonlyArray<LoadedEntry>
  /** The entries' items. */
  readonly messages: ReadonlyArray<HistoryItem>
  readonly reply: ReplyReport
  /** Null when no chain was walked (no target, or `reply_chain` off). */
  readonly chain: ChainReport | null
  /** Null when the conversation has no earlier item. */
  readonly gap: Gap | null
  /** The note for the system prompt; null unless the gap exceeds the threshold. */
  readonly gap_note: string | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ContextLoaderShape {
  readonly settings: ContextLoaderSettings
  readonly load: (request: LoadRequest) => Effect.Effect<LoadedContext, StoreError>
}

/**
 * The ContextLoader service.
 *
 * @since 0.1.0
 * @category tags
 */
export class ContextLoader extends Context.Tag("@deixis/chathistory/ContextLoader")<
  ContextLoader,
  ContextLoaderShape
>() {}

/**
 * A loader over a store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (store: HistoryStoreShape, options: Partial<ContextLoaderSettings> = {}): ContextLoaderShape =>
  internal.makeLoader(store, { ...defaults, ...options })

/**
 * A loader from explicit settings over the defaults.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Partial<ContextLoaderSettings> = {}): Layer.Layer<ContextLoader, never, HistoryStore> =>
  Layer.effect(ContextLoader, Effect.map(HistoryStore, (store) => make(store, options)))

/**
 * A loader read from `DEIXIS_CONTEXT_*` keys.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  overrides: Partial<ContextLoaderSettings> = {}
): Layer.Layer<ContextLoader, ConfigError.ConfigError, HistoryStore> =>
  Layer.effect(
    ContextLoader,
    Effect.flatMap(config, (settings) => Effect.map(HistoryStore, (store) => make(store, { ...settings, ...overrides })))
  )

/**
 * Loads the context of the current message.
 *
 * @since 0.1.0
 * @category operations
 */
export const load = (request: LoadRequest): Effect.Effect<LoadedContext, StoreError, ContextLoader> =>
  Effect.flatMap(ContextLoader, (loader) => loader.load(request))

/**
 * A duration in words: `less than a minute`, `N minutes`, `about an hour`, `N hours`,
 * `about a day`, `N days` (whole units, rounded down).
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatDuration: (ms: number) => string = internal.formatDuration

/**
 * The gap note, or null when the gap does not exceed the threshold (a gap exactly at the
 * threshold gets no note).
 *
 * @since 0.1.0
 * @category formatting
 */
export const gapNote: (gapMs: number, thresholdMinutes: number) => string | null = internal.gapNote
