/**
 * The structured history item: who said what, when, in reply to what, quoting whom.
 *
 * This is the text side of a message that `@deixis/core` deliberately does not hold. Ids and
 * timestamps are core's schemas (`Id`, `OptionalTopicId`, `Timestamp`); core's own message
 * metadata can be derived from an item with {@link toMessageMeta}, so an adapter decodes a
 * platform update once and feeds both packages from the same values.
 *
 * @since 0.1.0
 */
import { InvalidEvent, pathOf } from "@deixis/core/Errors"
import type { MessageMeta } from "@deixis/core/ContextObject"
import { ChatId, formatTimestamp, MessageId, migratedMessageId, OptionalTopicId, Timestamp, UserId } from "@deixis/core/Ids"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Mutable } from "effect/Types"
import * as Mentions from "./Mentions.js"
import * as PeopleRef from "./PeopleRef.js"

/**
 * Direction and type of an item.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Kind = Schema.Literal("inbound_user", "inbound_reaction", "outbound_agent", "outbound_reaction", "system")
  .annotations({ identifier: "HistoryKind" })

/**
 * @since 0.1.0
 * @category models
 */
export type Kind = typeof Kind.Type

/**
 * The source platform (`telegram`, `maep`, …): lower case letters, digits, `_`, `.`, `-`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Channel = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9_.-]{1,32}$/, { message: () => "a channel is 1-32 of a-z 0-9 _ . -" })
).annotations({ identifier: "Channel" })

/**
 * The speaker. `display_ref` is {@link PeopleRef.format}'s reference.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Sender = Schema.Struct({
  user_id: Schema.optionalWith(Schema.NullOr(UserId), { default: () => null }),
  username: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  nickname: Schema.String,
  is_bot: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  display_ref: Schema.String
}).annotations({ identifier: "Sender" })

/**
 * @since 0.1.0
 * @category models
 */
export type Sender = typeof Sender.Type

/**
 * A quoted message: who is quoted, the quoted text, and its Markdown blockquote.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Quote = Schema.Struct({
  sender_ref: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  text: Schema.String,
  markdown_block: Schema.String
}).annotations({ identifier: "Quote" })

/**
 * @since 0.1.0
 * @category models
 */
export type Quote = typeof Quote.Type

/**
 * The kinds of attachment the summary names.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AttachmentKind = Schema.Literal(
  "photo",
  "video",
  "animation",
  "video_note",
  "voice",
  "audio",
  "document",
  "sticker",
  "poll",
  "location",
  "contact",
  "other"
).annotations({ identifier: "AttachmentKind" })

/**
 * A compact attachment summary: its kind and, when it has one, a short name (file name,
 * poll question, sticker emoji). Never the content.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Attachment = Schema.Struct({
  kind: AttachmentKind,
  name: Schema.optional(Schema.String.pipe(Schema.maxLength(256)))
}).annotations({ identifier: "Attachment" })

/**
 * @since 0.1.0
 * @category models
 */
export type Attachment = typeof Attachment.Type

/**
 * Where a forwarded message came from: a user, a user who hides their account, a chat
 * (an anonymous admin's group), or a channel — and when it was first sent. `automatic` marks
 * a channel post forwarded by Telegram itself into the channel's discussion group.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Forward = Schema.Struct({
  origin: Schema.Literal("user", "hidden_user", "chat", "channel"),
  sender_ref: Schema.String.pipe(Schema.maxLength(512)),
  sent_at: Timestamp,
  automatic: Schema.optionalWith(Schema.Boolean, { default: () => false })
}).annotations({ identifier: "Forward" })

/**
 * @since 0.1.0
 * @category models
 */
export type Forward = typeof Forward.Type

