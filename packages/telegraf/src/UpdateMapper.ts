/**
 * The pure mapping from a Telegram Bot API `Update` to deixis events (`@deixis/core`) and
 * history items (`@deixis/chathistory`). It imports no Telegraf runtime, does no I/O, reads
 * no clock, and never throws: an update it cannot or need not map yields no events, no items
 * and a `skipped` reason, which the caller logs. `TelegramRecorder` writes what it maps.
 *
 * @since 0.1.0
 */
import { generalTopicId as coreGeneralTopicId, maxTitleLength } from "@deixis/core/ChatInfo"
import { capLabel } from "@deixis/core/ContextObject"
import type { ContextEvent, MessageEdited, MessageObserved } from "@deixis/core/ContextEvent"
import { toMigratedChat as eventToMigratedChat } from "@deixis/core/ContextEvent"
import { isValidId, migratedMessageId } from "@deixis/core/Ids"
import * as Json from "@deixis/core/Json"
import * as KindRegistry from "@deixis/core/KindRegistry"
import { MediaKind } from "@deixis/core/ObjectKind"
import { maxQuoteLength } from "@deixis/core/Quote"
import * as HistoryItem from "@deixis/chathistory/HistoryItem"
import type * as Mentions from "@deixis/chathistory/Mentions"
import type * as PeopleRef from "@deixis/chathistory/PeopleRef"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { Mutable } from "effect/Types"
import * as FieldDecisions from "./FieldDecisions.js"
import * as Content from "./internal/content.js"
import * as Tg from "./internal/telegram.js"

/**
 * Options of {@link mapUpdate}: the bot's own identity, so its messages are outbound and
 * messages addressed to it are recognised.
 *
 * @since 0.1.0
 * @category models
 */
export interface MapOptions {
  /** The bot's user id (`getMe().id`): its messages become `direction: "outbound"` / `outbound_agent`. */
  readonly botId?: string | undefined
  /** The bot's username without `@`: `/cmd@username` and `@username` address the bot. */
  readonly botUsername?: string | undefined
}

/**
 * Where an answer to a message goes on Telegram: the chat as Telegram names it and the topic
 * parameters of the send methods (`message_thread_id` for a forum's or a private chat's topic,
 * `direct_messages_topic_id` in a channel's direct-messages chat), or the `guest_query_id` a
 * guest message is answered with (`answerGuestQuery`).
 *
 * @since 0.4.0
 * @category models
 */
export interface Destination {
  /** Telegram's chat id (a deixis `chat_id` may differ: see {@link directMessagesChatId}, {@link guestChatId}). */
  readonly chat_id: string
  readonly message_thread_id?: number
  readonly direct_messages_topic_id?: number
  readonly guest_query_id?: string
}

/**
 * Where one message is: the ids every deixis call for it needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface MessageScope {
  /**
   * The deixis chat: Telegram's chat id, except for a channel direct-messages topic (its own
   * chat, {@link directMessagesChatId}) and a guest message ({@link guestChatId}).
   */
  readonly chat_id: string
  /**
   * The topic: a forum's (`"1"` for its General topic), a private chat's, or a direct-messages
   * topic's id; null elsewhere.
   */
  readonly topic_id: string | null
  /** Where an answer goes on Telegram. */
  readonly destination: Destination
  readonly message_id: string
  readonly reply_to_message_id: string | null
  readonly sender_user_id: string | null
  readonly chat_type: string | null
}

/**
 * A chat that migrated to a new id: a Telegram group upgraded to a supergroup. Both the old
 * group's `migrate_to_chat_id` notice and the supergroup's `migrate_from_chat_id` notice map
 * to it; recording it moves the old chat's data once.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChatMigration {
  readonly from_chat_id: string
  readonly to_chat_id: string
}

/**
 * The bot's message `response_id` answered message `message_id`: recorded as that message's
 * `bot_response_id`.
 *
 * @since 0.1.0
 * @category models
 */
export interface BotResponse {
  readonly chat_id: string
  readonly topic_id: string | null
  readonly message_id: string
  readonly response_id: string
}

/**
 * A reaction withdrawn: the history item stored under `event_id` (the actor's reaction to
 * one message) goes, unless it is newer than `at` (`HistoryStore.retract`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Retraction {
  readonly chat_id: string
  /** The chat's type, to find a group that migrated (see `TelegramRecorder.redirectMigrated`). */
  readonly chat_type: string | null
  readonly event_id: string
  /** When it was withdrawn (epoch ms). */
  readonly at: number
}

/**
 * What one update maps to.
 *
 * @since 0.1.0
 * @category models
 */
export interface MappedUpdate {
  /** The update's `update_id`, or null when it has none. */
  readonly update_id: number | null
  /** The update's kind (`message`, `poll`, …), or null for an unknown or malformed update. */
  readonly update_type: string | null
  /**
   * Events for `ContextIngest.apply`, decoded (`Schema.encode(ContextEventBatch)` gives their
   * wire form, what `ContextIngest.ingest` and `POST /v1/events` take).
   */
  readonly events: ReadonlyArray<ContextEvent>
  /**
   * History items for `HistoryStore.append`, decoded (`HistoryItem.encodeTrusted` gives their
   * wire form): a message replied to comes first, as the copy seen through the reply
   * (`seen_via: "reply"`).
   */
  readonly history: ReadonlyArray<HistoryItem.HistoryItem>
  /** A group upgraded to a supergroup: move its data. */
  readonly migration?: ChatMigration
  /** Messages the bot's message answers (a sent reply). */
  readonly responses?: ReadonlyArray<BotResponse>
  /** Reactions withdrawn: their history items go (see {@link Retraction}). */
  readonly retractions?: ReadonlyArray<Retraction>
  /** The message's scope, for a message-carrying update. */
  readonly scope?: MessageScope
  /**
   * Whether the message is addressed to the bot: a private chat, a command for it, a mention
   * of its username, or a reply to one of its messages (a "triggered run" for the write policy).
   */
  readonly addressed: boolean
  /** Non-fatal problems met (skipped entities, dropped over-long fields). */
  readonly warnings: ReadonlyArray<string>
  /** Why nothing was mapped; absent when something was. */
  readonly skipped?: string
}

/**
 * The `topic_id` deixis gives a forum's General topic: Telegram's own id for it (core's
 * `ChatInfo.generalTopicId`). General messages carry no `message_thread_id`; to post in
 * General, send without one.
 *
 * @since 0.1.0
 * @category constants
 */
