import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ChatInfo, ChatPage, ChatQuery, ChatSummary, MigrationResult } from "../ChatInfo.js"
import { compareChats, effectiveTopic, matchesSearch, maxChatPage, unknownChat } from "../ChatInfo.js"
import type { ApplyResult, ContextEvent } from "../ContextEvent.js"
import type { ContextObject, MessageMeta } from "../ContextObject.js"
import { compareActivity, isActive, messageObject, messageToMigratedChat, standsIn, toMigratedChat } from "../ContextObject.js"
import type {
  ApplyOptions,
  CandidatePool,
  ChatSnapshot,
  ContextStoreShape,
  MemoryStoreOptions,
  PoolEntry,
  PoolQuery,
  PoolTier,
  StoreStats
} from "../ContextStore.js"
import { compareMessageIds, migratedMessageId } from "../Ids.js"
import type { ObjectKind } from "../ObjectKind.js"
import { applyEvents, type StateWriter } from "./reducer.js"

/** The most poll ids remembered (poll updates name polls, not chats). */
const maxPolls = 100_000

class ObjRec {
  gone = false
  constructor(public o: ContextObject) {}
}

/** Append-only list with a moving head, trimmed when the dead prefix dominates. */
class Deque<A> {
  items: Array<A> = []
  head = 0
  get size() {
    return this.items.length - this.head
  }
  push(a: A) {
    this.items.push(a)
  }
  peek(): A | undefined {
    return this.items[this.head]
  }
  shift(): A | undefined {
    const a = this.items[this.head]
    if (a === undefined) return undefined
    this.head++
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return a
  }
}

/**
 * The active objects of a scope, and the same in {@link compareActivity} order, sorted when
 * asked after a change (activations are rare beside the reads of a chat's fallback).
 */
class ActiveSet {
  private readonly recs = new Set<ObjRec>()
  private sorted: Array<ObjRec> | undefined = undefined
  /** Adds `rec`, or notes that its object changed. */
  add(rec: ObjRec) {
    this.recs.add(rec)
    this.sorted = undefined
  }
  delete(rec: ObjRec) {
    if (this.recs.delete(rec)) this.sorted = undefined
  }
  [Symbol.iterator]() {
    return this.recs.values()
  }
  byActivity(): ReadonlyArray<ObjRec> {
    return this.sorted ??= [...this.recs].sort((a, b) => compareActivity(a.o, b.o))
  }
}

class Scope {
  readonly messages = new Deque<MessageMeta>()
  objects: Array<ObjRec> = []
  byKind = new Map<ObjectKind, Array<ObjRec>>()
  readonly active = new ActiveSet()
  add(rec: ObjRec) {
    this.objects.push(rec)
    const list = this.byKind.get(rec.o.kind)
    if (list === undefined) this.byKind.set(rec.o.kind, [rec])
    else list.push(rec)
  }
  isEmpty(): boolean {
    return this.messages.size === 0 && this.objects.every((r) => r.gone)
  }
  compact() {
    this.objects = this.objects.filter((r) => !r.gone)
    for (const [k, list] of this.byKind) this.byKind.set(k, list.filter((r) => !r.gone))
  }
}

