/**
 * The store key of an external message id, apart from `HistoryStore` so that its in-memory
 * adapter can use it without importing the module that imports the adapter.
 *
 * @internal
 */
import { isValidId, MessageId } from "@deixis/core/Ids"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

const decodeMessageId = Schema.decodeUnknownOption(MessageId)

/** See `HistoryStore.externalIdOf`. */
export const externalIdOf = (input: unknown): Option.Option<string> =>
  // The common case without the decoder: a string is an id exactly when it passes the rule.
  typeof input === "string" ? (isValidId(input) ? Option.some(input) : Option.none()) : decodeMessageId(input)