export const generalTopicId: string = coreGeneralTopicId

/**
 * The deixis chat of a channel direct-messages topic: each topic is one user's private
 * conversation with the channel, its own chat, so nothing of one user's topic is ever a
 * candidate for another's (core looks into a chat's other topics when a topic holds nothing).
 *
 * @since 0.4.0
 * @category scope
 */
export const directMessagesChatId = (chatId: string, topicId: string): string => `${chatId}:dm:${topicId}`

/**
 * The deixis chat of a guest message: the chat where the guest bot was summoned, which may not
 * be the bot's own chat of the same id (Bot API 10), so it never shares that chat's scope.
 *
 * @since 0.4.0
 * @category scope
 */
export const guestChatId = (chatId: string): string => `guest:${chatId}`

/**
 * Where to send in a deixis chat and topic (a reminder's, a scope's): Telegram's chat id and
 * the topic parameter — `direct_messages_topic_id` for a direct-messages topic's chat
 * ({@link directMessagesChatId}), `message_thread_id` for a topic elsewhere. Undefined for a
 * guest scope ({@link guestChatId}): a guest query is answered once, by its `guest_query_id`.
 *
 * @since 0.4.0
 * @category scope
 */
export const destinationFor = (chatId: string, topicId: string | null): Destination | undefined => {
  if (chatId.startsWith("guest:")) return undefined
  const dm = /^(-?\d+):dm:(\d+)$/.exec(chatId)
  if (dm !== null) {
    const topic = Number(dm[2])
    return Number.isSafeInteger(topic) ? { chat_id: dm[1]!, direct_messages_topic_id: topic } : undefined
  }
  const thread = threadIdFor(topicId)
  return { chat_id: chatId, ...(thread === undefined ? {} : { message_thread_id: thread }) }
}

/**
 * The longest message text mapped, in UTF-16 code units (Telegram's own limit is 4096
 * characters; longer input is hostile and cut).
 *
 * @since 0.1.0
 * @category constants
 */
export const maxTextLength = 8192

const maxEntities = 200
const maxLinks = 50
const maxRefLength = 2048
// A poll id must be one core's id rule accepts (it is stored and matched as an id).
const pollIdOk = (id: string) => isValidId(id)
const maxAttachmentName = 256
const maxHistoryText = 32_768
// Date#toISOString throws past ±8.64e15 ms; Telegram dates are seconds.
const maxDateSeconds = 8_640_000_000_000

const decodePoll = Schema.decodeUnknownEither(Tg.Poll)
const decodePollAnswer = Schema.decodeUnknownEither(Tg.PollAnswer)
// A replied or pinned message too partial to record still names its id.
const decodeChatOnly = Schema.decodeUnknownEither(Schema.Struct({ message_id: Schema.Int }))
const decodeReaction = Schema.decodeUnknownEither(Tg.MessageReaction)

const messageKeys = FieldDecisions.messageUpdateTypes

/** What a message can carry that makes it a message people wrote (anything else is a service notice). */
const contentKeys = FieldDecisions.contentFields

/** Update types that say nothing deixis keeps, each with why (FieldDecisions' `skipped`). */
const ignoredUpdates: ReadonlyArray<readonly [string, string]> = Object.entries(FieldDecisions.updateDecisions).flatMap((
  [type, d]
) => d.kind === "skipped" ? [[type, d.why] as const] : [])

const tooDeep = `nested deeper than ${Json.maxDepth} levels`

const firstIssue = (error: { readonly message: string }): string => {
  const line = error.message.split("\n").slice(-1)[0] ?? error.message
  return line.trim().slice(0, 200)
}

const empty = (
  update_id: number | null,
  update_type: string | null,
  skipped: string,
  warnings: ReadonlyArray<string> = []
): MappedUpdate => ({
  update_id,
  update_type,
  events: [],
  history: [],
  addressed: false,
  warnings,
  skipped
})

/** A mapped update of these events and items. */
const mapped = (
  fields: Omit<MappedUpdate, "events" | "history">,
  events: ReadonlyArray<ContextEvent>,
  history: ReadonlyArray<HistoryItem.HistoryItem>
): MappedUpdate => ({ ...fields, events, history })

// A Telegram date (seconds) in epoch ms; `+ 0` makes a date of -0 the instant 0, as its
// wire form decodes.
const millisOf = (seconds: number): number => seconds * 1000 + 0

// Whether a Telegram date (seconds) is an instant a Date can hold (±8.64e15 ms).
const inDateRange = (seconds: number): boolean => Math.abs(seconds) <= maxDateSeconds

// Cuts to `max` UTF-16 code units without splitting a surrogate pair.
const cut = (text: string, max: number): string => {
  if (text.length <= max) return text
  const code = text.charCodeAt(max - 1)
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max)
}

/**
 * The forum topic a message belongs to: its `message_thread_id` only when `is_topic_message`
 * is true (plain reply chains carry a thread id too), the General topic
 * ({@link generalTopicId}) for other messages of a forum, and null outside forums.
 *
 * @since 0.1.0
 * @category scope
 */
export const topicIdOf = (message: {
  readonly is_topic_message?: boolean | undefined
  readonly message_thread_id?: number | undefined
  readonly chat: { readonly is_forum?: boolean | undefined }
}): string | null =>
  message.is_topic_message === true && message.message_thread_id !== undefined
    ? String(message.message_thread_id)
    : message.chat.is_forum === true
    ? generalTopicId
    : null

/**
 * The `message_thread_id` to send with so a reply lands in `topicId`: none for the General
 * topic and for topicless chats.
 *
 * @since 0.1.0
 * @category scope
 */
export const threadIdFor = (topicId: string | null): number | undefined => {
  if (topicId === null || topicId === generalTopicId) return undefined
  const n = Number(topicId)
  return Number.isSafeInteger(n) ? n : undefined
}

/** Where a message is recorded (its deixis chat and topic) and where its answer goes. */
interface Place {
  readonly chat_id: string
  readonly topic_id: string | null
  readonly destination: Destination
}

const nonEmpty = (s: string | undefined): s is string => s !== undefined && s !== ""

