/**
 * Conversation state: one small, revisioned JSON document per conversation scope (a chat, or
 * a topic of a chat) that a bot keeps between turns, so that a follow-up ("what if they were
 * married?") patches one field instead of re-deriving everything from the scrollback.
 *
 * - `get_conversation_state` reads the document with its `revision`, `updated_at` and
 *   `updated_by`.
 * - `update_conversation_state(patch, expected_revision?)` applies an RFC 7386 JSON Merge
 *   Patch: objects merge recursively, `null` deletes a key, arrays and other values are
 *   replaced whole. A stale `expected_revision` fails with {@link ConversationStateConflict};
 *   a result that fails the user's Schema fails with {@link ConversationStateRejected}; a
 *   result over the size cap fails with {@link ConversationStateTooLarge}. Nothing is written
 *   on failure, and a patch that changes nothing does not bump the revision.
 * - Mutations are serial per scope; the store port writes by compare-and-set on the revision,
 *   so writers in other processes cannot lose each other's updates either.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { httpStatus, InvalidRequest, pathOf } from "./Errors.js"
import { ChatId, OptionalTopicId, Timestamp, TopicId, UserId } from "./Ids.js"
import * as internal from "./internal/conversationState.js"

// -----------------------------------------------------------------------------
// JSON
// -----------------------------------------------------------------------------

/**
 * A JSON value, as `JSON.parse` produces it.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | ReadonlyArray<JsonValue>
  | { readonly [key: string]: JsonValue }

/**
 * A JSON object.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonObject = { readonly [key: string]: JsonValue }

const jsonIssue = (ast: Schema.Schema.AnyNoContext["ast"], input: unknown, problem: internal.JsonProblem) => {
  const [head, ...tail] = problem.path
  const issue = new ParseResult.Type(ast, input, problem.message)
  return head === undefined ? issue : new ParseResult.Pointer([head, ...tail], input, issue)
}

const declareJson = <A extends JsonValue>(
  check: (u: unknown) => internal.JsonProblem | undefined,
  annotations: Schema.Annotations.Schema<A>
) => {
  const validate = () => (input: unknown, _: unknown, ast: Schema.Schema.AnyNoContext["ast"]) => {
    const problem = check(input)
    return problem === undefined
      ? ParseResult.succeed(input as A)
      : ParseResult.fail(jsonIssue(ast, input, problem))
  }
  return Schema.declare([], { decode: validate, encode: validate }, annotations)
}

/**
 * Any JSON value: null, a boolean, a finite number, a string, an array or a plain object,
 * nested at most 64 levels. Values are validated without being copied; the key `__proto__`
 * is refused because too many consumers mishandle it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const JsonValue: Schema.Schema<JsonValue> = declareJson<JsonValue>(internal.validateJson, {
  identifier: "JsonValue",
  description: "Any JSON value",
  jsonSchema: {}
})

/**
 * A JSON object (the shape of every conversation state document and every patch).
 *
 * @since 0.1.0
 * @category schemas
 */
export const JsonObject: Schema.Schema<JsonObject> = declareJson<JsonObject>(
  (u) =>
    internal.validateJson(u) ??
      (typeof u === "object" && u !== null && !Array.isArray(u)
        ? undefined
        : { path: [], message: "expected a JSON object" }),
  { identifier: "JsonObject", description: "A JSON object", jsonSchema: { type: "object" } }
)

// -----------------------------------------------------------------------------
// Models
// -----------------------------------------------------------------------------

/**
 * A state revision: 0 for a scope that was never written, then +1 per applied change.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Revision = Schema.NonNegativeInt.annotations({
  identifier: "Revision",
  description: "The state revision: 0 before the first write, then +1 per applied change"
})

/**
 * @since 0.1.0
 * @category models
 */
export type Revision = number

