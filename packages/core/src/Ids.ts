/**
 * Identifiers and timestamps as they cross the wire: the one validation every entrance
 * (HTTP bodies, path and query parameters, MCP tool arguments, Telegram-mapped events) and
 * every store shares.
 *
 * An id (chat, topic, message, user) is a string inside deixis; inputs accept a safe integer
 * (Telegram's numeric ids) or a string of 1–128 characters (Unicode code points) with no
 * control characters (C0, DEL, C1), no line or paragraph separators (U+2028, U+2029), no
 * bidirectional formatting characters, and no lone surrogates. So an id can neither forge a
 * log line, nor alias another id once encoded as UTF-8, nor reach a database that cannot hold
 * it (PostgreSQL `text` has no NUL). An integer beyond ±(2^53 − 1) is refused: JSON
 * numbers that large cannot be represented exactly, so two different ids would become one.
 *
 * Timestamps are RFC 3339 strings on the wire (a real calendar date-time with an offset) and
 * epoch milliseconds inside.
 *
 * @since 0.1.0
 */
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/**
 * The longest id, in characters (Unicode code points).
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_ID_LENGTH = 128

/**
 * The longest composed id ({@link ObjectId}): room for a chat id, a message id, a kind and an
 * index, as `chat/message/kind/index`.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_OBJECT_ID_LENGTH = 2 * MAX_ID_LENGTH + 64

/**
 * The longest {@link EventId}: callers compose event ids from other ids
 * (`telegram:reminder_listed:<chat>:<message>:<object>`).
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_EVENT_ID_LENGTH = 8 * MAX_ID_LENGTH

// C0 controls, DEL, C1 controls (NEL included), the line and paragraph separators, and the
// bidirectional formatting characters (ALM, LRM, RLM, LRE…RLO, LRI…PDI): each can break or
// disguise a log line or a rendered prompt.
const forbidden = /[\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

const codePoints = (text: string): number => {
  let n = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    // A high surrogate followed by a low one is one character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) i++
    }
    n++
  }
  return n
}

const hex = (code: number): string => `U+${code.toString(16).toUpperCase().padStart(4, "0")}`

/**
 * What is wrong with `text` as an id of at most `maxLength` characters, or `undefined` when
 * nothing is. The one check behind every id Schema here, for code that takes ids outside a
 * Schema (a store's lookup, a header).
 *
 * @since 0.1.0
 * @category validation
 */
export const validateId = (text: string, maxLength: number = MAX_ID_LENGTH): string | undefined => {
  if (text.length === 0) return "an id must not be empty"
  // Checked on code units first: a string this long cannot be short in code points.
  if (text.length > 2 * maxLength || codePoints(text) > maxLength) {
    return `an id must be at most ${maxLength} characters`
  }
  const bad = forbidden.exec(text)
  if (bad !== null) {
    return `an id must not contain control, line-separator or bidirectional-formatting characters (${
      hex(bad[0].charCodeAt(0))
    } at index ${bad.index})`
  }
  const lone = loneSurrogate.exec(text)
  if (lone !== null) {
    return `an id must be well-formed UTF-16 (a lone surrogate ${hex(lone[0].charCodeAt(0))} at index ${lone.index})`
  }
  return undefined
}

/**
 * Whether `text` is a valid id of at most `maxLength` characters.
 *
 * @since 0.1.0
 * @category validation
 */
export const isValidId = (text: string, maxLength: number = MAX_ID_LENGTH): boolean =>
  validateId(text, maxLength) === undefined

const idText = (maxLength: number, annotations: Schema.Annotations.Filter<string>) =>
  Schema.String.pipe(
    Schema.filter((text) => validateId(text, maxLength), {
      jsonSchema: { minLength: 1, maxLength },
      // Property tests get ids a store can hold: short, printable, well formed.
      arbitrary: () => (fc) =>
        fc.string({ minLength: 1, maxLength: Math.min(maxLength, 24), unit: "grapheme-ascii" }).filter((s) =>
          validateId(s, maxLength) === undefined
        ),
      ...annotations
    })
  )

/**
 * An id given as a string only: 1–128 characters, none of them control, line-separator or
 * bidirectional-formatting characters, no lone surrogates.
 *
 * @since 0.1.0
 * @category schemas
 */
export const IdString = idText(MAX_ID_LENGTH, {
  identifier: "IdString",
  description: "An id: 1-128 characters, no control characters"
})

const idInput = Schema.Union(Schema.String, Schema.Number).annotations({
  message: () => ({ message: "an id must be an integer or a string of 1-128 characters", override: true }),
  jsonSchema: {
    anyOf: [
      { type: "string", minLength: 1, maxLength: MAX_ID_LENGTH },
      { type: "integer", minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }
    ]
  }
})

/**
 * An identifier: decodes a safe integer or an {@link IdString} to a string; encodes to a
 * string. `5` and `"5"` are the same id; `2 ** 60` is refused (see the module notes).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Id = Schema.transformOrFail(idInput, Schema.typeSchema(IdString), {
  strict: true,
  decode: (input, _, ast) =>
    typeof input === "string"
      ? ParseResult.succeed(input)
      : Number.isSafeInteger(input)
      ? ParseResult.succeed(String(input))
      : ParseResult.fail(
        new ParseResult.Type(
          ast,
          input,
          Number.isInteger(input)
            ? "an integer id must be within ±(2^53 − 1), where JSON numbers are exact; send a larger id as a string"
            : "an id must be an integer or a string of 1-128 characters"
        )
      ),
  encode: ParseResult.succeed
}).annotations({
  identifier: "Id",
  description: "An identifier: an integer or a string of 1-128 characters without control characters (always a string in output)"
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
export const ObjectId = idText(MAX_OBJECT_ID_LENGTH, {
  identifier: "ObjectId",
  description: "A context object id: the id rules, up to 320 characters (ids derived as chat/message/kind/index)"
})
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

/**
 * The caller's id for an event (re-sending an event with the same id changes nothing): the id
 * rules, up to 1024 characters, since callers compose event ids from other ids (an object id among them).
 *
 * @since 0.1.0
 * @category schemas
 */