/** A message's place; `dmTopic` is its direct-messages topic (a replied message's may be its reply's). */
const placeOf = (m: Tg.Message, guest: boolean, dmTopic: Tg.DirectMessagesTopic | undefined = m.direct_messages_topic): Place => {
  const chat = String(m.chat.id)
  if (guest) {
    const topic = topicIdOf(m)
    return {
      chat_id: guestChatId(chat),
      topic_id: topic,
      destination: { chat_id: chat, ...(nonEmpty(m.guest_query_id) ? { guest_query_id: m.guest_query_id } : {}) }
    }
  }
  if (dmTopic !== undefined) {
    const topic = String(dmTopic.topic_id)
    return { chat_id: directMessagesChatId(chat, topic), topic_id: topic, destination: { chat_id: chat, direct_messages_topic_id: dmTopic.topic_id } }
  }
  const topic = topicIdOf(m)
  const thread = threadIdFor(topic)
  return { chat_id: chat, topic_id: topic, destination: thread === undefined ? { chat_id: chat } : { chat_id: chat, message_thread_id: thread } }
}

/** A chat's title as core keeps it (`chat_title`): a group's title, a private chat's name. */
const titleOfChat = (chat: Tg.Chat): string | undefined => {
  const title = chat.title ?? [chat.first_name, chat.last_name].filter((s) => s !== undefined).join(" ")
  return title === "" ? undefined : cut(title, maxTitleLength)
}

const personOfChat = (chat: Tg.Chat): PeopleRef.Person => ({
  user_id: String(chat.id),
  username: chat.username ?? null,
  display_name: chat.title ?? ([chat.first_name, chat.last_name].filter((s) => s !== undefined).join(" ") || null)
})

const personOfUser = (user: Tg.User): PeopleRef.Person => ({
  user_id: String(user.id),
  username: user.username ?? null,
  first_name: user.first_name ?? null,
  last_name: user.last_name ?? null,
  is_bot: user.is_bot ?? false
})

const senderOf = (message: { readonly sender_chat?: Tg.Chat | undefined; readonly from?: Tg.User | undefined }) =>
  message.sender_chat !== undefined
    ? personOfChat(message.sender_chat)
    : message.from !== undefined
    ? personOfUser(message.from)
    : undefined

const originPerson = (origin: Tg.MessageOrigin | undefined): PeopleRef.Person | null => {
  if (origin === undefined) return null
  if (origin.sender_user !== undefined) return personOfUser(origin.sender_user)
  if (origin.sender_chat !== undefined) return personOfChat(origin.sender_chat)
  if (origin.chat !== undefined) return personOfChat(origin.chat)
  if (origin.sender_user_name !== undefined) return { display_name: origin.sender_user_name }
  return null
}

const forwardOf = (origin: Tg.ForwardOrigin | undefined, automatic: boolean): HistoryItem.ForwardInput | undefined => {
  if (origin === undefined || !inDateRange(origin.date)) return undefined
  const kind = origin.type === "user" || origin.type === "hidden_user" || origin.type === "chat" || origin.type === "channel"
    ? origin.type
    : undefined
  const sender = originPerson(origin)
  if (kind === undefined || sender === null) return undefined
  return { origin: kind, sender, sent_at: millisOf(origin.date), ...(automatic ? { automatic } : {}) }
}

const inRange = (text: string, e: Tg.Entity) => e.offset >= 0 && e.length > 0 && e.offset + e.length <= text.length

// Whether a cut at `at` falls between the two halves of a surrogate pair (one character).
const splitsPair = (text: string, at: number) => {
  const code = text.charCodeAt(at)
  return at > 0 && at < text.length && code >= 0xdc00 && code <= 0xdfff
}

const linksOf = (text: string, entities: ReadonlyArray<Tg.Entity>, warnings: Array<string>) => {
  const links: Array<{ url: string; title?: string; span: { offset: number; length: number } }> = []
  let seen: Set<string> | undefined
  for (const e of entities) {
    if (e.type !== "url" && e.type !== "text_link") continue
    if (!inRange(text, e)) {
      warnings.push(`${e.type} entity at ${e.offset} is out of the text's range; skipped`)
      continue
    }
    // Half a character is no part of a url or a title (it would be stored as U+FFFD).
    if (splitsPair(text, e.offset) || splitsPair(text, e.offset + e.length)) {
      warnings.push(`${e.type} entity at ${e.offset}+${e.length} cuts a character in two; skipped`)
      continue
    }
    // Offsets and lengths are UTF-16 code units, as JavaScript strings index.
    const span = text.slice(e.offset, e.offset + e.length)
    const url = e.type === "url" ? span.trim() : (e.url ?? "")
    if (url.length === 0 || url.length > maxRefLength) {
      warnings.push(`${e.type} entity at ${e.offset} has no usable url; skipped`)
      continue
    }
    seen ??= new Set()
    if (seen.has(url) || links.length >= maxLinks) continue
    seen.add(url)
    const title = e.type === "text_link" ? span.replace(/\s+/g, " ").trim() : ""
    // Where it is, in UTF-16 code units: a reply's quote selects it by overlapping this.
    const at = { offset: e.offset, length: e.length }
    links.push(title === "" || title === url ? { url, span: at } : { url, title: capLabel(title), span: at })
  }
  return links
}

type MediaRef = { kind: MediaKind; file_id?: string; label?: string; span?: { offset: number; length: number } }

// Which kind Telegram content maps to is the kind descriptors' (core's KindRegistry table).
const isMediaKind = Schema.is(MediaKind)
const kindFor = (content: string): MediaKind | undefined => {
  const kind = KindRegistry.defaultRegistry.forTelegram(content)
  return kind !== undefined && isMediaKind(kind) ? kind : undefined
}
const photoKind = kindFor("photo")!
const videoKind = kindFor("video")!
const voiceKind = kindFor("voice")!
type Attachment = HistoryItem.Attachment

const mediaRef = (kind: MediaRef["kind"], fileId: string | undefined, label: string | undefined): MediaRef => {
  const ref: MediaRef = { kind }
  if (fileId !== undefined && fileId.length > 0 && fileId.length <= maxRefLength) ref.file_id = fileId
  const clean = label?.replace(/\s+/g, " ").trim()
  if (clean !== undefined && clean !== "") ref.label = capLabel(clean)
  return ref
}

const attachment = (kind: Attachment["kind"], name: string | undefined): Attachment =>
  name === undefined || name.trim() === "" ? { kind } : { kind, name: cut(name.trim(), maxAttachmentName) }

