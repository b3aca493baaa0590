/**
 * One bound on how deeply untrusted JSON may nest, for every entrance that reads it (HTTP
 * bodies, Telegram updates, conversation state): code that walks values recursively — Schema's
 * error messages, loggers, merge patches — must never meet a value deep enough to exhaust the
 * stack, and a few kilobytes of brackets under any size limit are. And the other way out: JSON
 * for values the program built itself, encoded without validating them again.
 *
 * @since 0.2.0
 */
import type * as Schema from "effect/Schema"
import { trustedEncoder as internalTrustedEncoder } from "./internal/encode.js"

/**
 * A JSON value, as `JSON.parse` produces it.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | ReadonlyArray<JsonValue>
  | { readonly [key: string]: JsonValue }

/**
 * A JSON object.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonObject = { readonly [key: string]: JsonValue }

/**
 * How deeply a JSON value read from outside may nest (arrays and objects). Everything deixis
 * reads is far shallower: a Telegram update nests about ten levels.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxDepth = 64

/**
 * Whether `value` nests arrays and objects more than `max` levels deep (a primitive is level 0,
 * `[]` and `{}` level 1). Iterative: any depth is checked without recursion.
 *
 * @since 0.2.0
 * @category validation
 */
export const nestsDeeperThan = (value: unknown, max: number = maxDepth): boolean => {
  if (typeof value !== "object" || value === null) return false
  const pending: Array<object> = [value]
  const depths: Array<number> = [1]
  while (pending.length > 0) {
    const node = pending.pop() as Record<string, unknown>
    const depth = depths.pop()!
    if (depth > max) return true
    for (const key in node) {
      const child = node[key]
      if (typeof child === "object" && child !== null) {
        pending.push(child)
        depths.push(depth + 1)
      }
    }
  }
  return false
}

/**
 * `Schema.encodeSync(schema)` for values the program built itself (already of the Schema's Type
 * side), without validating them again: the same JSON, byte for byte, at a fraction of the
 * cost — what a server answering at a high rate encodes its results with. Compiled once from
 * the Schema's AST; throws at compile time for a Schema with a transformation it does not know
 * (use `Schema.encodeSync` there).
 *
 * @since 0.2.0
 * @category encoding
 */
export const trustedEncoder: <A, I>(schema: Schema.Schema<A, I>) => (value: A) => I = internalTrustedEncoder
