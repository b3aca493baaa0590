/**
 * The one deterministic, feature-weighted scorer both tools use, so they cannot drift.
 *
 * A candidate's score is the sum of its features' contributions; each contribution is a
 * configured weight (recency decays by half-life). The result carries the score, a
 * confidence in 0..1, per-feature diagnostics, and the features that fired, which each tool
 * names with its own spec's reason codes.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { ActivationReason, ContextObject } from "./ContextObject.js"
import { isActive } from "./ContextObject.js"
import type { PoolEntry, PoolLimits } from "./ContextStore.js"
import { compareMessageIds } from "./Ids.js"
import { defaultsOf, millis, positiveInt } from "./internal/config.js"
import type { ObjectKind } from "./ObjectKind.js"
import { kindsForHint } from "./ObjectKind.js"
import type { TtlSettings } from "./TtlPolicy.js"
import { ttlOf } from "./TtlPolicy.js"

/**
 * Normalized reference hints, extracted upstream from the user's words in any language.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReferenceHints = Schema.Struct({
  positional_hint: Schema.optional(
    Schema.Literal("replied_message", "latest", "previous", "above", "current_topic_recent")
  ),
  ordinal_hint: Schema.optional(Schema.Literal("first", "second", "last")),
  target_kind_hint: Schema.optional(
    Schema.Literal(
      "poll", "reminder", "image", "file", "article", "quote",
      "link", "video", "voice", "pdf", "summary", "message"
    )
  ),
  ownership_hint: Schema.optional(Schema.Literal("mine", "bot_created", "any")),
  recency_hint: Schema.optional(Schema.Literal("latest", "recent", "currently_active"))
}).annotations({ identifier: "NormalizedReferenceHints" })

/**
 * @since 0.1.0
 * @category models
 */
export type ReferenceHints = typeof ReferenceHints.Type

/**
 * The features the scorer weighs, in the order diagnostics list them.
 *
 * @since 0.1.0
 * @category constants
 */
export const features = [
  "reply_target",
  "reply_chain",
  "same_scope",
  "active",
  "kind_match",
  "kind_mismatch",
  "position_match",
  "bot_created",
  "owned_by_sender",
  "open_poll",
  "future_reminder",
  "touched_in_interaction",
  "recency",
  "scope_fallback",
  "stale"
] as const

/**
 * @since 0.1.0
 * @category models
 */
export type Feature = (typeof features)[number]

// Each feature's index in a Scored's `values`.
const F = Object.fromEntries(features.map((f, i) => [f, i])) as { readonly [K in Feature]: number }

/**
 * The weight of each feature (penalties are negative), and the thresholds applied to scores.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScoringSettings {
  readonly weights: { readonly [F in Feature]: number }
  /** `owned_by_sender` without an ownership hint: sender-owned objects (not messages) matter a little. */
  readonly owned_ambient: number
  readonly recency_half_life: number
  /** How long a resolver touch or attached follow-up counts as "this interaction". */
  readonly interaction_window: number
  /** A score at or above this maps to confidence 1. */
  readonly confidence_scale: number
  /** resolve_reference_target: no candidate below this is plausible. */
  readonly min_score: number
  /** resolve_reference_target: a winner must lead the runner-up by this much. */
  readonly ambiguity_margin: number
  /** An active object with less than this fraction of its TTL left is near expiry. */
  readonly near_expiry_fraction: number
  readonly pool: PoolLimits
}

const weight = (name: string, fallback: number) =>
  Config.number(`SCORE_${name}`).pipe(Config.withDefault(fallback))