const documentKind = (doc: Tg.FileLike): MediaKind => {
  const mime = (doc.mime_type ?? "").toLowerCase()
  const name = (doc.file_name ?? "").toLowerCase()
  const exact = name.endsWith(".pdf") ? "application/pdf" : mime
  return kindFor(`document:${exact}`) ?? kindFor(`document:${mime.split("/")[0]}/*`) ?? kindFor("document")!
}

/**
 * The media a message carries. `captionLength`: the UTF-16 length of the caption as mapped (0
 * without one): every item is captioned by all of it, so a quote of the caption selects it.
 */
const mediaOf = (m: Tg.Message, caption: string | undefined, captionLength: number, rich: ReadonlyArray<Content.FlatMedia>) => {
  const media: Array<MediaRef> = []
  const attachments: Array<Attachment> = []
  for (const r of rich) {
    const kind = r.type === "photo"
      ? photoKind
      : r.type === "video"
      ? videoKind
      : r.type === "animation"
      ? kindFor("animation") ?? videoKind
      : r.type === "audio"
      ? kindFor("audio") ?? voiceKind
      : voiceKind
    media.push(mediaRef(kind, r.file_id, r.name ?? (r.caption === "" ? undefined : r.caption)))
    attachments.push(attachment(r.type, r.name))
  }
  if (m.photo !== undefined && m.photo.length > 0) {
    // The sizes come smallest first; the largest is the photo itself.
    const largest = m.photo.reduce((a, b) => ((b.width ?? 0) * (b.height ?? 0) >= (a.width ?? 0) * (a.height ?? 0) ? b : a))
    media.push(mediaRef(photoKind, largest.file_id, caption))
    attachments.push(attachment("photo", undefined))
  }
  if (m.animation !== undefined) {
    media.push(mediaRef(kindFor("animation") ?? videoKind, m.animation.file_id, m.animation.file_name ?? caption))
    attachments.push(attachment("animation", m.animation.file_name))
  }
  if (m.video !== undefined) {
    media.push(mediaRef(videoKind, m.video.file_id, m.video.file_name ?? caption))
    attachments.push(attachment("video", m.video.file_name))
  }
  if (m.video_note !== undefined) {
    media.push(mediaRef(kindFor("video_note") ?? videoKind, m.video_note.file_id, undefined))
    attachments.push(attachment("video_note", undefined))
  }
  if (m.voice !== undefined) {
    media.push(mediaRef(voiceKind, m.voice.file_id, caption))
    attachments.push(attachment("voice", undefined))
  }
  if (m.audio !== undefined) {
    const title = [m.audio.performer, m.audio.title].filter((s) => s !== undefined && s !== "").join(" – ")
    const name = title !== "" ? title : m.audio.file_name
    media.push(mediaRef(kindFor("audio") ?? voiceKind, m.audio.file_id, name ?? caption))
    attachments.push(attachment("audio", name))
  }
  // An animation also arrives as a document; it is the animation.
  if (m.document !== undefined && m.animation === undefined) {
    media.push(mediaRef(documentKind(m.document), m.document.file_id, m.document.file_name ?? caption))
    attachments.push(attachment("document", m.document.file_name))
  }
  if (m.sticker !== undefined) attachments.push(attachment("sticker", m.sticker.emoji))
  if (m.poll !== undefined) attachments.push(attachment("poll", m.poll.question))
  if (m.location !== undefined || m.venue !== undefined) attachments.push(attachment("location", m.venue?.title))
  if (m.contact !== undefined) attachments.push(attachment("contact", undefined))
  if (m.dice !== undefined) attachments.push(attachment("other", m.dice.emoji))
  if (captionLength > 0) for (const item of media) item.span = { offset: 0, length: captionLength }
  return { media, attachments }
}

// The bot's username as commands and mentions are compared with it, kept for the last one seen
// (a process has one bot): read only for a command or a mention.
let lastBotUsername: string | undefined
let lastBotUsernameKey: string | undefined
const botUsernameOf = (options: MapOptions): string | undefined => {
  const raw = options.botUsername
  if (raw === undefined) return undefined
  if (raw !== lastBotUsernameKey) {
    lastBotUsername = raw.replace(/^@/, "").toLowerCase()
    lastBotUsernameKey = raw
  }
  return lastBotUsername
}

const addressedToBot = (m: Tg.Message, text: string, entities: ReadonlyArray<Tg.Entity>, options: MapOptions, guest: boolean) => {
  // A guest message asks the bot; a direct-messages topic is one user's private conversation.
  if (m.chat.type === "private" || guest || m.direct_messages_topic !== undefined) return true
  const replied = m.reply_to_message
  // (The key written as a template: the published package's import scan reads quoted `from`s.)
  const sender = Predicate.isRecord(replied) ? replied[`from`] : undefined
  const repliedFrom = Predicate.isRecord(sender) ? sender["id"] : undefined
  if (options.botId !== undefined && typeof repliedFrom === "number" && String(repliedFrom) === options.botId) return true
  for (const e of entities) {
    if (e.type !== "bot_command" && e.type !== "mention" && e.type !== "text_mention") continue
    if (!inRange(text, e)) continue
    const span = text.slice(e.offset, e.offset + e.length)
    if (e.type === "bot_command" && e.offset === 0) {
      const at = span.indexOf("@")
      if (at < 0) return true
      const username = botUsernameOf(options)
      if (username !== undefined && span.slice(at + 1).toLowerCase() === username) return true
    }
    if (e.type === "mention") {
      const username = botUsernameOf(options)
      if (username !== undefined && span.slice(1).toLowerCase() === username) return true
    }
    if (e.type === "text_mention" && options.botId !== undefined && e.user !== undefined && String(e.user.id) === options.botId) {
      return true
    }
  }
  return false
}

const noEntities: ReadonlyArray<Mentions.MessageEntity> = []

