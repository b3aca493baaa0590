/**
 * Quotes: which parts of a replied message a reply's quote selects. Telegram lets a reply quote
 * part of the message it answers (`quote.text`, exactly what was selected, and `quote.position`,
 * its offset); the parts of that message — a link, a mention, a captioned media item — each
 * have a span in its text. A part whose span overlaps the quote is selected.
 *
 * Offsets and lengths are UTF-16 code units, as Telegram counts them and JavaScript strings
 * index them. Without positions (a caller that only has the quoted text, or objects recorded
 * before spans were kept), a part is selected by its own text: the link's URL or title, the
 * media item's caption label, overlapping the quote's text.
 *
 * When a selected part lies inside another selected part (a link inside a photo's caption) and
 * the quote selects nothing of the outer part beyond the inner one, the inner part alone is
 * selected: quoting the URL of a caption means the link, quoting the caption means the photo.
 * A mention names a person, which deixis keeps no object of: a quote of a mention in a message's
 * text overlaps no link or media part and changes nothing; a mention inside a caption is part of
 * the caption, so quoting it selects the captioned item.
 *
 * @since 0.3.0
 */
import * as Schema from "effect/Schema"

/**
 * Where a part of a message is in its text or caption: an offset and a length in UTF-16 code
 * units (Telegram's entity offsets).
 *
 * @since 0.3.0
 * @category schemas
 */
export const TextSpan = Schema.Struct({
  offset: Schema.Int.pipe(Schema.between(0, 65_535)),
  length: Schema.Int.pipe(Schema.between(1, 65_535))
}).annotations({ identifier: "TextSpan", description: "A part of a message's text: offset and length in UTF-16 code units" })

/**
 * @since 0.3.0
 * @category models
 */
export type TextSpan = typeof TextSpan.Type

/**
 * The longest quote kept, in UTF-16 code units (Telegram's own limit is 1024 characters).
 *
 * @since 0.3.0
 * @category constants
 */
export const maxQuoteLength = 4096

/**
 * A quote's text: what the user selected, as Telegram gives it.
 *
 * @since 0.3.0
 * @category schemas
 */
export const QuoteText = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(maxQuoteLength))

/**
 * A quote's position: its UTF-16 offset in the replied message's text or caption.
 *
 * @since 0.3.0
 * @category schemas
 */
export const QuotePosition = Schema.Int.pipe(Schema.between(0, 65_535))

/**
 * A reply's quote of the message it replies to: `text` exactly as selected and, when known,
 * `position`, the quote's UTF-16 offset in the replied message's text or caption.
 *
 * @since 0.3.0
 * @category schemas
 */
export const Quote = Schema.Struct({
  text: QuoteText,
  position: Schema.optional(QuotePosition)
}).annotations({ identifier: "Quote" })

/**
 * @since 0.3.0
 * @category models
 */
export type Quote = typeof Quote.Type

/**
 * A part of a replied message the quote may select: an object, its span when known, the texts
 * it shows.
 *
 * @since 0.3.0
 * @category models
 */
export interface Part {
  readonly object_id: string
  readonly span?: TextSpan | undefined
  /** What the part shows in the message: a link's URL or title, a caption. */
  readonly texts: ReadonlyArray<string>
}

/**
 * The most quoting messages remembered per object (`ContextObject.quoted_in`), newest kept.
 *
 * @since 0.3.0
 * @category constants
 */
export const maxQuotedIn = 8

/**
 * The fewest UTF-16 code units a quote's text must share with a part's text at their edges
 * (the quote starting inside the part, or ending inside it) for text matching to count it.
 *
 * @since 0.3.0
 * @category constants
 */
export const minEdgeOverlap = 4

const flat = (s: string) => s.replace(/\s+/g, " ").trim()

/** The longest suffix of `a` that is a prefix of `b`. */
const edge = (a: string, b: string): number => {
  for (let n = Math.min(a.length, b.length); n > 0; n--) if (a.endsWith(b.slice(0, n))) return n
  return 0
}

/** How the quote meets a part: nothing, or [start, end) of the quote's overlap in the part's own coordinates. */
type Overlap = readonly [number, number] | undefined

