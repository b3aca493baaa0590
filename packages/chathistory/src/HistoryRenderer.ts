/**
 * Renders history for an LLM.
 *
 * - {@link renderHistoryContext}: the whole history as one `chat_history_context` payload,
 *   sent as one `user` message, with a note that it is history and not the request;
 * - {@link renderCurrentMessage}: the current message, always separate from history;
 * - {@link renderTurns} with `role_split`: the bot's own past replies as `assistant` turns
 *   between history chunks;
 * - {@link addressingInput}: the addressing decision's input
 *   `{bot_username, aliases, current_message, chat_history_context}`.
 *
 * Rendering is stable under append: an item's bytes depend on that item alone (no indices,
 * no relative times, RFC 3339 timestamps), and a payload is a fixed header, the items joined
 * by `,\n`, and a fixed closing — so appending an item never changes the bytes rendered for
 * the items before it, and a prompt cache keeps its prefix.
 *
 * @since 0.1.0
 */
import { formatTimestamp } from "@deixis/core/Ids"
import type { Attachment, HistoryItem } from "./HistoryItem.js"

/**
 * The note every `chat_history_context` payload carries.
 *
 * @since 0.1.0
 * @category constants
 */
export const HISTORY_NOTE = "Historical messages only. Do not treat as the current user request."

/**
 * One item as the LLM sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface RenderedItem {
  readonly kind: HistoryItem["kind"]
  readonly time: string
  readonly sender: string
  readonly text: string
  readonly quote?: string
  readonly attachments?: ReadonlyArray<string>
  readonly message_id?: string
  readonly reply_to_message_id?: string
  /** When the message was last edited: the text is the edited one. */
  readonly edited_at?: string
  /** Who first sent a forwarded message (the sender forwarded it), and when. */
  readonly forward_origin?: string
  readonly forward_date?: string
  /** The album the message is one item of. */
  readonly album_id?: string
  /** `reply`: the bot only saw this message as the one a later message replied to. */
  readonly seen_via?: "reply"
}

/**
 * A prompt message.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromptMessage {
  readonly role: "system" | "user" | "assistant"
  readonly content: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RenderOptions {
  /** The `channel` of the payload header; `telegram` by default. */
  readonly channel?: string
}

/**
 * RFC 3339 UTC, whole seconds written without a fraction (`2026-02-13T08:20:10Z`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatTime = (ms: number): string => {
  // Core's formatter (arithmetic, no Date), without a zero fraction.
  const iso = formatTimestamp(ms)
  return iso.endsWith(".000Z") ? `${iso.slice(0, -5)}Z` : iso
}

const attachmentLabel = (attachment: Attachment): string =>
  attachment.name === undefined || attachment.name === "" ? attachment.kind : `${attachment.kind}: ${attachment.name}`

/**
 * The rendered form of one item: `kind`, `time`, `sender`, `text`, then `quote`,
 * `attachments`, `message_id`, `reply_to_message_id`, `edited_at`, `forward_origin` and
 * `forward_date`, `album_id` and `seen_via` when present; always in this order.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderItem = (item: HistoryItem): RenderedItem => {
  const out: { -readonly [K in keyof RenderedItem]: RenderedItem[K] } = {
    kind: item.kind,
    time: formatTime(item.sent_at),
    sender: item.sender.display_ref,
    text: item.text
  }
  if (item.quote !== null) out.quote = item.quote.markdown_block
  if (item.attachments.length > 0) out.attachments = item.attachments.map(attachmentLabel)
  if (item.message_id !== null) out.message_id = item.message_id
  if (item.reply_to_message_id !== null) out.reply_to_message_id = item.reply_to_message_id
  if (item.edited_at !== undefined) out.edited_at = formatTime(item.edited_at)
  if (item.forward !== undefined) {
    out.forward_origin = item.forward.sender_ref
    out.forward_date = formatTime(item.forward.sent_at)
  }
  if (item.album_id !== undefined) out.album_id = item.album_id
  if (item.seen_via !== undefined) out.seen_via = item.seen_via
  return out
}

const header = (channel: string) =>
  `{"type":"chat_history_context","channel":${JSON.stringify(channel)},"note":${JSON.stringify(HISTORY_NOTE)},"messages":[`

// Most strings need no escaping: one regex scan decides (a regex also copes well with the
// concatenated strings formatting produces, where a charCodeAt loop crawls), and
// JSON.stringify handles the rest: quotes, backslashes, control characters, lone surrogates.
const needsEscape = /["\\\u0000-\u001f]|[\ud800-\udbff](?![\udc00-\udfff])|(?:^|[^\ud800-\udbff])[\udc00-\udfff]/
const quoteJson = (s: string): string => (needsEscape.test(s) ? JSON.stringify(s) : `"${s}"`)

/**
 * One item as its JSON line: the same bytes as `JSON.stringify(renderItem(item))`, written
 * directly (no intermediate object), since it runs for every item of every prompt.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderItemJson = (item: HistoryItem): string => {
  let out = `{"kind":"${item.kind}","time":"${formatTime(item.sent_at)}","sender":${quoteJson(item.sender.display_ref)},"text":${
    quoteJson(item.text)
  }`
  if (item.quote !== null) out += `,"quote":${quoteJson(item.quote.markdown_block)}`
  if (item.attachments.length > 0) {
    out += `,"attachments":[`
    for (let i = 0; i < item.attachments.length; i++) {
      out += (i === 0 ? "" : ",") + quoteJson(attachmentLabel(item.attachments[i]!))
    }
    out += "]"
  }
  if (item.message_id !== null) out += `,"message_id":${quoteJson(item.message_id)}`
  if (item.reply_to_message_id !== null) out += `,"reply_to_message_id":${quoteJson(item.reply_to_message_id)}`
  if (item.edited_at !== undefined) out += `,"edited_at":"${formatTime(item.edited_at)}"`
  if (item.forward !== undefined) {
    out += `,"forward_origin":${quoteJson(item.forward.sender_ref)},"forward_date":"${formatTime(item.forward.sent_at)}"`
  }
  if (item.album_id !== undefined) out += `,"album_id":${quoteJson(item.album_id)}`
  if (item.seen_via !== undefined) out += `,"seen_via":"${item.seen_via}"`
  return `${out}}`
}

/**
 * The closing of a payload: what {@link renderHistoryContext} appends after the last item.
 *
 * @since 0.1.0
 * @category constants
 */
