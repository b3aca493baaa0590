/**
 * Events: the only way state enters deixis. A message observed (with the links, media and
 * poll it carries) or edited, an explicit activation, and kind state changes (a poll closed,
 * a reminder updated, fired or cancelled).
 *
 * Applying the same event twice changes nothing: messages are keyed by (chat_id,
 * message_id), every other event by its `event_id`.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { ChatTitle } from "./ChatInfo.js"
import { ActivationReason, Label } from "./ContextObject.js"
import { InvalidEvent, pathOf } from "./Errors.js"
import { lengthCheckedFirst as internalLengthCheckedFirst } from "./internal/lengthFirst.js"
import * as Ids from "./Ids.js"
import { ChatId, MessageId, ObjectId, OptionalTopicId, PollId, Timestamp, TopicId, UserId } from "./Ids.js"
import { MediaKind, ObjectKind } from "./ObjectKind.js"
import { Quote, TextSpan } from "./Quote.js"

/**
 * @since 0.1.0
 * @category schemas
 */
export const EventId = Ids.EventId

/**
 * An array Schema with its `maxItems` bound checked before any element is decoded. A
 * refinement checks only after its `from` side decoded: an array of thousands of valid
 * elements would be decoded whole (hundreds of milliseconds on the event loop, for a 1 MiB
 * body) only to be refused for its length. Everything else is `schema`'s own: the same
 * failure for an array too long whatever its elements hold (the issue the refinement gives,
 * wrapped as the refinements around it wrap it), the same decoding and encoding otherwise, and
 * the same JSON Schema (it stands in for it). `schema` is `Schema.Array(item)` refined, its
 * bound set with `Schema.maxItems`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const lengthCheckedFirst: <A, I, R>(
  schema: Schema.Schema<ReadonlyArray<A>, ReadonlyArray<I>, R>
) => Schema.Schema<ReadonlyArray<A>, ReadonlyArray<I>, R> = internalLengthCheckedFirst

/**
 * An opaque external reference kept with an object: a URL for links, a file id for media.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Ref = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048)).annotations({ identifier: "Ref" })

/**
 * A link a message carries (a url or text_link entity). Only mentioned: it becomes a known
 * object, not an active one. `span`: where the entity is in the message's text (a quote
 * overlapping it selects the link).
 *
 * @since 0.1.0
 * @category schemas
 */
export const LinkRef = Schema.Struct({
  url: Ref,
  title: Schema.optional(Label),
  span: Schema.optional(TextSpan)
}).annotations({ identifier: "LinkRef" })

/**
 * An attachment a message carries. Known, not active, until inspected, described or
 * transcribed. `span`: its caption's place in the message (a quote overlapping it selects the
 * item).
 *
 * @since 0.1.0
 * @category schemas
 */
export const MediaRef = Schema.Struct({
  kind: MediaKind,
  file_id: Schema.optional(Ref),
  label: Schema.optional(Label),
  span: Schema.optional(TextSpan)
}).annotations({ identifier: "MediaRef" })

/**
 * A poll a message carries.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PollRef = Schema.Struct({
  poll_id: PollId,
  question: Schema.optional(Label),
  is_closed: Schema.optionalWith(Schema.Boolean, { default: () => false })
}).annotations({ identifier: "PollRef" })

/**
 * An album's id (Telegram's `media_group_id`): the messages of one album share it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AlbumId = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256)).annotations({ identifier: "AlbumId" })

/**
 * A message seen in a chat: inbound from a person, or outbound (sent by the bot).
 *
 * - `topic_id` null in a chat known to be a forum is its General topic.
 * - `media_group_id`: the album the message belongs to; its media objects carry it as
 *   `album_id`, so a request ambiguous only between one album's members resolves to the album.
 * - `is_forum`: whether the chat is a forum, remembered per chat when given (Telegram's
 *   `chat.is_forum`); absent leaves what is known unchanged.
 * - `quote`: the part of the replied message this reply quotes (Telegram's `quote`); the
 *   replied message's links and media it selects (`Quote.selects`) remember this message in
 *   their `quoted_in`, so a resolution for this message prefers them.
 * - `chat_title`: the chat's title (a group's title, a private chat's name), remembered per
 *   chat for its chat list (`ContextStore.chats`); absent leaves it unchanged.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MessageObserved = Schema.Struct({
  type: Schema.Literal("message_observed"),
  event_id: Schema.optional(EventId),
  chat_id: ChatId,
  topic_id: OptionalTopicId,
  message_id: MessageId,
  reply_to_message_id: Schema.optionalWith(Schema.NullOr(MessageId), { default: () => null }),
  sender_user_id: Schema.optionalWith(Schema.NullOr(UserId), { default: () => null }),
  direction: Schema.optionalWith(Schema.Literal("inbound", "outbound"), { default: () => "inbound" as const }),
  sent_at: Schema.optional(Timestamp),
  links: Schema.optionalWith(lengthCheckedFirst(Schema.Array(LinkRef).pipe(Schema.maxItems(50))), { default: () => [] }),
  media: Schema.optionalWith(lengthCheckedFirst(Schema.Array(MediaRef).pipe(Schema.maxItems(50))), { default: () => [] }),
  poll: Schema.optional(PollRef),
  media_group_id: Schema.optional(AlbumId),
  is_forum: Schema.optional(Schema.Boolean),
  quote: Schema.optional(Quote),
  chat_title: Schema.optional(ChatTitle)
}).annotations({ identifier: "MessageObserved" })

/**
 * @since 0.1.0
 * @category models
 */
