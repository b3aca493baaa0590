/**
 * What deixis remembers of a chat as a whole: whether it is a forum (so a message or a request
 * without a topic is its General topic, not the whole chat), and whether it migrated to
 * another chat id (a Telegram group upgraded to a supergroup).
 *
 * @since 0.1.0
 */
import * as ParseResult from "effect/ParseResult"
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
 * The longest chat title kept (Telegram's own limit is 128 characters).
 *
 * @since 0.2.0
 * @category constants
 */
export const maxTitleLength = 256

/**
 * A chat's title as events carry it (`chat_title`): a group's title, a private chat's name.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ChatTitle = Schema.String.pipe(Schema.maxLength(maxTitleLength)).annotations({
  identifier: "ChatTitle",
  description: "The chat's title (a group's title, a private chat's name), as last seen"
})

/**
 * A chat as the ContextStore knows it. A chat never seen reads as `{ is_forum: false,
 * title: null, migrated_to: null }`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatInfo = Schema.Struct({
  chat_id: ChatId,
  is_forum: Schema.Boolean,
  /** The title the newest event that carried one gave (`chat_title`); null when none did. */
  title: Schema.NullOr(ChatTitle),
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
  title: null,
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

/**
 * One chat of a store's chat list: what it is called, when it last spoke, and what the store
 * holds of it.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ChatSummary = Schema.Struct({
  chat_id: ChatId,
  title: Schema.NullOr(ChatTitle),
  is_forum: Schema.Boolean,
  /**
   * When the chat's newest message (by position, message-id order) was sent; null when the
   * store holds no message of it (a chat known only by its objects, or one whose messages
   * were all removed).
   */
  last_message_at: Schema.NullOr(Timestamp),
  /** Messages (metadata) the store holds of the chat. */
  messages: Schema.Number,
  /** Objects the store holds of the chat, active or not. */
  objects: Schema.Number
}).annotations({ identifier: "ChatSummary" })

/**
 * @since 0.2.0
 * @category models
 */
export type ChatSummary = typeof ChatSummary.Type

/**
 * Where a page of the chat list ends: the last chat it gave, in the list's order (newest
 * `last_message_at` first, chats without messages last, then by chat id in code-point order).
 *
 * @since 0.2.0
 * @category models
 */
export interface ChatCursor {
  readonly last_message_at: number | null
  readonly chat_id: string
}

/**
 * A request for one page of a store's chat list.
 *
 * @since 0.2.0
 * @category models
 */
export interface ChatQuery {
  /**
   * Keeps the chats whose title contains it, ignoring case (`String.prototype.toLowerCase`
   * of both), or whose id contains it as written; empty or absent: every chat.
   */
  readonly search?: string | undefined
  /** The most chats in the page (at least 1; a store may give fewer). */
  readonly limit: number
  /** The page after this chat; absent: the first page. */
  readonly after?: ChatCursor | undefined
}

/**
 * A page of the chat list; `next` is where the following page starts, null on the last page.
 *
 * @since 0.2.0
 * @category models
 */
export interface ChatPage {
  readonly chats: ReadonlyArray<ChatSummary>
  readonly next: ChatCursor | null
}

/**
 * The most chats one page holds, whatever a query asks.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxChatPage = 200

/**
 * The form of a title the search compares: every store keeps it beside the title, so a search
 * matches the same chats in memory, SQLite and PostgreSQL (whose own case-folding differ).
 *
 * @since 0.2.0
 * @category utils
 */
export const searchKey = (text: string): string => text.toLowerCase()

/**
 * Whether a chat matches a search (see {@link ChatQuery}).
 *
 * @since 0.2.0
 * @category utils
 */
export const matchesSearch = (chatId: string, title: string | null, search: string | undefined): boolean =>
  search === undefined || search === "" || chatId.includes(search) ||
  (title !== null && searchKey(title).includes(searchKey(search)))

/**
 * The list's order (see {@link ChatCursor}): negative when `a` comes first.
 *
 * @since 0.2.0
 * @category ordering
 */
export const compareChats = (a: ChatCursor, b: ChatCursor): number => {
  const at = a.last_message_at ?? Number.NEGATIVE_INFINITY
  const bt = b.last_message_at ?? Number.NEGATIVE_INFINITY
  if (at !== bt) return at > bt ? -1 : 1
  return a.chat_id < b.chat_id ? -1 : a.chat_id > b.chat_id ? 1 : 0
}

/**
 * A cursor as one opaque string for a URL (`<ms>:<chat id>`, `-:<chat id>` without messages),
 * and back.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ChatCursorFromString: Schema.Schema<ChatCursor, string> = Schema.transformOrFail(
  Schema.String,
  Schema.Struct({ last_message_at: Schema.NullOr(Schema.Number), chat_id: Schema.String }),
  {
    strict: true,
    decode: (input, _, ast) => {
      const cut = input.indexOf(":")
      const at = cut < 0 ? "" : input.slice(0, cut)
      const chatId = input.slice(cut + 1)
      const ms = at === "-" ? null : /^-?\d{1,16}$/.test(at) ? Number(at) : undefined
      return ms === undefined || chatId === ""
        ? ParseResult.fail(new ParseResult.Type(ast, input, "not a chat list cursor (a next cursor of an earlier page)"))
        : ParseResult.succeed({ last_message_at: ms, chat_id: chatId })
    },
    encode: (cursor) => ParseResult.succeed(`${cursor.last_message_at ?? "-"}:${cursor.chat_id}`)
  }
).annotations({ identifier: "ChatCursor", description: "The next cursor of an earlier page" })