const toMentionEntities = (text: string, entities: ReadonlyArray<Tg.Entity>): ReadonlyArray<Mentions.MessageEntity> =>
  // Most messages mention no one: no arrays are built for them.
  !entities.some((e) => e.type === "mention" || e.type === "text_mention") ? noEntities : entities
    .filter((e) => (e.type === "mention" || e.type === "text_mention") && inRange(text, e))
    .map((e) => {
      const entity: Mentions.MessageEntity = e.user === undefined
        ? { type: e.type, offset: e.offset, length: e.length }
        : {
          type: e.type,
          offset: e.offset,
          length: e.length,
          user: {
            id: String(e.user.id),
            ...(e.user.is_bot === undefined ? {} : { is_bot: e.user.is_bot }),
            ...(e.user.first_name === undefined ? {} : { first_name: e.user.first_name }),
            ...(e.user.last_name === undefined ? {} : { last_name: e.user.last_name }),
            ...(e.user.username === undefined ? {} : { username: e.user.username })
          }
        }
      return entity
    })

interface One {
  readonly event: MessageObserved | MessageEdited
  readonly item: HistoryItem.HistoryItem
  readonly scope: MessageScope
  readonly outbound: boolean
  readonly text: string
  readonly entities: ReadonlyArray<Tg.Entity>
}

/** Whether a raw message carries anything people write; a message carrying none is a service notice. */
const hasContent = (raw: Readonly<Record<string, unknown>>): boolean => contentKeys.some((k) => raw[k] !== undefined)

const metadataKeys: ReadonlySet<string> = new Set(FieldDecisions.metadataFields)

/** The service notice a raw message is (its first key that is neither content nor metadata), for logs. */
const serviceKind = (raw: Readonly<Record<string, unknown>>): string => {
  const key = Object.keys(raw).find((k) => !metadataKeys.has(k))
  return key === undefined ? "no content" : cut(key, 40)
}

/** A reply's quote as core keeps it: its text (cut to core's bound) and its position when usable. */
const quoteOf = (text: string, position: number | undefined): NonNullable<MessageObserved["quote"]> => ({
  text: cut(text, maxQuoteLength),
  ...(position === undefined || position < 0 || position > 65_535 ? {} : { position })
})

/** The text of content without a text or caption: a rich message, a checklist, a checklist's change. */
const flatContent = (m: Tg.Message): Content.Flat | undefined =>
  m.rich_message !== undefined
    ? Content.flattenRich(m.rich_message, maxTextLength)
    : m.checklist !== undefined
    ? Content.flattenChecklist(m.checklist, maxTextLength)
    : m.checklist_tasks_done !== undefined
    ? Content.flattenTasksDone(m.checklist_tasks_done, maxTextLength)
    : m.checklist_tasks_added !== undefined
    ? Content.flattenTasksAdded(m.checklist_tasks_added, maxTextLength)
    : undefined

/** The chat's title; a direct-messages topic's is its chat's and its user's. */
const titleOf = (m: Tg.Message): string | undefined => {
  const title = titleOfChat(m.chat)
  const user = m.direct_messages_topic?.user
  if (user === undefined) return title
  const name = [user.first_name, user.last_name].filter((s) => s !== undefined && s !== "").join(" ") || user.username || String(user.id)
  return cut(title === undefined ? name : `${title} · ${name}`, maxTitleLength)
}

/** The checklist message a checklist's change is about, as a raw message. */
const checklistMessageOf = (m: Tg.Message): unknown => {
  const notice = m.checklist_tasks_done ?? m.checklist_tasks_added
  return Predicate.isRecord(notice) ? notice["checklist_message"] : undefined
}

/** One message's event and item, without anything about the message it replies to. */
const mapOne = (
  m: Tg.Message,
  options: MapOptions,
  context: {
    readonly edited: boolean
    readonly replyTo: string | null
    readonly quote: HistoryItem.QuoteInput | null
    readonly quotedPerson: PeopleRef.Person | null
    readonly quotePosition: number | undefined
    readonly seenVia: "reply" | undefined
    readonly place: Place
    readonly warnings: Array<string>
  }
): One | string => {
  const warnings = context.warnings
  if (!inDateRange(m.date)) return "date out of range"
  const { chat_id: chatId, topic_id: topicId } = context.place
  const flat = m.text === undefined && m.caption === undefined ? flatContent(m) : undefined
  const rawText = m.text ?? m.caption ?? flat?.text ?? ""
  const text = cut(rawText, maxTextLength)
  if (text.length < rawText.length) warnings.push(`text cut from ${rawText.length} to ${text.length} UTF-16 code units`)
  const allEntities = (m.text !== undefined ? m.entities : m.caption !== undefined ? m.caption_entities : flat?.entities) ?? []
  const entities = allEntities.length <= maxEntities ? allEntities : allEntities.slice(0, maxEntities)
  if (entities.length < allEntities.length) warnings.push(`only the first ${maxEntities} entities read`)

  const sender = senderOf(m)
  const senderId = sender?.user_id ?? null
  const outbound = options.botId !== undefined && m.from !== undefined && String(m.from.id) === options.botId &&
    m.sender_chat === undefined
  const { attachments, media } = mediaOf(
    m,
    m.caption,
    m.text === undefined && m.caption !== undefined ? text.length : 0,
    flat?.media ?? []
  )
  const links = linksOf(text, entities, warnings)
  const album = m.media_group_id !== undefined && m.media_group_id.length > 0 && m.media_group_id.length <= 256
    ? m.media_group_id
    : undefined
  const editedSeconds = m.edit_date !== undefined && inDateRange(m.edit_date) ? m.edit_date : m.date
  const editedAt = context.edited || m.edit_date !== undefined ? millisOf(editedSeconds) : undefined

  let poll: MessageObserved["poll"]
  if (m.poll !== undefined) {
    if (pollIdOk(m.poll.id)) {
      poll = {
        poll_id: m.poll.id,
        ...(m.poll.question === undefined || m.poll.question.trim() === "" ? {} : { question: capLabel(m.poll.question) }),
        is_closed: m.poll.is_closed ?? false
      }
    } else {
      warnings.push("poll id unusable; poll not recorded")
    }
  }
  const chatTitle = titleOf(m)
  const messageId = String(m.message_id)
  // Built field by field, in the order the spread form had (no intermediate objects per message).
  // An edit's event is the same with its type and `edited_at` (`MessageEdited`).
  const event = {
    type: context.edited ? "message_edited" : "message_observed",
    chat_id: chatId,
    message_id: messageId,
    topic_id: topicId,
    reply_to_message_id: context.replyTo,
    sender_user_id: senderId,
    direction: outbound ? "outbound" : "inbound",
    sent_at: millisOf(m.date),
    is_forum: m.chat.is_forum === true
  } as Omit<Mutable<MessageObserved>, "type"> & { type: "message_observed" | "message_edited"; edited_at?: number }
  if (chatTitle !== undefined) event.chat_title = chatTitle
  event.links = links
  event.media = media.length <= maxLinks ? media : media.slice(0, maxLinks)
  if (album !== undefined && media.length > 0) event.media_group_id = album
  if (poll !== undefined) event.poll = poll
  if (context.replyTo !== null && context.quote !== null && context.quote.text !== "") {
    event.quote = quoteOf(context.quote.text, context.quotePosition)
  }
  if (context.edited) event.edited_at = editedAt ?? millisOf(m.date)

  const forward = forwardOf(m.forward_origin, m.is_automatic_forward === true)
  const people: Array<PeopleRef.Person> = []
  if (sender !== undefined) people.push(sender)
  if (context.quotedPerson !== null) people.push(context.quotedPerson)
  const input: Mutable<HistoryItem.MakeInput> = {
    kind: outbound ? "outbound_agent" : "inbound_user",
    chat_id: chatId,
    topic_id: topicId,
    chat_type: m.chat.type === undefined ? null : cut(m.chat.type, 32),
    message_id: messageId,
    reply_to_message_id: context.replyTo,
    sender: sender ?? { display_name: m.chat.title ?? null },
    text,
    entities: toMentionEntities(text, entities),
    people,
    quote: context.quote,
    attachments: attachments.length <= 50 ? attachments : attachments.slice(0, 50)
  }
  if (editedAt !== undefined) input.edited_at = editedAt
  if (forward !== undefined) input.forward = forward
  if (album !== undefined) input.album_id = album
  if (context.seenVia !== undefined) input.seen_via = context.seenVia
  const built = HistoryItem.build(input, millisOf(m.date))
  for (const w of built.warnings) warnings.push(w)
  return {
    event: event as MessageObserved | MessageEdited,
    item: withinLimits(built.item),
    scope: {
      chat_id: chatId,
      topic_id: topicId,
      destination: context.place.destination,
      message_id: messageId,
      reply_to_message_id: context.replyTo,
      sender_user_id: senderId,
      chat_type: m.chat.type ?? null
    },
    outbound,
    text,
    entities
  }
}

