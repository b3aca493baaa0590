/**
 * A fast, validating decoder for the two tool requests the fast path answers (`Api.ResolveRequest`,
 * `ActiveContext.ListRequest`), for the shapes clients send:
 * a JSON object of the known fields, ids as strings or safe integers, hints as literals.
 *
 * It never decides alone that a request is invalid: it either returns exactly what the Schema's
 * decode returns (the same value, the same keys in the same order) or `undefined`, and then the
 * caller decodes with the Schema, which accepts or rejects and words the error body. So the
 * accepted set and every error byte stay the Schema's; only the cost of the common case changes
 * (the Schema interpreter allocates an `Either` and a ParseIssue context per field).
 * `test/requestDecoder.test.ts` checks the contract on arbitrary JSON values and on mutations of
 * valid requests.
 *
 * @since 0.2.0
 */
import { ActiveContext, Ids, ObjectKind, Quote } from "@deixis/core"
import * as Schema from "effect/Schema"
import { ResolveRequest } from "./Api.js"

/** No fast answer: decode with the Schema. */
const NO: unique symbol = Symbol("no fast answer")
type NO = typeof NO

// Id (`Ids.Id`): a valid id string as itself, a safe integer as its decimal string.
const id = (value: unknown): string | NO => {
  if (typeof value === "string") return Ids.isValidId(value) ? value : NO
  if (typeof value === "number" && Number.isSafeInteger(value)) {
    const text = String(value)
    return Ids.isValidId(text) ? text : NO
  }
  return NO
}
const idOrNull = (value: unknown): string | null | NO => (value === null ? null : id(value))
// IdString (`request_id`): a string only.
const idString = (value: unknown): string | NO => (typeof value === "string" && Ids.isValidId(value) ? value : NO)
const int = (min: number, max: number) => (value: unknown): number | NO =>
  typeof value === "number" && Number.isInteger(value) && value >= min && value <= max ? value : NO
const boolean = (value: unknown): boolean | NO => (typeof value === "boolean" ? value : NO)
const literal = (...values: ReadonlyArray<string>) => {
  const set = new Set(values)
  return (value: unknown): string | NO => (typeof value === "string" && set.has(value) ? value : NO)
}

// The leaves that are unions of literals and a pattern: the literals from a Set, anything else
// through the Schema's own guard (no transformation, so a value decodes to itself exactly when
// the guard accepts it).
const oneOf = <A extends string>(literals: ReadonlyArray<A>, schema: Schema.Schema<A>) => {
  const set = new Set<unknown>(literals)
  const is = Schema.is(schema)
  return (value: unknown): value is A => set.has(value) || is(value)
}
const isTargetKindHint = oneOf(ObjectKind.BuiltinKindHint.literals, ObjectKind.TargetKindHint)
const isObjectKind = oneOf(ObjectKind.kinds, ObjectKind.ObjectKind)
const targetKindHint = (value: unknown): string | NO => (isTargetKindHint(value) ? value : NO)
const kinds = (value: unknown): ReadonlyArray<string> | NO => {
  if (!Array.isArray(value) || value.length < 1 || value.length > 12) return NO
  for (const kind of value) if (!isObjectKind(kind)) return NO
  return value.slice()
}
const rawText = (value: unknown): string | NO => (typeof value === "string" && value.length <= 16_384 ? value : NO)
// `Quote.QuoteText`: 1 to `Quote.maxQuoteLength` UTF-16 code units.
const quoteText = (value: unknown): string | NO =>
  typeof value === "string" && value.length >= 1 && value.length <= Quote.maxQuoteLength ? value : NO