/**
 * The history item. Required on the wire: `channel`, `kind`, `chat_id`, `sent_at` (RFC 3339,
 * kept as epoch ms), `sender`, `text` (after mention normalisation). The rest default to null
 * (or no attachments). `bot_response_id` is the id of the bot's reply to this message, set
 * once the reply is sent, so a user replying to the bot's answer finds this message.
 *
 * Telegram traffic adds, each absent unless it applies: `edited_at` (the item is the message as
 * last edited), `forward` (the
 * message was forwarded: its origin; the sender is who forwarded it), `album_id` (one of an
 * album's items), `seen_via: "reply"` (the bot never received the message itself, only the
 * copy embedded in a reply to it — a store never lets such a copy overwrite the message it
 * holds), and `event_id` (the identity of an item without a message id, such as a reaction,
 * so a redelivered one is stored once).
 *
 * @since 0.1.0
 * @category schemas
 */
export const HistoryItem = Schema.Struct({
  channel: Channel,
  kind: Kind,
  chat_id: ChatId,
  topic_id: OptionalTopicId,
  chat_type: Schema.optionalWith(Schema.NullOr(Schema.String.pipe(Schema.maxLength(32))), { default: () => null }),
  message_id: Schema.optionalWith(Schema.NullOr(MessageId), { default: () => null }),
  reply_to_message_id: Schema.optionalWith(Schema.NullOr(MessageId), { default: () => null }),
  bot_response_id: Schema.optionalWith(Schema.NullOr(MessageId), { default: () => null }),
  sent_at: Timestamp,
  sender: Sender,
  text: Schema.String.pipe(Schema.maxLength(32_768)),
  quote: Schema.optionalWith(Schema.NullOr(Quote), { default: () => null }),
  attachments: Schema.optionalWith(Schema.Array(Attachment).pipe(Schema.maxItems(50)), { default: () => [] }),
  edited_at: Schema.optional(Timestamp),
  forward: Schema.optional(Forward),
  album_id: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))),
  seen_via: Schema.optional(Schema.Literal("reply")),
  event_id: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256)))
}).annotations({ identifier: "HistoryItem" })

/**
 * @since 0.1.0
 * @category models
 */
export type HistoryItem = typeof HistoryItem.Type

/**
 * The wire form of an item.
 *
 * @since 0.1.0
 * @category models
 */
export type HistoryItemEncoded = typeof HistoryItem.Encoded

const decodeItem = Schema.decodeUnknownEither(HistoryItem)

/**
 * Decodes untrusted input. A missing or malformed field fails with core's `InvalidEvent`
 * whose `path` names it.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = (input: unknown): Effect.Effect<HistoryItem, InvalidEvent> =>
  Effect.suspend(() => {
    const result = decodeItem(input)
    return result._tag === "Right"
      ? Effect.succeed(result.right)
      : Effect.fail(new InvalidEvent(pathOf(result.left)))
  })

/**
 * Encodes an item to its wire form.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encode: (item: HistoryItem) => HistoryItemEncoded = Schema.encodeSync(HistoryItem)

/**
 * {@link encode} for items built by this library or decoded by it (already valid): the same
 * wire form, byte for byte, without re-validating — an item is encoded for every message a
 * bot records, and the Schema walk costs more than building the item.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeTrusted = (item: HistoryItem): HistoryItemEncoded => {
  const out: { -readonly [K in keyof HistoryItemEncoded]: HistoryItemEncoded[K] } = {
    channel: item.channel,
    kind: item.kind,
    chat_id: item.chat_id,
    topic_id: item.topic_id,
    chat_type: item.chat_type,
    message_id: item.message_id,
    reply_to_message_id: item.reply_to_message_id,
    bot_response_id: item.bot_response_id,
    sent_at: formatTimestamp(item.sent_at),
    sender: item.sender,
    text: item.text,
    quote: item.quote,
    attachments: item.attachments
  }
  if (item.edited_at !== undefined) out.edited_at = formatTimestamp(item.edited_at)
  if (item.forward !== undefined) out.forward = { ...item.forward, sent_at: formatTimestamp(item.forward.sent_at) }
  if (item.album_id !== undefined) out.album_id = item.album_id
  if (item.seen_via !== undefined) out.seen_via = item.seen_via
  if (item.event_id !== undefined) out.event_id = item.event_id
  return out
}

/**
 * The item as it is kept in the chat `to` that its chat migrated into (a Telegram group
 * upgraded to a supergroup): its message, reply and response ids become
 * `Ids.migratedMessageId(id)`, as every store's `migrateChat` re-keys them. The one rule for
 * moving an item: the stores' migrations and the recorder of a late update use it.
 *
 * @since 0.1.0
 * @category migration
 */