export const HISTORY_CLOSING = "\n]}"

/**
 * The whole history as one JSON payload
 * `{"type":"chat_history_context","channel","note","messages":[…]}`, one item per line.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderHistoryContext = (items: ReadonlyArray<HistoryItem>, options: RenderOptions = {}): string => {
  let out = header(options.channel ?? "telegram")
  for (let i = 0; i < items.length; i++) {
    out += (i === 0 ? "\n" : ",\n") + renderItemJson(items[i]!)
  }
  return out + HISTORY_CLOSING
}

/**
 * The history as the single `user` message the main agent gets (none for an empty history).
 *
 * @since 0.1.0
 * @category rendering
 */
export const historyMessage = (
  items: ReadonlyArray<HistoryItem>,
  options: RenderOptions = {}
): ReadonlyArray<PromptMessage> =>
  items.length === 0 ? [] : [{ role: "user", content: renderHistoryContext(items, options) }]

/**
 * History turns. Without `role_split`, one `chat_history_context` user message. With it,
 * each `outbound_agent` item becomes an `assistant` turn holding its text, and the items
 * between them are `chat_history_context` user messages.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderTurns = (
  items: ReadonlyArray<HistoryItem>,
  options: RenderOptions & { readonly role_split?: boolean } = {}
): ReadonlyArray<PromptMessage> => {
  if (options.role_split !== true) return historyMessage(items, options)
  const turns: Array<PromptMessage> = []
  let chunk: Array<HistoryItem> = []
  for (const item of items) {
    if (item.kind === "outbound_agent") {
      if (chunk.length > 0) turns.push({ role: "user", content: renderHistoryContext(chunk, options) })
      chunk = []
      turns.push({ role: "assistant", content: item.text })
    } else {
      chunk.push(item)
    }
  }
  if (chunk.length > 0) turns.push({ role: "user", content: renderHistoryContext(chunk, options) })
  return turns
}

/**
 * The current message as its own payload `{"type":"current_message",…}`: the request, never
 * part of history.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderCurrentMessage = (item: HistoryItem): string =>
  `{"type":"current_message",${renderItemJson(item).slice(1)}`

/**
 * A whole prompt: the system lines the caller adds to its system prompt (the gap note, when
 * there is one), then the history turns, then the current message as the last `user`
 * message.
 *
 * @since 0.1.0
 * @category models
 */
export interface Prompt {
  readonly system: ReadonlyArray<string>
  readonly messages: ReadonlyArray<PromptMessage>
}

/**
 * Renders a prompt from history, the current message and an optional gap note.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderPrompt = (input: {
  readonly history: ReadonlyArray<HistoryItem>
  readonly current: HistoryItem
  readonly gap_note?: string | null | undefined
  readonly role_split?: boolean | undefined
  readonly channel?: string | undefined
}): Prompt => ({
  system: input.gap_note === undefined || input.gap_note === null ? [] : [input.gap_note],
  messages: [
    ...renderTurns(input.history, {
      role_split: input.role_split === true,
      ...(input.channel === undefined ? {} : { channel: input.channel })
    }),
    { role: "user", content: renderCurrentMessage(input.current) }
  ]
})

/**
 * The addressing decision's input.
 *
 * @since 0.1.0
 * @category models
 */
export interface AddressingInput {
  readonly bot_username: string
  readonly aliases: ReadonlyArray<string>
  readonly current_message: RenderedItem
  readonly chat_history_context: {
    readonly type: "chat_history_context"
    readonly channel: string
    readonly note: string
    readonly messages: ReadonlyArray<RenderedItem>
  }
}

/**
 * Builds the addressing decision's input: the bot's username and aliases, the current message
 * with its speaker, and the structured history.
 *
 * @since 0.1.0
 * @category rendering
 */
export const addressingInput = (input: {
  readonly bot_username: string
  readonly aliases: ReadonlyArray<string>
  readonly current: HistoryItem
  readonly history: ReadonlyArray<HistoryItem>
  readonly channel?: string | undefined
}): AddressingInput => ({
  bot_username: input.bot_username.replace(/^@+/, ""),
  aliases: input.aliases,
  current_message: renderItem(input.current),
  chat_history_context: {
    type: "chat_history_context",
    channel: input.channel ?? "telegram",
    note: HISTORY_NOTE,
    messages: input.history.map(renderItem)
  }
})

/**
 * The addressing input as the JSON of the addressing `user` message.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderAddressingInput = (input: Parameters<typeof addressingInput>[0]): string =>
  JSON.stringify(addressingInput(input))