/**
 * The scorer's configuration, read from `DEIXIS_SCORE_*`, `DEIXIS_RESOLVE_*` and
 * `DEIXIS_POOL_*` keys.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<ScoringSettings> = Config.all({
  weights: Config.all({
    reply_target: weight("REPLY_TARGET", 100),
    reply_chain: weight("REPLY_CHAIN", 40),
    same_scope: weight("SAME_SCOPE", 30),
    active: weight("ACTIVE", 30),
    kind_match: weight("KIND_MATCH", 35),
    kind_mismatch: weight("KIND_MISMATCH", -60),
    position_match: weight("POSITION_MATCH", 20),
    bot_created: weight("BOT_CREATED", 25),
    owned_by_sender: weight("OWNED_BY_SENDER", 25),
    open_poll: weight("OPEN_POLL", 20),
    future_reminder: weight("FUTURE_REMINDER", 20),
    touched_in_interaction: weight("TOUCHED_IN_INTERACTION", 15),
    recency: weight("RECENCY", 25),
    scope_fallback: weight("SCOPE_FALLBACK", -20),
    stale: weight("STALE", -25)
  }),
  owned_ambient: weight("OWNED_AMBIENT", 10),
  recency_half_life: millis("SCORE_RECENCY_HALF_LIFE", "30 minutes"),
  interaction_window: millis("SCORE_INTERACTION_WINDOW", "10 minutes"),
  confidence_scale: Config.number("SCORE_CONFIDENCE_SCALE").pipe(
    Config.withDefault(150),
    Config.validate({ message: "SCORE_CONFIDENCE_SCALE must be positive", validation: (n) => n > 0 })
  ),
  min_score: Config.number("RESOLVE_MIN_SCORE").pipe(Config.withDefault(60)),
  ambiguity_margin: Config.number("RESOLVE_AMBIGUITY_MARGIN").pipe(
    Config.withDefault(15),
    Config.validate({ message: "RESOLVE_AMBIGUITY_MARGIN must be positive", validation: (n) => n > 0 })
  ),
  near_expiry_fraction: Config.number("SCORE_NEAR_EXPIRY_FRACTION").pipe(Config.withDefault(0.1)),
  pool: Config.all({
    chain_depth: positiveInt("POOL_CHAIN_DEPTH", 8),
    recent_objects: positiveInt("POOL_RECENT_OBJECTS", 8),
    recent_per_kind: positiveInt("POOL_RECENT_PER_KIND", 4),
    recent_messages: positiveInt("POOL_RECENT_MESSAGES", 3),
    owned: positiveInt("POOL_OWNED", 4)
  })
}).pipe(Config.nested("DEIXIS"))

/**
 * The defaults: the configuration read with no keys set.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: ScoringSettings = defaultsOf(config)

/**
 * The scorer's settings as a service.
 *
 * @since 0.1.0
 * @category tags
 */
export class Scoring extends Context.Tag("@deixis/core/Scoring")<Scoring, ScoringSettings>() {}

/**
 * Settings over the defaults; `weights` and `pool` merge key by key.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScoringOptions extends Partial<Omit<ScoringSettings, "weights" | "pool">> {
  readonly weights?: Partial<ScoringSettings["weights"]>
  readonly pool?: Partial<PoolLimits>
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: ScoringOptions = {}): ScoringSettings => ({
  ...defaults,
  ...options,
  weights: { ...defaults.weights, ...options.weights },
  pool: { ...defaults.pool, ...options.pool }
})

/**
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ScoringOptions = {}): Layer.Layer<Scoring> => Layer.succeed(Scoring, make(options))

/**
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Scoring, ConfigError.ConfigError> = Layer.effect(Scoring, config)

/**
 * What a request brings to scoring.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScoreRequest {
  readonly now: number
  readonly topic_id: string | null
  readonly sender_user_id: string | null
  readonly hints: ReferenceHints
}

/**
 * One scored candidate. `values` holds each feature's contribution, indexed as
 * {@link features}; zero when the feature did not fire.
 *
 * @since 0.1.0
 * @category models
 */
export interface Scored {
  readonly entry: PoolEntry
  readonly score: number
  readonly confidence: number
  readonly values: ReadonlyArray<number>
}

/**
 * The features that fired for a candidate, with their contributions, in {@link features}
 * order.
 *
 * @since 0.1.0
 * @category utils
 */
export const contributions = (scored: Scored): Array<readonly [Feature, number]> => {
  const out: Array<readonly [Feature, number]> = []
  for (let i = 0; i < features.length; i++) {
    const value = scored.values[i]!
    if (value !== 0) out.push([features[i]!, value])
  }
  return out
}

/**
 * The kinds a request's kind hint names (empty without one).
 *
 * @since 0.1.0
 * @category utils
 */
export const hintedKinds = (hints: ReferenceHints): ReadonlyArray<ObjectKind> =>
  hints.target_kind_hint === undefined ? [] : kindsForHint[hints.target_kind_hint]

const round = (n: number) => Math.round(n * 1000) / 1000
const interactionReasons: ReadonlyArray<ActivationReason> = ["resolver_touch", "followup_attached"]

/**
 * Sorts candidates best first: score, then most recently touched, then newest source
 * message, then object id — a total order, so equal inputs give equal output.
 *
 * @since 0.1.0
 * @category utils
 */
export const compareScored = (a: Scored, b: Scored): number =>
  b.score - a.score ||
  b.entry.object.last_touched_at - a.entry.object.last_touched_at ||
  compareMessageIds(b.entry.object.source_message_id, a.entry.object.source_message_id) ||
  (a.entry.object.object_id < b.entry.object.object_id ? -1 : a.entry.object.object_id > b.entry.object.object_id ? 1 : 0)

const byAge = (a: ContextObject, b: ContextObject) =>
  a.created_at - b.created_at || compareMessageIds(a.source_message_id, b.source_message_id) ||
  (a.object_id < b.object_id ? -1 : a.object_id > b.object_id ? 1 : 0)

/**
 * The object a positional or ordinal hint points at within the pool: `first`/`second` count
 * from the oldest, `last`/`latest` is the newest, `previous` the one before it. Counted among
 * the candidates of the hinted kinds when there is a kind hint.
 *
 * @since 0.1.0
 * @category scoring
 */
