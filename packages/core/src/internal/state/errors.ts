/**
 * The errors an update fails with.
 * Part of `ConversationState`, which re-exports it.
 */
import * as Data from "effect/Data"
import * as Schema from "effect/Schema"
import { httpStatus } from "../../Errors.js"
import { ChatId, TopicId } from "../../Ids.js"
import { Revision } from "./model.js"

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
