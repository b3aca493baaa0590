/**
 * resolve_reference_target: which object does "this", "the poll", "my reminder" mean —
 * from metadata and normalized hints only, never from the words of any language. One
 * strong winner (`resolved`), close candidates (`ambiguous`), or `not_found`.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ObjectDescriptor, toDescriptor } from "./ContextObject.js"
import { type CandidatePool, ContextStore, type PoolEntry, type PoolTier, type StoreError } from "./ContextStore.js"
import type { ObjectActivated } from "./ContextEvent.js"
import { ChatId, compareMessageIds, MessageId, ObjectId, OptionalTopicId, RequestId, UserId } from "./Ids.js"
import { ObjectKind } from "./ObjectKind.js"
import { ResolveReason, resolveReasons } from "./ReasonCodes.js"
import * as Scoring from "./Scoring.js"
import * as Quote from "./Quote.js"
import { trustedEncoder } from "./internal/encode.js"
import { logCall } from "./internal/log.js"
import { InvalidRequest } from "./Errors.js"
import { lengthCheckedFirst } from "./internal/lengthFirst.js"
import { KindRegistry, unknownInRequest } from "./KindRegistry.js"
import { TtlPolicy } from "./TtlPolicy.js"

/**
 * Where a tool request stands: both tools take these fields.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RequestScopeFields = {
  chat_id: ChatId,
  topic_id: OptionalTopicId,
  current_message_id: MessageId,
  reply_to_message_id: Schema.optionalWith(Schema.NullOr(MessageId), { default: () => null }),
  sender_user_id: Schema.optionalWith(Schema.NullOr(UserId), { default: () => null })
}

/**
 * @since 0.1.0
 * @category schemas
 */
