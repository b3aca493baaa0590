/**
 * What deixis knows of each kind of object, as data: one descriptor per kind — its TTL class,
 * how its label is derived, which Telegram content maps to it, which kind hints name it. The
 * TTL policy, the scorer, the reducer and the tools read kinds only through this registry, so
 * a team can register its own namespaced kind (`x.ticket`) and the tools accept and return it.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ActivationReason, TtlClass } from "./ContextObject.js"
import type { BuiltinKind, ObjectKind, TargetKindHint } from "./ObjectKind.js"
import { isCustomKind } from "./ObjectKind.js"

/**
 * What a message's content offers a label: a link's title and URL, a file's caption or name,
 * a poll's question, an activation's `title_or_label`.
 *
 * @since 0.2.0
 * @category models
 */
export interface LabelSource {
  readonly title?: string | undefined
  readonly url?: string | undefined
}

/**
 * The Telegram content a kind stands for, as the Bot API names it: a message field (`photo`,
 * `poll`), a document by MIME type (`document:application/pdf`, `document:image/*`), a text
 * entity (`entity:url`), or `message` for a plain message.
 *
 * @since 0.2.0
 * @category models
 */
export type TelegramContent = string

/**
 * One kind, described.
 *
 * @since 0.2.0
 * @category models
 */
export interface KindDescriptor {
  readonly kind: ObjectKind
  /** The TTL class an activation puts an object of this kind in. */
  readonly ttl_class: TtlClass
  /** Activation reasons that put it in another class (a created reminder: `medium`). */
  readonly ttl_class_by_reason?: Partial<Record<ActivationReason, TtlClass>> | undefined
  /** The kind hints that name this kind (a custom kind is named by its own name too). */
  readonly hints: ReadonlyArray<TargetKindHint>
  /** How a label is derived from what the content offers; undefined keeps none. */
  readonly label: (source: LabelSource) => string | undefined
  /** The Telegram content that maps to this kind, in the order the mapper tries it. */
  readonly telegram: ReadonlyArray<TelegramContent>
  /** A plain message (the user's or the bot's): it stands for its message, not an object. */
  readonly message?: boolean | undefined
  /** Derived from a message's content (links, media): an edit derives it again. */
  readonly derived?: boolean | undefined
}

/** The longest label a URL gives, in characters. */
const capUrl = (url: string): string => (url.length <= 80 ? url : url.slice(0, 79) + "…")
const titled = (source: LabelSource) => source.title
const titleOrUrl = (source: LabelSource) =>
  source.title ?? (source.url === undefined ? undefined : capUrl(source.url))

const media = (kind: BuiltinKind, hints: ReadonlyArray<TargetKindHint>, telegram: ReadonlyArray<string>): KindDescriptor => ({
  kind,
  ttl_class: "short_medium",
  hints,
  label: titled,
  telegram,
  derived: true
})

/**
 * The twelve built-in kinds: today's rules, as one table.
 *
 * @since 0.2.0
 * @category constants
 */
export const builtins: ReadonlyArray<KindDescriptor> = [
  { kind: "article", ttl_class: "medium", hints: ["article", "link"], label: titleOrUrl, telegram: [] },
  {
    kind: "link",
    ttl_class: "medium",
    hints: ["article", "link"],
    label: titleOrUrl,
    telegram: ["entity:url", "entity:text_link", "link_preview_options"],
    derived: true
  },
  media("media.image", ["image"], ["photo", "document:image/*"]),
  media("media.video", ["video"], ["video", "animation", "video_note", "document:video/*"]),
  media("media.voice", ["voice"], ["voice", "audio", "document:audio/*"]),
  media("media.document", ["file"], ["document"]),
  media("media.pdf", ["file", "pdf"], ["document:application/pdf"]),
  { kind: "poll", ttl_class: "poll_open", hints: ["poll"], label: titled, telegram: ["poll"] },
  {
    kind: "reminder",
    ttl_class: "short",
    ttl_class_by_reason: { reminder_created: "medium" },
    hints: ["reminder"],
    label: titled,
    telegram: []
  },
  { kind: "summary", ttl_class: "medium", hints: ["summary"], label: titled, telegram: [] },
  {
    kind: "bot_message",
    ttl_class: "short",
    hints: ["quote", "message"],
    label: titled,
    telegram: ["message:outbound"],
    message: true
  },
  { kind: "message", ttl_class: "short", hints: ["quote", "message"], label: titled, telegram: ["message"], message: true }
]

/**
 * A namespaced kind a team registers: its TTL class (default `medium`), hints beyond its own
 * name, and label rule (default: the activation's title).
 *
 * @since 0.2.0
 * @category models
 */
export interface CustomKindOptions {
  readonly kind: `${string}.${string}`
  readonly ttl_class?: TtlClass
  readonly ttl_class_by_reason?: Partial<Record<ActivationReason, TtlClass>>
  readonly hints?: ReadonlyArray<TargetKindHint>
  readonly label?: (source: LabelSource) => string | undefined
}

/**
 * A descriptor for a custom kind.
 *
 * @since 0.2.0
 * @category constructors
 */
