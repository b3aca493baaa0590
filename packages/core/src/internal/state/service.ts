/**
 * The service: serial mutations per scope, merge patch, Schema and size checks.
 * Part of `ConversationState`, which re-exports it.
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as internal from "../conversationState.js"
import { JsonObject, JsonValue } from "./json.js"
import { ConversationScope, ConversationStateSnapshot, UpdateConversationStateResult } from "./model.js"
import { ConversationStateConflict, ConversationStateRejected, ConversationStateStoreError, ConversationStateTooLarge, InvalidMergePatch, type UpdateError } from "./errors.js"
import { emptySnapshot, render, stateSize } from "./pure.js"
import { ConversationStateStore, conflict } from "./store.js"

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

    // Traced: one span per update, with the scope as attributes.
    const update = Effect.fn("ConversationState.update")(function*(request: UpdateRequest) {
      const scope = { chat_id: request.scope.chat_id, topic_id: request.scope.topic_id ?? "none" }
      yield* Effect.annotateCurrentSpan(scope)
      const patch = request.patch
      const problem = internal.validateJson(patch)
      if (problem !== undefined) {
        return yield* new InvalidMergePatch({ path: internal.formatPath(problem.path), message: problem.message })
      }
      if (!internal.isJsonObject(patch)) {
        return yield* new InvalidMergePatch({
          path: "$",
          message: "a patch must be a JSON object; to clear a key, set it to null"
        })
      }
      const once = attempt(request, patch)
      const guarded = request.expected_revision === undefined
        ? Effect.retry(once, { while: (e) => e._tag === "ConversationStateConflict", times: blindRetries })
        : once
      return yield* withLock(internal.scopeKey(request.scope))(guarded).pipe(Effect.annotateLogs(scope))
    })

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