export const positionalTarget = (entries: ReadonlyArray<PoolEntry>, hints: ReferenceHints): string | undefined => {
  const kinds = hintedKinds(hints)
  const pick = hints.ordinal_hint ??
    (hints.positional_hint === "latest" || hints.positional_hint === "above"
      ? "last"
      : hints.positional_hint === "previous"
      ? "previous"
      : undefined)
  if (pick === undefined) return undefined
  const ordered = entries
    .map((e) => e.object)
    .filter((o) => kinds.length === 0 || kinds.includes(o.kind))
    .sort(byAge)
  const index = pick === "first" ? 0 : pick === "second" ? 1 : pick === "last" ? ordered.length - 1 : ordered.length - 2
  return ordered[index]?.object_id
}

/**
 * Scores every entry of a pool.
 *
 * @since 0.1.0
 * @category scoring
 */
export const scoreAll = (
  settings: ScoringSettings,
  ttl: TtlSettings,
  entries: ReadonlyArray<PoolEntry>,
  request: ScoreRequest
): Array<Scored> => {
  const positional = positionalTarget(entries, request.hints)
  const kinds = hintedKinds(request.hints)
  return entries.map((entry) => score(settings, ttl, entry, request, kinds, positional)).sort(compareScored)
}

/**
 * Scores one candidate.
 *
 * @since 0.1.0
 * @category scoring
 */
export const score = (
  settings: ScoringSettings,
  ttl: TtlSettings,
  entry: PoolEntry,
  request: ScoreRequest,
  kinds: ReadonlyArray<ObjectKind> = hintedKinds(request.hints),
  positional: string | undefined = undefined
): Scored => {
  const w = settings.weights
  const o = entry.object
  const hints = request.hints
  const now = request.now
  // A plain array: typed-array allocation costs more than the scoring itself.
  const v: Array<number> = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]

  if (entry.tier === "reply_target") v[F.reply_target] = w.reply_target
  else if (entry.tier === "reply_chain") v[F.reply_chain] = w.reply_chain
  if (o.topic_id === request.topic_id) v[F.same_scope] = w.same_scope
  const active = isActive(o, now)
  if (active) v[F.active] = hints.recency_hint === "currently_active" ? w.active * 1.5 : w.active
  if (kinds.length > 0) {
    if (kinds.includes(o.kind)) v[F.kind_match] = w.kind_match
    else v[F.kind_mismatch] = w.kind_mismatch
  }
  if (
    (positional !== undefined && positional === o.object_id) ||
    (hints.positional_hint === "replied_message" && entry.tier === "reply_target")
  ) {
    v[F.position_match] = w.position_match
  }
  if (hints.ownership_hint === "bot_created" && o.created_by_bot) v[F.bot_created] = w.bot_created
  if (request.sender_user_id !== null && o.created_by_user_id === request.sender_user_id) {
    // Without an ownership hint, only objects count as owned: the sender's own chatter does not.
    if (hints.ownership_hint === "mine") v[F.owned_by_sender] = w.owned_by_sender
    else if (o.kind !== "message" && o.kind !== "bot_message") v[F.owned_by_sender] = settings.owned_ambient
  }
  if (o.poll?.state === "open") v[F.open_poll] = w.open_poll
  if (o.reminder?.status === "scheduled" && o.reminder.due_at > now) v[F.future_reminder] = w.future_reminder
  if (
    active && now - o.last_touched_at <= settings.interaction_window &&
    o.activation_reasons.some((r) => interactionReasons.includes(r))
  ) {
    v[F.touched_in_interaction] = w.touched_in_interaction
  }
  const age = Math.max(0, now - o.last_touched_at)
  v[F.recency] = round(w.recency * Math.pow(0.5, age / settings.recency_half_life) * (hints.recency_hint === "latest" ? 2 : 1))
  if (entry.tier === "fallback") v[F.scope_fallback] = w.scope_fallback
  if (o.active_until !== null && !active) {
    v[F.stale] = w.stale
  } else if (active && o.active_until! - now < ttlOf(ttl, o.ttl_class) * settings.near_expiry_fraction) {
    v[F.stale] = w.stale / 2
  }

  let total = 0
  for (let i = 0; i < v.length; i++) total += v[i]!
  total = round(total)
  return {
    entry,
    score: total,
    confidence: round(Math.min(1, Math.max(0, total / settings.confidence_scale))),
    values: v
  }
}

/**
 * The features that fired, as `{ feature: contribution }` in {@link features} order.
 *
 * @since 0.1.0
 * @category utils
 */
export const featureRecord = (scored: Scored): Record<string, number> => {
  const out: Record<string, number> = {}
  for (let i = 0; i < features.length; i++) {
    const value = scored.values[i]!
    if (value !== 0) out[features[i]!] = value
  }
  return out
}

/**
 * Whether a feature fired for a scored candidate.
 *
 * @since 0.1.0
 * @category utils
 */
export const fired = (scored: Scored, feature: Feature): boolean => scored.values[F[feature]] !== 0
