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
  entities: Schema.optional(Schema.Array(Entity))
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

// One level only: Telegram never nests reply_to_message further.
const RepliedMessage = Schema.Struct({
  message_id: Int,
  from: Schema.optional(User),
  sender_chat: Schema.optional(Chat),
  forum_topic_created: Schema.optional(Schema.Unknown)
})

export const Message = Schema.Struct({
  message_id: Int,
  date: Int,
  chat: Chat,
  from: Schema.optional(User),
  sender_chat: Schema.optional(Chat),
  message_thread_id: Schema.optional(Int),
  is_topic_message: Schema.optional(Schema.Boolean),
  reply_to_message: Schema.optional(RepliedMessage),
  external_reply: Schema.optional(ExternalReply),
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
  contact: Schema.optional(Schema.Unknown)
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

export const UpdateHead = Schema.Struct({ update_id: Int })