/** What a message says about the message it replies to: its id, and the copy Telegram embedded. */
const replyOf = (m: Tg.Message): { readonly id: string | null; readonly embedded: Tg.Message | undefined } => {
  // A checklist's change is about the checklist's message: it "replies" to it.
  const raw = m.reply_to_message ?? checklistMessageOf(m)
  if (raw === undefined) {
    const external = m.external_reply
    // A reply to another chat names a message of that chat: never one of this chat.
    return external?.chat !== undefined && external.chat.id === m.chat.id && external.message_id !== undefined
      ? { id: String(external.message_id), embedded: undefined }
      : { id: null, embedded: undefined }
  }
  const decoded = Tg.parseMessage(raw)
  if (!decoded.ok) {
    const head = decodeChatOnly(raw, { onExcessProperty: "ignore" })
    return { id: Either.isRight(head) ? String(head.right.message_id) : null, embedded: undefined }
  }
  const r = decoded.message
  // Telegram embeds only a message of the same chat (other chats come as `external_reply`):
  // a copy from another chat names none of this chat's messages.
  if (r.chat.id !== m.chat.id) return { id: null, embedded: undefined }
  // In a forum, a message that is not an explicit reply still "replies" to its topic's creation notice.
  if (r.forum_topic_created !== undefined || (m.is_topic_message === true && r.message_id === m.message_thread_id)) {
    return { id: null, embedded: undefined }
  }
  if (Predicate.isRecord(raw) && !hasContent(raw)) {
    // A reply to a pin notice means the pinned message (when it is still accessible: date > 0).
    if (r.pinned_message !== undefined) {
      const pinned = Tg.parseMessage(r.pinned_message)
      if (pinned.ok) {
        const accessible = pinned.message.date > 0 && Predicate.isRecord(r.pinned_message) && hasContent(r.pinned_message)
        return { id: String(pinned.message.message_id), embedded: accessible ? pinned.message : undefined }
      }
      const head = decodeChatOnly(r.pinned_message, { onExcessProperty: "ignore" })
      if (Either.isRight(head)) return { id: String(head.right.message_id), embedded: undefined }
    }
    // Another service notice: a reply to it names it, but it is never recorded.
    return { id: String(r.message_id), embedded: undefined }
  }
  return { id: String(r.message_id), embedded: r }
}

/**
 * Maps one Telegram message (a `message`, `edited_message`, `channel_post` or
 * `edited_channel_post`, or a message the bot just sent) to its events and history items:
 * the message replied to first (`seen_via: "reply"`: often the only copy of it the bot gets),
 * then the message itself (`message_edited` for an edit). A service notice (a join, a pin, a
 * topic change…) maps to nothing — except a group's upgrade to a supergroup, which maps to
 * its `migration`.
 *
 * @since 0.1.0
 * @category mapping
 */
export const mapMessage = (
  input: unknown,
  options: MapOptions = {},
  updateType = "message",
  updateId: number | null = null
): MappedUpdate =>
  // Before anything reads it: a decoder's message prints the value it refused, recursively.
  Json.nestsDeeperThan(input)
    ? empty(updateId, updateType, `malformed ${updateType}: ${tooDeep}`)
    : messageOf(input, options, updateType, updateId)

