/**
 * Errors that cross a boundary (HTTP, tool results): typed, with their HTTP status, and
 * naming what was wrong.
 *
 * @since 0.1.0
 */
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"

/**
 * The annotation giving an error its HTTP status, as a plain `status`: core needs no
 * dependency on @effect/platform. An HTTP edge hands it to the platform through its public
 * API — `group.addError(E, { status: statusOf(E) })` — never through a private key.
 *
 * @since 0.1.0
 * @category annotations
 */
export const httpStatus = (code: number) => ({ status: code })

/**
 * The HTTP status an error Schema carries ({@link httpStatus}); undefined for none.
 *
 * @since 0.2.0
 * @category annotations
 */
export const statusOf = (schema: { readonly ast: SchemaAST.AST }): number | undefined => {
  const ast = schema.ast
  // A Schema.TaggedError class is a transformation to its annotated struct.
  const status = (ast._tag === "Transformation" ? ast.to.annotations : ast.annotations)["status"]
  return typeof status === "number" ? status : undefined
}

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
