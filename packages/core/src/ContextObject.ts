/**
 * The state model: conversational objects, the message metadata the tools read, and the
 * compact descriptor both tools return.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { ChatId, MessageId, migratedMessageId, ObjectId, Timestamp, TopicId, UserId } from "./Ids.js"
import { ObjectKind } from "./ObjectKind.js"
import { TextSpan } from "./Quote.js"

/**
 * The explicit activation events. Nothing else makes an object active: being mentioned,
 * linked or posted never does.
 *
 * @since 0.1.0
 * @category constants
 */
export const activationReasons = [
  "summarized",
  "url_fetched",
  "media_inspected",
  "media_described",
  "media_transcribed",
  "poll_created",
  "poll_listed",
  "reminder_created",
  "reminder_listed",
  "reminder_updated",
  "summary_generated",
  "summary_reused",
  "resolver_touch",
  "followup_attached"
] as const

/**
 * @since 0.1.0
 * @category schemas
 */
export const ActivationReason = Schema.Literal(...activationReasons).annotations({
  identifier: "ActivationReason"
})

/**
 * @since 0.1.0
 * @category models
 */
export type ActivationReason = typeof ActivationReason.Type

/**
 * TTL classes. `medium`: articles, links, summaries and newly created reminders;
 * `short_medium`: media follow-up; `short`: reminder management after a list or update,
 * messages and bot messages; `poll_open` while a poll is open; `poll_grace` after it closes.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TtlClass = Schema.Literal("medium", "short_medium", "short", "poll_open", "poll_grace").annotations({
  identifier: "TtlClass"
})

/**
 * @since 0.1.0
 * @category models
 */
export type TtlClass = typeof TtlClass.Type

/**
 * The longest `title_or_label` kept, in characters (code points); longer labels are cut
 * with an ellipsis.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxLabelLength = 80

/**
 * Cuts a label to {@link maxLabelLength} code points, never splitting a surrogate pair, and
 * collapses whitespace so a label is always one short line.
 *
 * @since 0.1.0
 * @category utils
 */
export const capLabel = (label: string): string => {
  const flat = label.replace(/\s+/g, " ").trim()
  if (flat.length <= maxLabelLength) return flat
  const points = Array.from(flat)
  return points.length <= maxLabelLength ? flat : points.slice(0, maxLabelLength - 1).join("") + "…"
}

/**
 * A short label: any string on input, capped on decode.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Label = Schema.transform(Schema.String, Schema.String, {
  strict: true,
  decode: capLabel,
  encode: (s) => s
}).annotations({ identifier: "Label", description: `A short label, cut to ${maxLabelLength} characters` })

/**
 * A poll's state.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PollState = Schema.Struct({
  poll_id: Schema.optional(Schema.String),
  state: Schema.Literal("open", "closed"),
  closed_at: Schema.optional(Timestamp)
}).annotations({ identifier: "PollState" })

/**
 * @since 0.1.0
 * @category models
 */
export type PollState = typeof PollState.Type

/**
 * A reminder's state.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReminderState = Schema.Struct({
  due_at: Timestamp,
  status: Schema.Literal("scheduled", "fired", "cancelled")
}).annotations({ identifier: "ReminderState" })

/**
 * @since 0.1.0
 * @category models
 */
export type ReminderState = typeof ReminderState.Type

/**
 * A conversational object, with every field of the spec's state model. `active_until` is
 * null until the object's first explicit activation; `activated_at` is when its current
 * activation episode began (the anchor that caps resolver touches).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContextObject = Schema.Struct({
  object_id: ObjectId,
  kind: ObjectKind,
  chat_id: ChatId,
  topic_id: Schema.NullOr(TopicId),
  source_message_id: MessageId,
  title_or_label: Schema.optional(Label),
  ref: Schema.optional(Schema.String),
  created_at: Timestamp,
  last_touched_at: Timestamp,
  activation_reasons: Schema.Array(ActivationReason),
  created_by_user_id: Schema.optional(UserId),
  created_by_bot: Schema.Boolean,
  ttl_class: TtlClass,
  active_until: Schema.NullOr(Timestamp),
  activated_at: Schema.NullOr(Timestamp),
  poll: Schema.optional(PollState),
  reminder: Schema.optional(ReminderState),
  /** The album (Telegram's `media_group_id`) a media object belongs to. */
  album_id: Schema.optional(Schema.String),
  /** Where the object is in its message's text or caption (a link's entity, a captioned item's caption). */
  span: Schema.optional(TextSpan),
  /** The newest messages (at most `Quote.maxQuotedIn`) replying with a quote that selects this object. */
  quoted_in: Schema.optional(Schema.Array(MessageId))
}).annotations({ identifier: "ContextObject" })

