/**
 * Telegram Desktop's chat export ("Export chat history" → "Machine-readable JSON",
 * `result.json`) and its mapping to the Bot API `Update` shape, so an imported message goes
 * through the same recording path as a live one (`TelegramRecorder.recordBatch`) and gets the
 * same ids: a live update of the same message later is the same message, not a second one.
 *
 * What the export does not hold is not invented: file ids (media are recorded by kind and
 * name, without a file id), the original date of a forward (the message's own date stands
 * in), a poll's id (one is derived from the chat and message). Albums are not marked in the
 * export: consecutive media messages of one sender sent in the same second are taken as one
 * album. Forum topics are found by their `topic_created` service messages; a message
 * replying to one belongs to that topic, a reply to a topic's message to the same topic, and
 * anything else of a forum to its General topic.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/**
 * A chat export that cannot be imported: the message number (1-based, in file order), its
 * id when it had one, and the field at fault. Nothing of the batch holding it was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class ExportError extends Data.TaggedError("ExportError")<{
  readonly message: string
  /** The message's 1-based position in the export, or null for the file's own fields. */
  readonly number: number | null
  readonly id: number | null
  readonly field: string | null
}> {}

/**
 * A file that is not a single-chat Telegram Desktop JSON export, named as what it is.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotAChatExport extends Data.TaggedError("NotAChatExport")<{ readonly message: string }> {}

/**
 * The chat types of an export, as Telegram Desktop names them.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatType = Schema.Literal(
  "personal_chat",
  "bot_chat",
  "saved_messages",
  "private_group",
  "private_supergroup",
  "public_supergroup",
  "private_channel",
  "public_channel"
)

/**
 * @since 0.1.0
 * @category models
 */
export type ChatType = typeof ChatType.Type

/**
 * The export's own fields, read before its messages.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChatHead {
  readonly name: string | null
  readonly type: ChatType
  /** The id as exported (without the Bot API's `-` / `-100` prefix). */
  readonly id: number
}

const Int = Schema.Int.pipe(Schema.filter((n) => Number.isSafeInteger(n) || "an integer within ±(2^53 − 1)"))
const Digits = Schema.String.pipe(Schema.pattern(/^-?\d{1,16}$/, { message: () => "a Unix time in seconds, as a string of digits" }))

const TextPart = Schema.Struct({
  type: Schema.String,
  text: Schema.String,
  href: Schema.optional(Schema.String),
  user_id: Schema.optional(Schema.Union(Int, Schema.String)),
  document_id: Schema.optional(Schema.String)
})

const Text = Schema.Union(Schema.String, Schema.Array(Schema.Union(Schema.String, TextPart)))

/**
 * One message of an export (the fields deixis reads; others are ignored).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ExportMessage = Schema.Struct({
  id: Int,
  type: Schema.String,
  date: Schema.optional(Schema.String),
  date_unixtime: Schema.optional(Digits),
  edited_unixtime: Schema.optional(Digits),
  from: Schema.optional(Schema.NullOr(Schema.String)),
  from_id: Schema.optional(Schema.String),
  actor: Schema.optional(Schema.NullOr(Schema.String)),
  actor_id: Schema.optional(Schema.String),
  action: Schema.optional(Schema.String),
  title: Schema.optional(Schema.String),
  reply_to_message_id: Schema.optional(Int),
  reply_to_peer_id: Schema.optional(Schema.String),
  message_id: Schema.optional(Int),
  forwarded_from: Schema.optional(Schema.NullOr(Schema.String)),
  forwarded_from_id: Schema.optional(Schema.String),
  saved_from: Schema.optional(Schema.String),
  via_bot: Schema.optional(Schema.String),
  text: Schema.optional(Text),
  text_entities: Schema.optional(Schema.Array(TextPart)),
  photo: Schema.optional(Schema.String),
  width: Schema.optional(Schema.Number),
  height: Schema.optional(Schema.Number),
  file: Schema.optional(Schema.String),
  file_name: Schema.optional(Schema.String),
  mime_type: Schema.optional(Schema.String),
  media_type: Schema.optional(Schema.String),
  sticker_emoji: Schema.optional(Schema.String),
  performer: Schema.optional(Schema.String),
  poll: Schema.optional(Schema.Struct({ question: Schema.String, closed: Schema.optional(Schema.Boolean) })),
  location_information: Schema.optional(Schema.Struct({ latitude: Schema.Number, longitude: Schema.Number })),
  place_name: Schema.optional(Schema.String),
  contact_information: Schema.optional(Schema.Unknown),
  dice: Schema.optional(Schema.Unknown)
})

/**
 * @since 0.1.0
 * @category models
 */
export type ExportMessage = typeof ExportMessage.Type

/**
 * What a full account export (Settings → Export Telegram data) is called when given instead
 * of a single chat's.
 *
 * @since 0.1.0
 * @category errors
 */
