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
export { JsonObject, JsonValue } from "./internal/state/json.js"
export {
  ConversationScope,
  ConversationStateSnapshot,
  GetConversationStateParams,
  Revision,
  UpdateConversationStateParams,
  UpdateConversationStateResult
} from "./internal/state/model.js"
export {
  ConversationStateConflict,
  ConversationStateRejected,
  ConversationStateStoreError,
  ConversationStateTooLarge,
  InvalidMergePatch,
  type UpdateError
} from "./internal/state/errors.js"
export {
  applyMergePatch,
  canonicalJson,
  diffMergePatch,
  emptySnapshot,
  jsonEquals,
  render,
  stateSize
} from "./internal/state/pure.js"
export {
  conflict,
  ConversationStateStore,
  type ConversationStateStoreService,
  layerMemory
} from "./internal/state/store.js"
export {
  ConversationState,
  type ConversationStateService,
  layer,
  layerConfig,
  make,
  MaxBytesConfig,
  type Options,
  type UpdateRequest
} from "./internal/state/service.js"
export { getConversationState, tools, updateConversationState } from "./internal/state/tools.js"
