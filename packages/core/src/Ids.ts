/**
 * Identifiers and timestamps as they cross the wire.
 *
 * Ids (chat, topic, message, user, object) are strings inside deixis; inputs accept an
 * integer (Telegram's numeric ids) or a non-empty string. Timestamps are RFC 3339 strings
 * on the wire and epoch milliseconds inside.
 *
 * @since 0.1.0
 */
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

const IdString = Schema.String.pipe(
  Schema.minLength(1, { message: () => "an id must not be empty" }),
  Schema.maxLength(256, { message: () => "an id must be at most 256 characters" })
)

/**
 * An identifier: decodes an integer or a non-empty string to a string; encodes to a string.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Id = Schema.transform(
  Schema.Union(
    IdString,
    Schema.Int.annotations({ message: () => "an id must be an integer or a non-empty string" })
  ),
  IdString,
  {
    strict: true,
    decode: (input) => (typeof input === "number" ? String(input) : input),
    encode: (id) => id
  }
).annotations({
  identifier: "Id",
  description: "An identifier: an integer or a non-empty string (always a string in output)"
})

/**
 * @since 0.1.0
 * @category models
 */
export type Id = typeof Id.Type

/** @since 0.1.0 @category schemas */
export const ChatId = Id.annotations({ identifier: "ChatId", description: "The chat (conversation) id" })
/** @since 0.1.0 @category models */
export type ChatId = string

/** @since 0.1.0 @category schemas */
export const TopicId = Id.annotations({ identifier: "TopicId", description: "The forum topic (thread) id" })
/** @since 0.1.0 @category models */
export type TopicId = string

/** @since 0.1.0 @category schemas */
export const MessageId = Id.annotations({ identifier: "MessageId", description: "A message id, unique within its chat" })
/** @since 0.1.0 @category models */
export type MessageId = string

/** @since 0.1.0 @category schemas */
export const UserId = Id.annotations({ identifier: "UserId", description: "A user id" })
/** @since 0.1.0 @category models */
export type UserId = string

/** @since 0.1.0 @category schemas */
export const ObjectId = IdString.annotations({ identifier: "ObjectId", description: "A context object id" })
/** @since 0.1.0 @category models */
export type ObjectId = string

/**
 * An optional topic: absent or null means the chat has no topic here (a topicless chat, or
 * a forum's General topic).
 *
 * @since 0.1.0
 * @category schemas
 */
export const OptionalTopicId = Schema.optionalWith(Schema.NullOr(TopicId), { default: () => null })

// RFC 3339 with a mandatory offset; Date.parse alone would accept local-time forms.
const Rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/

/**
 * A point in time: an RFC 3339 string on the wire (`2026-11-22T10:00:00Z`), epoch
 * milliseconds inside. Encodes to the UTC `toISOString` form.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Timestamp = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (input, _, ast) => {
    const ms = Rfc3339.test(input) ? Date.parse(input) : Number.NaN
    return Number.isFinite(ms)
      ? ParseResult.succeed(ms)
      : ParseResult.fail(
        new ParseResult.Type(ast, input, "expected an RFC 3339 date-time with offset, e.g. 2026-11-22T10:00:00Z")
      )
  },
  encode: (ms, _, ast) =>
    Number.isFinite(ms)
      ? ParseResult.succeed(new Date(ms).toISOString())
      : ParseResult.fail(new ParseResult.Type(ast, ms, "expected a finite epoch-milliseconds number"))
}).annotations({
  identifier: "Timestamp",
  description: "An RFC 3339 date-time with offset, e.g. 2026-11-22T10:00:00Z",
  // Property tests get instants a date can hold (years 1970–2100), not any double.
  arbitrary: () => (fc) => fc.integer({ min: 0, max: 4_102_444_800_000 })
})

/**
 * The mark of a message id carried over from a chat that migrated into this one (a Telegram
 * group upgraded to a supergroup): `~` + the id it had there. The new chat numbers its
 * messages from 1 again, so the old ids are kept apart — and placed before every id of the
 * new chat.
 *
 * @since 0.1.0
 * @category constants
 */
export const migratedIdPrefix = "~"

/**
 * The id a message keeps when its chat migrates (see {@link migratedIdPrefix}).
 *
 * @since 0.1.0
 * @category utils
 */
export const migratedMessageId = (id: string): string => migratedIdPrefix + id

/**
 * Whether an id was carried over from a migrated chat.
 *
 * @since 0.1.0
 * @category utils
 */
export const isMigratedMessageId = (id: string): boolean => id.charCodeAt(0) === 126

/**
 * The length a message id is ordered by (its first key): its length, or for a migrated id a
 * negative number, so every migrated id comes before every plain one. SQL stores keep it in
 * a column, so an index orders messages as {@link compareMessageIds} does.
 *
 * @since 0.1.0
 * @category utils
 */
export const positionLength = (id: string): number => (id.charCodeAt(0) === 126 ? id.length - 1_000_000 : id.length)

/**
 * Compares message ids by position: numerically for integers (Telegram's ids, by length
 * then digits, so `"9" < "10"`), and the same length-then-lexical order for other strings;
 * ids carried over from a migrated chat come first (see {@link positionLength}).
 *
 * @since 0.1.0
 * @category utils
 */
export const compareMessageIds = (a: string, b: string): number => {
  const la = positionLength(a)
  const lb = positionLength(b)
  return la !== lb ? la - lb : a < b ? -1 : a > b ? 1 : 0
}

/**
 * Formats epoch milliseconds as RFC 3339 UTC.
 *
 * @since 0.1.0
 * @category utils
 */
export const formatTimestamp = (ms: number): string => new Date(ms).toISOString()