/**
 * The scope a state belongs to: a chat, and optionally a forum topic of it. A missing or
 * null `topic_id` is the chat's topicless scope, distinct from every topic.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ConversationScope = Schema.Struct({
  chat_id: ChatId,
  topic_id: OptionalTopicId
}).annotations({ identifier: "ConversationScope" })

/**
 * @since 0.1.0
 * @category models
 */
export type ConversationScope = typeof ConversationScope.Type

/**
 * The state of one scope as stored and returned. A scope never written reads as revision 0,
 * an empty `state`, and null `updated_at` / `updated_by`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ConversationStateSnapshot = Schema.Struct({
  chat_id: ChatId,
  topic_id: Schema.NullOr(TopicId),
  state: JsonObject,
  revision: Revision,
  updated_at: Schema.NullOr(Timestamp),
  updated_by: Schema.NullOr(UserId)
}).annotations({ identifier: "ConversationStateSnapshot" })

/**
 * @since 0.1.0
 * @category models
 */
export type ConversationStateSnapshot = typeof ConversationStateSnapshot.Type

/**
 * The parameters of `get_conversation_state`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const GetConversationStateParams = Schema.Struct({
  chat_id: ChatId,
  topic_id: OptionalTopicId
}).annotations({ identifier: "GetConversationStateParams" })

/**
 * The parameters of `update_conversation_state`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const UpdateConversationStateParams = Schema.Struct({
  chat_id: ChatId,
  topic_id: OptionalTopicId,
  patch: JsonObject.annotations({
    description:
      "An RFC 7386 JSON Merge Patch: objects merge recursively, null deletes a key, arrays and other values replace the old value whole"
  }),
  expected_revision: Schema.optional(Revision.annotations({
    description: "The revision the patch was written against; a different current revision rejects the patch"
  })),
  updated_by: Schema.optional(Schema.NullOr(UserId))
}).annotations({ identifier: "UpdateConversationStateParams" })

/**
 * The result of `update_conversation_state`: the state after the call, and whether the patch
 * changed it (an unchanged state keeps its revision).
 *
 * @since 0.1.0
 * @category schemas
 */
export const UpdateConversationStateResult = Schema.Struct({
  ...ConversationStateSnapshot.fields,
  changed: Schema.Boolean
}).annotations({ identifier: "UpdateConversationStateResult" })

/**
 * @since 0.1.0
 * @category models
 */
export type UpdateConversationStateResult = typeof UpdateConversationStateResult.Type

// -----------------------------------------------------------------------------
// Errors
// -----------------------------------------------------------------------------

/**
 * `expected_revision` is not the current revision: someone else changed the state since the
 * caller read it. Re-read, re-derive the patch, and retry with `current_revision`.
 *
 * @since 0.1.0
 * @category errors
 */
export class ConversationStateConflict
  extends Schema.TaggedError<ConversationStateConflict>()(
    "ConversationStateConflict",
    {
      chat_id: ChatId,
      topic_id: Schema.NullOr(TopicId),
      expected_revision: Schema.Int,
      current_revision: Revision,
      message: Schema.String
    },
    httpStatus(409)
  )
{}

/**
 * The patched state does not decode with the state Schema; `path` names the first failing
 * field (`household.children[0].age`, `$` for the root). Nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class ConversationStateRejected
  extends Schema.TaggedError<ConversationStateRejected>()(
    "ConversationStateRejected",
    { path: Schema.String, message: Schema.String },
    httpStatus(422)
  )
{}

/**
 * The patched state, as compact UTF-8 JSON, exceeds the size cap. Nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class ConversationStateTooLarge
  extends Schema.TaggedError<ConversationStateTooLarge>()(
    "ConversationStateTooLarge",
    { size_bytes: Schema.NonNegativeInt, max_bytes: Schema.NonNegativeInt, message: Schema.String },
    httpStatus(413)
  )
{}

/**
 * The patch is not a JSON object of JSON values; `path` names the offending place inside the
 * patch (`$` for the patch itself). Nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidMergePatch extends Schema.TaggedError<InvalidMergePatch>()(
  "InvalidMergePatch",
  { path: Schema.String, message: Schema.String },
  httpStatus(400)
) {}

/**
 * A store adapter failed (I/O, driver, corrupt row). Internal: convert it at the boundary.
 *
 * @since 0.1.0
 * @category errors
 */