/** One field: how its value decodes, and its default when it is absent (if it has one). */
interface Field {
  readonly key: string
  readonly decode: (value: unknown) => unknown
  readonly required?: true
  readonly default?: () => unknown
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * A struct of fields, output as the Schema builds it: every field in declaration order, a
 * default in the place of its field. An unknown key, a missing required field or any value
 * outside the fast shapes: `NO`.
 */
const struct = (fields: ReadonlyArray<Field>) => {
  const known = new Set(fields.map((f) => f.key))
  return (input: unknown): Record<string, unknown> | NO => {
    if (!isPlainObject(input)) return NO
    for (const key in input) {
      if (!known.has(key) && Object.prototype.hasOwnProperty.call(input, key)) return NO
    }
    const output: Record<string, unknown> = {}
    for (const field of fields) {
      if (Object.prototype.hasOwnProperty.call(input, field.key)) {
        const value = field.decode(input[field.key])
        if (value === NO) return NO
        output[field.key] = value
      } else if (field.required === true) {
        return NO
      } else if (field.default !== undefined) {
        output[field.key] = field.default()
      }
    }
    return output
  }
}

const hints = struct([
  { key: "positional_hint", decode: literal("replied_message", "latest", "previous", "above", "current_topic_recent") },
  { key: "ordinal_hint", decode: literal("first", "second", "last") },
  { key: "target_kind_hint", decode: targetKindHint },
  { key: "ownership_hint", decode: literal("mine", "others", "bot_created", "any") },
  { key: "recency_hint", decode: literal("latest", "recent", "currently_active") }
])

// `RequestScopeFields`, in their order.
const scope: ReadonlyArray<Field> = [
  { key: "chat_id", decode: id, required: true },
  { key: "topic_id", decode: idOrNull, default: () => null },
  { key: "current_message_id", decode: id, required: true },
  { key: "reply_to_message_id", decode: idOrNull, default: () => null },
  { key: "sender_user_id", decode: idOrNull, default: () => null }
]

const resolve = struct([
  ...scope,
  { key: "raw_user_text", decode: rawText, default: () => "" },
  { key: "normalized_reference_hints", decode: hints, default: () => ({}) },
  { key: "allowed_kinds", decode: kinds },
  { key: "max_candidates", decode: int(1, 10), default: () => 3 },
  { key: "quote_text", decode: quoteText },
  { key: "quote_position", decode: int(0, 65_535) },
  { key: "request_id", decode: idString },
  { key: "record_touch", decode: boolean, default: () => false },
  { key: "include_diagnostics", decode: boolean, default: () => false }
])

const list = struct([
  ...scope,
  { key: "allowed_kinds", decode: kinds },
  { key: "max_results", decode: int(1, 50), default: () => 5 },
  { key: "include_inactive_debug", decode: boolean, default: () => false },
  { key: "request_id", decode: idString }
])

/**
 * A fast decoder: the Schema's decoded value, or `undefined` when the Schema must decide.
 *
 * @since 0.2.0
 * @category models
 */
export type FastDecoder<A> = (input: unknown) => A | undefined

const fast = <A>(decode: (input: unknown) => Record<string, unknown> | NO): FastDecoder<A> => (input) => {
  const output = decode(input)
  return output === NO ? undefined : (output as A)
}

/**
 * `Api.ResolveRequest`'s decode, for the common shapes.
 *
 * @since 0.2.0
 * @category decoders
 */
export const resolveRequest: FastDecoder<typeof ResolveRequest.Type> = fast(resolve)

/**
 * `ActiveContext.ListRequest`'s decode, for the common shapes.
 *
 * @since 0.2.0
 * @category decoders
 */
export const listRequest: FastDecoder<ActiveContext.ListRequest> = fast(list)

const bySchema = new Map<Schema.Schema.Any, FastDecoder<unknown>>([
  [ResolveRequest, resolveRequest],
  [ActiveContext.ListRequest, listRequest]
])

/**
 * The fast decoder of a payload Schema, if there is one.
 *
 * @since 0.2.0
 * @category decoders
 */
export const forSchema = (schema: Schema.Schema.Any): FastDecoder<unknown> | undefined => bySchema.get(schema)