/** {@link mapMessage} of a message whose depth was checked (with its update, by `mapUpdate`). */
const messageOf = (input: unknown, options: MapOptions, updateType: string, updateId: number | null): MappedUpdate => {
  const decoded = Tg.parseMessage(input)
  if (!decoded.ok) return empty(updateId, updateType, `malformed ${updateType}: ${decoded.issue}`)
  const m = decoded.message
  const warnings: Array<string> = []
  if (!inDateRange(m.date)) return empty(updateId, updateType, `malformed ${updateType}: date out of range`)

  if (Predicate.isRecord(input) && !hasContent(input)) {
    const migration = m.migrate_to_chat_id !== undefined
      ? { from_chat_id: String(m.chat.id), to_chat_id: String(m.migrate_to_chat_id) }
      : m.migrate_from_chat_id !== undefined
      ? { from_chat_id: String(m.migrate_from_chat_id), to_chat_id: String(m.chat.id) }
      : undefined
    if (migration === undefined || migration.from_chat_id === migration.to_chat_id) {
      return empty(updateId, updateType, `service message (${serviceKind(input)}): not conversation`)
    }
    return { update_id: updateId, update_type: updateType, events: [], history: [], migration, addressed: false, warnings }
  }

  const guest = updateType === "guest_message" || nonEmpty(m.guest_query_id)
  const place = placeOf(m, guest)
  const reply = replyOf(m)
  const external = m.external_reply
  const quotedPerson = reply.embedded !== undefined
    ? senderOf(reply.embedded) ?? null
    : m.reply_to_message === undefined
    ? originPerson(external?.origin)
    : null
  const edited = updateType.startsWith("edited_")
  // A reply to one task of a checklist quotes that task's line of the checklist's text.
  const task = m.quote === undefined && m.reply_to_checklist_task_id !== undefined && reply.embedded !== undefined
    ? Content.taskSpan(reply.embedded, m.reply_to_checklist_task_id, maxTextLength)
    : undefined
  const main = mapOne(m, options, {
    edited,
    replyTo: reply.id,
    quote: m.quote !== undefined
      ? {
        sender: quotedPerson,
        text: cut(m.quote.text, maxTextLength),
        entities: toMentionEntities(m.quote.text, (m.quote.entities ?? []).slice(0, maxEntities))
      }
      : task !== undefined && task.text !== ""
      ? { sender: quotedPerson, text: task.text, entities: [] }
      : null,
    quotePosition: m.quote !== undefined ? m.quote.position : task?.offset,
    quotedPerson,
    seenVia: undefined,
    place,
    warnings
  })
  if (typeof main === "string") return empty(updateId, updateType, `unmappable ${updateType}: ${main}`, warnings)

  const events: Array<ContextEvent> = []
  const history: Array<HistoryItem.HistoryItem> = []
  if (reply.embedded !== undefined) {
    const embeddedWarnings: Array<string> = []
    const embedded = mapOne(reply.embedded, options, {
      edited: false,
      replyTo: null,
      quote: null,
      quotePosition: undefined,
      quotedPerson: null,
      seenVia: "reply",
      // The replied message is in the replying one's direct-messages topic unless it names its own.
      place: placeOf(reply.embedded, guest, reply.embedded.direct_messages_topic ?? m.direct_messages_topic),
      warnings: embeddedWarnings
    })
    if (typeof embedded === "string") {
      warnings.push(`the replied message was not recorded: ${embedded}`)
    } else if (embedded.scope.chat_id === main.scope.chat_id) {
      events.push(embedded.event)
      history.push(embedded.item)
      warnings.push(...embeddedWarnings.map((w) => `replied message: ${w}`))
    }
  }
  events.push(main.event)
  history.push(main.item)
  const responses: Array<BotResponse> = main.outbound && reply.id !== null
    ? [{ chat_id: main.scope.chat_id, topic_id: main.scope.topic_id, message_id: reply.id, response_id: main.scope.message_id }]
    : []

  const addressed = !main.outbound && addressedToBot(m, main.text, main.entities, options, guest)
  return responses.length === 0
    ? { update_id: updateId, update_type: updateType, scope: main.scope, addressed, warnings, events, history }
    : { update_id: updateId, update_type: updateType, scope: main.scope, responses, addressed, warnings, events, history }
}

/**
 * An item within every limit of chathistory's Schema (what its consumers decode with): the
 * mapper builds its output directly in the decoded form, so these are enforced here; the
 * property test checks that everything handed out decodes.
 */
const withinLimits = (item: HistoryItem.HistoryItem): HistoryItem.HistoryItem => {
  const text = item.text.length <= maxHistoryText ? item.text : cut(item.text, maxHistoryText)
  const forward = item.forward === undefined || item.forward.sender_ref.length <= 512
    ? item.forward
    : { ...item.forward, sender_ref: cut(item.forward.sender_ref, 512) }
  return text === item.text && forward === item.forward
    ? item
    : { ...item, text, ...(forward === undefined ? {} : { forward }) }
}

const reactionText = (reactions: ReadonlyArray<Tg.Reaction>): string =>
  reactions
    .map((r) => r.type === "emoji" && r.emoji !== undefined ? r.emoji : r.type === "paid" ? "⭐" : `:${r.type}:`)
    .join(" ")

/**
 * A `message_reaction` update holds the actor's whole set of reactions to one message now
 * (`new_reaction`), not what was added. The history item of a reaction is that set, under an
 * `event_id` naming the actor and the message: a changed set replaces it (the store keeps the
 * newest by date), an empty one withdraws it (a {@link Retraction}). So history shows what
 * each person's reaction is, never one they took back; a reaction is no activation of any
 * object (list_active_context_objects names none), so nothing else is undone.
 */
const mapReaction = (input: unknown, updateId: number): MappedUpdate => {
  const decoded = decodeReaction(input, { errors: "first", onExcessProperty: "ignore" })
  if (Either.isLeft(decoded)) return empty(updateId, "message_reaction", `malformed message_reaction: ${firstIssue(decoded.left)}`)
  const r = decoded.right
  if (!inDateRange(r.date)) return empty(updateId, "message_reaction", "malformed message_reaction: date out of range")
  const actor = r.actor_chat !== undefined ? `chat${r.actor_chat.id}` : r.user !== undefined ? String(r.user.id) : "anonymous"
  // Its identity: the actor's reaction to the message, whichever reaction it is now.
  const eventId = cut(`telegram:reaction:${r.chat.id}:${r.message_id}:${actor}`, 256)
  const chatType = r.chat.type === undefined ? null : cut(r.chat.type, 32)
  if (r.new_reaction.length === 0) {
    return mapped({
      update_id: updateId,
      update_type: "message_reaction",
      addressed: false,
      warnings: [],
      retractions: [{ chat_id: String(r.chat.id), chat_type: chatType, event_id: eventId, at: millisOf(r.date) }]
    }, [], [])
  }
  const sender = r.actor_chat !== undefined
    ? personOfChat(r.actor_chat)
    : r.user !== undefined
    ? personOfUser(r.user)
    : { display_name: "anonymous" }
  const built = HistoryItem.build({
    event_id: eventId,
    kind: "inbound_reaction",
    chat_id: String(r.chat.id),
    // Reaction updates carry no thread: the caller places them by the reacted message.
    topic_id: null,
    chat_type: chatType,
    reply_to_message_id: String(r.message_id),
    sender,
    text: cut(reactionText(r.new_reaction.slice(0, 20)), 512)
  }, millisOf(r.date))
  return mapped({ update_id: updateId, update_type: "message_reaction", addressed: false, warnings: built.warnings }, [], [
    withinLimits(built.item)
  ])
}

