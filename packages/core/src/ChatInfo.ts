/**
 * What deixis remembers of a chat as a whole: whether it is a forum (so a message or a request
 * without a topic is its General topic, not the whole chat), and whether it migrated to
 * another chat id (a Telegram group upgraded to a supergroup).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { ChatId, Timestamp } from "./Ids.js"

/**
 * The topic id of a forum's General topic: Telegram's own id for it. Its messages carry no
 * thread id; to post in it, send without one.
 *
 * @since 0.1.0
 * @category constants
 */
export const generalTopicId = "1"

/**
 * A chat as the ContextStore knows it. A chat never seen reads as `{ is_forum: false,
 * migrated_to: null }`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatInfo = Schema.Struct({
  chat_id: ChatId,
  is_forum: Schema.Boolean,
  /** The chat this one migrated to, once it did; its data lives there now. */
  migrated_to: Schema.NullOr(ChatId),
  migrated_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "ChatInfo" })

/**
 * @since 0.1.0
 * @category models
 */
export type ChatInfo = typeof ChatInfo.Type

/**
 * A chat deixis knows nothing of.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unknownChat = (chatId: string): ChatInfo => ({
  chat_id: chatId,
  is_forum: false,
  migrated_to: null,
  migrated_at: null
})

/**
 * The topic a message or request is in: its own, or in a forum the General topic when it
 * names none; null (the whole, topicless chat) elsewhere.
 *
 * @since 0.1.0
 * @category utils
 */
export const effectiveTopic = (topicId: string | null, isForum: boolean): string | null =>
  topicId !== null ? topicId : isForum ? generalTopicId : null

/**
 * What moving a chat's data to a new chat id did in one store: `migrated` is false when the
 * migration had already been done (nothing moved again).
 *
 * @since 0.1.0
 * @category models
 */
export interface MigrationResult {
  readonly migrated: boolean
  /** Rows (messages, objects, items, states…) moved. */
  readonly moved: number
}
