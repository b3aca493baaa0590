/**
 * The twelve kinds of conversational object, and the normalized kind hints callers pass.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * Every kind of object deixis tracks.
 *
 * @since 0.1.0
 * @category constants
 */
export const kinds = [
  "article",
  "link",
  "media.image",
  "media.video",
  "media.voice",
  "media.document",
  "media.pdf",
  "poll",
  "reminder",
  "summary",
  "bot_message",
  "message"
] as const

/**
 * @since 0.1.0
 * @category schemas
 */
export const ObjectKind = Schema.Literal(...kinds).annotations({
  identifier: "ObjectKind",
  description: "The kind of a conversational object"
})

/**
 * @since 0.1.0
 * @category models
 */
export type ObjectKind = typeof ObjectKind.Type

/**
 * The media kinds, which a message can carry as attachments.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MediaKind = Schema.Literal(
  "media.image",
  "media.video",
  "media.voice",
  "media.document",
  "media.pdf"
).annotations({ identifier: "MediaKind" })

/**
 * @since 0.1.0
 * @category models
 */
export type MediaKind = typeof MediaKind.Type

/**
 * A normalized kind hint extracted upstream from the user's words (in any language). The
 * first six are the spec's; the rest name the remaining kinds directly.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TargetKindHint = Schema.Literal(
  "poll",
  "reminder",
  "image",
  "file",
  "article",
  "quote",
  "link",
  "video",
  "voice",
  "pdf",
  "summary",
  "message"
).annotations({ identifier: "TargetKindHint" })

/**
 * @since 0.1.0
 * @category models
 */
export type TargetKindHint = typeof TargetKindHint.Type

/**
 * The kinds each hint matches. `file` covers documents and PDFs; `article` covers fetched
 * articles and plain links; `quote` and `message` cover messages, the user's or the bot's.
 *
 * @since 0.1.0
 * @category constants
 */
export const kindsForHint: { readonly [H in TargetKindHint]: ReadonlyArray<ObjectKind> } = {
  poll: ["poll"],
  reminder: ["reminder"],
  image: ["media.image"],
  file: ["media.document", "media.pdf"],
  article: ["article", "link"],
  quote: ["message", "bot_message"],
  link: ["link", "article"],
  video: ["media.video"],
  voice: ["media.voice"],
  pdf: ["media.pdf"],
  summary: ["summary"],
  message: ["message", "bot_message"]
}
