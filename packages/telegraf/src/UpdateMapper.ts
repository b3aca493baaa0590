/**
 * The pure mapping from a Telegram Bot API `Update` to deixis events (`@deixis/core`) and
 * history items (`@deixis/chathistory`). It imports no Telegraf runtime, does no I/O, reads
 * no clock, and never throws: an update it cannot or need not map yields no events, no items
 * and a `skipped` reason, which the caller logs.
 *
 * @since 0.1.0
 */
import type { ContextEventInput } from "@deixis/core/ContextEvent"
import { decodeEvents } from "@deixis/core/ContextEvent"
import * as HistoryItem from "@deixis/chathistory/HistoryItem"
import type * as Mentions from "@deixis/chathistory/Mentions"
import type * as PeopleRef from "@deixis/chathistory/PeopleRef"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
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
 * Where one message is: the ids every deixis call for it needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface MessageScope {
  readonly chat_id: string
  /** The forum topic (`"1"` for a forum's General topic), or null outside forums. */
  readonly topic_id: string | null
  readonly message_id: string
  readonly reply_to_message_id: string | null
  readonly sender_user_id: string | null
  readonly chat_type: string | null
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
  /** Events for `ContextIngest.ingest` (their wire form). */
  readonly events: ReadonlyArray<ContextEventInput>
  /** History items for `HistoryStore.append` after `HistoryItem.decode` (their wire form). */
  readonly history: ReadonlyArray<HistoryItem.HistoryItemEncoded>
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
 * The `topic_id` deixis gives a forum's General topic: Telegram's own id for it. General
 * messages carry no `message_thread_id`; to post in General, send without one.
 *
 * @since 0.1.0
 * @category constants
 */
export const generalTopicId = "1"

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
const maxPollIdLength = 256
const maxAttachmentName = 256
const maxHistoryText = 32_768
// Date#toISOString throws past ±8.64e15 ms; Telegram dates are seconds.
const maxDateSeconds = 8_640_000_000_000

const decodeHead = Schema.decodeUnknownEither(Tg.UpdateHead)
const decodeMessage = Schema.decodeUnknownEither(Tg.Message)
const decodePoll = Schema.decodeUnknownEither(Tg.Poll)
const decodePollAnswer = Schema.decodeUnknownEither(Tg.PollAnswer)
const decodeReaction = Schema.decodeUnknownEither(Tg.MessageReaction)
const decodeItem = Schema.decodeUnknownEither(HistoryItem.HistoryItem)
const encodeItem = Schema.encodeEither(HistoryItem.HistoryItem)

const messageKeys = ["message", "edited_message", "channel_post", "edited_channel_post"] as const

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const firstIssue = (error: { readonly message: string }): string => {
  const line = error.message.split("\n").slice(-1)[0] ?? error.message
  return line.trim().slice(0, 200)
}

const empty = (
  update_id: number | null,
  update_type: string | null,
  skipped: string,
  warnings: ReadonlyArray<string> = []
): MappedUpdate => ({ update_id, update_type, events: [], history: [], addressed: false, warnings, skipped })

const isoOf = (seconds: number): string | undefined =>
  Math.abs(seconds) <= maxDateSeconds ? new Date(seconds * 1000).toISOString() : undefined

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

const inRange = (text: string, e: Tg.Entity) => e.offset >= 0 && e.length > 0 && e.offset + e.length <= text.length

const linksOf = (text: string, entities: ReadonlyArray<Tg.Entity>, warnings: Array<string>) => {
  const links: Array<{ url: string; title?: string }> = []
  const seen = new Set<string>()
  for (const e of entities) {
    if (e.type !== "url" && e.type !== "text_link") continue
    if (!inRange(text, e)) {
      warnings.push(`${e.type} entity at ${e.offset} is out of the text's range; skipped`)
      continue
    }
    // Offsets and lengths are UTF-16 code units, as JavaScript strings index.
    const span = text.slice(e.offset, e.offset + e.length)
    const url = e.type === "url" ? span.trim() : (e.url ?? "")
    if (url.length === 0 || url.length > maxRefLength) {
      warnings.push(`${e.type} entity at ${e.offset} has no usable url; skipped`)
      continue
    }
    if (seen.has(url) || links.length >= maxLinks) continue
    seen.add(url)
    const title = e.type === "text_link" ? span.replace(/\s+/g, " ").trim() : ""
    links.push(title === "" || title === url ? { url } : { url, title })
  }
  return links
}

type MediaRef = { kind: "media.image" | "media.video" | "media.voice" | "media.document" | "media.pdf"; file_id?: string; label?: string }
type Attachment = HistoryItem.Attachment

const mediaRef = (kind: MediaRef["kind"], fileId: string | undefined, label: string | undefined): MediaRef => {
  const ref: MediaRef = { kind }
  if (fileId !== undefined && fileId.length > 0 && fileId.length <= maxRefLength) ref.file_id = fileId
  const clean = label?.replace(/\s+/g, " ").trim()
  if (clean !== undefined && clean !== "") ref.label = cut(clean, 512)
  return ref
}

const attachment = (kind: Attachment["kind"], name: string | undefined): Attachment =>
  name === undefined || name.trim() === "" ? { kind } : { kind, name: cut(name.trim(), maxAttachmentName) }

const documentKind = (doc: Tg.FileLike): MediaRef["kind"] => {
  const mime = (doc.mime_type ?? "").toLowerCase()
  const name = (doc.file_name ?? "").toLowerCase()
  if (mime === "application/pdf" || name.endsWith(".pdf")) return "media.pdf"
  if (mime.startsWith("image/")) return "media.image"
  if (mime.startsWith("video/")) return "media.video"
  if (mime.startsWith("audio/")) return "media.voice"
  return "media.document"
}

const mediaOf = (m: Tg.Message, caption: string | undefined) => {
  const media: Array<MediaRef> = []
  const attachments: Array<Attachment> = []
  if (m.photo !== undefined && m.photo.length > 0) {
    // The sizes come smallest first; the largest is the photo itself.
    const largest = m.photo.reduce((a, b) => ((b.width ?? 0) * (b.height ?? 0) >= (a.width ?? 0) * (a.height ?? 0) ? b : a))
    media.push(mediaRef("media.image", largest.file_id, caption))
    attachments.push(attachment("photo", undefined))
  }
  if (m.animation !== undefined) {
    media.push(mediaRef("media.video", m.animation.file_id, m.animation.file_name ?? caption))
    attachments.push(attachment("animation", m.animation.file_name))
  }
  if (m.video !== undefined) {
    media.push(mediaRef("media.video", m.video.file_id, m.video.file_name ?? caption))
    attachments.push(attachment("video", m.video.file_name))
  }
  if (m.video_note !== undefined) {
    media.push(mediaRef("media.video", m.video_note.file_id, undefined))
    attachments.push(attachment("video_note", undefined))
  }
  if (m.voice !== undefined) {
    media.push(mediaRef("media.voice", m.voice.file_id, caption))
    attachments.push(attachment("voice", undefined))
  }
  if (m.audio !== undefined) {
    const title = [m.audio.performer, m.audio.title].filter((s) => s !== undefined && s !== "").join(" – ")
    const name = title !== "" ? title : m.audio.file_name
    media.push(mediaRef("media.voice", m.audio.file_id, name ?? caption))
    attachments.push(attachment("audio", name))
  }
  // An animation also arrives as a document; it is the animation.
  if (m.document !== undefined && m.animation === undefined) {
    media.push(mediaRef(documentKind(m.document), m.document.file_id, m.document.file_name ?? caption))
    attachments.push(attachment("document", m.document.file_name))
  }
  if (m.sticker !== undefined) attachments.push(attachment("sticker", m.sticker.emoji))
  if (m.poll !== undefined) attachments.push(attachment("poll", m.poll.question))
  if (m.location !== undefined) attachments.push(attachment("location", undefined))
  if (m.contact !== undefined) attachments.push(attachment("contact", undefined))
  return { media, attachments }
}

const addressedToBot = (m: Tg.Message, text: string, entities: ReadonlyArray<Tg.Entity>, options: MapOptions) => {
  if (m.chat.type === "private") return true
  if (options.botId !== undefined && m.reply_to_message?.from !== undefined && String(m.reply_to_message.from.id) === options.botId) {
    return true
  }
  const username = options.botUsername?.replace(/^@/, "").toLowerCase()
  for (const e of entities) {
    if (!inRange(text, e)) continue
    const span = text.slice(e.offset, e.offset + e.length)
    if (e.type === "bot_command" && e.offset === 0) {
      const at = span.indexOf("@")
      if (at < 0 || (username !== undefined && span.slice(at + 1).toLowerCase() === username)) return true
    }
    if (e.type === "mention" && username !== undefined && span.slice(1).toLowerCase() === username) return true
    if (e.type === "text_mention" && options.botId !== undefined && e.user !== undefined && String(e.user.id) === options.botId) {
      return true
    }
  }
  return false
}

const toMentionEntities = (text: string, entities: ReadonlyArray<Tg.Entity>): Array<Mentions.MessageEntity> =>
  entities
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

/**
 * Maps one decoded Telegram message (a `message`, `edited_message`, `channel_post` or
 * `edited_channel_post`, or a message the bot just sent) to its event and history item.
 *
 * @since 0.1.0
 * @category mapping
 */
export const mapMessage = (input: unknown, options: MapOptions = {}, updateType = "message"): MappedUpdate => {
  const decoded = decodeMessage(input, { errors: "first", onExcessProperty: "ignore" })
  if (Either.isLeft(decoded)) return empty(null, updateType, `malformed ${updateType}: ${firstIssue(decoded.left)}`)
  const m = decoded.right
  const warnings: Array<string> = []
  const sentAt = isoOf(m.date)
  if (sentAt === undefined) return empty(null, updateType, `malformed ${updateType}: date out of range`)

  const chatId = String(m.chat.id)
  const topicId = topicIdOf(m)
  const rawText = m.text ?? m.caption ?? ""
  const text = cut(rawText, maxTextLength)
  if (text.length < rawText.length) warnings.push(`text cut from ${rawText.length} to ${text.length} UTF-16 code units`)
  const allEntities = (m.text !== undefined ? m.entities : m.caption_entities) ?? []
  const entities = allEntities.slice(0, maxEntities)
  if (entities.length < allEntities.length) warnings.push(`only the first ${maxEntities} entities read`)

  // In a forum, a message that is not an explicit reply still "replies" to its topic's
  // creation message; that is not a reply.
  const replied = m.reply_to_message
  const repliesToTopicRoot = replied !== undefined &&
    (replied.forum_topic_created !== undefined ||
      (m.is_topic_message === true && replied.message_id === m.message_thread_id))
  const external = m.external_reply
  const replyTo = replied !== undefined && !repliesToTopicRoot
    ? String(replied.message_id)
    : external?.chat !== undefined && external.chat.id === m.chat.id && external.message_id !== undefined
    ? String(external.message_id)
    : null

  const sender = senderOf(m)
  const senderId = sender?.user_id ?? null
  const outbound = options.botId !== undefined && m.from !== undefined && String(m.from.id) === options.botId &&
    m.sender_chat === undefined
  const { attachments, media } = mediaOf(m, m.caption)
  const links = linksOf(text, entities, warnings)

  const observed: Record<string, unknown> = {
    type: "message_observed",
    chat_id: chatId,
    message_id: String(m.message_id),
    topic_id: topicId,
    reply_to_message_id: replyTo,
    sender_user_id: senderId,
    direction: outbound ? "outbound" : "inbound",
    sent_at: sentAt
  }
  if (links.length > 0) observed["links"] = links
  if (media.length > 0) observed["media"] = media.slice(0, maxLinks)
  if (m.poll !== undefined) {
    if (m.poll.id.length > 0 && m.poll.id.length <= maxPollIdLength) {
      observed["poll"] = {
        poll_id: m.poll.id,
        ...(m.poll.question === undefined || m.poll.question.trim() === "" ? {} : { question: m.poll.question }),
        is_closed: m.poll.is_closed ?? false
      }
    } else {
      warnings.push("poll id unusable; poll not recorded")
    }
  }

  const quotedPerson = replied !== undefined && !repliesToTopicRoot
    ? senderOf(replied) ?? null
    : originPerson(external?.origin)
  const people = [sender, quotedPerson].filter((p): p is PeopleRef.Person => p !== undefined && p !== null)
  const built = HistoryItem.build({
    kind: outbound ? "outbound_agent" : "inbound_user",
    chat_id: chatId,
    topic_id: topicId,
    chat_type: m.chat.type === undefined ? null : cut(m.chat.type, 32),
    message_id: String(m.message_id),
    reply_to_message_id: replyTo,
    sender: sender ?? { display_name: m.chat.title ?? null },
    text,
    entities: toMentionEntities(text, entities),
    people,
    quote: m.quote === undefined ? null : {
      sender: quotedPerson,
      text: cut(m.quote.text, maxTextLength),
      entities: toMentionEntities(m.quote.text, (m.quote.entities ?? []).slice(0, maxEntities))
    },
    attachments: attachments.slice(0, 50)
  }, m.date * 1000)
  warnings.push(...built.warnings)
  const item = built.item.text.length <= maxHistoryText ? built.item : { ...built.item, text: cut(built.item.text, maxHistoryText) }
  const encoded = encodeItem(item)
  if (Either.isLeft(encoded)) return empty(null, updateType, `unmappable ${updateType}: ${firstIssue(encoded.left)}`, warnings)

  return validated({
    update_id: null,
    update_type: updateType,
    events: [observed as ContextEventInput],
    history: [encoded.right],
    scope: {
      chat_id: chatId,
      topic_id: topicId,
      message_id: String(m.message_id),
      reply_to_message_id: replyTo,
      sender_user_id: senderId,
      chat_type: m.chat.type ?? null
    },
    addressed: !outbound && addressedToBot(m, text, entities, options),
    warnings
  })
}

// The output is checked against the very Schemas its consumers decode with, so what this
// module hands out is always accepted whole.
const validated = (mapped: MappedUpdate): MappedUpdate => {
  const events = decodeEvents(mapped.events)
  if (Either.isLeft(events)) {
    return empty(mapped.update_id, mapped.update_type, `unmappable ${mapped.update_type}: ${events.left.path}: ${events.left.message}`, mapped.warnings)
  }
  for (const item of mapped.history) {
    const decoded = decodeItem(item, { errors: "first" })
    if (Either.isLeft(decoded)) {
      return empty(mapped.update_id, mapped.update_type, `unmappable ${mapped.update_type}: ${firstIssue(decoded.left)}`, mapped.warnings)
    }
  }
  return mapped
}

const reactionText = (reactions: ReadonlyArray<Tg.Reaction>): string =>
  reactions
    .map((r) => r.type === "emoji" && r.emoji !== undefined ? r.emoji : r.type === "paid" ? "⭐" : `:${r.type}:`)
    .join(" ")

const mapReaction = (input: unknown, updateId: number): MappedUpdate => {
  const decoded = decodeReaction(input, { errors: "first", onExcessProperty: "ignore" })
  if (Either.isLeft(decoded)) return empty(updateId, "message_reaction", `malformed message_reaction: ${firstIssue(decoded.left)}`)
  const r = decoded.right
  if (r.new_reaction.length === 0) return empty(updateId, "message_reaction", "message_reaction: a reaction removed; nothing to record")
  if (isoOf(r.date) === undefined) return empty(updateId, "message_reaction", "malformed message_reaction: date out of range")
  const sender = r.actor_chat !== undefined
    ? personOfChat(r.actor_chat)
    : r.user !== undefined
    ? personOfUser(r.user)
    : { display_name: "anonymous" }
  const built = HistoryItem.build({
    kind: "inbound_reaction",
    chat_id: String(r.chat.id),
    // Reaction updates carry no thread: the caller places them by the reacted message.
    topic_id: null,
    chat_type: r.chat.type === undefined ? null : cut(r.chat.type, 32),
    reply_to_message_id: String(r.message_id),
    sender,
    text: cut(reactionText(r.new_reaction.slice(0, 20)), 512)
  }, r.date * 1000)
  const encoded = encodeItem(built.item)
  if (Either.isLeft(encoded)) return empty(updateId, "message_reaction", `unmappable message_reaction: ${firstIssue(encoded.left)}`)
  return validated({
    update_id: updateId,
    update_type: "message_reaction",
    events: [],
    history: [encoded.right],
    addressed: false,
    warnings: built.warnings
  })
}

/**
 * Maps one Telegram `Update` (untrusted JSON) to deixis events and history items.
 *
 * - `message`, `edited_message`, `channel_post`, `edited_channel_post`: one
 *   `message_observed` event (with links, media and poll) and one history item.
 * - `poll` with `is_closed: true`: one `poll_closed` event by `poll_id`
 *   (`event_id: "telegram:poll_closed:<poll_id>"`); an open poll's update maps to nothing.
 * - `message_reaction`: one `inbound_reaction` history item, `topic_id` null and
 *   `reply_to_message_id` the reacted message (place it by that message).
 * - `poll_answer`, `callback_query` and every other type: nothing, with `skipped`.
 *
 * Never throws.
 *
 * @since 0.1.0
 * @category mapping
 */
export const mapUpdate = (update: unknown, options: MapOptions = {}): MappedUpdate => {
  if (!isRecord(update)) return empty(null, null, "malformed update: not a JSON object")
  const head = decodeHead(update)
  if (Either.isLeft(head)) return empty(null, null, "malformed update: update_id is not an integer")
  const updateId = head.right.update_id
  for (const key of messageKeys) {
    if (update[key] !== undefined) {
      const mapped = mapMessage(update[key], options, key)
      return { ...mapped, update_id: updateId }
    }
  }
  if (update["poll"] !== undefined) {
    const poll = decodePoll(update["poll"], { onExcessProperty: "ignore" })
    if (Either.isLeft(poll) || poll.right.id.length === 0 || poll.right.id.length > maxPollIdLength) {
      return empty(updateId, "poll", "malformed poll: id")
    }
    return poll.right.is_closed === true
      ? validated({
        update_id: updateId,
        update_type: "poll",
        events: [{ type: "poll_closed", event_id: `telegram:poll_closed:${poll.right.id}`, poll_id: poll.right.id }],
        history: [],
        addressed: false,
        warnings: []
      })
      : empty(updateId, "poll", "poll: still open; votes are not context events")
  }
  if (update["poll_answer"] !== undefined) {
    return Either.isLeft(decodePollAnswer(update["poll_answer"], { onExcessProperty: "ignore" }))
      ? empty(updateId, "poll_answer", "malformed poll_answer")
      : empty(updateId, "poll_answer", "poll_answer: carries no chat; votes are not context events")
  }
  if (update["message_reaction"] !== undefined) return mapReaction(update["message_reaction"], updateId)
  if (update["callback_query"] !== undefined) {
    return empty(updateId, "callback_query", "callback_query: a button press is not a context event")
  }
  const keys = Object.keys(update).filter((k) => k !== "update_id").slice(0, 3).map((k) => cut(k, 40))
  return empty(updateId, null, `unknown update type: ${keys.length === 0 ? "(none)" : keys.join(", ")}`)
}
