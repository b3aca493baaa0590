/**
 * Pure functions over JSON: merge patch, diff, equality, canonical form, size, rendering.
 * Part of `ConversationState`, which re-exports it.
 */
import * as internal from "../conversationState.js"
import { JsonObject, JsonValue } from "./json.js"
import { ConversationScope, ConversationStateSnapshot } from "./model.js"

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
