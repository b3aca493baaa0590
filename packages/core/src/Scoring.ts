/**
 * The one deterministic, feature-weighted scorer both tools use, so they cannot drift. A
 * service whose value holds the scoring (`scoreAll`, `compare`, the thresholds), built by
 * `make(settings)`; a team replaces it, or adds a feature of its own (`CustomFeature`).
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
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { ActivationReason, ContextObject } from "./ContextObject.js"
import { isActive } from "./ContextObject.js"
import type { PoolEntry, PoolLimits } from "./ContextStore.js"
import { compareMessageIds } from "./Ids.js"
import { defaultsOf, millis, positiveInt } from "./internal/config.js"
import { defaultRegistry, KindRegistry, type Registry } from "./KindRegistry.js"
import type { ObjectKind } from "./ObjectKind.js"
import { TargetKindHint } from "./ObjectKind.js"
import { defaultPolicy, TtlPolicy, type TtlPolicyShape } from "./TtlPolicy.js"

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
  target_kind_hint: Schema.optional(TargetKindHint),
  ownership_hint: Schema.optional(Schema.Literal("mine", "others", "bot_created", "any")).annotations({
    description:
      "Whose object is meant: mine (the sender's own), others (anyone's but the sender's), bot_created, any. With mine, others or bot_created, ordinal and positional hints count among those objects only"
  }),
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
  "quote_match",
  "bot_created",
  "owned_by_sender",
  "ownership_mismatch",
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
    quote_match: weight("QUOTE_MATCH", 40),
    bot_created: weight("BOT_CREATED", 25),
    owned_by_sender: weight("OWNED_BY_SENDER", 25),
    ownership_mismatch: weight("OWNERSHIP_MISMATCH", -40),
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
    owned: positiveInt("POOL_OWNED", 4),
    fallback_active: positiveInt("POOL_FALLBACK_ACTIVE", 16).pipe(
      Config.validate({ message: "POOL_FALLBACK_ACTIVE must be at most 64", validation: (n) => n <= 64 })
    )
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
 * The settings `options` give over the defaults.
 *
 * @since 0.2.0
 * @category constructors
 */
export const settingsOf = (options: ScoringOptions = {}): ScoringSettings => ({
  ...defaults,
  ...options,
  weights: { ...defaults.weights, ...options.weights },
  pool: { ...defaults.pool, ...options.pool }
})

/**
 * What a request brings to scoring. `kinds`, when set, are the kinds the request asks for
 * (a list's `allowed_kinds`); otherwise the kinds its kind hint names.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScoreRequest {
  readonly now: number
  readonly topic_id: string | null
  readonly sender_user_id: string | null
  readonly hints: ReferenceHints
  readonly kinds?: ReadonlyArray<ObjectKind> | undefined
  /** The objects of the reply target the current message's quote selects (`Quote.selects`). */
  readonly quoted?: ReadonlyArray<string> | undefined
}

/**
 * One scored candidate. `values` holds each feature's contribution, indexed as
 * {@link features}; zero when the feature did not fire. `extra` holds custom features'
 * contributions that fired, by name.
 *
 * @since 0.1.0
 * @category models
 */
export interface Scored {
  readonly entry: PoolEntry
  readonly score: number
  readonly confidence: number
  readonly values: ReadonlyArray<number>
  readonly extra?: ReadonlyArray<readonly [string, number]> | undefined
}

/**
 * A feature a team adds to the scorer: a name (namespaced, `x.embedding`) and its contribution
 * for a candidate, 0 when it does not apply. It shows in diagnostics under its name.
 *
 * @since 0.2.0
 * @category models
 */
export interface CustomFeature {
  readonly name: string
  readonly value: (entry: PoolEntry, request: ScoreRequest) => number
}

/**
 * The scorer: features of a candidate, its score, the order of candidates and the thresholds
 * for resolved / ambiguous / not found.
 *
 * @since 0.2.0
 * @category models
 */
export interface ScoringShape {
  /** The settings the scorer was built from (pool limits, weights the reason codes read). */
  readonly settings: ScoringSettings
  /** The kinds a request's kind hint names (empty without one). */
  readonly hintedKinds: (hints: ReferenceHints) => ReadonlyArray<ObjectKind>
  /** Scores every entry of a pool, best first. */
  readonly scoreAll: (entries: ReadonlyArray<PoolEntry>, request: ScoreRequest) => Array<Scored>
  /** The order of candidates: negative when `a` ranks before `b`. */
  readonly compare: (a: Scored, b: Scored) => number
  /** Whether a candidate is plausible at all (resolve: below this, not found). */
  readonly plausible: (candidate: Scored) => boolean
  /** Whether `other` is too close to `top` to tell them apart. */
  readonly close: (top: Scored, other: Scored) => boolean
  /** The confidence of a winner that leads the runner-up by `gap`. */
  readonly confidence: (top: Scored, gap: number) => number
}

