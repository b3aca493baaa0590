/**
 * The models: scope, revision, snapshot, and the tools' parameters and results.
 * Part of `ConversationState`, which re-exports it.
 */
import * as Schema from "effect/Schema"
import { ChatId, OptionalTopicId, Timestamp, TopicId, UserId } from "../../Ids.js"
import { JsonObject } from "./json.js"

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