export const toMigratedChat = (item: HistoryItem, to: string): HistoryItem => ({
  ...item,
  chat_id: to,
  message_id: migratedOrNull(item.message_id),
  reply_to_message_id: migratedOrNull(item.reply_to_message_id),
  bot_response_id: migratedOrNull(item.bot_response_id)
})

const migratedOrNull = (id: string | null): string | null => (id === null ? null : migratedMessageId(id))

/**
 * The Markdown blockquote of a quote: `> [Bob](tg:@bob): text`, every line quoted.
 *
 * @since 0.1.0
 * @category formatting
 */
export const quoteBlock = (senderRef: string | null, text: string): string =>
  text
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((line, i) => `> ${i === 0 && senderRef !== null ? `${senderRef}: ` : ""}${line}`.trimEnd())
    .join("\n")

/**
 * A quote as a caller knows it: the quoted person (if known), the text and its entities.
 *
 * @since 0.1.0
 * @category models
 */
export interface QuoteInput {
  readonly sender?: PeopleRef.Person | null
  readonly text: string
  readonly entities?: ReadonlyArray<Mentions.MessageEntity>
}

/**
 * What {@link make} builds an item from: raw person data and message entities rather than
 * formatted references, so formatting and normalisation happen in one place.
 *
 * @since 0.1.0
 * @category models
 */
export interface MakeInput {
  readonly channel?: string
  readonly kind: Kind
  readonly chat_id: string
  readonly topic_id?: string | null
  readonly chat_type?: string | null
  readonly message_id?: string | null
  readonly reply_to_message_id?: string | null
  readonly bot_response_id?: string | null
  /** Epoch ms (Telegram's `message.date` × 1000); the Clock's now when absent (the bot's own output). */
  readonly sent_at?: number
  readonly sender: PeopleRef.Person
  readonly text: string
  readonly entities?: ReadonlyArray<Mentions.MessageEntity>
  /** People the mentions may name, for their display names. */
  readonly people?: ReadonlyArray<PeopleRef.Person>
  readonly quote?: QuoteInput | null
  readonly attachments?: ReadonlyArray<Attachment>
  /** Epoch ms of the last edit. */
  readonly edited_at?: number | undefined
  /** Where a forwarded message came from: the original sender (or chat) and when it was first sent. */
  readonly forward?: ForwardInput | undefined
  readonly album_id?: string | undefined
  readonly seen_via?: "reply" | undefined
  readonly event_id?: string | undefined
}

/**
 * A forward's origin as a caller knows it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ForwardInput {
  readonly origin: Forward["origin"]
  readonly sender: PeopleRef.Person
  /** Epoch ms. */
  readonly sent_at: number
  readonly automatic?: boolean
}

/**
 * An item and the warnings met while building it (missing usernames, skipped entities).
 *
 * @since 0.1.0
 * @category models
 */
export interface Built {
  readonly item: HistoryItem
  readonly warnings: ReadonlyArray<string>
}

const noPeople: ReadonlyArray<PeopleRef.Person> = []

/**
 * Builds an item at `sentAt` (epoch ms): formats the sender and quote references, normalises
 * mentions, renders the quote block. Pure; never fails.
 *
 * @since 0.1.0
 * @category constructors
 */
