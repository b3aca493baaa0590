/**
 * Per-kind TTL policy: how long an explicit activation keeps an object active. A service
 * whose value holds the rules (`activate`, `closePoll`, …), built by `make(settings)`; a team
 * replaces it (per-chat overrides, say) with its own layer, and every store follows, as stores
 * keep what the policy wrote (`active_until`) rather than rules of their own.
 *
 * Today's rules, the default layer (each kind's class comes from its `KindRegistry` descriptor):
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
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ActivationReason, ContextObject, TtlClass } from "./ContextObject.js"
import { defaultsOf, millis } from "./internal/config.js"
import { defaultRegistry, KindRegistry, type Registry } from "./KindRegistry.js"
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
 * The TTL policy: the rules an activation, a poll's close and a reminder's life follow. Every
 * function is pure over its arguments; `at` is epoch ms.
 *
 * @since 0.2.0
 * @category models
 */
export interface TtlPolicyShape {
  /** The TTL class an activation with `reason` puts an object of `kind` in. */
  readonly classFor: (kind: ObjectKind, reason: ActivationReason | undefined, object?: ContextObject) => TtlClass
  /** The TTL of an object's current class, in milliseconds. */
  readonly ttlOf: (object: ContextObject) => number
  /**
   * Applies an explicit activation. An activation never shortens an object's activity; a
   * resolver touch extends it within the kind's TTL, never indefinitely.
   */
  readonly activate: (object: ContextObject, reason: ActivationReason, at: number) => ContextObject
  /** Until when an object stays active whatever its activations (a scheduled reminder); null for none. */
  readonly pendingUntil: (object: ContextObject) => number | null
  /** Closes a poll: an activated poll stays active for a grace period. */
  readonly closePoll: (object: ContextObject, at: number) => ContextObject
  /** A reminder fired: it is active for its management follow-ups. */
  readonly fireReminder: (object: ContextObject, at: number) => ContextObject
  /** A reminder was cancelled: its activity ends. */
  readonly cancelReminder: (object: ContextObject, at: number) => ContextObject
}

/**
 * The TTL policy service.
 *
 * @since 0.1.0
 * @category tags
 */
export class TtlPolicy extends Context.Tag("@deixis/core/TtlPolicy")<TtlPolicy, TtlPolicyShape>() {}

const appendReason = (
  reasons: ReadonlyArray<ActivationReason>,
  reason: ActivationReason
): ReadonlyArray<ActivationReason> => (reasons.includes(reason) ? reasons : [...reasons, reason])

/**
 * Today's rules over `settings`, each kind's class from `kinds`' descriptors:
 * - an activation puts the object in its kind's class (a closed poll: `poll_grace`) and
 *   extends its activity to at least `at` + that class's TTL;
 * - a resolver touch extends by at most the TTL and never past `touch_cap_factor` × TTL since
 *   the episode's last explicit activation;
 * - a scheduled reminder stays active until its due time plus `reminder_grace`;
 * - a closed poll keeps `poll_grace`; a fired reminder the `short` TTL; a cancelled one ends.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (settings: TtlSettings, kinds: Registry = defaultRegistry): TtlPolicyShape => {
  const ttlOfClass = (ttlClass: TtlClass): number =>
    ttlClass === "poll_open" ? settings.poll_open_max : ttlClass === "poll_grace" ? settings.poll_grace : settings[ttlClass]
  const classFor = (kind: ObjectKind, reason: ActivationReason | undefined, object?: ContextObject): TtlClass =>
    object?.poll?.state === "closed" ? "poll_grace" : kinds.ttlClass(kind, reason)
  const pendingUntil = (object: ContextObject): number | null =>
    object.reminder?.status === "scheduled" ? object.reminder.due_at + settings.reminder_grace : null
  const activate = (object: ContextObject, reason: ActivationReason, at: number): ContextObject => {
    const ttlClass = classFor(object.kind, reason, object)
    const ttl = ttlOfClass(ttlClass)
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
    const pending = pendingUntil(object)
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
  return {
    classFor,
    ttlOf: (object) => ttlOfClass(object.ttl_class),
    activate,
    pendingUntil,
    closePoll: (object, at) => ({
      ...object,
      poll: { ...(object.poll ?? { state: "open" }), state: "closed", closed_at: at },
      ttl_class: "poll_grace",
      last_touched_at: Math.max(object.last_touched_at, at),
      active_until: object.active_until === null ? null : at + settings.poll_grace
    }),
    fireReminder: (object, at) => ({
      ...object,
      ...(object.reminder === undefined ? {} : { reminder: { ...object.reminder, status: "fired" as const } }),
      ttl_class: "short",
      last_touched_at: Math.max(object.last_touched_at, at),
      active_until: object.active_until === null ? null : Math.max(object.active_until, at + settings.short)
    }),
    cancelReminder: (object, at) => ({
      ...object,
      ...(object.reminder === undefined ? {} : { reminder: { ...object.reminder, status: "cancelled" as const } }),
      last_touched_at: Math.max(object.last_touched_at, at),
      active_until: object.active_until === null ? null : Math.min(object.active_until, at)
    })
  }
}

/**
 * Today's rules with the default settings and the built-in kinds.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultPolicy: TtlPolicyShape = make(defaults)

/**
 * Today's rules over explicit settings (over the defaults), each kind's class from the
 * `KindRegistry` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Partial<TtlSettings> = {}): Layer.Layer<TtlPolicy> =>
  Layer.effect(TtlPolicy, Effect.map(KindRegistry, (kinds) => make({ ...defaults, ...options }, kinds)))

/**
 * Today's rules over settings read from configuration.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<TtlPolicy, ConfigError.ConfigError> = Layer.effect(
  TtlPolicy,
  Effect.zipWith(config, KindRegistry, make)
)
