/**
 * The one result envelope every deixis tool answers with — `{status, summary, error, data}` —
 * and {@link fit}, which cuts it to a character budget while keeping it valid JSON.
 *
 * The envelope is what an LLM reads after a tool call, in the bot's own loop and over MCP
 * alike: `status` says whether the call worked, `summary` says in one line what came back,
 * `error` explains a failure (`{code, message}`), and `data` holds the wire form of the
 * result. A result longer than the tool's budget is cut structurally (long arrays keep
 * their first items and say how many were left out, long strings keep their start), then
 * `data` is dropped, then the texts are shortened — never by slicing the JSON text.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * @since 0.1.0
 * @category schemas
 */
export const EnvelopeError = Schema.Struct({
  code: Schema.String,
  message: Schema.String
}).annotations({ identifier: "ToolError" })

/**
 * @since 0.1.0
 * @category models
 */
export type EnvelopeError = typeof EnvelopeError.Type

/**
 * @since 0.1.0
 * @category schemas
 */
export const Envelope = Schema.Struct({
  status: Schema.Literal("ok", "error"),
  summary: Schema.String,
  error: Schema.NullOr(EnvelopeError),
  data: Schema.Unknown
}).annotations({ identifier: "ToolResultEnvelope" })

/**
 * @since 0.1.0
 * @category models
 */
export type Envelope = typeof Envelope.Type

/**
 * The smallest budget {@link fit} honours: below it, the bare envelope (status, empty
 * summary, error code only) is returned even if it is longer than asked.
 *
 * @since 0.1.0
 * @category constants
 */
export const MIN_BUDGET = 128

/**
 * A successful envelope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ok = (summary: string, data: unknown): Envelope => ({ status: "ok", summary, error: null, data })

/**
 * A failed envelope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const failure = (code: string, message: string, data: unknown = null): Envelope => ({
  status: "error",
  summary: `${code}: ${message}`,
  error: { code, message },
  data
})

const size = (envelope: Envelope): number => JSON.stringify(envelope).length

// Cutting between the halves of a surrogate pair would leave a lone surrogate.
const cutString = (s: string, max: number): string => {
  if (s.length <= max) return s
  let end = Math.max(0, max - 1)
  const last = s.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return `${s.slice(0, end)}…`
}

// Values that are not JSON (undefined, functions, bigint, cycles) become null or a string,
// so what fit measures is what JSON.stringify writes.
const shrink = (value: unknown, items: number, chars: number, depth: number, seen: Set<object>): unknown => {
  if (value === null || typeof value === "boolean") return value
  if (typeof value === "number") return Number.isFinite(value) ? value : null
  if (typeof value === "string") return cutString(value, chars)
  if (typeof value === "bigint") return value.toString()
  if (typeof value !== "object") return null
  if (seen.has(value)) return "[circular]"
  if (depth > 12) return "…"
  seen.add(value)
  try {
    if (Array.isArray(value)) {
      const kept = value.slice(0, items).map((v) => shrink(v, items, chars, depth + 1, seen))
      if (value.length > kept.length) kept.push(`…${value.length - kept.length} more`)
      return kept
    }
    const json = (value as { toJSON?: unknown }).toJSON
    if (typeof json === "function") return shrink((json as () => unknown).call(value), items, chars, depth, seen)
    const out: Record<string, unknown> = {}
    for (const [key, v] of Object.entries(value)) {
      if (v === undefined || typeof v === "function" || typeof v === "symbol") continue
      out[key] = shrink(v, items, chars, depth + 1, seen)
    }
    return out
  } finally {
    seen.delete(value)
  }
}

// From generous to harsh: items kept per array, characters kept per string.
const levels: ReadonlyArray<readonly [number, number]> = [
  [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  [50, 2000],
  [20, 500],
  [10, 200],
  [5, 100],
  [3, 60],
  [1, 40],
  [0, 20]
]

const cutNote = (budget: number) => ` [data cut to fit ${budget} characters]`

/**
 * Cuts an envelope so that `JSON.stringify(fit(e, budget)).length <= budget` (for a budget of
 * at least {@link MIN_BUDGET}): first `data`, structurally and more harshly level by level,
 * then `data` dropped (null), then `summary` and the error message shortened. A cut is noted
 * at the end of `summary`. The result is always plain JSON data (no `undefined`, no cycles).
 *
 * @since 0.1.0
 * @category fitting
 */
export const fit = (envelope: Envelope, budget: number): Envelope => {
  const base: Envelope = {
    status: envelope.status,
    summary: envelope.summary,
    error: envelope.error === null ? null : { code: envelope.error.code, message: envelope.error.message },
    data: shrink(envelope.data, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 0, new Set())
  }
  if (size(base) <= budget) return base
  const note = cutNote(budget)
  for (const [items, chars] of levels.slice(1)) {
    const candidate: Envelope = {
      ...base,
      summary: base.summary + note,
      data: shrink(base.data, items, chars, 0, new Set())
    }
    if (size(candidate) <= budget) return candidate
  }
  // No data at all; then shorter texts, halving until they fit.
  let summaryMax = base.summary.length
  let messageMax = base.error?.message.length ?? 0
  while (true) {
    const candidate: Envelope = {
      status: base.status,
      summary: cutString(base.summary, summaryMax) + (base.data === null ? "" : note),
      error: base.error === null ? null : { code: cutString(base.error.code, 64), message: cutString(base.error.message, messageMax) },
      data: null
    }
    if (size(candidate) <= budget || (summaryMax === 0 && messageMax === 0)) {
      return size(candidate) <= budget ? candidate : { ...candidate, summary: "" }
    }
    summaryMax = Math.floor(summaryMax / 2)
    messageMax = Math.floor(messageMax / 2)
  }
}

/**
 * The envelope as the JSON text a model reads, cut to the budget.
 *
 * @since 0.1.0
 * @category fitting
 */
export const render = (envelope: Envelope, budget: number): string => JSON.stringify(fit(envelope, budget))