export const fullExport =
  "a full Telegram Desktop account export (\"chats\".\"list\"): export a single chat instead (the chat's ⋮ menu → Export chat history → JSON)"

const decodeMessage = Schema.decodeUnknownEither(ExportMessage)
const decodeChatType = Schema.decodeUnknownEither(ChatType)

/**
 * The Bot API chat id of an exported chat: a user's id for private chats, `-id` for a basic
 * group, `-100…` for supergroups and channels.
 *
 * @since 0.1.0
 * @category mapping
 */
export const botApiChatId = (head: ChatHead): number => {
  switch (head.type) {
    case "personal_chat":
    case "bot_chat":
    case "saved_messages":
      return head.id
    case "private_group":
      return -head.id
    default:
      return -(1_000_000_000_000 + head.id)
  }
}

const botApiChatType = (type: ChatType): string =>
  type === "private_group" ? "group" : type.endsWith("supergroup") ? "supergroup" : type.endsWith("channel") ? "channel" : "private"

/**
 * Reads the export's own fields (all but `messages`) into a {@link ChatHead}, or names the
 * format the file is when it is not a single-chat export.
 *
 * @since 0.1.0
 * @category decoding
 */
export const readHead = (fields: ReadonlyMap<string, unknown>): Either.Either<ChatHead, NotAChatExport | ExportError> => {
  const type = fields.get("type")
  const id = fields.get("id")
  if (type === undefined || id === undefined) {
    const what = fields.has("chats") || fields.has("personal_information")
      ? fullExport
      : fields.has("ok") && fields.has("result")
      ? "a Bot API response (getUpdates?), not a Telegram Desktop chat export"
      : fields.has("update_id")
      ? "a Bot API update, not a Telegram Desktop chat export"
      : `a JSON object without the "type" and "id" of a Telegram Desktop chat export (fields: ${[...fields.keys()].slice(0, 6).join(", ") || "none"})`
    return Either.left(new NotAChatExport({ message: `not a Telegram Desktop chat export: ${what}` }))
  }
  const chatType = decodeChatType(type)
  if (Either.isLeft(chatType)) {
    return Either.left(new ExportError({ message: `field "type": unknown chat type ${JSON.stringify(type)}`, number: null, id: null, field: "type" }))
  }
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id <= 0) {
    return Either.left(new ExportError({ message: `field "id": expected a positive integer, found ${JSON.stringify(id)}`, number: null, id: null, field: "id" }))
  }
  const name = fields.get("name")
  return Either.right({ name: typeof name === "string" ? name : null, type: chatType.right, id })
}

/**
 * Decodes one raw message; a failure names the message number, its id and the field.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = (raw: unknown, number: number): Either.Either<ExportMessage, ExportError> => {
  const decoded = decodeMessage(raw, { errors: "first", onExcessProperty: "ignore" })
  const id = typeof raw === "object" && raw !== null && typeof (raw as { id?: unknown }).id === "number"
    ? (raw as { id: number }).id
    : null
  if (Either.isLeft(decoded)) {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]
    const field = issue === undefined || issue.path.length === 0 ? "(message)" : issue.path.map(String).join(".")
    return Either.left(new ExportError({
      message: `message ${number}${id === null ? "" : ` (id ${id})`}: field "${field}": ${issue?.message ?? "invalid"}`,
      number,
      id,
      field
    }))
  }
  const m = decoded.right
  if (m.date_unixtime === undefined && (m.date === undefined || Number.isNaN(Date.parse(m.date)))) {
    return Either.left(new ExportError({
      message: `message ${number} (id ${m.id}): field "date_unixtime": missing (and no readable "date")`,
      number,
      id: m.id,
      field: "date_unixtime"
    }))
  }
  return Either.right(m)
}

/**
 * What the mapping remembers across messages: the forum's topics and which topic each message
 * is in, and the album being read. One entry per forum message outside General.
 *
 * @since 0.1.0
 * @category models
 */
export interface MapState {
  forum: boolean
  readonly topics: Set<number>
  readonly topicOf: Map<number, number>
  /** The album being read: its key, and its first message, marked only when a second one joins. */
  album: { readonly sender: string; readonly date: number; readonly id: string; readonly first: Record<string, unknown>; size: number } | null
}

/**
 * A fresh state; `forum` forces forum handling from the first message (otherwise it starts at
 * the first `topic_created`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const initialState = (forum = false): MapState => ({ forum, topics: new Set(), topicOf: new Map(), album: null })

const seconds = (m: ExportMessage): number =>
  m.date_unixtime !== undefined ? Number(m.date_unixtime) : Math.floor(Date.parse(m.date! + (/Z|[+-]\d\d:?\d\d$/.test(m.date!) ? "" : "Z")) / 1000)

/**
 * When a decoded message was sent, in milliseconds since the epoch (the Bot API's whole
 * seconds, as its update says).
 *
 * @since 0.2.0
 * @category mapping
 */