export const build = (input: MakeInput, sentAt: number): Built => {
  const warnings: Array<string> = []
  // The directory is read only for a mention: most texts have none (two Maps per item otherwise).
  const mentions = Mentions.hasMention(input.entities) || Mentions.hasMention(input.quote?.entities ?? undefined)
  const people = Mentions.directory(mentions ? input.people ?? noPeople : noPeople)
  const sender = PeopleRef.format(input.sender)
  if (sender.warning !== null) warnings.push(`sender: ${sender.warning}`)
  const body = Mentions.normalize(input.text, input.entities ?? [], people)
  warnings.push(...body.warnings)
  let quote: Quote | null = null
  if (input.quote !== undefined && input.quote !== null) {
    const quoted = input.quote.sender === undefined || input.quote.sender === null
      ? null
      : PeopleRef.format(input.quote.sender)
    if (quoted?.warning) warnings.push(`quote: ${quoted.warning}`)
    const text = Mentions.normalize(input.quote.text, input.quote.entities ?? [], people)
    warnings.push(...text.warnings)
    const senderRef = quoted === null ? null : quoted.ref
    quote = { sender_ref: senderRef, text: text.text, markdown_block: quoteBlock(senderRef, text.text) }
  }
  let forward: Forward | undefined
  if (input.forward !== undefined) {
    const origin = PeopleRef.format(input.forward.sender)
    if (origin.warning !== null) warnings.push(`forward: ${origin.warning}`)
    forward = {
      origin: input.forward.origin,
      sender_ref: origin.ref,
      sent_at: input.forward.sent_at,
      automatic: input.forward.automatic ?? false
    }
  }
  const item: Mutable<HistoryItem> = {
    channel: input.channel ?? "telegram",
    kind: input.kind,
    chat_id: input.chat_id,
    topic_id: input.topic_id ?? null,
    chat_type: input.chat_type ?? null,
    message_id: input.message_id ?? null,
    reply_to_message_id: input.reply_to_message_id ?? null,
    bot_response_id: input.bot_response_id ?? null,
    sent_at: sentAt,
    sender: {
      user_id: input.sender.user_id ?? null,
      username: sender.username,
      nickname: sender.nickname,
      is_bot: input.sender.is_bot ?? (input.kind === "outbound_agent" || input.kind === "outbound_reaction"),
      display_ref: sender.ref
    },
    text: body.text,
    quote,
    attachments: input.attachments ?? []
  }
  // Set one by one, in this order: no object per absent field (this runs for every message).
  if (input.edited_at !== undefined) item.edited_at = input.edited_at
  if (forward !== undefined) item.forward = forward
  if (input.album_id !== undefined) item.album_id = input.album_id
  if (input.seen_via !== undefined) item.seen_via = input.seen_via
  if (input.event_id !== undefined) item.event_id = input.event_id
  return { item, warnings }
}

/**
 * Builds an item, taking the time from the Clock when `sent_at` is absent and logging each
 * warning (a missing username degrades the reference; it never fails).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (input: MakeInput): Effect.Effect<HistoryItem> =>
  Effect.flatMap(
    input.sent_at === undefined ? Clock.currentTimeMillis : Effect.succeed(input.sent_at),
    (sentAt) => {
      const built = build(input, sentAt)
      return built.warnings.length === 0
        ? Effect.succeed(built.item)
        : Effect.as(
          Effect.forEach(built.warnings, (warning) => Effect.logWarning(warning), { discard: true }).pipe(
            Effect.annotateLogs({ chat_id: input.chat_id, message_id: input.message_id ?? null })
          ),
          built.item
        )
    }
  )

/**
 * Whether the bot produced the item.
 *
 * @since 0.1.0
 * @category predicates
 */
export const isOutbound = (item: HistoryItem): boolean =>
  item.kind === "outbound_agent" || item.kind === "outbound_reaction"

/**
 * How much an item of a message says, for choosing between two copies of it: the message
 * itself over a copy seen only inside a reply to it, then the latest edit. A store replaces
 * a stored item only with one that ranks at least as high, so a redelivered original never
 * undoes an edit and an embedded copy never overwrites the message.
 *
 * @since 0.1.0
 * @category ordering
 */
