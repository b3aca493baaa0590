/**
 * Per-kind TTL policy: how long an explicit activation keeps an object active.
 *
 * - article, link, summary, and a newly created reminder: `medium`
 * - media follow-up: `short_medium`
 * - reminder management after a list or an update, messages and bot messages: `short`
 * - a poll: while open (capped by `poll_open_max`), then `poll_grace` after it closes
 * - a scheduled reminder: at least until it is due, plus `reminder_grace` — listed and
 *   resolvable while pending, as a poll is while open
 * - a resolver touch refreshes within the kind's TTL, never indefinitely: an activation
 *   episode lasts at most `touch_cap_factor` × the TTL since its last explicit activation.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type { ActivationReason, ContextObject, TtlClass } from "./ContextObject.js"
import { defaultsOf, millis } from "./internal/config.js"
import type { ObjectKind } from "./ObjectKind.js"

/**
 * The policy's settings, durations in milliseconds.
 *
 * @since 0.1.0
 * @category models
 */
export interface TtlSettings {
  readonly medium: number
  readonly short_medium: number
  readonly short: number
  readonly poll_open_max: number
  readonly poll_grace: number
  /** How long a scheduled reminder stays active past its due time (it is active until then). */
  readonly reminder_grace: number
  readonly touch_cap_factor: number
}


/**
 * The policy's configuration, read from `DEIXIS_TTL_*` keys. Durations accept Effect's
 * duration strings (`"2 hours"`, `"45 minutes"`).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<TtlSettings> = Config.all({
  medium: millis("TTL_MEDIUM", "2 hours"),
  short_medium: millis("TTL_SHORT_MEDIUM", "45 minutes"),
  short: millis("TTL_SHORT", "15 minutes"),
  poll_open_max: millis("TTL_POLL_OPEN_MAX", "7 days"),
  poll_grace: millis("TTL_POLL_GRACE", "15 minutes"),
  reminder_grace: millis("TTL_REMINDER_GRACE", "15 minutes"),
  touch_cap_factor: Config.number("TTL_TOUCH_CAP_FACTOR").pipe(
    Config.withDefault(3),
    Config.validate({ message: "TTL_TOUCH_CAP_FACTOR must be at least 1", validation: (n) => n >= 1 })
  )
}).pipe(Config.nested("DEIXIS"))

/**
 * The defaults: the configuration read with no keys set.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: TtlSettings = defaultsOf(config)

/**
 * The TTL policy service.
 *
 * @since 0.1.0
 * @category tags
 */
export class TtlPolicy extends Context.Tag("@deixis/core/TtlPolicy")<TtlPolicy, TtlSettings>() {}

/**
 * A policy from explicit settings over the defaults.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Partial<TtlSettings> = {}): Layer.Layer<TtlPolicy> =>
  Layer.succeed(TtlPolicy, { ...defaults, ...options })

/**
 * A policy read from configuration.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<TtlPolicy, ConfigError.ConfigError> = Layer.effect(TtlPolicy, config)

/**
 * The TTL class an activation puts an object in.
 *
 * @since 0.1.0
 * @category policy
 */
export const classFor = (kind: ObjectKind, reason: ActivationReason | undefined, object?: ContextObject): TtlClass => {
  switch (kind) {
    case "article":
    case "link":
    case "summary":
      return "medium"
    case "media.image":
    case "media.video":
    case "media.voice":
    case "media.document":
    case "media.pdf":
      return "short_medium"
    case "poll":
      return object?.poll?.state === "closed" ? "poll_grace" : "poll_open"
    case "reminder":
      return reason === "reminder_created" ? "medium" : "short"
    case "bot_message":
    case "message":
      return "short"
  }
}

/**
 * The TTL of a class, in milliseconds.
 *
 * @since 0.1.0
 * @category policy
 */
