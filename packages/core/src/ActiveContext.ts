/**
 * list_active_context_objects: what is live in this reply chain, topic or chat. Active means
 * explicitly activated and within its TTL — never merely recent.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { isActive, PollState, ReminderState } from "./ContextObject.js"
import { type CandidatePool, ContextStore, type PoolLimits, type PoolQuery, type StoreError } from "./ContextStore.js"
import { formatTimestamp, MessageId, ObjectId, RequestId, Timestamp, TopicId } from "./Ids.js"
import { ObjectKind } from "./ObjectKind.js"
import { ActiveReason, activeReasons } from "./ReasonCodes.js"
import { RequestScopeFields, scopeOf, ScopeUsed } from "./ReferenceResolver.js"
import * as Scoring from "./Scoring.js"
import * as UnitOfWork from "./UnitOfWork.js"
import { trustedEncoder } from "./internal/encode.js"
import { logCall } from "./internal/log.js"
import { InvalidRequest } from "./Errors.js"
import { lengthCheckedFirst } from "./internal/lengthFirst.js"
import { KindRegistry, unknownInRequest } from "./KindRegistry.js"

/**
 * @since 0.1.0
 * @category schemas
 */
export const ListRequest = Schema.Struct({
  ...RequestScopeFields,
  allowed_kinds: Schema.optional(lengthCheckedFirst(Schema.Array(ObjectKind).pipe(Schema.minItems(1), Schema.maxItems(12)))),
  max_results: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 50)), { default: () => 5 }),
  include_inactive_debug: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  request_id: Schema.optional(RequestId)
}).annotations({ identifier: "ListActiveContextObjectsRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export type ListRequest = typeof ListRequest.Type

/**
 * One active object, compact.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ActiveObject = Schema.Struct({
  object_id: ObjectId,
  kind: ObjectKind,
  source_message_id: MessageId,
  topic_id: Schema.NullOr(TopicId),
  title_or_label: Schema.optional(Schema.String),
  ref: Schema.optional(Schema.String),
  confidence: Schema.Number,
  why_active: Schema.Array(ActiveReason),
  created_at: Timestamp,
  last_touched_at: Timestamp,
  active_until: Timestamp,
  created_by_bot: Schema.Boolean,
  owned_by_sender: Schema.optional(Schema.Boolean),
  poll: Schema.optional(PollState),
  reminder: Schema.optional(ReminderState),
  album_id: Schema.optional(Schema.String)
}).annotations({ identifier: "ActiveObject" })

/**
 * @since 0.1.0
 * @category models
 */
export type ActiveObject = typeof ActiveObject.Type

/**
 * A known object of the scope that is not active, and why (debug only).
 *
 * @since 0.1.0
 * @category schemas
 */
export const InactiveObject = Schema.Struct({
  object_id: ObjectId,
  kind: ObjectKind,
  source_message_id: MessageId,
  why_inactive: Schema.Literal("never_activated", "expired")
}).annotations({ identifier: "InactiveObject" })

/**
 * @since 0.1.0
 * @category schemas
 */
export const ListResult = Schema.Struct({
  objects: Schema.Array(ActiveObject),
  scope_used: ScopeUsed,
  generated_at: Timestamp,
  truncated: Schema.Boolean,
  inactive_debug: Schema.optional(Schema.Array(InactiveObject))
}).annotations({ identifier: "ListActiveContextObjectsResult" })

/**
 * @since 0.1.0
 * @category models
 */
export type ListResult = typeof ListResult.Type

/**
 * Encodes a result this module returned to its wire form (JSON-ready): the same output as
 * `Schema.encodeSync(ListResult)`, byte for byte, without re-validating what the tool itself
 * built — several times cheaper, for servers answering the tool at high rates.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeResult: (result: ListResult) => typeof ListResult.Encoded = trustedEncoder(ListResult)

/**
 * @since 0.1.0
 * @category models
 */
export interface ActiveContextShape {
  /** Fails with `InvalidRequest` for an allowed kind the `KindRegistry` does not know. */
  readonly list: (request: ListRequest) => Effect.Effect<ListResult, StoreError | InvalidRequest>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ActiveContext extends Context.Tag("@deixis/core/ActiveContext")<ActiveContext, ActiveContextShape>() {}

const toActiveObject = (
  settings: Scoring.ScoringSettings,
  request: ListRequest,
  s: Scoring.Scored
): ActiveObject => {
  const o = s.entry.object
  return {
    object_id: o.object_id,
    kind: o.kind,
    source_message_id: o.source_message_id,
    topic_id: o.topic_id,
    ...(o.title_or_label === undefined ? {} : { title_or_label: o.title_or_label }),
    ...(o.ref === undefined ? {} : { ref: o.ref }),
    confidence: s.confidence,
    why_active: activeReasons(s, request.topic_id, settings.weights.recency),
    created_at: o.created_at,
    last_touched_at: o.last_touched_at,
    active_until: o.active_until!,
    created_by_bot: o.created_by_bot,
    ...(request.sender_user_id === null || o.created_by_user_id === undefined
      ? {}
      : { owned_by_sender: o.created_by_user_id === request.sender_user_id }),
    ...(o.poll === undefined ? {} : { poll: o.poll }),
    ...(o.reminder === undefined ? {} : { reminder: o.reminder }),
    ...(o.album_id === undefined ? {} : { album_id: o.album_id })
  }
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<ActiveContextShape, never, ContextStore | Scoring.Scoring> = Effect.gen(
  function*() {
    const store = yield* ContextStore
    const scoring = yield* Scoring.Scoring
    const kinds = yield* KindRegistry
    let sequence = 0
    // Objects only: the pool's plain messages (kinds the registry marks `message`) are never
    // listed, so they are not read (the costliest part of an SQL store's pool).
    const inactiveDebug = (query: PoolQuery, now: number) =>
      Effect.map(store.pool({ ...query, active_only: false, keep_expired: true, limits: { ...query.limits, recent_messages: 0 } }), (pool) =>
        pool.entries
          .filter((e) => !isActive(e.object, now) && kinds.get(e.object.kind)?.message !== true)
          .slice(0, 20)
          .map((e) => ({
            object_id: e.object.object_id,
            kind: e.object.kind,
            source_message_id: e.object.source_message_id,
            why_inactive: e.object.active_until === null ? "never_activated" as const : "expired" as const
          })))
    // A list reaches at least one past `max_results` into the chat's fallback, so `truncated` tells.
    const fallbackReach = (limits: PoolLimits, max: number): PoolLimits =>
      limits.fallback_active > max ? limits : { ...limits, fallback_active: max + 1 }
    // Flat combinators rather than a generator: this runs on every message, with a budget in µs.
    const list = (request: ListRequest): Effect.Effect<ListResult, StoreError | InvalidRequest> => {
      const unknown = unknownInRequest(kinds, request.allowed_kinds, undefined)
      return unknown !== undefined ? Effect.fail(new InvalidRequest(unknown)) : Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const query: PoolQuery = {
          chat_id: request.chat_id,
          topic_id: request.topic_id,
          current_message_id: request.current_message_id,
          reply_to_message_id: request.reply_to_message_id,
          sender_user_id: request.sender_user_id,
          kinds: request.allowed_kinds,
          prefer_kinds: [],
          include_owned: false,
          active_only: true,
          now,
          limits: fallbackReach(scoring.settings.pool, request.max_results)
        }
        // The inactive objects (on request) are read beside the pool, not after it, where the
        // stores say so (`UnitOfWork.both`): on a store over the network, one round trip's wait
        // rather than two.
        const pooled: Effect.Effect<readonly [CandidatePool, ListResult["inactive_debug"]], StoreError> = request.include_inactive_debug
          ? UnitOfWork.both(store.pool(query), inactiveDebug(query, now))
          : Effect.map(store.pool(query), (pool) => [pool, undefined] as const)
        return pooled.pipe(
          Effect.map(([pool, inactive]) => {
            // In a forum, a request without a topic is in the General topic.
            const scoped = pool.topic_id === request.topic_id ? request : { ...request, topic_id: pool.topic_id }
            // The kinds asked for match every object listed: `kind_match` says so.
            const scored = scoring.scoreAll(pool.entries, {
              now,
              topic_id: scoped.topic_id,
              sender_user_id: request.sender_user_id,
              hints: {},
              kinds: request.allowed_kinds
            })
            const top = scored[0]
            const result: ListResult = {
              objects: scored.slice(0, request.max_results).map((s) => toActiveObject(scoring.settings, scoped, s)),
              scope_used: top !== undefined
                ? scopeOf(top.entry.tier, scoped.topic_id)
                : pool.fallback || scoped.topic_id === null
                ? "chat"
                : "topic",
              generated_at: now,
              truncated: scored.length > request.max_results
            }
            return inactive === undefined ? result : { ...result, inactive_debug: inactive }
          }),
          Effect.tap((result) =>
            logCall("list_active_context_objects", () => ({
              request_id: request.request_id ?? `list-${++sequence}`,
              chat_id: request.chat_id,
              topic_id: request.topic_id,
              result_count: result.objects.length,
              scope_used: result.scope_used,
              top_ids: result.objects.map((o) => o.object_id).join(","),
              truncated: result.truncated,
              generated_at: formatTimestamp(now)
            }))
          )
        )
      })
    }
    return { list }
  }
)

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ActiveContext, never, ContextStore | Scoring.Scoring> = Layer.effect(
  ActiveContext,
  make
)