class Chat {
  readonly messages = new Map<string, MessageMeta>()
  /** Message id → the `edited_at` of the newest edit applied to it (see the reducer). */
  readonly edits = new Map<string, number>()
  readonly objects = new Map<string, ObjRec>()
  readonly byMessage = new Map<string, Array<ObjRec>>()
  readonly owned = new Map<string, Array<ObjRec>>()
  readonly topics = new Map<string | null, Scope>()
  /** The whole chat, for the fallback across topics. */
  readonly all = new Scope()
  readonly objectOrder = new Deque<ObjRec>()
  readonly events = new Set<string>()
  readonly eventOrder = new Deque<string>()
  readonly strings = new Map<string, string>()
  info: ChatInfo | undefined = undefined
  gone = 0
  /** The newest message by position, for the chat list; undefined and stale once it was evicted. */
  private newestMessage: MessageMeta | undefined = undefined
  private newestStale = false
  constructor(readonly id: string) {}
  noteMessage(m: MessageMeta) {
    if (this.newestStale) return
    const newest = this.newestMessage
    if (newest === undefined || newest.message_id === m.message_id || compareMessageIds(m.message_id, newest.message_id) > 0) {
      this.newestMessage = m
    }
  }
  forgetMessage(m: MessageMeta) {
    if (this.newestMessage?.message_id === m.message_id) {
      this.newestMessage = undefined
      this.newestStale = true
    }
  }
  newest(): MessageMeta | undefined {
    if (this.newestStale) {
      this.newestStale = false
      for (const m of this.messages.values()) this.noteMessage(m)
    }
    return this.newestMessage
  }
  intern(s: string): string {
    const known = this.strings.get(s)
    if (known !== undefined) return known
    this.strings.set(s, s)
    return s
  }
  topic(id: string | null): Scope {
    let scope = this.topics.get(id)
    if (scope === undefined) {
      scope = new Scope()
      this.topics.set(id, scope)
    }
    return scope
  }
  liveObjectsOf(messageId: string): ReadonlyArray<ObjRec> {
    return this.byMessage.get(messageId) ?? []
  }
}

// Nothing is known of an unknown chat: its own scope is missing, so the (empty) chat was searched.
const emptyPool = (topicId: string | null): CandidatePool => ({ entries: [], chain: [], fallback: true, topic_id: topicId })