export const custom = (options: CustomKindOptions): KindDescriptor => ({
  kind: options.kind,
  ttl_class: options.ttl_class ?? "medium",
  ttl_class_by_reason: options.ttl_class_by_reason,
  hints: [options.kind, ...(options.hints ?? [])],
  label: options.label ?? titled,
  telegram: []
})

/**
 * The registry's service: lookups over one table of descriptors.
 *
 * @since 0.2.0
 * @category models
 */
export interface Registry {
  readonly descriptors: ReadonlyArray<KindDescriptor>
  /** The descriptor of a kind; undefined for a kind nobody registered. */
  readonly get: (kind: string) => KindDescriptor | undefined
  /** The kinds a hint names, in table order (empty for a hint nothing answers). */
  readonly kindsForHint: (hint: TargetKindHint) => ReadonlyArray<ObjectKind>
  /** The TTL class an activation with `reason` puts an object of `kind` in. */
  readonly ttlClass: (kind: ObjectKind, reason: ActivationReason | undefined) => TtlClass
  /** A label for an object of `kind` from what its content offers. */
  readonly label: (kind: ObjectKind, source: LabelSource) => string | undefined
  /** The first kind whose descriptor lists the Telegram content, if any. */
  readonly forTelegram: (content: TelegramContent) => ObjectKind | undefined
}

/**
 * What a tool request names that the registry does not know — an `allowed_kinds` entry or a
 * kind hint — as the path and message of its `InvalidRequest`; undefined when all is known.
 *
 * @since 0.2.0
 * @category validation
 */
export const unknownInRequest = (
  registry: Registry,
  allowedKinds: ReadonlyArray<ObjectKind> | undefined,
  hint: TargetKindHint | undefined
): { readonly path: string; readonly message: string } | undefined => {
  if (allowedKinds !== undefined) {
    for (let i = 0; i < allowedKinds.length; i++) {
      if (registry.get(allowedKinds[i]!) === undefined) {
        return { path: `allowed_kinds[${i}]`, message: `kind "${allowedKinds[i]}" is not registered in the KindRegistry` }
      }
    }
  }
  if (hint !== undefined && registry.kindsForHint(hint).length === 0) {
    return {
      path: "normalized_reference_hints.target_kind_hint",
      message: `no registered kind answers the hint "${hint}"`
    }
  }
  return undefined
}

/**
 * A registry that cannot be built: a descriptor that is not a namespaced custom kind, or a
 * kind registered twice. `kind` names it.
 *
 * @since 0.2.0
 * @category errors
 */
export class InvalidKindDescriptor extends Data.TaggedError("InvalidKindDescriptor")<{
  readonly kind: string
  readonly message: string
}> {}

const build = (descriptors: ReadonlyArray<KindDescriptor>): Registry => {
  const byKind = new Map<string, KindDescriptor>()
  for (const d of descriptors) byKind.set(d.kind, d)
  const byHint = new Map<string, Array<ObjectKind>>()
  for (const d of descriptors) {
    for (const hint of d.hints) {
      const list = byHint.get(hint)
      if (list === undefined) byHint.set(hint, [d.kind])
      else list.push(d.kind)
    }
  }
  const none: ReadonlyArray<ObjectKind> = []
  return {
    descriptors,
    get: (kind) => byKind.get(kind),
    kindsForHint: (hint) => byHint.get(hint) ?? none,
    ttlClass: (kind, reason) => {
      const d = byKind.get(kind)
      if (d === undefined) return "short"
      return (reason === undefined ? undefined : d.ttl_class_by_reason?.[reason]) ?? d.ttl_class
    },
    label: (kind, source) => (byKind.get(kind)?.label ?? titled)(source),
    forTelegram: (content) => descriptors.find((d) => d.telegram.includes(content))?.kind
  }
}

/**
 * A registry over the built-ins and `extra` custom kinds; fails for a kind that is not
 * namespaced (`x.ticket`) or is registered twice.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (extra: ReadonlyArray<KindDescriptor> = []): Effect.Effect<Registry, InvalidKindDescriptor> =>
  Effect.suspend(() => {
    const seen = new Set<string>(builtins.map((d) => d.kind))
    for (const d of extra) {
      if (!isCustomKind(d.kind)) {
        return Effect.fail(
          new InvalidKindDescriptor({ kind: d.kind, message: `kind "${d.kind}" is not a namespaced custom kind such as "x.ticket"` })
        )
      }
      if (seen.has(d.kind)) {
        return Effect.fail(new InvalidKindDescriptor({ kind: d.kind, message: `kind "${d.kind}" is registered twice` }))
      }
      seen.add(d.kind)
    }
    return Effect.succeed(build([...builtins, ...extra]))
  })

/**
 * The built-ins' registry.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultRegistry: Registry = build(builtins)

/**
 * The kind registry. A `Context.Reference`: without a layer, the built-in kinds.
 *
 * @since 0.2.0
 * @category tags
 */
export class KindRegistry extends Context.Reference<KindRegistry>()("@deixis/core/KindRegistry", {
  defaultValue: () => defaultRegistry
}) {}

/**
 * The built-ins plus custom kinds.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (extra: ReadonlyArray<KindDescriptor>): Layer.Layer<KindRegistry, InvalidKindDescriptor> =>
  Layer.effect(KindRegistry, make(extra))
