/**
 * The subset of the Bot API's Update that deixis reads, as lenient Schemas: unknown fields are
 * ignored, every field the mapper does not need to place a message is optional, and a field
 * of the wrong type makes the whole update malformed (skipped, never thrown).
 */
import * as Schema from "effect/Schema"

// Safe integers only: a larger JSON number is not the id Telegram sent (see core's Ids).
const Int = Schema.Int.pipe(Schema.filter((n) => Number.isSafeInteger(n) || "an integer within ±(2^53 − 1)"))

export const User = Schema.Struct({
  id: Int,
  is_bot: Schema.optional(Schema.Boolean),
  first_name: Schema.optional(Schema.String),
  last_name: Schema.optional(Schema.String),
  username: Schema.optional(Schema.String)
})
export type User = typeof User.Type

export const Chat = Schema.Struct({
  id: Int,
  type: Schema.optional(Schema.String),
  is_forum: Schema.optional(Schema.Boolean),
  is_direct_messages: Schema.optional(Schema.Boolean),
  title: Schema.optional(Schema.String),
  username: Schema.optional(Schema.String),
  first_name: Schema.optional(Schema.String),
  last_name: Schema.optional(Schema.String)
})
export type Chat = typeof Chat.Type

export const Entity = Schema.Struct({
  type: Schema.String,
  offset: Int,
  length: Int,
  url: Schema.optional(Schema.String),
  user: Schema.optional(User)
})
export type Entity = typeof Entity.Type

const FileLike = Schema.Struct({
  file_id: Schema.String,
  file_name: Schema.optional(Schema.String),
  mime_type: Schema.optional(Schema.String),
  title: Schema.optional(Schema.String),
  performer: Schema.optional(Schema.String)
})
export type FileLike = typeof FileLike.Type

const PhotoSize = Schema.Struct({
  file_id: Schema.String,
  width: Schema.optional(Schema.Number),
  height: Schema.optional(Schema.Number)
})

export const Poll = Schema.Struct({
  id: Schema.String,
  question: Schema.optional(Schema.String),
  is_closed: Schema.optional(Schema.Boolean)
})
export type Poll = typeof Poll.Type

const TextQuote = Schema.Struct({
  text: Schema.String,
  entities: Schema.optional(Schema.Array(Entity)),
  position: Schema.optional(Int),
  is_manual: Schema.optional(Schema.Boolean)
})

const MessageOrigin = Schema.Struct({
  type: Schema.String,
  sender_user: Schema.optional(User),
  sender_user_name: Schema.optional(Schema.String),
  sender_chat: Schema.optional(Chat),
  chat: Schema.optional(Chat)
})
export type MessageOrigin = typeof MessageOrigin.Type

const ExternalReply = Schema.Struct({
  origin: Schema.optional(MessageOrigin),
  chat: Schema.optional(Chat),
  message_id: Schema.optional(Int)
})

// What every message's forward_origin holds: its type, when the original was sent, and who sent it.
/** A channel direct-messages chat's topic: one user's conversation with the channel. */
export const DirectMessagesTopic = Schema.Struct({
  topic_id: Int,
  user: Schema.optional(User)
})
export type DirectMessagesTopic = typeof DirectMessagesTopic.Type

export const ForwardOrigin = Schema.Struct({
  type: Schema.String,
  date: Int,
  sender_user: Schema.optional(User),
  sender_user_name: Schema.optional(Schema.String),
  sender_chat: Schema.optional(Chat),
  chat: Schema.optional(Chat)
})
export type ForwardOrigin = typeof ForwardOrigin.Type

/**
 * A message. `reply_to_message` and `pinned_message` are full messages too (one level:
 * Telegram never nests a reply's reply), decoded on their own with this same Schema.
 */