export const compareVersions = (a: HistoryItem, b: HistoryItem): number =>
  (a.seen_via === undefined ? 1 : 0) - (b.seen_via === undefined ? 1 : 0) ||
  (a.edited_at ?? Number.NEGATIVE_INFINITY) - (b.edited_at ?? Number.NEGATIVE_INFINITY) || 0

const editTime = (item: HistoryItem): number => item.edited_at ?? Number.NEGATIVE_INFINITY

/**
 * The item a store keeps when `incoming` arrives for a message it holds as `stored`, whatever
 * order the copies arrive in (two bot processes, a webhook retry, a late client):
 *
 * - the content (`text`, `attachments`, `edited_at`) of the latest edit: an older edit, or a
 *   redelivered original, never undoes a newer one. Between two copies of the same edit time
 *   (Telegram's `edit_date` has whole seconds) the later arrival wins — the only order left —
 *   unless it is a copy seen only in a reply and the stored one is the message itself;
 * - the rest (reply target, quote, forward, `seen_via`) of the message itself over a copy seen
 *   only inside a reply to it (the embedded copy lacks them), else of the copy the content is from;
 * - the stored topic (the item's position lives there), and the stored `bot_response_id` when
 *   the kept copy has none.
 *
 * Undefined when the stored item stays as it is.
 *
 * @since 0.1.0
 * @category ordering
 */
export const mergeVersions = (stored: HistoryItem, incoming: HistoryItem): HistoryItem | undefined => {
  const storedDirect = stored.seen_via === undefined
  const newer = editTime(incoming) - editTime(stored)
  // Between two copies of one rank the later arrival breaks a tie; otherwise the message itself does.
  const tie = storedDirect === (incoming.seen_via === undefined) || !storedDirect ? incoming : stored
  const content = newer > 0 ? incoming : newer < 0 ? stored : tie
  const structure = storedDirect === (incoming.seen_via === undefined) ? content : storedDirect ? stored : incoming
  if (structure === stored && content === stored) return undefined
  const item: HistoryItem = structure === content
    ? structure
    : { ...structure, text: content.text, attachments: content.attachments, edited_at: content.edited_at! }
  const topic = stored.topic_id === item.topic_id ? {} : { topic_id: stored.topic_id }
  const response = item.bot_response_id === null && stored.bot_response_id !== null
    ? { bot_response_id: stored.bot_response_id }
    : {}
  return Object.keys(topic).length === 0 && Object.keys(response).length === 0 ? item : { ...item, ...topic, ...response }
}

/**
 * Whether `incoming`, an item without a message id, replaces the stored item with the same
 * `event_id` (a reaction changed: its identity is the actor's reaction to one message): when
 * it is newer, or of the same time (Telegram's dates have whole seconds) and says something
 * else — the later arrival wins. A redelivered copy, or an older version arriving late, does not.
 *
 * @since 0.1.0
 * @category ordering
 */
export const replacesEventItem = (stored: HistoryItem, incoming: HistoryItem): boolean =>
  incoming.sent_at > stored.sent_at || (incoming.sent_at === stored.sent_at && incoming.text !== stored.text)

/**
 * Core's message metadata for an item that has a message id: what `@deixis/core`'s
 * ContextStore keeps of the same message (no text).
 *
 * @since 0.1.0
 * @category conversions
 */
export const toMessageMeta = (item: HistoryItem): Option.Option<MessageMeta> =>
  item.message_id === null
    ? Option.none()
    : Option.some({
      chat_id: item.chat_id,
      message_id: item.message_id,
      topic_id: item.topic_id,
      reply_to_message_id: item.reply_to_message_id,
      sender_user_id: item.sender.user_id,
      from_bot: isOutbound(item) || item.sender.is_bot,
      sent_at: item.sent_at
    })