export const ResolveRequest = Schema.Struct({
  ...RequestScopeFields,
  raw_user_text: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(16_384)), { default: () => "" }),
  normalized_reference_hints: Schema.optionalWith(Scoring.ReferenceHints, { default: () => ({}) }),
  allowed_kinds: Schema.optional(lengthCheckedFirst(Schema.Array(ObjectKind).pipe(Schema.minItems(1), Schema.maxItems(12)))),
  max_candidates: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10)), { default: () => 3 }),
  quote_text: Schema.optional(Quote.QuoteText).annotations({
    description:
      "The part of the replied message the user quoted (Telegram records it from the update itself): the reply target's links and media it overlaps are preferred; a quote that overlaps none changes nothing"
  }),
  quote_position: Schema.optional(Quote.QuotePosition).annotations({
    description: "Where quote_text starts in the replied message's text or caption, in UTF-16 code units, when known"
  }),
  request_id: Schema.optional(RequestId),
  record_touch: Schema.optionalWith(Schema.Boolean, { default: () => false }).annotations({
    description:
      "Record the resolution as an explicit resolver touch of the winner (refreshing its activity within its kind's TTL, never beyond); off by default, so a plain query changes nothing"
  })
}).annotations({ identifier: "ResolveReferenceTargetRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export type ResolveRequest = typeof ResolveRequest.Type

/**
 * The scope a result came from: the reply chain, the request's topic, or the chat (a
 * topicless chat, or the fallback across topics).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ScopeUsed = Schema.Literal("reply_chain", "topic", "chat").annotations({ identifier: "ScopeUsed" })

/**
 * @since 0.1.0
 * @category models
 */
export type ScopeUsed = typeof ScopeUsed.Type

/**
 * A candidate: its descriptor, confidence and reason codes.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Candidate = Schema.Struct({
  ...ObjectDescriptor.fields,
  confidence: Schema.Number,
  reasons: Schema.Array(ResolveReason)
}).annotations({ identifier: "ResolveCandidate" })

/**
 * @since 0.1.0
 * @category models
 */
export type Candidate = typeof Candidate.Type

/**
 * Compact scoring information, for logs and debugging.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Diagnostics = Schema.Struct({
  candidate_count: Schema.Number,
  fallback: Schema.Boolean,
  chain_length: Schema.Number,
  top_score: Schema.NullOr(Schema.Number),
  score_gap: Schema.NullOr(Schema.Number),
  scored: Schema.Array(Schema.Struct({
    object_id: Schema.String,
    score: Schema.Number,
    features: Schema.Record({ key: Schema.String, value: Schema.Number })
  }))
}).annotations({ identifier: "ResolveDiagnostics" })

/**
 * @since 0.1.0
 * @category schemas
 */
/**
 * The album a request resolved to as a whole: its members, in message order.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResolvedAlbum = Schema.Struct({
  album_id: Schema.String,
  object_ids: Schema.Array(ObjectId)
}).annotations({ identifier: "ResolvedAlbum" })

/**
 * @since 0.1.0
 * @category schemas
 */
export const ResolveResult = Schema.Struct({
  status: Schema.Literal("resolved", "ambiguous", "not_found"),
  best_match: Schema.NullOr(ObjectDescriptor),
  candidates: Schema.Array(Candidate),
  confidence: Schema.Number,
  reasons: Schema.Array(ResolveReason),
  scope_used: ScopeUsed,
  diagnostics: Diagnostics,
  album: Schema.optional(ResolvedAlbum)
}).annotations({ identifier: "ResolveReferenceTargetResult" })

/**
 * @since 0.1.0
 * @category models
 */
export type ResolveResult = typeof ResolveResult.Type

/**
 * Encodes a result this module returned to its wire form (JSON-ready): the same output as
 * `Schema.encodeSync(ResolveResult)`, byte for byte, without re-validating what the tool itself
 * built — several times cheaper, for servers answering the tool at high rates.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeResult: (result: ResolveResult) => typeof ResolveResult.Encoded = trustedEncoder(ResolveResult)

/**
 * @since 0.1.0
 * @category models
 */
export interface ReferenceResolverShape {
  /** Fails with `InvalidRequest` for a kind or kind hint the `KindRegistry` does not know. */
  readonly resolve: (request: ResolveRequest) => Effect.Effect<ResolveResult, StoreError | InvalidRequest>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ReferenceResolver extends Context.Tag("@deixis/core/ReferenceResolver")<
  ReferenceResolver,
  ReferenceResolverShape
>() {}

/**
 * The scope a pool tier belongs to.
 *
 * @since 0.1.0
 * @category utils
 */
export const scopeOf = (tier: PoolTier, topicId: string | null): ScopeUsed =>
  tier === "reply_target" || tier === "reply_chain" ? "reply_chain" : tier === "home" && topicId !== null ? "topic" : "chat"

const round = (n: number) => Math.round(n * 1000) / 1000

/**
 * Steps 4 to 8 of the algorithm, over scored candidates (best first): the thresholds that
 * decide resolved, ambiguous or not_found.
 *
 * @since 0.1.0
 * @category resolving
 */
export const decide = (
  scoring: Scoring.ScoringShape,
  request: ResolveRequest,
  scored: ReadonlyArray<Scoring.Scored>,
  fallback: boolean,
  chainLength: number
): ResolveResult => {
  const recency = scoring.settings.weights.recency
  const top = scored[0]
  const second = scored[1]
  const gap = top === undefined ? null : round(top.score - (second?.score ?? 0))
  const plausible = scored.filter(scoring.plausible)
  const toCandidate = (s: Scoring.Scored): Candidate =>
    Object.assign(toDescriptor(s.entry.object), {
      confidence: s.confidence,
      reasons: resolveReasons(s, request.topic_id, recency)
    })
  const diagnostics: ResolveResult["diagnostics"] = {
    candidate_count: scored.length,
    fallback,
    chain_length: chainLength,
    top_score: top?.score ?? null,
    score_gap: gap,
    scored: scored.slice(0, request.max_candidates).map((s) => ({
      object_id: s.entry.object.object_id,
      score: s.score,
      features: Scoring.featureRecord(s)
    }))
  }
  if (top === undefined || !scoring.plausible(top)) {
    return {
      status: "not_found",
      best_match: null,
      candidates: [],
      confidence: 0,
      reasons: [top === undefined ? "no_candidates" : "below_min_score"],
      scope_used: fallback ? "chat" : request.topic_id !== null ? "topic" : "chat",
      diagnostics
    }
  }
  const close = second !== undefined && scoring.plausible(second) && scoring.close(top, second)
  const confidence = scoring.confidence(top, gap!)
  const topReasons = resolveReasons(top, request.topic_id, recency)
  if (close) {
    const album = request.reply_to_message_id === null ? albumOf(scoring, scored) : undefined
    if (album !== undefined) {
      // Ambiguous only between the members of one album: the album is what was meant.
      const first = album.members[0]!
      const albumGap = round(top.score - (album.runner_up?.score ?? 0))
      return {
        status: "resolved",
        best_match: toDescriptor(first.entry.object),
        candidates: album.members.slice(0, request.max_candidates).map(toCandidate),
        confidence: scoring.confidence(top, albumGap),
        reasons: [...resolveReasons(first, request.topic_id, recency), "whole_album"],
        scope_used: scopeOf(first.entry.tier, request.topic_id),
        diagnostics,
        album: { album_id: album.album_id, object_ids: album.members.map((s) => s.entry.object.object_id) }
      }
    }
    return {
      status: "ambiguous",
      best_match: null,
      candidates: plausible
        .filter((s) => scoring.close(top, s))
        .slice(0, request.max_candidates)
        .map(toCandidate),
      confidence,
      reasons: [...topReasons, "near_equal_scores"],
      scope_used: scopeOf(top.entry.tier, request.topic_id),
      diagnostics
    }
  }
  return {
    status: "resolved",
    best_match: toDescriptor(top.entry.object),
    candidates: plausible.slice(0, request.max_candidates).map(toCandidate),
    confidence,
    reasons: topReasons,
    scope_used: scopeOf(top.entry.tier, request.topic_id),
    diagnostics
  }
}

/**
 * When the candidates close to the top are all members of one album (and there are at least
 * two), that album: all its members in the pool, in message order, and the best candidate
 * outside it.
 */
const albumOf = (scoring: Scoring.ScoringShape, scored: ReadonlyArray<Scoring.Scored>) => {
  const top = scored[0]!
  const albumId = top.entry.object.album_id
  if (albumId === undefined) return undefined
  const close = scored.filter((s) => scoring.plausible(s) && scoring.close(top, s))
  if (close.length < 2 || close.some((s) => s.entry.object.album_id !== albumId)) return undefined
  const members = scored
    .filter((s) => s.entry.object.album_id === albumId)
    .sort((a, b) => compareMessageIds(a.entry.object.source_message_id, b.entry.object.source_message_id))
  return { album_id: albumId, members, runner_up: scored.find((s) => s.entry.object.album_id !== albumId) }
}

/**
 * The resolver touch a resolution records when asked to (`record_touch`): an explicit
 * activation of each resolved object — by id for a stored object, by its message for a plain
 * message candidate (which the touch makes a stored, active `message` object). Idempotent per
 * request message.
 *
 * @since 0.1.0
 * @category resolving
 */
export const touchEvents = (request: ResolveRequest, result: ResolveResult): ReadonlyArray<ObjectActivated> => {
  if (result.status !== "resolved" || result.best_match === null) return []
  const targets = result.album === undefined
    ? [result.best_match]
    : result.candidates.filter((c) => result.album!.object_ids.includes(c.object_id))
  return targets.map((target): ObjectActivated => {
    const plain = target.kind === "message" || target.kind === "bot_message"
    return {
      type: "object_activated",
      event_id: `resolver_touch:${request.current_message_id}:${target.object_id}`,
      chat_id: request.chat_id,
      reason: "resolver_touch",
      ...(request.sender_user_id === null ? {} : { actor_user_id: request.sender_user_id }),
      ...(plain ? { source_message_id: target.source_message_id, kind: target.kind } : { object_id: target.object_id })
    }
  })
}

/**
 * The objects of the reply target that the current message's quote selects: the request's own
 * `quote_text` (with `quote_position` when given) over the reply target's parts, or else the
 * quote recorded with the message (the parts remember it in `quoted_in`). Undefined when there
 * is no quote or no reply target.
 *
 * @since 0.3.0
 * @category resolving
 */
export const quotedParts = (request: ResolveRequest, entries: ReadonlyArray<PoolEntry>): ReadonlyArray<string> | undefined => {
  if (request.reply_to_message_id === null) return undefined
  if (request.quote_text !== undefined) {
    const parts: Array<Quote.Part> = []
    for (const e of entries) if (e.tier === "reply_target") parts.push(Quote.partOf(e.object))
    return parts.length === 0
      ? undefined
      : Quote.selects(parts, { text: request.quote_text, ...(request.quote_position === undefined ? {} : { position: request.quote_position }) })
  }
  let out: Array<string> | undefined
  for (const e of entries) {
    if (e.tier === "reply_target" && e.object.quoted_in?.includes(request.current_message_id) === true) (out ??= []).push(e.object.object_id)
  }
  return out
}

/**
 * The resolver over the ContextStore, the scorer and the TTL policy.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<ReferenceResolverShape, never, ContextStore | Scoring.Scoring | TtlPolicy> = Effect.gen(
  function*() {
    const store = yield* ContextStore
    const scoring = yield* Scoring.Scoring
    const ttl = yield* TtlPolicy
    const kinds = yield* KindRegistry
    let sequence = 0
    const poolFor = (request: ResolveRequest, now: number) => {
      const hints = request.normalized_reference_hints
      return store.pool({
        chat_id: request.chat_id,
        topic_id: request.topic_id,
        current_message_id: request.current_message_id,
        reply_to_message_id: request.reply_to_message_id,
        sender_user_id: request.sender_user_id,
        kinds: request.allowed_kinds,
        prefer_kinds: scoring.hintedKinds(hints),
        include_owned: hints.ownership_hint === "mine",
        active_only: false,
        now,
        limits: scoring.settings.pool
      })
    }
    // Steps 1 and 2: the bounded candidate pool of the current scope, allowed kinds only. A reply
    // target deixis never recorded (a pin notice, as Telegram names it) stands aside for the one
    // the current message was recorded replying to (the pinned message): one more read, only then.
    const poolOf = (request: ResolveRequest, now: number): Effect.Effect<readonly [ResolveRequest, CandidatePool], StoreError> =>
      Effect.flatMap(poolFor(request, now), (pool) =>
        request.reply_to_message_id === null || pool.chain.length > 0
          ? Effect.succeed([request, pool] as const)
          : Effect.flatMap(store.message(request.chat_id, request.current_message_id), (current) => {
            const recorded = Option.getOrNull(Option.flatMapNullable(current, (m) => m.reply_to_message_id))
            if (recorded === null || recorded === request.reply_to_message_id) return Effect.succeed([request, pool] as const)
            const replying = { ...request, reply_to_message_id: recorded }
            return Effect.map(poolFor(replying, now), (again) => [replying, again] as const)
          }))
    // Flat combinators rather than a generator: this runs on every message, with a budget in µs.
    const resolve = (request: ResolveRequest): Effect.Effect<ResolveResult, StoreError | InvalidRequest> => {
      const unknown = unknownInRequest(kinds, request.allowed_kinds, request.normalized_reference_hints.target_kind_hint)
      return unknown !== undefined ? Effect.fail(new InvalidRequest(unknown)) : Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const hints = request.normalized_reference_hints
        return poolOf(request, now).pipe(Effect.flatMap(([replying, pool]) => {
          // In a forum, a request without a topic is in the General topic.
          const scoped = pool.topic_id === replying.topic_id ? replying : { ...replying, topic_id: pool.topic_id }
          // Steps 3 and 4: deterministic weighted features, best first.
          const scored = scoring.scoreAll(pool.entries, {
            now,
            topic_id: scoped.topic_id,
            sender_user_id: request.sender_user_id,
            hints,
            quoted: quotedParts(scoped, pool.entries)
          })
          // Steps 5 to 8: thresholds.
          const result = decide(scoring, scoped, scored, pool.fallback, pool.chain.length)
          const touch = request.record_touch ? touchEvents(request, result) : []
          const recorded = touch.length === 0 ? Effect.void : Effect.asVoid(store.apply(touch, { now, ttl, kinds }))
          return Effect.as(
            Effect.zipRight(recorded, logCall("resolve_reference_target", () => ({
              request_id: request.request_id ?? `resolve-${++sequence}`,
              chat_id: request.chat_id,
              topic_id: request.topic_id,
              current_message_id: request.current_message_id,
              candidate_count: scored.length,
              status: result.status,
              scope_used: result.scope_used,
              top_ids: result.candidates.map((c) => c.object_id).join(","),
              top_score_gap: result.diagnostics.score_gap
            }))),
            result
          )
        }))
      })
    }
    return { resolve }
  }
)

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ReferenceResolver, never, ContextStore | Scoring.Scoring | TtlPolicy> = Layer.effect(
  ReferenceResolver,
  make
)