export const Message = Schema.Struct({
  message_id: Int,
  date: Int,
  chat: Chat,
  from: Schema.optional(User),
  sender_chat: Schema.optional(Chat),
  message_thread_id: Schema.optional(Int),
  is_topic_message: Schema.optional(Schema.Boolean),
  direct_messages_topic: Schema.optional(DirectMessagesTopic),
  guest_query_id: Schema.optional(Schema.String),
  reply_to_message: Schema.optional(Schema.Unknown),
  reply_to_checklist_task_id: Schema.optional(Int),
  external_reply: Schema.optional(ExternalReply),
  edit_date: Schema.optional(Int),
  media_group_id: Schema.optional(Schema.String),
  forward_origin: Schema.optional(ForwardOrigin),
  is_automatic_forward: Schema.optional(Schema.Boolean),
  pinned_message: Schema.optional(Schema.Unknown),
  forum_topic_created: Schema.optional(Schema.Unknown),
  migrate_to_chat_id: Schema.optional(Int),
  migrate_from_chat_id: Schema.optional(Int),
  quote: Schema.optional(TextQuote),
  text: Schema.optional(Schema.String),
  entities: Schema.optional(Schema.Array(Entity)),
  caption: Schema.optional(Schema.String),
  caption_entities: Schema.optional(Schema.Array(Entity)),
  photo: Schema.optional(Schema.Array(PhotoSize)),
  video: Schema.optional(FileLike),
  video_note: Schema.optional(FileLike),
  voice: Schema.optional(FileLike),
  audio: Schema.optional(FileLike),
  document: Schema.optional(FileLike),
  animation: Schema.optional(FileLike),
  sticker: Schema.optional(Schema.Struct({ file_id: Schema.String, emoji: Schema.optional(Schema.String) })),
  poll: Schema.optional(Poll),
  location: Schema.optional(Schema.Unknown),
  venue: Schema.optional(Schema.Struct({ title: Schema.optional(Schema.String), address: Schema.optional(Schema.String) })),
  contact: Schema.optional(Schema.Unknown),
  dice: Schema.optional(Schema.Struct({ emoji: Schema.optional(Schema.String), value: Schema.optional(Int) })),
  // Read leniently by internal/content.ts: a part of the wrong shape is left out, never the message.
  checklist: Schema.optional(Schema.Unknown),
  checklist_tasks_done: Schema.optional(Schema.Unknown),
  checklist_tasks_added: Schema.optional(Schema.Unknown),
  rich_message: Schema.optional(Schema.Unknown)
})
export type Message = typeof Message.Type

const Reaction = Schema.Struct({
  type: Schema.String,
  emoji: Schema.optional(Schema.String),
  custom_emoji_id: Schema.optional(Schema.String)
})
export type Reaction = typeof Reaction.Type

export const MessageReaction = Schema.Struct({
  chat: Chat,
  message_id: Int,
  user: Schema.optional(User),
  actor_chat: Schema.optional(Chat),
  date: Int,
  old_reaction: Schema.Array(Reaction),
  new_reaction: Schema.Array(Reaction)
})
export type MessageReaction = typeof MessageReaction.Type

export const PollAnswer = Schema.Struct({
  poll_id: Schema.String,
  user: Schema.optional(User),
  voter_chat: Schema.optional(Chat),
  option_ids: Schema.Array(Int)
})

// -----------------------------------------------------------------------------
// A hand-compiled check of `Message`, for the hot path: every update carries one or two.
// Schema's generic decoder costs more than all the mapping after it; this checks the same
// fields the same way (unknown fields ignored, a field of the wrong type fails the message)
// and returns the input itself instead of a copy. `test/UpdateMapper.test.ts` holds it to
// the Schema's verdicts.
// -----------------------------------------------------------------------------

type Check = (v: unknown) => string | undefined

const isObject = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === "object" && v !== null && !Array.isArray(v)
const cInt: Check = (v) => (typeof v === "number" && Number.isSafeInteger(v) ? undefined : "expected an integer")
// As `Schema.Number`: any number, NaN included (JSON never carries one).
const cNumber: Check = (v) => (typeof v === "number" ? undefined : "expected a number")
const cString: Check = (v) => (typeof v === "string" ? undefined : "expected a string")
const cBoolean: Check = (v) => (typeof v === "boolean" ? undefined : "expected a boolean")
const cUnknown: Check = () => undefined

const cStruct = (required: ReadonlyArray<readonly [string, Check]>, optional: ReadonlyArray<readonly [string, Check]>): Check => {
  // The keys and their checks side by side: indexed loops, no destructuring per field checked.
  const requiredKeys = required.map(([key]) => key)
  const requiredChecks = required.map(([, check]) => check)
  const optionalKeys = optional.map(([key]) => key)
  const optionalChecks = optional.map(([, check]) => check)
  return (v) => {
    if (!isObject(v)) return "expected an object"
    for (let i = 0; i < requiredKeys.length; i++) {
      const key = requiredKeys[i]!
      const value = v[key]
      if (value === undefined) return `${key}: is missing`
      const issue = requiredChecks[i]!(value)
      if (issue !== undefined) return `${key}: ${issue}`
    }
    for (let i = 0; i < optionalKeys.length; i++) {
      const value = v[optionalKeys[i]!]
      if (value === undefined) continue
      const issue = optionalChecks[i]!(value)
      if (issue !== undefined) return `${optionalKeys[i]!}: ${issue}`
    }
    return undefined
  }
}