export const ttlOf = (settings: TtlSettings, ttlClass: TtlClass): number => {
  switch (ttlClass) {
    case "poll_open":
      return settings.poll_open_max
    case "poll_grace":
      return settings.poll_grace
    default:
      return settings[ttlClass]
  }
}

const appendReason = (
  reasons: ReadonlyArray<ActivationReason>,
  reason: ActivationReason
): ReadonlyArray<ActivationReason> => (reasons.includes(reason) ? reasons : [...reasons, reason])

/**
 * Applies an explicit activation at `at` (epoch ms). An activation never shortens an
 * object's activity; a resolver touch extends it by at most the kind's TTL and never past
 * `touch_cap_factor` × TTL since the episode's last explicit activation.
 *
 * @since 0.1.0
 * @category policy
 */
export const activate = (
  settings: TtlSettings,
  object: ContextObject,
  reason: ActivationReason,
  at: number
): ContextObject => {
  const ttlClass = classFor(object.kind, reason, object)
  const ttl = ttlOf(settings, ttlClass)
  const active = object.active_until !== null && object.active_until > at
  const current = active ? object.active_until! : 0
  let activeUntil: number
  let activatedAt: number
  if (reason === "resolver_touch") {
    activatedAt = active && object.activated_at !== null ? object.activated_at : at
    activeUntil = Math.max(current, Math.min(at + ttl, activatedAt + settings.touch_cap_factor * ttl))
  } else {
    activatedAt = at
    activeUntil = Math.max(current, at + ttl)
  }
  const pending = pendingUntil(settings, object)
  if (pending !== null) activeUntil = Math.max(activeUntil, pending)
  return {
    ...object,
    ttl_class: ttlClass,
    activation_reasons: appendReason(object.activation_reasons, reason),
    last_touched_at: Math.max(object.last_touched_at, at),
    active_until: activeUntil,
    activated_at: activatedAt
  }
}

/**
 * Until when a scheduled reminder stays active whatever its activations: its due time plus
 * `reminder_grace`. Null for anything else.
 *
 * @since 0.1.0
 * @category policy
 */
export const pendingUntil = (settings: TtlSettings, object: ContextObject): number | null =>
  object.kind === "reminder" && object.reminder?.status === "scheduled"
    ? object.reminder.due_at + settings.reminder_grace
    : null

/**
 * Closes a poll at `at`: an activated poll stays active for `poll_grace` after closing.
 *
 * @since 0.1.0
 * @category policy
 */
export const closePoll = (settings: TtlSettings, object: ContextObject, at: number): ContextObject => ({
  ...object,
  poll: { ...(object.poll ?? { state: "open" }), state: "closed", closed_at: at },
  ttl_class: "poll_grace",
  last_touched_at: Math.max(object.last_touched_at, at),
  active_until: object.active_until === null ? null : at + settings.poll_grace
})

/**
 * A reminder fired at `at`: the bot just posted it, so an activated reminder is active for
 * the `short` management TTL (a "snooze it" follow-up resolves to it).
 *
 * @since 0.1.0
 * @category policy
 */
export const fireReminder = (settings: TtlSettings, object: ContextObject, at: number): ContextObject => ({
  ...object,
  ...(object.reminder === undefined ? {} : { reminder: { ...object.reminder, status: "fired" as const } }),
  ttl_class: "short",
  last_touched_at: Math.max(object.last_touched_at, at),
  active_until: object.active_until === null ? null : Math.max(object.active_until, at + settings.short)
})

/**
 * A reminder was cancelled at `at`: its activity ends.
 *
 * @since 0.1.0
 * @category policy
 */
export const cancelReminder = (object: ContextObject, at: number): ContextObject => ({
  ...object,
  ...(object.reminder === undefined ? {} : { reminder: { ...object.reminder, status: "cancelled" as const } }),
  last_touched_at: Math.max(object.last_touched_at, at),
  active_until: object.active_until === null ? null : Math.min(object.active_until, at)
})