export type MessageObserved = typeof MessageObserved.Type

/**
 * A message was edited (Telegram's `edited_message` / `edited_channel_post`): its links and
 * media are derived again from the new content. An object whose link or file changed is
 * replaced by a new, not yet active one; objects the new content no longer carries are
 * removed, and so is an article fetched from a link that is gone. A message not seen before is
 * recorded as observed.
 *
 * Edits apply in `edited_at` order, whatever order they arrive in: one older than the newest
 * applied to the message is superseded (a duplicate). One of the same time — Telegram's
 * `edit_date` has whole seconds — is applied: the later arrival wins, the only order left.
 * Idempotent by `event_id`, by default `message_edited:<message_id>:<edited_at>:<digest>`, the
 * digest of its links, media and album (two edits of one second are two events).
 *
 * @since 0.1.0
 * @category schemas
 */
export const MessageEdited = Schema.Struct({
  ...MessageObserved.fields,
  type: Schema.Literal("message_edited"),
  edited_at: Timestamp
}).annotations({ identifier: "MessageEdited" })

/**
 * @since 0.1.0
 * @category models
 */
export type MessageEdited = typeof MessageEdited.Type

/**
 * An explicit activation of an object: by `object_id`, or by `source_message_id` and
 * `kind` (the object is created when the message carries none of that kind yet — a summary
 * the bot just posted, a reminder it just scheduled).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ObjectActivated = Schema.Struct({
  type: Schema.Literal("object_activated"),
  event_id: EventId,
  chat_id: ChatId,
  reason: ActivationReason,
  at: Schema.optional(Timestamp),
  actor_user_id: Schema.optional(UserId),
  object_id: Schema.optional(ObjectId),
  source_message_id: Schema.optional(MessageId),
  kind: Schema.optional(ObjectKind),
  topic_id: Schema.optional(Schema.NullOr(TopicId)),
  title_or_label: Schema.optional(Label),
  ref: Schema.optional(Ref),
  created_by_user_id: Schema.optional(UserId),
  created_by_bot: Schema.optional(Schema.Boolean),
  due_at: Schema.optional(Timestamp),
  poll_id: Schema.optional(PollId)
}).pipe(
  Schema.filter((e) =>
    e.object_id !== undefined || (e.source_message_id !== undefined && e.kind !== undefined)
      ? undefined
      : {
        path: [e.source_message_id === undefined ? "source_message_id" : "kind"],
        message: "an activation names its object: object_id, or source_message_id with kind"
      }
  )
).annotations({ identifier: "ObjectActivated" })

/**
 * @since 0.1.0
 * @category models
 */
export type ObjectActivated = typeof ObjectActivated.Type

/**
 * A poll was closed. `poll_update` updates carry no chat: name the poll by `poll_id` (mapped
 * to its chat when the poll was first seen), or by `chat_id` and `object_id`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PollClosed = Schema.Struct({
  type: Schema.Literal("poll_closed"),
  event_id: EventId,
  poll_id: Schema.optional(PollId),
  chat_id: Schema.optional(ChatId),
  object_id: Schema.optional(ObjectId),
  at: Schema.optional(Timestamp)
}).pipe(
  Schema.filter((e) =>
    e.poll_id !== undefined || (e.chat_id !== undefined && e.object_id !== undefined)
      ? undefined
      : { path: ["poll_id"], message: "a poll_closed event names its poll: poll_id, or chat_id with object_id" }
  )
).annotations({ identifier: "PollClosed" })

/**
 * @since 0.1.0
 * @category models
 */