const cArray = (item: Check): Check => (v) => {
  if (!Array.isArray(v)) return "expected an array"
  for (let i = 0; i < v.length; i++) {
    const issue = item(v[i])
    if (issue !== undefined) return `[${i}]: ${issue}`
  }
  return undefined
}

const cUser = cStruct([["id", cInt]], [["is_bot", cBoolean], ["first_name", cString], ["last_name", cString], ["username", cString]])
const cChat = cStruct([["id", cInt]], [
  ["type", cString], ["is_forum", cBoolean], ["is_direct_messages", cBoolean], ["title", cString], ["username", cString], ["first_name", cString], ["last_name", cString]
])
const cEntity = cStruct([["type", cString], ["offset", cInt], ["length", cInt]], [["url", cString], ["user", cUser]])
const cFile = cStruct([["file_id", cString]], [["file_name", cString], ["mime_type", cString], ["title", cString], ["performer", cString]])
const cOrigin = cStruct([["type", cString]], [["sender_user", cUser], ["sender_user_name", cString], ["sender_chat", cChat], ["chat", cChat]])
const cForwardOrigin = cStruct([["type", cString], ["date", cInt]], [
  ["sender_user", cUser], ["sender_user_name", cString], ["sender_chat", cChat], ["chat", cChat]
])

const cMessage = cStruct([["message_id", cInt], ["date", cInt], ["chat", cChat]], [
  [`from`, cUser],
  ["sender_chat", cChat],
  ["message_thread_id", cInt],
  ["is_topic_message", cBoolean],
  ["direct_messages_topic", cStruct([["topic_id", cInt]], [["user", cUser]])],
  ["guest_query_id", cString],
  ["reply_to_message", cUnknown],
  ["reply_to_checklist_task_id", cInt],
  ["external_reply", cStruct([], [["origin", cOrigin], ["chat", cChat], ["message_id", cInt]])],
  ["edit_date", cInt],
  ["media_group_id", cString],
  ["forward_origin", cForwardOrigin],
  ["is_automatic_forward", cBoolean],
  ["pinned_message", cUnknown],
  ["forum_topic_created", cUnknown],
  ["migrate_to_chat_id", cInt],
  ["migrate_from_chat_id", cInt],
  ["quote", cStruct([["text", cString]], [["entities", cArray(cEntity)], ["position", cInt], ["is_manual", cBoolean]])],
  ["text", cString],
  ["entities", cArray(cEntity)],
  ["caption", cString],
  ["caption_entities", cArray(cEntity)],
  ["photo", cArray(cStruct([["file_id", cString]], [["width", cNumber], ["height", cNumber]]))],
  ["video", cFile],
  ["video_note", cFile],
  ["voice", cFile],
  ["audio", cFile],
  ["document", cFile],
  ["animation", cFile],
  ["sticker", cStruct([["file_id", cString]], [["emoji", cString]])],
  ["poll", cStruct([["id", cString]], [["question", cString], ["is_closed", cBoolean]])],
  ["location", cUnknown],
  ["venue", cStruct([], [["title", cString], ["address", cString]])],
  ["contact", cUnknown],
  ["dice", cStruct([], [["emoji", cString], ["value", cInt]])],
  ["checklist", cUnknown],
  ["checklist_tasks_done", cUnknown],
  ["checklist_tasks_added", cUnknown],
  ["rich_message", cUnknown]
])

/**
 * `input` as a {@link Message}, or the first problem found (`chat: is missing`): the
 * verdict of `Schema.decodeUnknownEither(Message)`, without building a copy.
 */
export const parseMessage = (input: unknown): { readonly ok: true; readonly message: Message } | { readonly ok: false; readonly issue: string } => {
  const issue = cMessage(input)
  return issue === undefined ? { ok: true, message: input as Message } : { ok: false, issue }
}
