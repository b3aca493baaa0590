/**
 * The two tools, over the service: decode, call, encode.
 * Part of `ConversationState`, which re-exports it.
 */
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { InvalidRequest, pathOf } from "../../Errors.js"
import * as internal from "../conversationState.js"
import { ConversationStateSnapshot, GetConversationStateParams, UpdateConversationStateParams, UpdateConversationStateResult } from "./model.js"
import { ConversationStateStoreError, InvalidMergePatch, type UpdateError } from "./errors.js"
import { ConversationState } from "./service.js"

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