export const sentAt = (m: ExportMessage): number => seconds(m) * 1000

/** A peer id of the export (`user123`, `channel123`, `chat123`) as the Bot API's sender. */
const peerOf = (peer: string | undefined, name: string | null | undefined): Record<string, unknown> | undefined => {
  const match = peer === undefined ? null : /^(user|channel|chat)(\d{1,16})$/.exec(peer)
  if (match === null) return undefined
  const id = Number(match[2])
  const label = name ?? undefined
  if (match[1] === "user") return { from: { id, is_bot: false, ...(label === undefined ? {} : { first_name: label }) } }
  const chatId = match[1] === "channel" ? -(1_000_000_000_000 + id) : -id
  return { sender_chat: { id: chatId, type: match[1] === "channel" ? "channel" : "group", ...(label === undefined ? {} : { title: label }) } }
}

const entityType: Readonly<Record<string, string>> = {
  link: "url",
  text_link: "text_link",
  mention: "mention",
  mention_name: "text_mention",
  bot_command: "bot_command",
  hashtag: "hashtag",
  cashtag: "cashtag",
  email: "email",
  phone: "phone_number",
  bold: "bold",
  italic: "italic",
  underline: "underline",
  strikethrough: "strikethrough",
  spoiler: "spoiler",
  code: "code",
  pre: "pre",
  blockquote: "blockquote",
  custom_emoji: "custom_emoji",
  bank_card: "bank_card"
}

/**
 * The text and Bot API entities of an exported text: a plain string, or the parts array
 * (strings and typed parts, offsets counted in UTF-16 code units as the Bot API does).
 *
 * @since 0.1.0
 * @category mapping
 */
export const textOf = (m: Pick<ExportMessage, "text" | "text_entities">): { readonly text: string; readonly entities: Array<Record<string, unknown>> } => {
  const parts = m.text_entities ?? (typeof m.text === "string" ? [m.text] : m.text ?? [])
  let text = ""
  const entities: Array<Record<string, unknown>> = []
  for (const part of parts) {
    if (typeof part === "string") {
      text += part
      continue
    }
    const type = entityType[part.type]
    if (type !== undefined && part.text.length > 0) {
      const entity: Record<string, unknown> = { type, offset: text.length, length: part.text.length }
      if (type === "text_link" && part.href !== undefined) entity["url"] = part.href
      if (type === "text_mention" && part.user_id !== undefined) {
        const id = Number(part.user_id)
        if (Number.isSafeInteger(id)) entity["user"] = { id, is_bot: false, first_name: part.text }
        else continue
      }
      entities.push(entity)
    }
    text += part.text
  }
  return { text, entities }
}

const baseName = (path: string | undefined): string | undefined => {
  if (path === undefined || path.startsWith("(")) return undefined
  const slash = path.lastIndexOf("/")
  return slash < 0 ? path : path.slice(slash + 1)
}

/** The Bot API media fields of an exported message (no file ids: the export has none). */
const mediaOf = (m: ExportMessage, chatId: number): Record<string, unknown> => {
  if (m.photo !== undefined) {
    return { photo: [{ file_id: "", ...(m.width === undefined ? {} : { width: m.width }), ...(m.height === undefined ? {} : { height: m.height }) }] }
  }
  const name = m.file_name ?? baseName(m.file)
  const file = { file_id: "", ...(name === undefined ? {} : { file_name: name }), ...(m.mime_type === undefined ? {} : { mime_type: m.mime_type }) }
  switch (m.media_type) {
    case "sticker":
      return { sticker: { file_id: "", ...(m.sticker_emoji === undefined ? {} : { emoji: m.sticker_emoji }) } }
    case "animation":
      return { animation: file, document: file }
    case "video_file":
      return { video: file }
    case "video_message":
      return { video_note: { file_id: "" } }
    case "voice_message":
      return { voice: { file_id: "" } }
    case "audio_file":
      return { audio: { ...file, ...(m.performer === undefined ? {} : { performer: m.performer }), ...(m.title === undefined ? {} : { title: m.title }) } }
  }
  if (m.file !== undefined) return { document: file }
  if (m.poll !== undefined) return { poll: { id: `export${chatId}_${m.id}`, question: m.poll.question, is_closed: m.poll.closed ?? false } }
  if (m.location_information !== undefined) {
    const location = { latitude: m.location_information.latitude, longitude: m.location_information.longitude }
    return m.place_name === undefined ? { location } : { location, venue: { title: m.place_name, location } }
  }
  if (m.contact_information !== undefined) return { contact: m.contact_information }
  if (m.dice !== undefined) return { dice: {} }
  return {}
}