export const EventId = idText(MAX_EVENT_ID_LENGTH, {
  identifier: "EventId",
  description: "The caller's id for an event; re-sending an event with the same id changes nothing"
})

/**
 * A platform's poll id (Telegram's are strings): the id rules, as a string.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PollId = IdString.annotations({ identifier: "PollId", description: "The platform's poll id" })

/**
 * A caller's request id, echoed into logs: the id rules, so it cannot forge a log line.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RequestId = IdString.annotations({ identifier: "RequestId", description: "The caller's request id, for logs" })

// RFC 3339 `date-time` (section 5.6): full-date, "T" (or a space, as its note allows), a
// partial-time with an optional fraction, and a mandatory offset. Ranges are checked below.
const Rfc3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/

const isLeapYear = (year: number): boolean => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0

const daysInMonth = (year: number, month: number): number =>
  month === 2 ? (isLeapYear(year) ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31

// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's days_from_civil): plain
// arithmetic, so years 0000-0099 are not read as 1900-1999 the way `Date.UTC` reads them.
const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

/**
 * Parses an RFC 3339 date-time to epoch milliseconds, or says what is wrong with it. The date
 * must exist (`2026-02-30` does not; February 29 only in leap years), hours are 00–23, minutes
 * and seconds 00–59, an offset at most ±23:59. A leap second (`:60`) is refused: epoch
 * milliseconds have no place for it, and accepting it would alias it with the second after.
 * Digits past the millisecond are dropped.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseTimestamp = (input: string): { readonly ms: number } | { readonly problem: string } => {
  const m = Rfc3339.exec(input)
  if (m === null) return { problem: "expected an RFC 3339 date-time with offset, e.g. 2026-11-22T10:00:00Z" }
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number
  ]
  if (month < 1 || month > 12) return { problem: `month ${m[2]} does not exist` }
  if (day < 1 || day > daysInMonth(year, month)) return { problem: `${m[1]}-${m[2]} has no day ${m[3]}` }
  if (hour > 23) return { problem: `hour ${m[4]} is out of range 00-23` }
  if (minute > 59) return { problem: `minute ${m[5]} is out of range 00-59` }
  if (second === 60) return { problem: "a leap second (:60) cannot be represented; use :59.999" }
  if (second > 59) return { problem: `second ${m[6]} is out of range 00-59` }
  let offsetMinutes = 0
  if (m[8] === undefined) {
    const offsetHours = Number(m[10])
    const offsetMins = Number(m[11])
    if (offsetHours > 23 || offsetMins > 59) return { problem: `offset ${m[9]}${m[10]}:${m[11]} is out of range (at most ±23:59)` }
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins)
  }
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, "0"))
  const ms = ((daysFromCivil(year, month, day) * 24 + hour) * 60 + minute - offsetMinutes) * 60_000 + second * 1000 + millis
  return { ms }
}

/**
 * A point in time: an RFC 3339 string on the wire (`2026-11-22T10:00:00Z`), epoch
 * milliseconds inside; see {@link parseTimestamp} for what is accepted. Encodes to the UTC
 * `toISOString` form.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Timestamp = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (input, _, ast) => {
    const parsed = parseTimestamp(input)
    return "ms" in parsed ? ParseResult.succeed(parsed.ms) : ParseResult.fail(new ParseResult.Type(ast, input, parsed.problem))
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

const pad2 = (n: number) => (n < 10 ? "0" + n : String(n))
const pad3 = (n: number) => (n < 10 ? "00" + n : n < 100 ? "0" + n : String(n))
const dayMs = 86_400_000
// Years 0000–9999, the four-digit years `toISOString` writes without a sign.
const minPlainMs = -62_167_219_200_000
const maxPlainMs = 253_402_300_799_999

/**
 * Formats epoch milliseconds as RFC 3339 UTC: `new Date(ms).toISOString()`, the same string,
 * computed from the integer without a Date (about 3× cheaper; a tool result carries several
 * instants). The civil date is Howard Hinnant's `civil_from_days`, the inverse of
 * `daysFromCivil`. Other instants (fractional, six-digit years, out of range) go through the
 * Date, which also throws where it throws.
 *
 * @since 0.1.0
 * @category utils
 */
export const formatTimestamp = (ms: number): string => {
  if (!Number.isInteger(ms) || ms < minPlainMs || ms > maxPlainMs) return new Date(ms).toISOString()
  const days = Math.floor(ms / dayMs)
  let rest = ms - days * dayMs
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0)
  const millis = rest % 1000
  rest = (rest - millis) / 1000
  const second = rest % 60
  rest = (rest - second) / 60
  const minute = rest % 60
  const hour = (rest - minute) / 60
  return (year < 10 ? "000" : year < 100 ? "00" : year < 1000 ? "0" : "") + year + "-" + pad2(month) + "-" + pad2(day) +
    "T" + pad2(hour) + ":" + pad2(minute) + ":" + pad2(second) + "." + pad3(millis) + "Z"
}