/**
 * @since 0.1.0
 * @category models
 */
export type ContextObject = typeof ContextObject.Type

/**
 * Whether an object is active at `now` (epoch ms).
 *
 * @since 0.1.0
 * @category predicates
 */
export const isActive = (object: ContextObject, now: number): boolean =>
  object.active_until !== null && object.active_until > now

/**
 * The metadata of one message that the tools read: where it is, what it replies to, who
 * sent it. Message text is not part of the core state.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MessageMeta = Schema.Struct({
  chat_id: ChatId,
  message_id: MessageId,
  topic_id: Schema.NullOr(TopicId),
  reply_to_message_id: Schema.NullOr(MessageId),
  sender_user_id: Schema.NullOr(UserId),
  from_bot: Schema.Boolean,
  sent_at: Timestamp
}).annotations({ identifier: "MessageMeta" })

/**
 * @since 0.1.0
 * @category models
 */
export type MessageMeta = typeof MessageMeta.Type

/**
 * The message as it is kept in the chat `to` that its chat migrated into (a Telegram group
 * upgraded to a supergroup): its id and the id it replies to become
 * `Ids.migratedMessageId(id)` (the new chat numbers its messages from 1 again). The one rule
 * for moving a message; every `ContextStore.migrateChat` uses it.
 *
 * @since 0.1.0
 * @category migration
 */
export const messageToMigratedChat = (message: MessageMeta, to: string): MessageMeta => ({
  ...message,
  chat_id: to,
  message_id: migratedMessageId(message.message_id),
  reply_to_message_id: message.reply_to_message_id === null ? null : migratedMessageId(message.reply_to_message_id)
})

/**
 * The object as it is kept in the chat `to` that its chat migrated into: its id stays, its
 * source message's id and the quoting messages' ids (`quoted_in`) become
 * `Ids.migratedMessageId(id)`, as {@link messageToMigratedChat} moves those messages.
 *
 * @since 0.1.0
 * @category migration
 */
export const toMigratedChat = (object: ContextObject, to: string): ContextObject => ({
  ...object,
  chat_id: to,
  source_message_id: migratedMessageId(object.source_message_id),
  ...(object.quoted_in === undefined ? {} : { quoted_in: object.quoted_in.map(migratedMessageId) })
})

/**
 * The id of the object that stands for a plain message, which has no typed object of its own.
 *
 * @since 0.1.0
 * @category constructors
 */
export const messageObjectId = (chatId: string, messageId: string): string => `${chatId}/${messageId}/message`

/**
 * The deterministic id of the `index`-th object of `kind` carried by a message.
 *
 * @since 0.1.0
 * @category constructors
 */
export const objectIdFor = (chatId: string, messageId: string, kind: ObjectKind, index: number): string =>
  index === 0 ? `${chatId}/${messageId}/${kind}` : `${chatId}/${messageId}/${kind}/${index}`

/**
 * The object that stands for a plain message: kind `message` (or `bot_message` when the bot
 * sent it), never active.
 *
 * @since 0.1.0
 * @category constructors
 */
export const messageObject = (message: MessageMeta): ContextObject => ({
  object_id: messageObjectId(message.chat_id, message.message_id),
  kind: message.from_bot ? "bot_message" : "message",
  chat_id: message.chat_id,
  topic_id: message.topic_id,
  source_message_id: message.message_id,
  created_at: message.sent_at,
  last_touched_at: message.sent_at,
  activation_reasons: [],
  ...(message.sender_user_id === null ? {} : { created_by_user_id: message.sender_user_id }),
  created_by_bot: message.from_bot,
  ttl_class: "short",
  active_until: null,
  activated_at: null
})