/**
 * The scorer's service.
 *
 * @since 0.1.0
 * @category tags
 */
export class Scoring extends Context.Tag("@deixis/core/Scoring")<Scoring, ScoringShape>() {}

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
 * Whether an object is whose the ownership hint names: the sender's own (`mine`), anyone's but
 * the sender's (`others`), the bot's (`bot_created`); every object without a hint or with `any`.
 * Without a known sender, `mine` names nothing and `others` everything.
 *
 * @since 0.3.0
 * @category scoring
 */
export const ownedAsHinted = (object: ContextObject, hints: ReferenceHints, senderUserId: string | null): boolean => {
  switch (hints.ownership_hint) {
    case "mine":
      return senderUserId !== null && object.created_by_user_id === senderUserId
    case "others":
      return senderUserId === null || object.created_by_user_id !== senderUserId
    case "bot_created":
      return object.created_by_bot
    default:
      return true
  }
}

/**
 * The object a positional or ordinal hint points at within the pool: `first`/`second` count
 * from the oldest, `last`/`latest`/`above` is the newest, `previous` the one before it,
 * `current_topic_recent` the newest of the request's topic. Counted among the candidates of
 * `kinds` when there are any, and among those whose the ownership hint names
 * ({@link ownedAsHinted}): "my last photo" is the sender's own last photo.
 *
 * @since 0.1.0
 * @category scoring
 */
export const positionalTarget = (
  entries: ReadonlyArray<PoolEntry>,
  hints: ReferenceHints,
  kinds: ReadonlyArray<ObjectKind>,
  topicId: string | null,
  senderUserId: string | null = null
): string | undefined => {
  const positional = hints.positional_hint
  const pick = hints.ordinal_hint ??
    (positional === "latest" || positional === "above" || positional === "current_topic_recent"
      ? "last"
      : positional === "previous"
      ? "previous"
      : undefined)
  if (pick === undefined) return undefined
  const inTopic = hints.ordinal_hint === undefined && positional === "current_topic_recent"
  const ordered = entries
    .map((e) => e.object)
    .filter((o) =>
      (kinds.length === 0 || kinds.includes(o.kind)) && (!inTopic || o.topic_id === topicId) &&
      ownedAsHinted(o, hints, senderUserId)
    )
    .sort(byAge)
  const index = pick === "first" ? 0 : pick === "second" ? 1 : pick === "last" ? ordered.length - 1 : ordered.length - 2
  return ordered[index]?.object_id
}

/**
 * How much a recency hint multiplies the recency feature: `latest` 2, `recent` 1.5.
 *
 * @since 0.2.0
 * @category scoring
 */
export const recencyFactor = (hints: ReferenceHints): number =>
  hints.recency_hint === "latest" ? 2 : hints.recency_hint === "recent" ? 1.5 : 1

