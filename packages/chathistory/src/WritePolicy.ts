/**
 * The history write policy, by group mode.
 *
 * - `talkative`: every inbound message, every reaction, every bot output (and system note)
 *   is recorded; the history window is capped at 16.
 * - `smart` (the default): every message the bot receives is recorded — all of a group's
 *   messages without Telegram's privacy mode; with it, the commands, mentions and replies
 *   Telegram delivers and the messages they reply to — plus every bot output; reactions and
 *   system notes only when they triggered a run. The bot still answers only when addressed.
 *   The window is capped at 8.
 * - `strict`: only the addressed exchange — what triggered a bot run (with the message it
 *   replies to) and the bot's outputs; the window is capped at 8.
 *
 * Trimming keeps the newest. The cap bounds the `chat_history_context` window a prompt gets;
 * the HistoryStore keeps more (its own caps), so the ContextLoader can still reach an older
 * reply target. Modes and caps are configuration; the old `telegram-history-max-messages`
 * setting has no equivalent — the history length is mode-driven only.
 *
 * @since 0.1.0
 */
import { defaultsOf } from "@deixis/core/ConfigKeys"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { HistoryItem, Kind } from "./HistoryItem.js"
import { isOutbound } from "./HistoryItem.js"
import type { HistoryScope, StoreError } from "./HistoryStore.js"
import { HistoryStore } from "./HistoryStore.js"

/**
 * A group's mode.
 *
 * @since 0.1.0
 * @category schemas
 */
export const GroupMode = Schema.Literal("talkative", "strict", "smart").annotations({ identifier: "GroupMode" })

/**
 * @since 0.1.0
 * @category models
 */
export type GroupMode = typeof GroupMode.Type

/**
 * The policy's settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface WritePolicySettings {
  /** The mode of a chat when the caller names none. */
  readonly default_mode: GroupMode
  readonly talkative_cap: number
  readonly strict_cap: number
  readonly smart_cap: number
}

const cap = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be a non-negative integer`, validation: (n) => n >= 0 })
  )

/**
 * The policy's configuration, read from `DEIXIS_HISTORY_*` keys.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<WritePolicySettings> = Config.all({
  default_mode: Config.literal("talkative", "strict", "smart")("HISTORY_MODE").pipe(Config.withDefault("smart")),
  talkative_cap: cap("HISTORY_TALKATIVE_CAP", 16),
  strict_cap: cap("HISTORY_STRICT_CAP", 8),
  smart_cap: cap("HISTORY_SMART_CAP", 8)
}).pipe(Config.nested("DEIXIS"))

/**
 * The defaults: the configuration read with no keys set.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: WritePolicySettings = defaultsOf(config)

/**
 * The write policy service.
 *
 * @since 0.1.0
 * @category tags
 */
export class WritePolicy extends Context.Tag("@deixis/chathistory/WritePolicy")<WritePolicy, WritePolicySettings>() {}

/**
 * A policy from explicit settings over the defaults.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Partial<WritePolicySettings> = {}): Layer.Layer<WritePolicy> =>
  Layer.succeed(WritePolicy, { ...defaults, ...options })

/**
 * A policy read from configuration.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<WritePolicy, ConfigError.ConfigError> = Layer.effect(WritePolicy, config)

/**
 * Whether an item of `kind` is recorded in `mode`. `triggeredRun` says whether the inbound
 * item made the bot run; bot outputs are always recorded, inbound messages always in `smart`.
 *
 * @since 0.1.0
 * @category policy
 */
export const shouldRecord = (mode: GroupMode, kind: Kind, triggeredRun: boolean): boolean =>
  mode === "talkative" || kind === "outbound_agent" || kind === "outbound_reaction" || triggeredRun ||
  (mode === "smart" && kind === "inbound_user")

/**
 * The history cap of a mode.
 *
 * @since 0.1.0
 * @category policy
 */
export const capOf = (settings: WritePolicySettings, mode: GroupMode): number => {
  switch (mode) {
    case "talkative":
      return settings.talkative_cap
    case "strict":
      return settings.strict_cap
    case "smart":
      return settings.smart_cap
  }
}

/**
 * The newest `cap` items (items oldest first).
 *
 * @since 0.1.0
 * @category policy
 */
export const trim = <A>(items: ReadonlyArray<A>, cap: number): ReadonlyArray<A> =>
  cap <= 0 ? [] : items.length <= cap ? items : items.slice(items.length - cap)

/**
 * Records an item when the policy says so; returns whether it was recorded.
 *
 * @since 0.1.0
 * @category operations
 */
export const record = (
  item: HistoryItem,
  options: { readonly triggered_run: boolean; readonly mode?: GroupMode | undefined }
): Effect.Effect<boolean, StoreError, WritePolicy | HistoryStore> =>
  Effect.flatMap(WritePolicy, (settings) =>
    shouldRecord(options.mode ?? settings.default_mode, item.kind, options.triggered_run || isOutbound(item))
      ? Effect.as(Effect.flatMap(HistoryStore, (store) => store.append(item)), true)
      : Effect.succeed(false))

/**
 * The history window of a conversation in `mode`: its newest items up to the mode's cap,
 * oldest first, positioned before message `before` when given (the current message stays
 * out of its own history).
 *
 * @since 0.1.0
 * @category operations
 */
export const history = (
  scope: HistoryScope,
  options: { readonly mode?: GroupMode | undefined; readonly before?: string | undefined } = {}
): Effect.Effect<ReadonlyArray<HistoryItem>, StoreError, WritePolicy | HistoryStore> =>
  Effect.flatMap(WritePolicy, (settings) =>
    Effect.flatMap(HistoryStore, (store) =>
      Effect.map(
        store.recent(scope, capOf(settings, options.mode ?? settings.default_mode), { before: options.before }),
        (entries) => entries.map((entry) => entry.item)
      )))