export const makeMemoryStore = (settings: MemoryStoreOptions): ContextStoreShape => {
  // Map order is the LRU order: a used chat is moved to the end.
  const chats = new Map<string, Chat>()
  const polls = new Map<string, { readonly chat_id: string; readonly object_id: string }>()
  const pendingCloses = new Map<string, { readonly event_id: string; readonly at: number }>()
  // Migrations by the chat they left: kept apart from the chats, which LRU eviction may drop.
  const migrations = new Map<string, { readonly to: string; readonly at: number; readonly title: string | null }>()
  let lastUsed: Chat | undefined
  let totalMessages = 0
  const counters = { evicted_chats: 0, evicted_messages: 0, evicted_objects: 0, swept_objects: 0 }

  const use = (chat: Chat) => {
    if (lastUsed !== chat) {
      chats.delete(chat.id)
      chats.set(chat.id, chat)
      lastUsed = chat
    }
  }

  const chatFor = (id: string): Chat => {
    let chat = chats.get(id)
    if (chat === undefined) {
      chat = new Chat(id)
      chats.set(id, chat)
      lastUsed = chat
      while (chats.size > settings.max_chats) evictLeastRecentChat(chat)
    } else {
      use(chat)
    }
    return chat
  }

  const evictLeastRecentChat = (keep: Chat): boolean => {
    for (const victim of chats.values()) {
      if (victim === keep) continue
      chats.delete(victim.id)
      totalMessages -= victim.messages.size
      counters.evicted_chats++
      counters.evicted_messages += victim.messages.size
      counters.evicted_objects += victim.objects.size
      return true
    }
    return false
  }

  const removeObject = (chat: Chat, rec: ObjRec) => {
    if (rec.gone) return
    rec.gone = true
    chat.gone++
    chat.objects.delete(rec.o.object_id)
    chat.all.active.delete(rec)
    chat.topics.get(rec.o.topic_id)?.active.delete(rec)
    const siblings = chat.byMessage.get(rec.o.source_message_id)
    if (siblings !== undefined) {
      const rest = siblings.filter((r) => r !== rec)
      if (rest.length === 0) chat.byMessage.delete(rec.o.source_message_id)
      else chat.byMessage.set(rec.o.source_message_id, rest)
    }
    if (chat.gone > 256 && chat.gone * 2 > chat.objects.size) {
      chat.all.compact()
      for (const scope of chat.topics.values()) scope.compact()
      for (const [user, list] of chat.owned) {
        const live = list.filter((r) => !r.gone)
        if (live.length === 0) chat.owned.delete(user)
        else chat.owned.set(user, live)
      }
      chat.gone = 0
    }
  }

  const evictOldestMessage = (chat: Chat) => {
    const oldest = chat.all.messages.shift()
    if (oldest === undefined) return
    chat.messages.delete(oldest.message_id)
    chat.forgetMessage(oldest)
    chat.edits.delete(oldest.message_id)
    const scope = chat.topics.get(oldest.topic_id)
    if (scope !== undefined && scope.messages.peek() === oldest) scope.messages.shift()
    totalMessages--
    counters.evicted_messages++
  }

  const writer: StateWriter = {
    message: (chatId, messageId) => chats.get(chatId)?.messages.get(messageId),
    object: (chatId, objectId) => chats.get(chatId)?.objects.get(objectId)?.o,
    objectsOfMessage: (chatId, messageId) => chats.get(chatId)?.liveObjectsOf(messageId).map((r) => r.o) ?? [],
    pollObject: (pollId) => polls.get(pollId),
    seen: (chatId, eventId) => chats.get(chatId)?.events.has(eventId) ?? false,
    putMessage: (m) => {
      const chat = chatFor(m.chat_id)
      const replyTo = m.reply_to_message_id
      const stored: MessageMeta = {
        chat_id: chat.id,
        message_id: m.message_id,
        topic_id: m.topic_id === null ? null : chat.intern(m.topic_id),
        reply_to_message_id: replyTo === null ? null : chat.messages.get(replyTo)?.message_id ?? replyTo,
        sender_user_id: m.sender_user_id === null ? null : chat.intern(m.sender_user_id),
        from_bot: m.from_bot,
        sent_at: m.sent_at
      }
      chat.messages.set(stored.message_id, stored)
      chat.noteMessage(stored)
      chat.all.messages.push(stored)
      chat.topic(stored.topic_id).messages.push(stored)
      totalMessages++
      while (chat.messages.size > settings.max_messages_per_chat) evictOldestMessage(chat)
      while (totalMessages > settings.max_messages_total) {
        if (!evictLeastRecentChat(chat)) evictOldestMessage(chat)
      }
    },
    putObject: (o, previous) => {
      const chat = chatFor(o.chat_id)
      let rec = previous === undefined ? undefined : chat.objects.get(o.object_id)
      if (rec !== undefined && rec.o.topic_id !== o.topic_id) {
        // Moved to another topic (its message arrived after it): index it afresh.
        removeObject(chat, rec)
        rec = undefined
      }
      if (rec === undefined) {
        rec = new ObjRec(o)
        chat.objects.set(o.object_id, rec)
        chat.objectOrder.push(rec)
        chat.all.add(rec)
        chat.topic(o.topic_id).add(rec)
        const siblings = chat.byMessage.get(o.source_message_id)
        if (siblings === undefined) chat.byMessage.set(o.source_message_id, [rec])
        else siblings.push(rec)
        if (o.created_by_user_id !== undefined) {
          const owned = chat.owned.get(o.created_by_user_id)
          if (owned === undefined) chat.owned.set(chat.intern(o.created_by_user_id), [rec])
          else owned.push(rec)
        }
        while (chat.objects.size > settings.max_objects_per_chat) {
          const oldest = chat.objectOrder.shift()
          if (oldest === undefined) break
          if (!oldest.gone) {
            removeObject(chat, oldest)
            counters.evicted_objects++
          }
        }
      } else {
        rec.o = o
      }
      if (!rec.gone) {
        const scope = chat.topic(o.topic_id)
        if (o.active_until !== null) {
          scope.active.add(rec)
          chat.all.active.add(rec)
        } else {
          scope.active.delete(rec)
          chat.all.active.delete(rec)
        }
      }
    },
    putPoll: (pollId, chatId, objectId) => {
      polls.delete(pollId)
      polls.set(pollId, { chat_id: chatId, object_id: objectId })
      if (polls.size > maxPolls) {
        const first = polls.keys().next()
        if (!first.done) polls.delete(first.value)
      }
    },
    pendingPollClose: (pollId) => pendingCloses.get(pollId),
    putPendingPollClose: (pollId, close) => {
      pendingCloses.delete(pollId)
      if (close === undefined) return
      pendingCloses.set(pollId, close)
      if (pendingCloses.size > maxPolls) {
        const first = pendingCloses.keys().next()
        if (!first.done) pendingCloses.delete(first.value)
      }
    },
    chat: (chatId) => chats.get(chatId)?.info,
    putChat: (info) => {
      chatFor(info.chat_id).info = info
    },
    editedAt: (chatId, messageId) => chats.get(chatId)?.edits.get(messageId),
    putEditedAt: (chatId, messageId, editedAt) => {
      const chat = chats.get(chatId)
      if (chat?.messages.has(messageId) === true) chat.edits.set(messageId, editedAt)
    },
    removeObject: (o) => {
      const chat = chats.get(o.chat_id)
      const rec = chat?.objects.get(o.object_id)
      if (chat !== undefined && rec !== undefined) removeObject(chat, rec)
    },
    markSeen: (chatId, eventId) => {
      const chat = chatFor(chatId)
      chat.events.add(eventId)
      chat.eventOrder.push(eventId)
      while (chat.eventOrder.size > settings.max_event_ids_per_chat) {
        const old = chat.eventOrder.shift()
        if (old !== undefined) chat.events.delete(old)
      }
    }
  }

  const apply = (events: ReadonlyArray<ContextEvent>, options: ApplyOptions): ApplyResult =>
    applyEvents(writer, events, options.now, options.ttl, options.kinds)

  const pool = (q: PoolQuery): CandidatePool => {
    const chat = chats.get(q.chat_id)
    if (chat === undefined) return emptyPool(q.topic_id)
    use(chat)
    const topicId = effectiveTopic(q.topic_id, chat.info?.is_forum ?? false)
    const out = new Map<string, PoolEntry>()
    const kindOk = (kind: ObjectKind) => q.kinds === undefined || q.kinds.includes(kind)
    // An expired object stands aside for its message (see `add`), whatever the kind filter says of it.
    const accept = (o: ContextObject) =>
      q.active_only ? kindOk(o.kind) && isActive(o, q.now) : kindOk(o.kind) || expired(o)
    const expired = (o: ContextObject) => q.keep_expired !== true && o.active_until !== null && o.active_until <= q.now
    const add = (o: ContextObject, tier: PoolTier) => {
      if (expired(o)) {
        // Its TTL is over: the message it came from is the candidate, not a typed object.
        const m = chat.messages.get(o.source_message_id)
        if (m === undefined || m.message_id === q.current_message_id || !standsIn(o, m, tier)) return
        const stand = messageObject(m)
        if (!kindOk(stand.kind)) return
        o = stand
      }
      if (!out.has(o.object_id)) out.set(o.object_id, { object: o, tier })
    }
    const addMessage = (m: MessageMeta, tier: PoolTier): boolean => {
      if (q.active_only || m.message_id === q.current_message_id) return false
      if (chat.byMessage.has(m.message_id)) return false
      const o = messageObject(m)
      if (!kindOk(o.kind)) return false
      add(o, tier)
      return true
    }

    // 1. The reply target and its chain, whatever topic they are in.
    const chain: Array<string> = []
    let next = q.reply_to_message_id
    while (next !== null && chain.length < q.limits.chain_depth && !chain.includes(next)) {
      const m = chat.messages.get(next)
      if (m === undefined) break
      const tier: PoolTier = chain.length === 0 ? "reply_target" : "reply_chain"
      chain.push(m.message_id)
      for (const rec of chat.liveObjectsOf(m.message_id)) if (accept(rec.o)) add(rec.o, tier)
      addMessage(m, tier)
      next = m.reply_to_message_id
    }

    const preferKinds = q.kinds === undefined ? q.prefer_kinds : [...new Set([...q.prefer_kinds, ...q.kinds])]
    const takeRecent = (list: ReadonlyArray<ObjRec> | undefined, n: number, tier: PoolTier, inScope: (o: ContextObject) => boolean) => {
      if (list === undefined) return
      let taken = 0
      // Look a bounded distance back, so a scope full of other kinds stays cheap.
      for (let i = list.length - 1, scanned = 0; i >= 0 && taken < n && scanned < n * 8; i--, scanned++) {
        const rec = list[i]!
        if (rec.gone || !inScope(rec.o) || !accept(rec.o)) continue
        add(rec.o, tier)
        taken++
      }
    }
    /** The scope's active objects; in the fallback, the `fallback_active` longest-lived of them. */
    const addActive = (scope: Scope, tier: PoolTier, inScope: (o: ContextObject) => boolean, keep: (o: ContextObject) => boolean) => {
      if (tier !== "fallback") {
        for (const rec of scope.active) if (!rec.gone && inScope(rec.o) && keep(rec.o)) add(rec.o, tier)
        return
      }
      // Longest-lived first: the first `fallback_active` that qualify, and nothing past them is read.
      let taken = 0
      for (const rec of scope.active.byActivity()) {
        if (taken >= q.limits.fallback_active) break
        if (!rec.gone && inScope(rec.o) && keep(rec.o)) {
          add(rec.o, tier)
          taken++
        }
      }
    }
    const collect = (scope: Scope, tier: PoolTier, inScope: (o: ContextObject) => boolean) => {
      addActive(scope, tier, inScope, accept)
      if (q.active_only) return
      takeRecent(scope.objects, q.limits.recent_objects, tier, inScope)
      for (const kind of preferKinds) takeRecent(scope.byKind.get(kind), q.limits.recent_per_kind, tier, inScope)
      if (q.include_owned && q.sender_user_id !== null) {
        takeRecent(chat.owned.get(q.sender_user_id), q.limits.owned, tier, inScope)
      }
      const items = scope.messages.items
      for (let i = items.length - 1, taken = 0, scanned = 0; i >= scope.messages.head && taken < q.limits.recent_messages && scanned < 64; i--, scanned++) {
        const m = items[i]!
        if (m.topic_id === topicId ? tier !== "home" : tier === "home") continue
        if (addMessage(m, tier)) taken++
      }
    }
    const liveActive = (scope: Scope, inScope: (o: ContextObject) => boolean) => {
      for (const rec of scope.active) {
        if (!rec.gone && inScope(rec.o) && kindOk(rec.o.kind) && isActive(rec.o, q.now)) return true
      }
      return false
    }

    // 2. The request's own scope: its topic, or the topicless part of the chat.
    const home = chat.topics.get(topicId)
    const inHome = (o: ContextObject) => o.topic_id === topicId
    const elsewhere = (o: ContextObject) => o.topic_id !== topicId
    if (home !== undefined) collect(home, "home", inHome)

    // 3. The rest of the chat when the request's own scope has no active object: everything
    // when nothing at all is known of it (a topic deixis has not seen yet), otherwise only what
    // is active there — a topic's plain chatter never mixes with another's.
    let fallback = false
    if (home === undefined || home.isEmpty()) {
      fallback = true
      collect(chat.all, "fallback", elsewhere)
    } else if (!liveActive(home, inHome)) {
      fallback = true
      addActive(chat.all, "fallback", elsewhere, (o) => kindOk(o.kind) && isActive(o, q.now))
    }
    return { entries: [...out.values()], chain, fallback, topic_id: topicId }
  }

  const snapshot = (chatId: string): ChatSnapshot => {
    const chat = chats.get(chatId)
    if (chat === undefined) return { messages: [], objects: [] }
    return {
      messages: [...chat.messages.values()].sort((a, b) => compareMessageIds(a.message_id, b.message_id)),
      objects: [...chat.objects.values()].map((r) => r.o).sort((a, b) =>
        a.object_id < b.object_id ? -1 : a.object_id > b.object_id ? 1 : 0
      )
    }
  }

  const sweep = (now: number): number => {
    let removed = 0
    for (const chat of chats.values()) {
      for (const rec of chat.objects.values()) {
        const o = rec.o
        const since = o.active_until ?? o.created_at
        if (settings.object_retention > 0 && !isActive(o, now) && since + settings.object_retention <= now) {
          removeObject(chat, rec)
          removed++
        }
      }
      for (const rec of chat.all.active) {
        if (!isActive(rec.o, now)) {
          chat.all.active.delete(rec)
          chat.topics.get(rec.o.topic_id)?.active.delete(rec)
        }
      }
    }
    counters.swept_objects += removed
    return removed
  }

  const migrateChat = (from: string, to: string, at: number): MigrationResult => {
    if (from === to || migrations.has(from)) return { migrated: false, moved: 0 }
    // The chat that left keeps its title (as a SQL store's chat row does).
    migrations.set(from, { to, at, title: chats.get(from)?.info?.title ?? null })
    if (migrations.size > maxPolls) {
      const first = migrations.keys().next()
      if (!first.done) migrations.delete(first.value)
    }
    const old = chats.get(from)
    if (old === undefined) return { migrated: true, moved: 0 }
    chats.delete(from)
    if (lastUsed === old) lastUsed = undefined
    totalMessages -= old.messages.size
    const existing = chats.get(to)
    if (existing !== undefined) chats.delete(to)
    // Rebuilt whole: the old chat's messages and objects first (they are older), then the new
    // chat's own, so every index keeps its order.
    const chat = new Chat(to)
    chat.info = existing?.info ?? (old.info === undefined ? undefined : { ...old.info, chat_id: to, migrated_to: null, migrated_at: null })
    chats.set(to, chat)
    lastUsed = chat
    const legacyMessages = [...old.messages.values()].sort((a, b) => compareMessageIds(a.message_id, b.message_id))
    const pushMessage = (m: MessageMeta) => {
      chat.messages.set(m.message_id, m)
      chat.noteMessage(m)
      chat.all.messages.push(m)
      chat.topic(m.topic_id).messages.push(m)
      totalMessages++
    }
    for (const [id, at] of old.edits) chat.edits.set(migratedMessageId(id), at)
    if (existing !== undefined) for (const [id, at] of existing.edits) chat.edits.set(id, at)
    for (const m of legacyMessages) pushMessage(messageToMigratedChat(m, to))
    if (existing !== undefined) {
      totalMessages -= existing.messages.size
      const items = existing.all.messages.items
      for (let i = existing.all.messages.head; i < items.length; i++) {
        if (existing.messages.get(items[i]!.message_id) === items[i]) pushMessage(items[i]!)
      }
    }
    const pushObject = (o: ContextObject) => {
      const rec = new ObjRec(o)
      chat.objects.set(o.object_id, rec)
      chat.objectOrder.push(rec)
      chat.all.add(rec)
      chat.topic(o.topic_id).add(rec)
      const siblings = chat.byMessage.get(o.source_message_id)
      if (siblings === undefined) chat.byMessage.set(o.source_message_id, [rec])
      else siblings.push(rec)
      if (o.created_by_user_id !== undefined) {
        const owned = chat.owned.get(o.created_by_user_id)
        if (owned === undefined) chat.owned.set(o.created_by_user_id, [rec])
        else owned.push(rec)
      }
      if (o.active_until !== null) {
        chat.all.active.add(rec)
        chat.topic(o.topic_id).active.add(rec)
      }
    }
    const liveOrder = (c: Chat) => {
      const out: Array<ContextObject> = []
      const items = c.objectOrder.items
      for (let i = c.objectOrder.head; i < items.length; i++) if (!items[i]!.gone) out.push(items[i]!.o)
      return out
    }
    const legacyObjects = liveOrder(old)
    for (const o of legacyObjects) pushObject(toMigratedChat(o, to))
    if (existing !== undefined) for (const o of liveOrder(existing)) pushObject(o)
    for (const [pollId, ref] of polls) {
      if (ref.chat_id === from) polls.set(pollId, { chat_id: to, object_id: ref.object_id })
    }
    const seen = (c: Chat) => c.eventOrder.items.slice(c.eventOrder.head).filter((id) => c.events.has(id))
    for (const id of [...seen(old), ...(existing === undefined ? [] : seen(existing))]) {
      if (chat.events.has(id)) continue
      chat.events.add(id)
      chat.eventOrder.push(id)
    }
    while (chat.messages.size > settings.max_messages_per_chat) evictOldestMessage(chat)
    while (chat.objects.size > settings.max_objects_per_chat) {
      const oldest = chat.objectOrder.shift()
      if (oldest === undefined) break
      if (!oldest.gone) {
        removeObject(chat, oldest)
        counters.evicted_objects++
      }
    }
    while (totalMessages > settings.max_messages_total) {
      if (!evictLeastRecentChat(chat)) evictOldestMessage(chat)
    }
    return { migrated: true, moved: legacyMessages.length + legacyObjects.length }
  }

  const chatInfo = (chatId: string): ChatInfo => {
    const migration = migrations.get(chatId)
    const base = chats.get(chatId)?.info ?? unknownChat(chatId)
    return migration === undefined
      ? base
      : { ...base, title: base.title ?? migration.title, migrated_to: migration.to, migrated_at: migration.at }
  }

  const listChats = (q: ChatQuery): ChatPage => {
    const limit = Math.max(1, Math.min(maxChatPage, Math.floor(q.limit)))
    const page: Array<ChatSummary> = []
    // Read in place: listing never counts as using a chat (the LRU order is left as it is).
    for (const chat of chats.values()) {
      const title = chat.info?.title ?? null
      if ((chat.messages.size === 0 && chat.objects.size === 0) || !matchesSearch(chat.id, title, q.search)) continue
      const summary: ChatSummary = {
        chat_id: chat.id,
        title,
        is_forum: chat.info?.is_forum ?? false,
        last_message_at: chat.newest()?.sent_at ?? null,
        messages: chat.messages.size,
        objects: chat.objects.size
      }
      if (q.after === undefined || compareChats(summary, q.after) > 0) page.push(summary)
    }
    page.sort(compareChats)
    const more = page.length > limit
    const chatsOut = page.slice(0, limit)
    const last = chatsOut[chatsOut.length - 1]
    return {
      chats: chatsOut,
      next: more && last !== undefined ? { last_message_at: last.last_message_at, chat_id: last.chat_id } : null
    }
  }

  const stats = (): StoreStats => {
    let objects = 0
    for (const chat of chats.values()) objects += chat.objects.size
    return { chats: chats.size, messages: totalMessages, objects, ...counters }
  }

  return {
    apply: (events, options) => Effect.sync(() => apply(events, options)),
    pool: (query) => Effect.sync(() => pool(query)),
    message: (chatId, messageId) => Effect.sync(() => Option.fromNullable(chats.get(chatId)?.messages.get(messageId))),
    object: (chatId, objectId) => Effect.sync(() => Option.fromNullable(chats.get(chatId)?.objects.get(objectId)?.o)),
    replyChain: (chatId, messageId, depth) =>
      Effect.sync(() => {
        const chat = chats.get(chatId)
        const out: Array<MessageMeta> = []
        let next: string | null = messageId
        while (chat !== undefined && next !== null && out.length < depth) {
          const m = chat.messages.get(next)
          if (m === undefined || out.includes(m)) break
          out.push(m)
          next = m.reply_to_message_id
        }
        return out
      }),
    snapshot: (chatId) => Effect.sync(() => snapshot(chatId)),
    chat: (chatId) => Effect.sync(() => chatInfo(chatId)),
    chats: (query) => Effect.sync(() => listChats(query)),
    migrateChat: (from, to, at) => Effect.sync(() => migrateChat(from, to, at)),
    sweep: (now) => Effect.sync(() => sweep(now)),
    stats: Effect.sync(stats)
  }
}
