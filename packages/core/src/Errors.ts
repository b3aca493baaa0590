/**
 * Errors that cross a boundary (HTTP, tool results): typed, with their HTTP status, and
 * naming what was wrong.
 *
 * @since 0.1.0
 */
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

// The key @effect/platform's HttpApiSchema reads a response status from.
const HttpApiStatus = Symbol.for("@effect/platform/HttpApiSchema/AnnotationStatus")

/**
 * Annotations giving an error its HTTP status, both as a plain `status` and under the key
 * `@effect/platform`'s HttpApi reads, so core needs no dependency on the platform.
 *
 * @since 0.1.0
 * @category annotations
 */
export const httpStatus = (code: number) => ({ status: code, [HttpApiStatus]: code })

/**
 * An event that does not decode. `path` names the failing field (`[3].chat_id`); nothing of
 * the batch it came with was applied.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidEvent extends Schema.TaggedError<InvalidEvent>()(
  "InvalidEvent",
  { path: Schema.String, message: Schema.String },
  httpStatus(400)
) {}

/**
 * A tool request that does not decode. `path` names the failing field.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()(
  "InvalidRequest",
  { path: Schema.String, message: Schema.String },
  httpStatus(400)
) {}

/**
 * Renders a Schema issue path as `[3].links[0].url`.
 *
 * @since 0.1.0
 * @category utils
 */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key, i) => (typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join("")

/**
 * The first failing path of a parse error and its message (`$` for the input itself).
 *
 * @since 0.1.0
 * @category utils
 */
export const pathOf = (error: ParseResult.ParseError): { readonly path: string; readonly message: string } => {
  const first = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  const path = formatPath(first?.path ?? [])
  return { path: path === "" ? "$" : path, message: first?.message ?? error.message }
}
