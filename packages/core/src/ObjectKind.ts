/**
 * The twelve built-in kinds of conversational object, namespaced custom kinds, and the
 * normalized kind hints callers pass. What each kind means is the `KindRegistry`'s.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * The built-in kinds.
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
 * @since 0.2.0
 * @category schemas
 */
export const BuiltinKind = Schema.Literal(...kinds).annotations({ identifier: "BuiltinKind" })

/**
 * @since 0.2.0
 * @category models
 */
export type BuiltinKind = typeof BuiltinKind.Type

const customKindPattern = /^(?!media\.)[a-z][a-z0-9_]{0,31}\.[a-z][a-z0-9_.-]{0,63}$/

/**
 * A kind a team registers (see `KindRegistry`), namespaced: `x.ticket`, `acme.invoice` —
 * lowercase, a namespace other than `media`, a dot, a name.
 *
 * @since 0.2.0
 * @category schemas
 */
export const CustomKind = Schema.TemplateLiteral(Schema.String, ".", Schema.String).pipe(
  Schema.pattern(customKindPattern, {
    message: () => "a custom kind is namespaced: lowercase namespace (not media), a dot, a name, such as x.ticket"
  })
).annotations({ identifier: "CustomKind" })

/**
 * @since 0.2.0
 * @category models
 */
export type CustomKind = typeof CustomKind.Type

/**
 * Whether a name is a well-formed custom kind (not whether anyone registered it).
 *
 * @since 0.2.0
 * @category guards
 */
export const isCustomKind = (kind: string): kind is CustomKind =>
  !(kinds as ReadonlyArray<string>).includes(kind) && customKindPattern.test(kind)

/**
 * A built-in kind, or a namespaced custom kind. Whether a custom kind is registered is the
 * `KindRegistry`'s to say: the tools answer an unregistered one with `InvalidRequest`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ObjectKind = Schema.Union(BuiltinKind, CustomKind).annotations({
  identifier: "ObjectKind",
  description: "The kind of a conversational object: a built-in kind, or a registered namespaced kind such as x.ticket"
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
 * The built-in kind hints. The first six are the spec's; the rest name the remaining kinds
 * directly.
 *
 * @since 0.2.0
 * @category schemas
 */
export const BuiltinKindHint = Schema.Literal(
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
).annotations({ identifier: "BuiltinKindHint" })

/**
 * A normalized kind hint extracted upstream from the user's words (in any language): a
 * built-in hint, or a registered custom kind's name. The kinds each names are the
 * `KindRegistry`'s descriptors.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TargetKindHint = Schema.Union(BuiltinKindHint, CustomKind).annotations({ identifier: "TargetKindHint" })

/**
 * @since 0.1.0
 * @category models
 */
export type TargetKindHint = typeof TargetKindHint.Type