/**
 * The order in which a chat's fallback takes objects active elsewhere: the one active longest
 * (latest `active_until`) first, then by object id — a total order, the same in every store.
 *
 * @since 0.3.0
 * @category utils
 */
export const compareActivity = (a: ContextObject, b: ContextObject): number =>
  (b.active_until ?? 0) - (a.active_until ?? 0) || (a.object_id < b.object_id ? -1 : a.object_id > b.object_id ? 1 : 0)

/**
 * The first `n` of `objects` by {@link compareActivity}, in that order: one pass, `n` kept at a time.
 *
 * @since 0.3.0
 * @category utils
 */
export const mostActive = (objects: Iterable<ContextObject>, n: number): Array<ContextObject> => {
  const top: Array<ContextObject> = []
  for (const o of objects) {
    let i = top.length
    // Most objects of a long list are turned away by one comparison with the last kept.
    if (i === n && compareActivity(o, top[i - 1]!) >= 0) continue
    while (i > 0 && compareActivity(o, top[i - 1]!) < 0) i--
    top.splice(i, 0, o)
    if (top.length > n) top.pop()
  }
  return top
}

/**
 * Where a candidate was found: the reply target itself, further up its reply chain, the
 * request's own scope (its topic, or the whole chat when the request has no topic), or
 * another topic of the chat (the fallback).
 *
 * @since 0.1.0
 * @category models
 */
export type PoolTier = "reply_target" | "reply_chain" | "home" | "fallback"

/**
 * Whether the message of an expired object may stand in for it at this tier: always on the
 * reply chain (it reaches any topic), elsewhere only in the object's own topic. The two differ
 * only when an object was activated before its message was seen, and the message then turned
 * out to be in another topic: it must not carry a candidate out of that topic.
 *
 * @since 0.1.0
 * @category constructors
 */
export const standsIn = (object: ContextObject, message: MessageMeta, tier: PoolTier): boolean =>
  tier === "reply_target" || tier === "reply_chain" || message.topic_id === object.topic_id

/**
 * The compact, safe descriptor both tools return: no activation bookkeeping, no text.
 * `ref` is the object's external reference (a link's URL, a media file id) when known;
 * `album_id` the album a media object belongs to.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ObjectDescriptor = Schema.Struct({
  object_id: ObjectId,
  kind: ObjectKind,
  source_message_id: MessageId,
  chat_id: ChatId,
  topic_id: Schema.NullOr(TopicId),
  title_or_label: Schema.optional(Schema.String),
  ref: Schema.optional(Schema.String),
  created_by_user_id: Schema.optional(UserId),
  created_by_bot: Schema.Boolean,
  created_at: Timestamp,
  last_touched_at: Timestamp,
  poll: Schema.optional(PollState),
  reminder: Schema.optional(ReminderState),
  album_id: Schema.optional(Schema.String)
}).annotations({ identifier: "ObjectDescriptor" })

/**
 * @since 0.1.0
 * @category models
 */
export type ObjectDescriptor = typeof ObjectDescriptor.Type

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/**
 * Projects an object to its compact descriptor, with a stable key order (the required
 * fields, then the optional ones present). Built field by field: it runs for every returned
 * candidate, and spreads allocate.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toDescriptor = (o: ContextObject): ObjectDescriptor => {
  const d: Mutable<ObjectDescriptor> = {
    object_id: o.object_id,
    kind: o.kind,
    source_message_id: o.source_message_id,
    chat_id: o.chat_id,
    topic_id: o.topic_id,
    created_by_bot: o.created_by_bot,
    created_at: o.created_at,
    last_touched_at: o.last_touched_at
  }
  if (o.title_or_label !== undefined) d.title_or_label = o.title_or_label
  if (o.ref !== undefined) d.ref = o.ref
  if (o.created_by_user_id !== undefined) d.created_by_user_id = o.created_by_user_id
  if (o.poll !== undefined) d.poll = o.poll
  if (o.reminder !== undefined) d.reminder = o.reminder
  if (o.album_id !== undefined) d.album_id = o.album_id
  return d
}
