/**
 * The canonical form of a request target. Every decision the service takes about a request —
 * authentication, the body limit, the route, the metric label — is taken on this one string:
 * the pipeline (`Pipeline.ts`) computes it first, finds the route on it and hands it on, or
 * answers 400 when the target has no single meaning.
 *
 * Routers and proxies disagree on how to read a path: one folds case, one collapses `//`,
 * one decodes `%76` to `v` or stops at `;`. A target is accepted only when every one of those
 * readings gives the same path, so no spelling of a route can reach it past a check that read
 * it differently:
 *
 * - origin-form (`/v1/events?x=1`); absolute-form (`http://host/v1/events`) is reduced to its
 *   origin-form here, once (the service routes on paths alone, never on the host);
 * - no empty segment (`//`), no dot segment (`.`, `..`), no `;`, `\` or `#`;
 * - only the characters RFC 3986 allows in a path or query, and percent-escapes that are
 *   well formed (`%` and two hex digits) and decode to valid UTF-8; in the path, no escape of
 *   an unreserved character (`%76` for `v`, `%2E` for `.`): those have a literal spelling,
 *   which is the canonical one.
 *
 * Case is significant (the router is configured case-sensitive), and a trailing slash names
 * another path (the router does not fold it), so neither needs rewriting.
 *
 * @since 0.2.0
 */
import * as Either from "effect/Either"

/**
 * A target refused: why, for the 400 body.
 *
 * @since 0.2.0
 * @category models
 */
export interface NonCanonical {
  readonly reason: string
}

const refuse = (reason: string): Either.Either<string, NonCanonical> => Either.left({ reason })

// RFC 3986: pchar = unreserved / pct-encoded / sub-delims / ":" / "@" (";" excluded, see above).
const pathChars = /^[A-Za-z0-9\-._~!$&'()*+,=:@%/]*$/
// query = *( pchar / "/" / "?" ), ";" allowed: it has no meaning to the router after the "?".
const queryChars = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*$/
const unreserved = /^[A-Za-z0-9\-._~]$/
const absoluteForm = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/

const checkEscapes = (part: string, what: "path" | "query"): NonCanonical | undefined => {
  if (!part.includes("%")) return undefined
  for (let i = part.indexOf("%"); i !== -1; i = part.indexOf("%", i + 1)) {
    const hex = part.slice(i + 1, i + 3)
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return { reason: `a malformed percent-escape in the ${what}` }
    const char = String.fromCharCode(parseInt(hex, 16))
    // In the query only the decoded values matter (URLSearchParams writes "~" as %7E).
    if (what === "path" && unreserved.test(char)) {
      return { reason: `%${hex} in the ${what} encodes "${char}", which must be written as itself` }
    }
  }
  try {
    decodeURIComponent(part)
  } catch {
    return { reason: `the ${what}'s percent-escapes are not valid UTF-8` }
  }
  return undefined
}

/**
 * The canonical origin-form of a raw request target (`request.url` as Node gives it), or why
 * it has none.
 *
 * @since 0.2.0
 * @category constructors
 */
export const canonical = (raw: string): Either.Either<string, NonCanonical> => {
  let target = raw
  const absolute = absoluteForm.exec(target)
  if (absolute !== null) {
    const scheme = target.slice(0, target.indexOf(":")).toLowerCase()
    if (scheme !== "http" && scheme !== "https") return refuse(`an absolute-form target with scheme "${scheme}"`)
    target = target.slice(absolute[0].length)
    if (target === "" || target.startsWith("?")) target = "/" + target
  }
  if (!target.startsWith("/")) return refuse("the target must be a path starting with \"/\"")
  if (target.includes("#")) return refuse("a fragment (#) in the target")
  const q = target.indexOf("?")
  const path = q === -1 ? target : target.slice(0, q)
  const query = q === -1 ? "" : target.slice(q + 1)
  if (!pathChars.test(path)) {
    return refuse(path.includes(";") ? "\";\" in the path" : "a character the path must percent-encode")
  }
  if (!queryChars.test(query)) return refuse("a character the query must percent-encode")
  const segments = path.split("/")
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i]!
    if (segment === "" && i < segments.length - 1) return refuse("an empty path segment (//)")
    if (segment === "." || segment === "..") return refuse("a dot segment (. or ..) in the path")
  }
  const problem = checkEscapes(path, "path") ?? checkEscapes(query, "query")
  if (problem !== undefined) return Either.left(problem)
  return Either.right(target)
}
