/** Pure helpers of the inspector: words for reason codes, time-left shares, state diffs. */

/** What each reason code means, in words an operator reads at 2 a.m. */
export const reasonWords: Readonly<Record<string, string>> = {
  exact_reply_target: "the message replies to it",
  same_reply_chain: "in the same reply chain",
  same_topic: "in the same topic",
  currently_active: "still active",
  kind_match: "the kind asked for",
  kind_mismatch: "not the kind asked for",
  positional_match: "where the hint points (latest, previous, first…)",
  bot_created: "the bot made it",
  owned_by_sender: "the sender's own",
  ownership_mismatch: "not whose the request named: penalised",
  quote_match: "the part the reply quotes",
  sender_owned: "the sender's own",
  open_poll: "a poll still open",
  future_reminder: "a reminder still to come",
  touched_in_interaction: "used in this exchange",
  touched_recently: "used recently",
  recent_object: "recent",
  weak_scope_fallback: "found only outside the topic (weak)",
  chat_scope_fallback: "found only across the chat",
  stale_penalty: "old: penalised",
  near_equal_scores: "another candidate scores almost the same",
  whole_album: "the whole album",
  no_candidates: "nothing to choose from",
  below_min_score: "the best is below the minimum score",
  near_expiry: "about to expire",
  activated_by_summary: "activated by a summary",
  activated_by_url_fetch: "activated by reading the link",
  activated_by_media_inspection: "activated by looking at the media",
  activated_by_poll_create: "activated by creating the poll",
  activated_by_poll_list: "activated by listing polls",
  activated_by_reminder_create: "activated by creating the reminder",
  activated_by_reminder_list: "activated by listing reminders",
  activated_by_reminder_update: "activated by changing the reminder",
  activated_by_resolver: "activated by a resolution",
  activated_by_followup: "activated by a follow-up"
}

export const inWords = (code: string): string => reasonWords[code] ?? code.replace(/_/g, " ")

/** The share of an object's active time still left, 0..1. */
export const timeLeft = (now: number, lastTouched: number, activeUntil: number): number => {
  const span = activeUntil - lastTouched
  if (span <= 0) return now < activeUntil ? 1 : 0
  return Math.max(0, Math.min(1, (activeUntil - now) / span))
}

export const duration = (ms: number): string => {
  if (ms <= 0) return "expired"
  const s = Math.round(ms / 1000)
  if (s < 90) return `${s}s`
  const m = Math.round(s / 60)
  if (m < 90) return `${m} min`
  const h = Math.round(m / 60)
  return h < 48 ? `${h} h` : `${Math.round(h / 24)} d`
}

export interface Change {
  readonly path: string
  readonly kind: "added" | "removed" | "changed"
  readonly before?: unknown
  readonly after?: unknown
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** The differences between two JSON documents, by key path (arrays compared whole). */
export const diff = (before: unknown, after: unknown, path = ""): Array<Change> => {
  if (isObject(before) && isObject(after)) {
    const out: Array<Change> = []
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      const p = path === "" ? key : `${path}.${key}`
      if (!(key in after)) out.push({ path: p, kind: "removed", before: before[key] })
      else if (!(key in before)) out.push({ path: p, kind: "added", after: after[key] })
      else out.push(...diff(before[key], after[key], p))
    }
    return out
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [{ path: path || "(root)", kind: "changed", before, after }]
}

/** A piece of a history item's text: plain text, or a person mentioned (`[name](tg:@username)`). */
export type TextPart = { readonly text: string } | { readonly name: string; readonly username: string }

// `@deixis/chathistory`'s PeopleRef format: a label without `[]()`, a username without them or spaces.
const mention = /\[([^[\]()]*)\]\(tg:@([^\s[\]()]+)\)/g

/** A text with its people references split out, so each reads as the person's name. */
export const textParts = (text: string): Array<TextPart> => {
  const parts: Array<TextPart> = []
  let at = 0
  for (const m of text.matchAll(mention)) {
    if (m.index > at) parts.push({ text: text.slice(at, m.index) })
    parts.push({ name: m[1]!, username: m[2]! })
    at = m.index + m[0].length
  }
  if (at < text.length) parts.push({ text: text.slice(at) })
  return parts
}

/** A text with every people reference as the name alone (for excerpts). */
export const plainText = (text: string): string =>
  textParts(text).map((p) => ("text" in p ? p.text : p.name)).join("")

const score = (n: number) => String(Math.round(n * 1000) / 1000)

/**
 * The resolver's top score and its lead over the second candidate, worded so it reads right
 * whatever the signs: `score_gap` is top minus second, so a second at -20 under a top of 165 is
 * a lead of 185 — said as such, with the second's own score, never as "a gap of 185" beside 165.
 */
export const scoreLead = (diagnostics: { readonly top_score: number | null; readonly score_gap: number | null; readonly candidate_count: number }): string => {
  if (diagnostics.top_score === null) return "no candidate scored"
  const top = `top score ${score(diagnostics.top_score)}`
  if (diagnostics.candidate_count < 2 || diagnostics.score_gap === null) return `${top} · no second candidate`
  return `${top} · second ${score(diagnostics.top_score - diagnostics.score_gap)} (the top leads by ${score(diagnostics.score_gap)})`
}