const spanOverlap = (span: TextSpan, from: number, to: number): Overlap => {
  const start = Math.max(span.offset, from)
  const end = Math.min(span.offset + span.length, to)
  return end > start ? [start, end] : undefined
}

/** The quote's overlap with a text, in the text's coordinates (the first place it meets it). */
const textOverlap = (text: string, quote: string): Overlap => {
  if (text === "" || quote === "") return undefined
  const at = text.indexOf(quote)
  if (at >= 0) return [at, at + quote.length]
  if (quote.includes(text)) return [0, text.length]
  const tail = edge(quote, text)
  if (tail >= Math.min(minEdgeOverlap, text.length)) return [0, tail]
  const head = edge(text, quote)
  if (head >= Math.min(minEdgeOverlap, text.length)) return [text.length - head, text.length]
  return undefined
}

interface Hit {
  readonly part: Part
  /** The overlap, in message coordinates (by span) or in the part's text (by text). */
  readonly at: readonly [number, number]
  /** Which text of the part it is in (-1: by span). */
  readonly text: number
}

/** Whether `inner`'s hit lies inside `outer`'s part and covers all of the quote's overlap with it. */
const covers = (outer: Hit, inner: Hit): boolean => {
  if (outer.part === inner.part) return false
  const o = outer.part
  const i = inner.part
  if (outer.text < 0 && inner.text < 0) {
    const os = o.span!
    const is = i.span!
    const within = is.offset >= os.offset && is.offset + is.length <= os.offset + os.length && is.length < os.length
    return within && outer.at[0] >= is.offset && outer.at[1] <= is.offset + is.length
  }
  if (outer.text >= 0 && inner.text >= 0) {
    const ot = flat(o.texts[outer.text]!)
    const it = flat(i.texts[inner.text]!)
    const at = ot.indexOf(it)
    return it.length < ot.length && at >= 0 && outer.at[0] >= at && outer.at[1] <= at + it.length
  }
  return false
}

/**
 * The object ids of `parts` that `quote` selects, in the order of `parts`: those whose span
 * overlaps the quote (when both have positions), or whose text overlaps the quote's text
 * (otherwise), less any part whose overlap lies wholly inside another selected part. Empty when
 * the quote selects nothing.
 *
 * @since 0.3.0
 * @category selecting
 */
export const selects = (parts: ReadonlyArray<Part>, quote: Quote): Array<string> => {
  const text = flat(quote.text)
  const from = quote.position
  const to = from === undefined ? undefined : from + quote.text.length
  const hits: Array<Hit> = []
  for (const part of parts) {
    if (from !== undefined && part.span !== undefined) {
      const at = spanOverlap(part.span, from, to!)
      if (at !== undefined) hits.push({ part, at, text: -1 })
      continue
    }
    for (let t = 0; t < part.texts.length; t++) {
      const at = textOverlap(flat(part.texts[t]!), text)
      if (at !== undefined) {
        hits.push({ part, at, text: t })
        break
      }
    }
  }
  const out: Array<string> = []
  for (const hit of hits) {
    if (hits.some((other) => covers(hit, other))) continue
    if (!out.includes(hit.part.object_id)) out.push(hit.part.object_id)
  }
  return out
}

/**
 * The quote-selectable part an object is: its span, and the texts it shows (a link's URL and
 * title, a media item's label).
 *
 * @since 0.3.0
 * @category selecting
 */
export const partOf = (object: {
  readonly object_id: string
  readonly kind: string
  readonly span?: TextSpan | undefined
  readonly ref?: string | undefined
  readonly title_or_label?: string | undefined
}): Part => ({
  object_id: object.object_id,
  span: object.span,
  texts: object.kind === "link"
    ? [object.ref ?? "", object.title_or_label ?? ""].filter((t) => t !== "")
    : object.title_or_label === undefined
    ? []
    : [object.title_or_label]
})

/**
 * `quoted_in` with `messageId` added as the newest, at most {@link maxQuotedIn} kept.
 *
 * @since 0.3.0
 * @category selecting
 */
export const addQuotedIn = (quotedIn: ReadonlyArray<string> | undefined, messageId: string): ReadonlyArray<string> => {
  const rest = (quotedIn ?? []).filter((id) => id !== messageId)
  return [...rest, messageId].slice(-maxQuotedIn)
}
