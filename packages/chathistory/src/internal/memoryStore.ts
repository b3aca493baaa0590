import { compareMessageIds, migratedMessageId } from "@deixis/core/Ids"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { HistoryItem, Sender } from "../HistoryItem.js"
import { mergeVersions, replacesEventItem, toMigratedChat } from "../HistoryItem.js"
import type {
  AppendResult,
  HistoryEntry,
  HistoryScope,
  HistoryStoreShape,
  HistoryStoreStats,
  MemoryOptions
} from "../HistoryStore.js"
import { externalIdOf } from "./externalId.js"

class Entry implements HistoryEntry {
  gone = false
  constructor(public item: HistoryItem, readonly anchor: string, readonly seq: number) {}
}

const cmp = (e: Entry, anchor: string, seq: number): number =>
  compareMessageIds(e.anchor, anchor) || e.seq - seq

/** One topic's entries in position order; `head` skips evicted ones at the front. */
class Topic {
  entries: Array<Entry> = []
  head = 0
  /** The id of the newest message (by position) the topic has held. */
  maxAnchor = ""

  /** The first index whose entry is at or after `(anchor, seq)`. */
  lowerBound(anchor: string, seq: number): number {
    let lo = this.head
    let hi = this.entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (cmp(this.entries[mid]!, anchor, seq) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  insert(entry: Entry) {
    const last = this.entries[this.entries.length - 1]
    if (last === undefined || this.entries.length === this.head || cmp(last, entry.anchor, entry.seq) < 0) {
      this.entries.push(entry)
    } else {
      this.entries.splice(this.lowerBound(entry.anchor, entry.seq), 0, entry)
    }
  }

  remove(entry: Entry) {
    if (this.entries[this.head] === entry) {
      // The evicted prefix is dropped in bulk, keeping removal O(1) amortised.
      this.head++
      if (this.head > 1024 && this.head * 2 > this.entries.length) {
        this.entries = this.entries.slice(this.head)
        this.head = 0
      }
      return
    }
    const i = this.lowerBound(entry.anchor, entry.seq)
    if (this.entries[i] === entry) this.entries.splice(i, 1)
  }

  get size() {
    return this.entries.length - this.head
  }
}

/** Append order, for evicting a chat's earliest items first. */
class Fifo {
  items: Array<Entry | undefined> = []
  head = 0
  push(entry: Entry) {
    this.items.push(entry)
  }
  shift(): Entry | undefined {
    const entry = this.items[this.head]
    if (entry === undefined) return undefined
    this.items[this.head] = undefined
    this.head++
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return entry
  }
}

class Chat {
  readonly byId = new Map<string, Entry>()
  readonly byEvent = new Map<string, Entry>()
  readonly byResponse = new Map<string, Entry>()
  readonly replies = new Map<string, Array<Entry>>()
  readonly topics = new Map<string | null, Topic>()
  readonly arrival = new Fifo()
  /** Senders and topic ids are shared between a chat's items: most repeat. */
  readonly senders = new Map<string, Sender>()
  readonly strings = new Map<string, string>()
  seq = 0
  size = 0
  constructor(readonly id: string) {}

  topic(id: string | null): Topic {
    let topic = this.topics.get(id)
    if (topic === undefined) {
      topic = new Topic()
      this.topics.set(id, topic)
    }
    return topic
  }

  intern(s: string): string {
    const known = this.strings.get(s)
    if (known !== undefined) return known
    if (this.strings.size < 10_000) this.strings.set(s, s)
    return s
  }

  sender(sender: Sender): Sender {
    const key = `${sender.user_id}\u0000${sender.username}\u0000${sender.nickname}\u0000${sender.is_bot}\u0000${sender.display_ref}`
    const known = this.senders.get(key)
    if (known !== undefined) return known
    if (this.senders.size < 10_000) this.senders.set(key, sender)
    return sender
  }

  addReply(entry: Entry) {
    const parent = entry.item.reply_to_message_id
    if (parent === null) return
    const list = this.replies.get(parent)
    if (list === undefined) this.replies.set(parent, [entry])
    else list.push(entry)
  }

  removeReply(entry: Entry) {
    const parent = entry.item.reply_to_message_id
    if (parent === null) return
    const list = this.replies.get(parent)
    if (list === undefined) return
    const i = list.indexOf(entry)
    if (i >= 0) list.splice(i, 1)
    if (list.length === 0) this.replies.delete(parent)
  }
}

export const makeMemoryStore = (settings: MemoryOptions): HistoryStoreShape => {
  // Map order is the LRU order: a written chat moves to the end.
  const chats = new Map<string, Chat>()
  let lastWritten: Chat | undefined
  let total = 0
  let evictedChats = 0
  let evictedItems = 0

  const chatFor = (id: string): Chat => {
    let chat = chats.get(id)
    if (chat === undefined) {
      chat = new Chat(id)
      chats.set(id, chat)
      while (chats.size > settings.max_chats) evictLeastRecentChat(chat)
    } else if (lastWritten !== chat) {
      chats.delete(id)
      chats.set(id, chat)
    }
    lastWritten = chat
    return chat
  }

  const evictLeastRecentChat = (keep: Chat): boolean => {
    for (const victim of chats.values()) {
      if (victim === keep) continue
      chats.delete(victim.id)
      total -= victim.size
      evictedItems += victim.size
      evictedChats++
      return true
    }
    return false
  }

  const evictEntry = (chat: Chat, entry: Entry) => {
    entry.gone = true
    chat.topics.get(entry.item.topic_id)?.remove(entry)
    const id = entry.item.message_id
    if (id !== null && chat.byId.get(id) === entry) chat.byId.delete(id)
    const response = entry.item.bot_response_id
    if (response !== null && chat.byResponse.get(response) === entry) chat.byResponse.delete(response)
    const event = entry.item.event_id
    if (event !== undefined && chat.byEvent.get(event) === entry) chat.byEvent.delete(event)
    chat.removeReply(entry)
    chat.size--
    total--
    evictedItems++
  }

  const evictOldest = (chat: Chat) => {
    let entry = chat.arrival.shift()
    // A retracted entry left the chat already.
    while (entry !== undefined && entry.gone) entry = chat.arrival.shift()
    if (entry !== undefined) evictEntry(chat, entry)
  }

  const retract = (chatId: string, eventId: string, at: number): boolean => {
    const chat = chats.get(chatId)
    const entry = chat?.byEvent.get(eventId)
    if (chat === undefined || entry === undefined || entry.item.sent_at > at) return false
    evictEntry(chat, entry)
    // Withdrawn, not evicted.
    evictedItems--
    return true
  }

  const replace = (chat: Chat, entry: Entry, incoming: HistoryItem): AppendResult => {
    const before = entry.item
    // An item's topic is fixed by its first append: its position lives in that topic.
    const item = mergeVersions(before, incoming)
    if (item === undefined) return "unchanged"
    if (before.reply_to_message_id !== item.reply_to_message_id) {
      chat.removeReply(entry)
      entry.item = item
      chat.addReply(entry)
    }
    if (before.bot_response_id !== null && chat.byResponse.get(before.bot_response_id) === entry) {
      chat.byResponse.delete(before.bot_response_id)
    }
    entry.item = item
    if (item.bot_response_id !== null) chat.byResponse.set(item.bot_response_id, entry)
    return "replaced"
  }

  const append = (incoming: HistoryItem): AppendResult => {
    const chat = chatFor(incoming.chat_id)
    const id = incoming.message_id
    if (id !== null) {
      const existing = chat.byId.get(id)
      if (existing !== undefined) return replace(chat, existing, incoming)
    } else if (incoming.event_id !== undefined) {
      const existing = chat.byEvent.get(incoming.event_id)
      if (existing !== undefined) {
        if (!replacesEventItem(existing.item, incoming)) return "unchanged"
        // In its position and topic, as a message's edit.
        chat.removeReply(existing)
        existing.item = { ...incoming, chat_id: chat.id, topic_id: existing.item.topic_id, sender: chat.sender(incoming.sender) }
        chat.addReply(existing)
        return "replaced"
      }
    }
    const topicId = incoming.topic_id === null ? null : chat.intern(incoming.topic_id)
    const item: HistoryItem = {
      ...incoming,
      chat_id: chat.id,
      topic_id: topicId,
      sender: chat.sender(incoming.sender)
    }
    const topic = chat.topic(topicId)
    let entry: Entry
    if (id === null) {
      entry = new Entry(item, topic.maxAnchor, ++chat.seq)
    } else {
      entry = new Entry(item, id, 0)
      if (compareMessageIds(id, topic.maxAnchor) > 0) topic.maxAnchor = id
      chat.byId.set(id, entry)
    }
    topic.insert(entry)
    index(chat, entry)
    chat.arrival.push(entry)
    chat.size++
    total++
    while (chat.size > settings.max_items_per_chat) evictOldest(chat)
    while (total > settings.max_items_total) {
      if (!evictLeastRecentChat(chat)) evictOldest(chat)
    }
    return "appended"
  }

  const index = (chat: Chat, entry: Entry) => {
    const item = entry.item
    if (item.message_id !== null) chat.byId.set(item.message_id, entry)
    if (item.bot_response_id !== null) chat.byResponse.set(item.bot_response_id, entry)
    if (item.event_id !== undefined && item.message_id === null) chat.byEvent.set(item.event_id, entry)
    chat.addReply(entry)
  }

  const migrateChat = (from: string, to: string): number => {
    const old = chats.get(from)
    if (from === to || old === undefined) return 0
    chats.delete(from)
    if (lastWritten === old) lastWritten = undefined
    total -= old.size
    const chat = chatFor(to)
    // Oldest first, so the new chat evicts the old chat's items before its own.
    const arrivals: Array<Entry> = []
    for (let i = old.arrival.head; i < old.arrival.items.length; i++) {
      const e = old.arrival.items[i]
      if (e !== undefined && !e.gone) arrivals.push(e)
    }
    const moved: Array<Entry> = []
    for (const e of arrivals) {
      const next = toMigratedChat(e.item, to)
      if (next.message_id !== null && chat.byId.has(next.message_id)) continue
      // An item placed before any message ("" anchor) goes before the old chat's messages.
      const entry = new Entry(next, e.anchor === "" ? migratedMessageId("") : migratedMessageId(e.anchor), e.seq)
      chat.topic(next.topic_id).insert(entry)
      index(chat, entry)
      moved.push(entry)
    }
    const rest: Array<Entry> = []
    for (let i = chat.arrival.head; i < chat.arrival.items.length; i++) {
      const e = chat.arrival.items[i]
      if (e !== undefined && !e.gone) rest.push(e)
    }
    chat.arrival.items = [...moved, ...rest]
    chat.arrival.head = 0
    chat.seq = Math.max(chat.seq, old.seq)
    chat.size += moved.length
    total += moved.length
    while (chat.size > settings.max_items_per_chat) evictOldest(chat)
    while (total > settings.max_items_total) {
      if (!evictLeastRecentChat(chat)) evictOldest(chat)
    }
    return moved.length
  }

  const find = (scope: HistoryScope, externalId: unknown): Entry | undefined => {
    const chat = chats.get(scope.chat_id)
    if (chat === undefined) return undefined
    const id = externalIdOf(externalId)
    if (Option.isNone(id)) return undefined
    const entry = chat.byId.get(id.value) ?? chat.byResponse.get(id.value)
    return entry !== undefined && entry.item.topic_id === scope.topic_id ? entry : undefined
  }

  const topicOf = (scope: HistoryScope): Topic | undefined => chats.get(scope.chat_id)?.topics.get(scope.topic_id)

  const empty: ReadonlyArray<HistoryEntry> = []

  const recordResponse = (scope: HistoryScope, messageId: string | number, responseId: string | number): boolean => {
    const chat = chats.get(scope.chat_id)
    const id = externalIdOf(messageId)
    const response = externalIdOf(responseId)
    if (chat === undefined || Option.isNone(id) || Option.isNone(response)) return false
    const entry = chat.byId.get(id.value)
    if (entry === undefined || entry.item.topic_id !== scope.topic_id) return false
    replace(chat, entry, { ...entry.item, bot_response_id: response.value })
    return true
  }

  return {
    append: (item) => Effect.sync(() => append(item)),
    appendAll: (items) => Effect.sync(() => items.map(append)),
    retract: (chatId, eventId, at) => Effect.sync(() => retract(chatId, eventId, at)),
    migrateChat: (from, to) => Effect.sync(() => migrateChat(from, to)),
    lookup: (scope, externalId) => Effect.sync(() => Option.fromNullable(find(scope, externalId))),
    around: (scope, externalId, window) =>
      Effect.sync(() => {
        const entry = find(scope, externalId)
        const topic = topicOf(scope)
        if (entry === undefined || topic === undefined) return empty
        const i = topic.lowerBound(entry.anchor, entry.seq)
        return topic.entries.slice(
          Math.max(topic.head, i - Math.max(0, window.before)),
          Math.min(topic.entries.length, i + 1 + Math.max(0, window.after))
        )
      }),
    recent: (scope, n, options) =>
      Effect.sync(() => {
        const topic = topicOf(scope)
        if (topic === undefined || n <= 0) return empty
        const end = options?.before === undefined ? topic.entries.length : topic.lowerBound(options.before, 0)
        return topic.entries.slice(Math.max(topic.head, end - n), end)
      }),
    replies: (scope, messageId, options) =>
      Effect.sync(() => {
        const list = chats.get(scope.chat_id)?.replies.get(messageId)
        if (list === undefined || options.limit <= 0) return empty
        const before = options.before
        const found = list.filter((e) =>
          e.item.topic_id === scope.topic_id && (before === undefined || cmp(e, before, 0) < 0)
        )
        found.sort((a, b) => cmp(a, b.anchor, b.seq))
        return found.slice(Math.max(0, found.length - options.limit))
      }),
    appendAllResponding: (items, responses) =>
      Effect.sync(() => {
        const results = items.map(append)
        for (const r of responses) recordResponse(r.scope, r.message_id, r.response_id)
        return results
      }),
    recordResponse: (scope, messageId, responseId) => Effect.sync(() => recordResponse(scope, messageId, responseId)),
    stats: Effect.sync((): HistoryStoreStats => ({
      chats: chats.size,
      items: total,
      evicted_chats: evictedChats,
      evicted_items: evictedItems
    }))
  }
}
