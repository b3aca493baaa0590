/**
 * `If-Match` (RFC 9110 §13.1.1) on the conversation state, whose ETag is the strong entity
 * tag `"<revision>"`:
 *
 * - `*` is true when the state exists — it was written at least once (revision > 0);
 * - a list of entity tags (`"3", "4"`) is true when one of them equals the current ETag by
 *   the strong comparison: a weak tag (`W/"3"`) never matches, and `"03"` is not `"3"`;
 * - a field value that is neither is refused (400): ignoring it would turn a conditional
 *   request into an unconditional one.
 *
 * A false condition is 412 Precondition Failed, and nothing is written.
 */

/** A parsed If-Match field. */
export type IfMatch =
  | { readonly _tag: "Any" }
  | { readonly _tag: "Tags"; readonly tags: ReadonlyArray<{ readonly weak: boolean; readonly opaque: string }> }

/** At most this many entity tags: a longer list is refused rather than scanned. */
export const maxTags = 64

// entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE ; etagc = %x21 / %x23-7E / obs-text
const entityTag = /^(W\/)?"([\x21\x23-\x7E\x80-\xFF]*)"$/

/** Parses the field value, or says what is wrong with it. */
export const parse = (value: string): IfMatch | { readonly _tag: "Invalid"; readonly message: string } => {
  const trimmed = value.trim()
  if (trimmed === "*") return { _tag: "Any" }
  // RFC 9110 §5.6.1: a list; empty elements are ignored. Entity tags cannot hold a comma.
  const elements = trimmed.split(",").map((e) => e.trim()).filter((e) => e !== "")
  if (elements.length === 0) return invalid
  if (elements.length > maxTags) return { _tag: "Invalid", message: `If-Match lists more than ${maxTags} entity tags` }
  const tags: Array<{ weak: boolean; opaque: string }> = []
  for (const element of elements) {
    const match = entityTag.exec(element)
    if (match === null) return invalid
    tags.push({ weak: match[1] !== undefined, opaque: match[2]! })
  }
  return { _tag: "Tags", tags }
}

const invalid = {
  _tag: "Invalid",
  message: "If-Match must be * or a list of entity tags, e.g. \"3\" (the state's ETag)"
} as const

/** The strong entity tag of a revision, as sent in `ETag`. */
export const etag = (revision: number): string => `"${revision}"`

/** Whether the condition holds for the state at `revision` (0: never written). */
export const holds = (condition: IfMatch, revision: number): boolean =>
  condition._tag === "Any"
    ? revision > 0
    : condition.tags.some((tag) => !tag.weak && tag.opaque === String(revision))

/**
 * The revisions the condition can hold at, in increasing order — `"any"` for `*` — so an
 * update can be made conditional on each in turn (revisions only grow).
 */
export const revisions = (condition: IfMatch): "any" | ReadonlyArray<number> =>
  condition._tag === "Any"
    ? "any"
    : [
      ...new Set(
        condition.tags.flatMap((tag) => (!tag.weak && /^(0|[1-9]\d{0,14})$/.test(tag.opaque) ? [Number(tag.opaque)] : []))
      )
    ].sort((a, b) => a - b)
