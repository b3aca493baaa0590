/**
 * The subset of the Bot API's Update that deixis reads, as lenient Schemas: unknown fields are
 * ignored, every field the mapper does not need to place a message is optional, and a field
 * of the wrong type makes the whole update malformed (skipped, never thrown).
 */
import * as Schema from "effect/Schema"

const Int = Schema.Int

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

// What every message's forward_origin holds: its type, when the original was sent, and who sent it.
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
  reply_to_message: Schema.optional(Schema.Unknown),
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
  dice: Schema.optional(Schema.Struct({ emoji: Schema.optional(Schema.String), value: Schema.optional(Int) }))
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