/**
 * Today's scorer over `options` (merged over the defaults), reading each object's TTL from
 * `ttl` and the kinds a hint names from `kinds`, with `features` added to the built-in ones.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (
  options: ScoringOptions = {},
  deps: {
    readonly ttl?: TtlPolicyShape
    readonly kinds?: Registry
    readonly features?: ReadonlyArray<CustomFeature>
  } = {}
): ScoringShape => {
  const settings = settingsOf(options)
  const ttl = deps.ttl ?? defaultPolicy
  const registry = deps.kinds ?? defaultRegistry
  const custom = deps.features ?? []
  const w = settings.weights
  const none: ReadonlyArray<ObjectKind> = []
  const hintedKinds = (hints: ReferenceHints): ReadonlyArray<ObjectKind> =>
    hints.target_kind_hint === undefined ? none : registry.kindsForHint(hints.target_kind_hint)

  const score = (
    entry: PoolEntry,
    request: ScoreRequest,
    kinds: ReadonlyArray<ObjectKind>,
    positional: string | undefined,
    recencyBoost: number
  ): Scored => {
    const o = entry.object
    const hints = request.hints
    const now = request.now
    // A plain array: typed-array allocation costs more than the scoring itself.
    const v: Array<number> = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]

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
    if (request.quoted !== undefined && entry.tier === "reply_target" && request.quoted.includes(o.object_id)) {
      v[F.quote_match] = w.quote_match
    }
    if (hints.ownership_hint === "bot_created" && o.created_by_bot) v[F.bot_created] = w.bot_created
    if (request.sender_user_id !== null && o.created_by_user_id === request.sender_user_id) {
      // Without an ownership hint, only objects count as owned: the sender's own chatter does
      // not; `any` says ownership does not matter at all, `others` that the sender's are not meant.
      if (hints.ownership_hint === "mine") v[F.owned_by_sender] = w.owned_by_sender
      else if (
        hints.ownership_hint !== "any" && hints.ownership_hint !== "others" && o.kind !== "message" && o.kind !== "bot_message"
      ) {
        v[F.owned_by_sender] = settings.owned_ambient
      }
    }
    // An ownership hint says whose object is meant, as a kind hint says which kind: an object of
    // someone else is still a candidate (a reply target stays one), but far behind.
    if (
      (hints.ownership_hint === "mine" || hints.ownership_hint === "others" || hints.ownership_hint === "bot_created") &&
      !ownedAsHinted(o, hints, request.sender_user_id)
    ) {
      v[F.ownership_mismatch] = w.ownership_mismatch
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
    v[F.recency] = round(w.recency * Math.pow(0.5, age / settings.recency_half_life) * recencyBoost)
    if (entry.tier === "fallback") v[F.scope_fallback] = w.scope_fallback
    if (o.active_until !== null && !active) {
      v[F.stale] = w.stale
    } else if (active && o.active_until! - now < ttl.ttlOf(o) * settings.near_expiry_fraction) {
      v[F.stale] = w.stale / 2
    }

    let total = 0
    for (let i = 0; i < v.length; i++) total += v[i]!
    let extra: Array<readonly [string, number]> | undefined
    for (const feature of custom) {
      const value = feature.value(entry, request)
      if (value === 0) continue
      total += value
      ;(extra ??= []).push([feature.name, value])
    }
    total = round(total)
    return {
      entry,
      score: total,
      confidence: round(Math.min(1, Math.max(0, total / settings.confidence_scale))),
      values: v,
      extra
    }
  }

  return {
    settings,
    hintedKinds,
    scoreAll: (entries, request) => {
      const kinds = request.kinds ?? hintedKinds(request.hints)
      const positional = positionalTarget(entries, request.hints, kinds, request.topic_id, request.sender_user_id)
      const boost = recencyFactor(request.hints)
      return entries.map((entry) => score(entry, request, kinds, positional, boost)).sort(compareScored)
    },
    compare: compareScored,
    plausible: (candidate) => candidate.score >= settings.min_score,
    close: (top, other) => top.score - other.score < settings.ambiguity_margin,
    confidence: (top, gap) => round(top.confidence * Math.min(1, 0.5 + gap / (2 * settings.ambiguity_margin)))
  }
}

/**
 * Today's scorer with the default settings, the default policy and the built-in kinds.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultScoring: ScoringShape = make()

/**
 * Today's scorer over `options`, reading TTLs from the `TtlPolicy` and kinds from the
 * `KindRegistry` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: ScoringOptions = {},
  features: ReadonlyArray<CustomFeature> = []
): Layer.Layer<Scoring, never, TtlPolicy> =>
  Layer.effect(
    Scoring,
    Effect.zipWith(TtlPolicy, KindRegistry, (ttl, kinds) => make(options, { ttl, kinds, features }))
  )

/**
 * Today's scorer over settings read from configuration.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Scoring, ConfigError.ConfigError, TtlPolicy> = Layer.effect(
  Scoring,
  Effect.all([config, TtlPolicy, KindRegistry]).pipe(Effect.map(([settings, ttl, kinds]) => make(settings, { ttl, kinds })))
)

/**
 * The features that fired, as `{ feature: contribution }` in {@link features} order, then
 * the custom features.
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
  if (scored.extra !== undefined) for (const [name, value] of scored.extra) out[name] = value
  return out
}

/**
 * Whether a feature fired for a scored candidate.
 *
 * @since 0.1.0
 * @category utils
 */
export const fired = (scored: Scored, feature: Feature): boolean => scored.values[F[feature]] !== 0
