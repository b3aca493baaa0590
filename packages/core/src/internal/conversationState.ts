/**
 * Pure algorithms behind the ConversationState module: JSON validation, RFC 7386 JSON Merge
 * Patch, diffing, canonical rendering, sizes, and the per-scope lock. A leaf: it imports nothing
 * of `ConversationState` (the JSON types are `Json`'s), so no cycle forms.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Json from "../Json.js"

type JsonValue = Json.JsonValue
type JsonObject = Json.JsonObject

/** What a scope key is made of: a chat and a topic (`ConversationState.ConversationScope`). */
interface ScopeFields {
  readonly chat_id: string
  readonly topic_id: string | null
}

/** What rendering reads of a snapshot (`ConversationState.ConversationStateSnapshot`). */
interface SnapshotFields {
  readonly state: JsonObject
  readonly revision: number
  readonly updated_at: number | null
  readonly updated_by: string | null
}


/** Deeper documents are refused: the recursive functions below must never exhaust the stack. */
export const maxDepth = Json.maxDepth

/** @internal */
export interface JsonProblem {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}

/** @internal */
export const isJsonObject = (value: JsonValue | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const isPlainObject = (u: object): boolean => {
  const proto: unknown = Object.getPrototypeOf(u)
  return proto === Object.prototype || proto === null
}

/**
 * Checks that `u` is a JSON value as `JSON.parse` would produce it. The value is accepted as
 * is, never copied, so an own `__proto__` key cannot be silently turned into a prototype.
 */
export const validateJson = (u: unknown): JsonProblem | undefined => {
  const path: Array<string | number> = []
  const go = (v: unknown, depth: number): JsonProblem | undefined => {
    switch (typeof v) {
      case "string":
      case "boolean":
        return undefined
      case "number":
        return Number.isFinite(v) ? undefined : { path: [...path], message: "a JSON number must be finite" }
      case "object": {
        if (v === null) return undefined
        if (depth >= maxDepth) {
          return { path: [...path], message: `JSON nested deeper than ${maxDepth} levels` }
        }
        if (Array.isArray(v)) {
          for (let i = 0; i < v.length; i++) {
            path.push(i)
            const problem = Object.hasOwn(v, i)
              ? go(v[i], depth + 1)
              : { path: [...path], message: "an array must not have holes" }
            path.pop()
            if (problem !== undefined) return problem
          }
          return undefined
        }
        if (!isPlainObject(v)) return { path: [...path], message: "expected a plain JSON object" }
        for (const key of Object.keys(v)) {
          path.push(key)
          const problem = key === "__proto__"
            ? { path: [...path], message: "the key __proto__ is not allowed" }
            : go((v as Record<string, unknown>)[key], depth + 1)
          path.pop()
          if (problem !== undefined) return problem
        }
        return undefined
      }
      default:
        return { path: [...path], message: `expected a JSON value, got ${typeof v}` }
    }
  }
  return go(u, 0)
}

const own = (object: JsonObject, key: string): JsonValue | undefined =>
  Object.hasOwn(object, key) ? object[key] : undefined

/**
 * RFC 7386 section 2, `MergePatch(Target, Patch)`, without mutating either argument. Entries
 * are built with `Object.fromEntries` so that every key becomes an own data property.
 */
export const applyMergePatch = (target: JsonValue, patch: JsonValue): JsonValue => {
  if (!isJsonObject(patch)) return patch
  const base: JsonObject = isJsonObject(target) ? target : {}
  const entries = new Map<string, JsonValue>(Object.entries(base))
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      entries.delete(key)
    } else {
      entries.set(key, applyMergePatch(own(base, key) ?? null, value))
    }
  }
  return Object.fromEntries(entries)
}

/** Structural JSON equality: object key order is ignored, array order is not. */
export const jsonEquals = (a: JsonValue, b: JsonValue): boolean => {
  if (a === b) return true
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false
    const bs: ReadonlyArray<JsonValue> = b
    return (a as ReadonlyArray<JsonValue>).every((item, i) => {
      const other = bs[i]
      return other !== undefined && jsonEquals(item, other)
    })
  }
  if (isJsonObject(a) && isJsonObject(b)) {
    const keys = Object.keys(a)
    if (keys.length !== Object.keys(b).length) return false
    return keys.every((key) => {
      const left = a[key]
      const right = own(b, key)
      return left !== undefined && right !== undefined && jsonEquals(left, right)
    })
  }
  return false
}

/**
 * The merge patch that turns `from` into `to`. Exact whenever `to` has no null-valued object
 * members — a merge patch can never produce those, because null means "delete".
 */
export const diffMergePatch = (from: JsonValue, to: JsonValue): JsonValue => {
  if (!isJsonObject(from) || !isJsonObject(to)) return to
  const patch: Array<[string, JsonValue]> = []
  for (const key of Object.keys(from)) {
    if (!Object.hasOwn(to, key)) patch.push([key, null])
  }
  for (const [key, value] of Object.entries(to)) {
    const before = own(from, key)
    if (before === undefined) {
      patch.push([key, value])
    } else if (!jsonEquals(before, value)) {
      patch.push([key, diffMergePatch(before, value)])
    }
  }
  return Object.fromEntries(patch)
}

/** Compact JSON with object keys sorted by UTF-16 code units at every level. */
export const canonicalJson = (value: JsonValue): string => {
  if (Array.isArray(value)) {
    return `[${(value as ReadonlyArray<JsonValue>).map(canonicalJson).join(",")}]`
  }
  if (isJsonObject(value)) {
    const keys = Object.keys(value).sort()
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key] ?? null)}`).join(",")}}`
  }
  return JSON.stringify(value)
}

/** UTF-8 length of a string; lone surrogates count as the 3 bytes of U+FFFD. */
export const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4
        i++
      } else bytes += 3
    } else bytes += 3
  }
  return bytes
}

/** Formats an issue path as `household.children[0].age`; the root is `$`. */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string => {
  const text = path.map((key, i) =>
    typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`
  ).join("")
  return text === "" ? "$" : text
}

/** A stable string key for a scope; JSON keeps `("a:b", null)` apart from `("a", "b")`. */
export const scopeKey = (scope: ScopeFields): string =>
  JSON.stringify([scope.chat_id, scope.topic_id])

/** Renders a snapshot for a prompt: one header line, then the canonical JSON of the state. */
export const render = (snapshot: SnapshotFields): string => {
  const details: Array<string> = []
  if (snapshot.updated_at !== null) details.push(`updated ${new Date(snapshot.updated_at).toISOString()}`)
  if (snapshot.updated_by !== null) details.push(`by ${JSON.stringify(snapshot.updated_by)}`)
  const header = snapshot.revision === 0
    ? "Conversation state, revision 0 (empty):"
    : `Conversation state, revision ${snapshot.revision}${details.length > 0 ? ` (${details.join(" ")})` : ""}:`
  return `${header}\n${canonicalJson(snapshot.state)}`
}

/**
 * One single-permit semaphore per key, created on first use and dropped when its last user
 * leaves, so a long-running process does not accumulate one lock per conversation ever seen.
 */
export const makeKeyedLock = () => {
  const locks = new Map<string, { readonly semaphore: Effect.Semaphore; users: number }>()
  return (key: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const existing = locks.get(key)
        const entry = existing ?? { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
        if (existing === undefined) locks.set(key, entry)
        entry.users++
        return entry
      }),
      (entry) => entry.semaphore.withPermits(1)(effect),
      (entry) =>
        Effect.sync(() => {
          entry.users--
          if (entry.users === 0) locks.delete(key)
        })
    )
}