const hasMedia = (media: Record<string, unknown>) =>
  media["photo"] !== undefined || media["video"] !== undefined || media["document"] !== undefined || media["audio"] !== undefined

/** A service message's Bot API service field: what kind of notice it is (never recorded as conversation). */
const serviceOf = (m: ExportMessage): Record<string, unknown> => {
  switch (m.action) {
    case "topic_created":
      return { forum_topic_created: { name: m.title ?? "" } }
    case "pin_message":
      return m.message_id === undefined ? { pinned_message: {} } : { pinned_message: { message_id: m.message_id, date: 0 } }
    case "invite_members":
    case "join_group_by_link":
    case "join_group_by_request":
      return { new_chat_members: [] }
    case "remove_members":
      return { left_chat_member: {} }
    case "edit_group_title":
      return { new_chat_title: m.title ?? "" }
    case "create_group":
      return { group_chat_created: true }
    case "migrate_from_group":
    case "migrate_to_supergroup":
      // The export names no group id: the migration is not replayed (its messages are the supergroup's).
      return { export_service: m.action }
    default:
      return { export_service: m.action ?? "unknown" }
  }
}

/**
 * One exported message as a Bot API `Update` (`update_id` is the message id: update ids are
 * only read for logs), updating `state` (topics, albums).
 *
 * @since 0.1.0
 * @category mapping
 */
export const toUpdate = (head: ChatHead, m: ExportMessage, state: MapState): Record<string, unknown> => {
  const chatId = botApiChatId(head)
  const type = botApiChatType(head.type)
  if (m.type === "service" && m.action === "topic_created") {
    state.forum = true
    state.topics.add(m.id)
  }
  const chat: Record<string, unknown> = {
    id: chatId,
    type,
    ...(type === "private" ? { first_name: head.name ?? "" } : { title: head.name ?? "" }),
    ...(state.forum ? { is_forum: true } : {})
  }
  const date = seconds(m)
  const message: Record<string, unknown> = { message_id: m.id, date, chat }
  const sender = m.type === "service" ? peerOf(m.actor_id, m.actor) : peerOf(m.from_id, m.from)
  if (sender !== undefined) Object.assign(message, sender)
  else if (type === "channel") message["sender_chat"] = { id: chatId, type, title: head.name ?? "" }

  // The topic: a reply to a topic's creation is a plain message of that topic.
  const replyTo = m.reply_to_message_id
  const crossChat = m.reply_to_peer_id !== undefined
  let topic: number | undefined
  if (state.forum) {
    if (m.type === "service" && m.action === "topic_created") topic = m.id
    else if (replyTo !== undefined && !crossChat) topic = state.topics.has(replyTo) ? replyTo : state.topicOf.get(replyTo)
    if (topic !== undefined) {
      state.topicOf.set(m.id, topic)
      message["message_thread_id"] = topic
      message["is_topic_message"] = true
    }
  }
  if (replyTo !== undefined && replyTo !== topic && !crossChat) {
    message["reply_to_message"] = { message_id: replyTo }
  }

  if (m.type === "service") {
    state.album = null
    Object.assign(message, serviceOf(m))
    return { update_id: m.id, message }
  }

  const { entities, text } = textOf(m)
  const media = mediaOf(m, chatId)
  Object.assign(message, media)
  const captioned = Object.keys(media).length > 0
  if (text.length > 0 || !captioned) {
    message[captioned ? "caption" : "text"] = text
    if (entities.length > 0) message[captioned ? "caption_entities" : "entities"] = entities
  }
  if (m.edited_unixtime !== undefined) message["edit_date"] = Number(m.edited_unixtime)
  if (m.forwarded_from !== undefined || m.forwarded_from_id !== undefined) {
    const origin = peerOf(m.forwarded_from_id, m.forwarded_from)
    const name = m.forwarded_from ?? "unknown"
    // (The key written as a template: the published package's import scan reads quoted `from`s.)
    message["forward_origin"] = origin?.[`from`] !== undefined
      ? { type: "user", date, sender_user: origin[`from`] }
      : origin?.["sender_chat"] !== undefined
      ? { type: (origin["sender_chat"] as { type: string }).type === "channel" ? "channel" : "chat", date, chat: origin["sender_chat"], sender_chat: origin["sender_chat"] }
      : { type: "hidden_user", date, sender_user_name: name }
  }

  // Albums: consecutive media of one sender in one second (at most 10, Telegram's own limit).
  const senderKey = m.from_id ?? ""
  const album = state.album
  if (hasMedia(media) && album !== null && album.sender === senderKey && album.date === date && album.size < 10) {
    album.first["media_group_id"] = album.id
    message["media_group_id"] = album.id
    album.size++
  } else {
    state.album = hasMedia(media) ? { sender: senderKey, date, id: `export${chatId}_${m.id}`, first: message, size: 1 } : null
  }
  return { update_id: m.id, message }
}