export class ConversationStateStoreError extends Data.TaggedError("ConversationStateStoreError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * Everything `update_conversation_state` can fail with.
 *
 * @since 0.1.0
 * @category errors
 */
export type UpdateError =
  | ConversationStateConflict
  | ConversationStateRejected
  | ConversationStateTooLarge
  | InvalidMergePatch
  | ConversationStateStoreError

// -----------------------------------------------------------------------------
// Pure functions
// -----------------------------------------------------------------------------

/**
 * RFC 7386 JSON Merge Patch. If `patch` is an object, each member is merged into `target`
 * (a non-object target counts as `{}`): a null member deletes the key, any other member is
 * merged recursively. If `patch` is not an object it replaces `target` whole — which is how
 * arrays are replaced. Neither argument is mutated.
 *
 * @example
 * applyMergePatch({ a: { b: 1, c: 2 }, tags: ["x"] }, { a: { c: null, d: 3 }, tags: ["y"] })
 * // { a: { b: 1, d: 3 }, tags: ["y"] }
 *
 * @since 0.1.0
 * @category merge patch
 */
export const applyMergePatch: (target: JsonValue, patch: JsonValue) => JsonValue = internal.applyMergePatch

/**
 * The merge patch that turns `from` into `to`, so that
 * `applyMergePatch(from, diffMergePatch(from, to))` equals `to` whenever `to` has no
 * null-valued object members (which no merge patch can produce).
 *
 * @since 0.1.0
 * @category merge patch
 */
export const diffMergePatch: (from: JsonValue, to: JsonValue) => JsonValue = internal.diffMergePatch

/**
 * Structural JSON equality: object key order is ignored, array order is not.
 *
 * @since 0.1.0
 * @category merge patch
 */
export const jsonEquals: (a: JsonValue, b: JsonValue) => boolean = internal.jsonEquals

/**
 * Compact JSON with object keys sorted at every level, so equal states render to equal text
 * whatever order their keys were written in.
 *
 * @since 0.1.0
 * @category rendering
 */
export const canonicalJson: (value: JsonValue) => string = internal.canonicalJson

/**
 * The size the cap applies to: the UTF-8 byte length of the state as compact JSON.
 *
 * @since 0.1.0
 * @category rendering
 */
export const stateSize = (state: JsonObject): number => internal.utf8Length(JSON.stringify(state))

/**
 * A compact snapshot for prompt injection: a header line with the revision (and when and by
 * whom it was last changed), then the state as canonical JSON.
 *
 * @example
 * // Conversation state, revision 3 (updated 2026-11-22T10:00:00.000Z by "42"):
 * // {"household":{"adults":2,"married":true},"reform":"flat_tax"}
 *
 * @since 0.1.0
 * @category rendering
 */
export const render: (snapshot: ConversationStateSnapshot) => string = internal.render

/**
 * The snapshot of a scope that was never written.
 *
 * @since 0.1.0
 * @category constructors
 */
export const emptySnapshot = (scope: ConversationScope): ConversationStateSnapshot => ({
  chat_id: scope.chat_id,
  topic_id: scope.topic_id,
  state: {},
  revision: 0,
  updated_at: null,
  updated_by: null
})

// -----------------------------------------------------------------------------
// Store port
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category models
 */
export interface ConversationStateStoreService {
  /** The stored snapshot of exactly this scope, if it was ever written. */
  readonly get: (scope: ConversationScope) => Effect.Effect<Option.Option<ConversationStateSnapshot>, ConversationStateStoreError>
  /**
   * Compare-and-set: stores `snapshot` for its scope if the stored revision is
   * `snapshot.revision - 1` (0 when nothing is stored), atomically; otherwise fails with
   * {@link ConversationStateConflict} carrying the stored revision and writes nothing.
   */
  readonly put: (snapshot: ConversationStateSnapshot) => Effect.Effect<void, ConversationStateConflict | ConversationStateStoreError>
  /**
   * Optional read-modify-write: runs `f` on the stored snapshot of `scope` (none if never
   * written) while holding the scope's write lock against every other writer — in any process
   * — and stores the snapshot `f` returns (none: nothing is written). With it, a patch
   * without `expected_revision` cannot meet a conflict at all; without it the service reads,
   * then compare-and-sets with {@link put}, and retries (bounded) when another writer got in
   * between.
   */
  readonly modify?: <A, E>(
    scope: ConversationScope,
    f: (current: Option.Option<ConversationStateSnapshot>) => Effect.Effect<readonly [A, Option.Option<ConversationStateSnapshot>], E>
  ) => Effect.Effect<A, E | ConversationStateConflict | ConversationStateStoreError>
  /**
   * Moves every scope of chat `from` to chat `to` (a Telegram group upgraded to a
   * supergroup), atomically, keeping each state, revision and author. A scope `to` already
   * holds keeps its own state (it is the newer); the old one is dropped. Returns how many
   * states moved; a second call moves nothing.
   */
  readonly migrateChat: (from: string, to: string) => Effect.Effect<number, ConversationStateStoreError>
}

/**
 * The storage port for conversation state. Adapters: {@link layerMemory} here, SQL in
 * `@deixis/store-sql`; all run the contract suite in `@deixis/core/ConversationStateTesting`.
 *
 * @since 0.1.0
 * @category tags
 */
export class ConversationStateStore extends Context.Tag("@deixis/core/ConversationStateStore")<
  ConversationStateStore,
  ConversationStateStoreService
>() {}

/**
 * The store's conflict, built the same way by every adapter.
 *
 * @since 0.1.0
 * @category constructors
 */
export const conflict = (
  scope: ConversationScope,
  expected_revision: number,
  current_revision: Revision
): ConversationStateConflict =>
  new ConversationStateConflict({
    chat_id: scope.chat_id,
    topic_id: scope.topic_id,
    expected_revision,
    current_revision,
    message: `expected revision ${expected_revision}, but the state is at revision ${current_revision}`
  })

/**
 * An in-memory {@link ConversationStateStore}: one map per built layer, lost on restart.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<ConversationStateStore> = Layer.sync(ConversationStateStore, () => {
  const rows = new Map<string, ConversationStateSnapshot>()
  const withLock = internal.makeKeyedLock()
  // One synchronous step: nothing can interleave between the check and the write.
  const put = (snapshot: ConversationStateSnapshot) =>
    Effect.suspend(() => {
      const key = internal.scopeKey(snapshot)
      const current = rows.get(key)?.revision ?? 0
      if (current !== snapshot.revision - 1) {
        return Effect.fail(conflict(snapshot, snapshot.revision - 1, current))
      }
      rows.set(key, snapshot)
      return Effect.void
    })
  return ConversationStateStore.of({
    get: (scope) => Effect.sync(() => Option.fromNullable(rows.get(internal.scopeKey(scope)))),
    put,
    modify: (scope, f) =>
      withLock(internal.scopeKey(scope))(
        Effect.flatMap(
          Effect.suspend(() => f(Option.fromNullable(rows.get(internal.scopeKey(scope))))),
          ([result, next]) => Option.isSome(next) ? Effect.as(put(next.value), result) : Effect.succeed(result)
        )
      ),
    migrateChat: (from, to) =>
      Effect.sync(() => {
        if (from === to) return 0
        let moved = 0
        for (const [key, snapshot] of [...rows]) {
          if (snapshot.chat_id !== from) continue
          rows.delete(key)
          const target = { ...snapshot, chat_id: to }
          const targetKey = internal.scopeKey(target)
          if (rows.has(targetKey)) continue
          rows.set(targetKey, target)
          moved++
        }
        return moved
      })
  })
})

// -----------------------------------------------------------------------------
// Service
// -----------------------------------------------------------------------------

/**
 * A typed `update_conversation_state` call.
 *
 * @since 0.1.0
 * @category models
 */
export interface UpdateRequest {
  readonly scope: ConversationScope
  /** Must be a JSON object; anything else fails with {@link InvalidMergePatch}. */
  readonly patch: JsonValue
  readonly expected_revision?: number | undefined
  readonly updated_by?: string | null | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ConversationStateService {
  /** `get_conversation_state`: the scope's snapshot (revision 0 and `{}` if never written). */
  readonly get: (scope: ConversationScope) => Effect.Effect<ConversationStateSnapshot, ConversationStateStoreError>
  /** `update_conversation_state`: applies the merge patch, serially per scope. */
  readonly update: (request: UpdateRequest) => Effect.Effect<UpdateConversationStateResult, UpdateError>
  /** The scope's snapshot rendered by {@link render}, for a prompt. */
  readonly render: (scope: ConversationScope) => Effect.Effect<string, ConversationStateStoreError>
}

/**
 * The conversation state service behind `get_conversation_state` and
 * `update_conversation_state`.
 *
 * @since 0.1.0
 * @category tags
 */
export class ConversationState extends Context.Tag("@deixis/core/ConversationState")<
  ConversationState,
  ConversationStateService
>() {}

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The size cap in bytes of the state as compact UTF-8 JSON (default 8192). */
  readonly maxBytes?: number | undefined
  /**
   * The Schema every written state must decode with. Unknown keys are refused (decoding uses
   * `onExcessProperty: "error"`), which catches misspelt fields in a model's patches; use an
   * index signature in the Schema to allow free-form keys. The empty state of revision 0
   * need not decode.
   */
  readonly schema?: Schema.Schema.AnyNoContext | undefined
}

/** DEIXIS_STATE_MAX_BYTES: the size cap of one state document, in bytes. */
const maxBytesDefault = 8192

/**
 * `DEIXIS_STATE_MAX_BYTES`, the size cap of one state document in bytes (default 8192).
 *
 * @since 0.1.0
 * @category config
 */
export const MaxBytesConfig: Config.Config<number> = Config.integer("DEIXIS_STATE_MAX_BYTES").pipe(
  Config.withDefault(maxBytesDefault),
  Config.validate({ message: "DEIXIS_STATE_MAX_BYTES must be a positive integer", validation: (n) => n > 0 })
)

// A patch without expected_revision is re-applied when a writer in another process got in
// between the read and the compare-and-set (stores without `modify` only); each such conflict
// means that writer progressed.
const blindRetries = 16

/**
 * Builds the service over the {@link ConversationStateStore} in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<ConversationStateService, never, ConversationStateStore> =>
  Effect.gen(function*() {
    const store = yield* ConversationStateStore
    const maxBytes = options.maxBytes ?? maxBytesDefault
    const decodeState = options.schema === undefined
      ? undefined
      : Schema.decodeUnknownEither(options.schema, { errors: "first", onExcessProperty: "error" })
    const withLock = internal.makeKeyedLock()

    const get = (scope: ConversationScope) =>
      Effect.map(store.get(scope), Option.getOrElse(() => emptySnapshot(scope)))

    // What the patch makes of `current`: the result, and the snapshot to store (none: unchanged).
    type Plan = readonly [UpdateConversationStateResult, Option.Option<ConversationStateSnapshot>]
    const plan = (
      request: UpdateRequest,
      patch: JsonObject,
      stored: Option.Option<ConversationStateSnapshot>
    ): Effect.Effect<Plan, ConversationStateConflict | ConversationStateTooLarge | ConversationStateRejected> =>
      Effect.gen(function*() {
        const current = Option.getOrElse(stored, () => emptySnapshot(request.scope))
        if (request.expected_revision !== undefined && request.expected_revision !== current.revision) {
          return yield* conflict(request.scope, request.expected_revision, current.revision)
        }
        const next = internal.applyMergePatch(current.state, patch) as JsonObject
        if (internal.jsonEquals(next, current.state)) {
          const unchanged: Plan = [{ ...current, changed: false }, Option.none()]
          return unchanged
        }
        const size = stateSize(next)
        if (size > maxBytes) {
          return yield* new ConversationStateTooLarge({
            size_bytes: size,
            max_bytes: maxBytes,
            message: `the patched state would be ${size} bytes; the cap is ${maxBytes} bytes`
          })
        }
        if (decodeState !== undefined) {
          const decoded = decodeState(next)
          if (Either.isLeft(decoded)) {
            const first = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]
            const path = internal.formatPath(first?.path ?? [])
            return yield* new ConversationStateRejected({
              path,
              message: `the patched state does not match the state schema at ${path}: ${
                first?.message ?? decoded.left.message
              }`
            })
          }
        }
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        const snapshot: ConversationStateSnapshot = {
          chat_id: request.scope.chat_id,
          topic_id: request.scope.topic_id,
          state: next,
          revision: current.revision + 1,
          updated_at: now,
          updated_by: request.updated_by ?? null
        }
        const changed: Plan = [{ ...snapshot, changed: true }, Option.some(snapshot)]
        return changed
      })

    const attempt = (request: UpdateRequest, patch: JsonObject): Effect.Effect<UpdateConversationStateResult, UpdateError> => {
      const written = (result: UpdateConversationStateResult) =>
        result.changed
          ? Effect.logDebug("conversation state updated").pipe(
            Effect.annotateLogs({ revision: result.revision }),
            Effect.as(result)
          )
          : Effect.succeed(result)
      // Read, decide and write under the store's lock when it has one.
      if (store.modify !== undefined) {
        return Effect.flatMap(store.modify(request.scope, (stored) => plan(request, patch, stored)), written)
      }
      return store.get(request.scope).pipe(
        Effect.flatMap((stored) => plan(request, patch, stored)),
        Effect.flatMap(([result, next]) => Option.isSome(next) ? Effect.as(store.put(next.value), result) : Effect.succeed(result)),
        Effect.flatMap(written)
      )
    }

    const update = (request: UpdateRequest): Effect.Effect<UpdateConversationStateResult, UpdateError> => {
      const problem = internal.validateJson(request.patch)
      if (problem !== undefined) {
        return Effect.fail(new InvalidMergePatch({ path: internal.formatPath(problem.path), message: problem.message }))
      }
      if (!internal.isJsonObject(request.patch)) {
        return Effect.fail(
          new InvalidMergePatch({
            path: "$",
            message: "a patch must be a JSON object; to clear a key, set it to null"
          })
        )
      }
      const once = attempt(request, request.patch)
      const guarded = request.expected_revision === undefined
        ? Effect.retry(once, { while: (e) => e._tag === "ConversationStateConflict", times: blindRetries })
        : once
      return withLock(internal.scopeKey(request.scope))(guarded).pipe(
        Effect.annotateLogs({ chat_id: request.scope.chat_id, topic_id: request.scope.topic_id ?? "none" }),
        Effect.withSpan("ConversationState.update", {
          attributes: { chat_id: request.scope.chat_id, topic_id: request.scope.topic_id ?? "none" }
        })
      )
    }

    return ConversationState.of({
      get,
      update,
      render: (scope) => Effect.map(get(scope), internal.render)
    })
  })

/**
 * The service over the store in context, with explicit options.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<ConversationState, never, ConversationStateStore> =>
  Layer.effect(ConversationState, make(options))

/**
 * The service over the store in context, with the size cap read from
 * `DEIXIS_STATE_MAX_BYTES` (default 8192). The state Schema is code, so it stays an option.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  options: Omit<Options, "maxBytes"> = {}
): Layer.Layer<ConversationState, ConfigError.ConfigError, ConversationStateStore> =>
  Layer.effect(
    ConversationState,
    Effect.flatMap(MaxBytesConfig, (maxBytes) => make({ ...options, maxBytes }))
  )

// -----------------------------------------------------------------------------
// Tools
// -----------------------------------------------------------------------------

/**
 * The two tools as an LLM sees them: name, description, and the Schemas of the parameters
 * (from which the JSON Schema is derived with `JSONSchema.make`) and of the result.
 *
 * @since 0.1.0
 * @category tools
 */
export const tools = {
  get_conversation_state: {
    name: "get_conversation_state",
    description:
      "Read this conversation's state: a small JSON document kept between turns, with its revision. Pass the revision as expected_revision when you update it.",
    parameters: GetConversationStateParams,
    success: ConversationStateSnapshot
  },
  update_conversation_state: {
    name: "update_conversation_state",
    description:
      "Change this conversation's state with a JSON Merge Patch (RFC 7386): objects merge recursively, null deletes a key, arrays and other values replace the old value whole. Send only what changes. With expected_revision, a state changed since that revision is not overwritten: read it again and retry.",
    parameters: UpdateConversationStateParams,
    success: UpdateConversationStateResult
  }
} as const

const decodeGetParams = Schema.decodeUnknown(GetConversationStateParams)
const decodeUpdateParams = Schema.decodeUnknown(UpdateConversationStateParams)
const encodeSnapshot = Schema.encode(ConversationStateSnapshot)
const encodeUpdateResult = Schema.encode(UpdateConversationStateResult)

/**
 * The `get_conversation_state` tool over untrusted arguments: decodes them, reads, and returns
 * the wire form of the snapshot. Arguments that do not decode fail with `Errors.InvalidRequest`.
 *
 * @since 0.1.0
 * @category tools
 */
export const getConversationState = (
  args: unknown
): Effect.Effect<
  typeof ConversationStateSnapshot.Encoded,
  InvalidRequest | ConversationStateStoreError,
  ConversationState
> =>
  Effect.gen(function*() {
    const params = yield* Effect.mapError(decodeGetParams(args), (error) => new InvalidRequest(pathOf(error)))
    const service = yield* ConversationState
    const snapshot = yield* service.get(params)
    return yield* Effect.orDie(encodeSnapshot(snapshot))
  })

/**
 * The `update_conversation_state` tool over untrusted arguments. A malformed `patch` fails
 * with {@link InvalidMergePatch} naming the place inside it; other malformed arguments fail
 * with `Errors.InvalidRequest` naming the field.
 *
 * @since 0.1.0
 * @category tools
 */
export const updateConversationState = (
  args: unknown
): Effect.Effect<
  typeof UpdateConversationStateResult.Encoded,
  InvalidRequest | UpdateError,
  ConversationState
> =>
  Effect.gen(function*() {
    const params = yield* decodeUpdateParams(args).pipe(
      Effect.mapError((error): InvalidRequest | InvalidMergePatch => {
        const first = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
        const [head, ...rest] = first?.path ?? []
        return head === "patch" && first !== undefined
          ? new InvalidMergePatch({ path: internal.formatPath(rest), message: first.message })
          : new InvalidRequest(pathOf(error))
      })
    )
    const service = yield* ConversationState
    const result = yield* service.update({
      scope: { chat_id: params.chat_id, topic_id: params.topic_id },
      patch: params.patch,
      expected_revision: params.expected_revision,
      updated_by: params.updated_by
    })
    return yield* Effect.orDie(encodeUpdateResult(result))
  })