export type PollClosed = typeof PollClosed.Type

/**
 * A reminder was changed (new due time or label). It is also an explicit activation
 * (`reminder_updated`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReminderUpdated = Schema.Struct({
  type: Schema.Literal("reminder_updated"),
  event_id: EventId,
  chat_id: ChatId,
  object_id: ObjectId,
  due_at: Schema.optional(Timestamp),
  title_or_label: Schema.optional(Label),
  actor_user_id: Schema.optional(UserId),
  at: Schema.optional(Timestamp)
}).annotations({ identifier: "ReminderUpdated" })

/**
 * @since 0.1.0
 * @category models
 */
export type ReminderUpdated = typeof ReminderUpdated.Type

/**
 * A reminder fired (the bot posted it).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReminderFired = Schema.Struct({
  type: Schema.Literal("reminder_fired"),
  event_id: EventId,
  chat_id: ChatId,
  object_id: ObjectId,
  at: Schema.optional(Timestamp)
}).annotations({ identifier: "ReminderFired" })

/**
 * @since 0.1.0
 * @category models
 */
export type ReminderFired = typeof ReminderFired.Type

/**
 * A reminder was cancelled; its activity ends.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReminderCancelled = Schema.Struct({
  type: Schema.Literal("reminder_cancelled"),
  event_id: EventId,
  chat_id: ChatId,
  object_id: ObjectId,
  actor_user_id: Schema.optional(UserId),
  at: Schema.optional(Timestamp)
}).annotations({ identifier: "ReminderCancelled" })

/**
 * @since 0.1.0
 * @category models
 */
export type ReminderCancelled = typeof ReminderCancelled.Type

/**
 * Any event.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContextEvent = Schema.Union(
  MessageObserved,
  MessageEdited,
  ObjectActivated,
  PollClosed,
  ReminderUpdated,
  ReminderFired,
  ReminderCancelled
).annotations({ identifier: "ContextEvent" })

/**
 * @since 0.1.0
 * @category models
 */
export type ContextEvent = typeof ContextEvent.Type

/**
 * @since 0.1.0
 * @category models
 */
export type ContextEventInput = typeof ContextEvent.Encoded

/**
 * The event as it applies to the chat `to` that its chat migrated into (a Telegram group
 * upgraded to a supergroup): a message's ids become `Ids.migratedMessageId(id)`, as
 * `ContextStore.migrateChat` re-keyed the chat's messages. Other events name no chat and are
 * returned as they are.
 *
 * @since 0.1.0
 * @category migration
 */
export const toMigratedChat = (event: ContextEvent, to: string): ContextEvent =>
  event.type !== "message_observed" && event.type !== "message_edited" ? event : {
    ...event,
    chat_id: to,
    message_id: Ids.migratedMessageId(event.message_id),
    reply_to_message_id: event.reply_to_message_id === null ? null : Ids.migratedMessageId(event.reply_to_message_id)
  }

/**
 * A batch of events (at most 1,000; the length is checked before any event is decoded).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContextEventBatch = lengthCheckedFirst(
  Schema.Array(ContextEvent).pipe(Schema.maxItems(1000, { message: () => "a batch holds at most 1000 events" }))
    .annotations({ identifier: "ContextEventBatch" })
)

const decodeBatch = Schema.decodeUnknownEither(ContextEventBatch, { errors: "first", onExcessProperty: "ignore" })

/**
 * Decodes untrusted input (one event or an array) to events, or an {@link InvalidEvent}
 * naming the failing field.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeEvents = (input: unknown): Either.Either<ReadonlyArray<ContextEvent>, InvalidEvent> =>
  Either.mapLeft(decodeBatch(Array.isArray(input) ? input : [input]), (e) => new InvalidEvent(pathOf(e)))

/**
 * The result of applying a batch: how many events changed state, how many were already
 * applied, and which were skipped because they name an object deixis does not know. A
 * skipped event changes nothing and its id is remembered like an applied one's (replaying a
 * batch changes nothing); send it again under a new id once its object exists. A poll close
 * for a poll not seen yet is kept and applied when the poll is seen.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApplyResult = Schema.Struct({
  applied: Schema.Number,
  duplicates: Schema.Number,
  skipped: Schema.Array(Schema.Struct({ index: Schema.Number, path: Schema.String, message: Schema.String }))
}).annotations({ identifier: "ApplyResult" })

/**
 * @since 0.1.0
 * @category models
 */
export type ApplyResult = typeof ApplyResult.Type
