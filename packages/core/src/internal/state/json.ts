/**
 * JSON values: the Schemas a state document and a patch decode with.
 * Part of `ConversationState`, which re-exports it.
 */
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Json from "../../Json.js"
import * as internal from "../conversationState.js"

/**
 * A JSON value, as `JSON.parse` produces it.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonValue = Json.JsonValue

/**
 * A JSON object.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonObject = Json.JsonObject

const jsonIssue = (ast: Schema.Schema.AnyNoContext["ast"], input: unknown, problem: internal.JsonProblem) => {
  const [head, ...tail] = problem.path
  const issue = new ParseResult.Type(ast, input, problem.message)
  return head === undefined ? issue : new ParseResult.Pointer([head, ...tail], input, issue)
}

const declareJson = <A extends JsonValue>(
  check: (u: unknown) => internal.JsonProblem | undefined,
  annotations: Schema.Annotations.Schema<A>
) => {
  const validate = () => (input: unknown, _: unknown, ast: Schema.Schema.AnyNoContext["ast"]) => {
    const problem = check(input)
    return problem === undefined
      ? ParseResult.succeed(input as A)
      : ParseResult.fail(jsonIssue(ast, input, problem))
  }
  return Schema.declare([], { decode: validate, encode: validate }, annotations)
}

/**
 * Any JSON value: null, a boolean, a finite number, a string, an array or a plain object,
 * nested at most 64 levels. Values are validated without being copied; the key `__proto__`
 * is refused because too many consumers mishandle it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const JsonValue: Schema.Schema<JsonValue> = declareJson<JsonValue>(internal.validateJson, {
  identifier: "JsonValue",
  description: "Any JSON value",
  jsonSchema: {}
})

/**
 * A JSON object (the shape of every conversation state document and every patch).
 *
 * @since 0.1.0
 * @category schemas
 */
export const JsonObject: Schema.Schema<JsonObject> = declareJson<JsonObject>(
  (u) =>
    internal.validateJson(u) ??
      (typeof u === "object" && u !== null && !Array.isArray(u)
        ? undefined
        : { path: [], message: "expected a JSON object" }),
  { identifier: "JsonObject", description: "A JSON object", jsonSchema: { type: "object" } }
)