/**
 * Maps one Telegram `Update` (untrusted JSON) to deixis events and history items.
 *
 * - `message`, `channel_post`, `business_message`: a `message_observed` event (with links,
 *   media, poll, album) and a history item — preceded by the message replied to, as seen in
 *   the reply; `edited_*`: the same with `message_edited` and `edited_at`; a service notice:
 *   nothing, or for a group's upgrade its `migration` (see {@link mapMessage}).
 * - `poll` with `is_closed: true`: one `poll_closed` event by `poll_id`
 *   (`event_id: "telegram:poll_closed:<poll_id>"`); an open poll's update maps to nothing.
 * - `message_reaction`: one `inbound_reaction` history item of the actor's reactions now,
 *   `topic_id` null and `reply_to_message_id` the reacted message (place it by that message),
 *   its `event_id` naming the actor and the message (`telegram:reaction:<chat>:<message>:<actor>`)
 *   so a changed reaction replaces it and a redelivery is stored once; a reaction withdrawn
 *   (no `new_reaction`): its {@link Retraction}.
 * - `guest_message`: as `message`, in the guest scope (`guestChatId`); a direct-messages
 *   topic's message in its own chat (`directMessagesChatId`); see `MessageScope.destination`.
 * - `poll_answer`, `callback_query`, `inline_query`, membership and payment updates,
 *   `managed_bot`: nothing, with `skipped` naming why (`FieldDecisions.updateDecisions`); a type
 *   not in the specification: nothing, `skipped: "unknown update type: …"`.
 *
 * Never throws.
 *
 * @since 0.1.0
 * @category mapping
 */
export const mapUpdate = (update: unknown, options: MapOptions = {}): MappedUpdate => {
  if (!Predicate.isRecord(update)) return empty(null, null, "malformed update: not a JSON object")
  // Before anything reads it: a decoder's message prints the value it refused, recursively.
  if (Json.nestsDeeperThan(update)) return empty(null, null, `malformed update: ${tooDeep}`)
  // update_id checked by hand: a Schema decoder's copy and parse result cost more, for every update.
  const updateId = update["update_id"]
  if (typeof updateId !== "number" || !Number.isSafeInteger(updateId)) {
    return empty(null, null, "malformed update: update_id is not an integer")
  }
  for (const key of messageKeys) {
    if (update[key] !== undefined) {
      return messageOf(update[key], options, key, updateId)
    }
  }
  if (update["poll"] !== undefined) {
    const poll = decodePoll(update["poll"], { onExcessProperty: "ignore" })
    if (Either.isLeft(poll) || !pollIdOk(poll.right.id)) {
      return empty(updateId, "poll", "malformed poll: id")
    }
    return poll.right.is_closed === true
      ? mapped({ update_id: updateId, update_type: "poll", addressed: false, warnings: [] }, [
        { type: "poll_closed", event_id: `telegram:poll_closed:${poll.right.id}`, poll_id: poll.right.id }
      ], [])
      : empty(updateId, "poll", "poll: still open; votes are not context events")
  }
  if (update["poll_answer"] !== undefined) {
    return Either.isLeft(decodePollAnswer(update["poll_answer"], { onExcessProperty: "ignore" }))
      ? empty(updateId, "poll_answer", "malformed poll_answer")
      : empty(updateId, "poll_answer", "poll_answer: carries no chat; votes are not context events")
  }
  if (update["message_reaction"] !== undefined) return mapReaction(update["message_reaction"], updateId)
  for (const [type, why] of ignoredUpdates) {
    if (update[type] !== undefined) return empty(updateId, type, `${type}: ${why}`)
  }
  const keys = Object.keys(update).filter((k) => k !== "update_id").slice(0, 3).map((k) => cut(k, 40))
  return empty(updateId, null, `unknown update type: ${keys.length === 0 ? "(none)" : keys.join(", ")}`)
}

/**
 * The update as it applies to the chats its chats migrated into (`moved`: old chat id → new
 * chat id, from `ContextStore.chat(id).migrated_to`), so a late or redelivered update of a
 * group that became a supergroup is recorded where the chat's data now is, under the ids the
 * migration gave its messages. Its events move by core's `ContextEvent.toMigratedChat`, its
 * items by chathistory's `HistoryItem.toMigratedChat`; its scope and answers the same way; a
 * withdrawn reaction keeps its event id (only the chat changes). Parts of other chats stay.
 *
 * @since 0.1.0
 * @category migration
 */
export const toMigratedChats = (mapped: MappedUpdate, moved: ReadonlyMap<string, string>): MappedUpdate => {
  const migrated = <A extends { readonly chat_id: string }>(value: A, move: (value: A, to: string) => A): A => {
    const to = moved.get(value.chat_id)
    return to === undefined ? value : move(value, to)
  }
  const { responses, retractions, scope } = mapped
  return {
    ...mapped,
    events: mapped.events.map((e) => {
      const to = e.type === "message_observed" || e.type === "message_edited" ? moved.get(e.chat_id) : undefined
      return to === undefined ? e : eventToMigratedChat(e, to)
    }),
    history: mapped.history.map((item) => migrated(item, HistoryItem.toMigratedChat)),
    ...(scope === undefined ? {} : { scope: migrated(scope, scopeToMigratedChat) }),
    ...(retractions === undefined ? {} : { retractions: retractions.map((r) => migrated(r, (r, to) => ({ ...r, chat_id: to }))) }),
    ...(responses === undefined ? {} : {
      responses: responses.map((r) =>
        migrated(r, (r, to) => ({ ...r, chat_id: to, message_id: migratedMessageId(r.message_id), response_id: migratedMessageId(r.response_id) }))
      )
    })
  }
}

const scopeToMigratedChat = (scope: MessageScope, to: string): MessageScope => ({
  ...scope,
  chat_id: to,
  destination: { ...scope.destination, chat_id: to },
  message_id: migratedMessageId(scope.message_id),
  reply_to_message_id: scope.reply_to_message_id === null ? null : migratedMessageId(scope.reply_to_message_id)
})
