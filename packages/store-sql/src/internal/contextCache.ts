/**
 * The hot part of each active chat, in memory: the rows of its candidate-pool scopes (by the
 * query's shape, `now` aside) and the metadata of the messages pools looked up, each chat's
 * entry labelled with the chat's revision (`deixis_chats.revision`, bumped in the transaction
 * of every write to the chat, by any process). A reader compares the label with the revision it
 * just read: equal, the entry is served; different, the entry is emptied and refilled. Reading
 * the revision before the rows keeps a label from ever being newer than its rows.
 *
 * Reply chains are walked in memory: each message's metadata (kept across this process's own
 * writes, which write it through) and, at the entry's revision, the rows of every object whose
 * source it is (`sourced`). Those come from chain reads and from a topic's recent window, read
 * with the topic's first reply at a revision (`windows`). A chain whose every link is known is
 * a hit; otherwise the chain is read from the database and what it brings is kept.
 *
 * The per-kind parts of a scope (the newest objects of one preferred kind) are kept apart from
 * the rest of the scope, so requests that differ only in their hinted kind share one scope, and
 * the kinds a chat was asked for (`kinds`) are read with a scope's next read.
 *
 * Bounded by a byte budget (an estimate of the rows' size): whole chats leave, least recently
 * used first, and each chat keeps a bounded number of scopes and messages. The cache belongs to
 * the store that makes it; nothing here is shared between stores.
 */
import type { MessageMeta } from "@deixis/core/ContextObject"
import * as Metric from "effect/Metric"
import type { Row } from "./statement.js"

/** Lookups served from memory (pool scopes and message metadata). */
export const cacheHits = Metric.counter("deixis_store_cache_hits_total", {
  description: "context store lookups served from the in-memory cache",
  incremental: true
})
/** Lookups that went to the database (nothing cached, or the chat's revision moved on). */
export const cacheMisses = Metric.counter("deixis_store_cache_misses_total", {
  description: "context store lookups that read the database",
  incremental: true
})
/** Chats dropped from the cache to stay within its budget. */
export const cacheEvictions = Metric.counter("deixis_store_cache_evictions_total", {
  description: "chats evicted from the context store cache (least recently used first)",
  incremental: true
})

/**
 * Scopes (a topic's shapes, reply chains) and messages one chat keeps at most, least recently
 * used first out, whatever the budget: a bound on one chat's share of the maps' overhead.
 */
const maxScopes = 8192
const maxMessages = 32768
/** Kinds remembered per chat (the kinds asked of a chat beyond these are read when asked). */
const maxKinds = 16
/** A rough per-row and per-entry overhead of the JS heap, in bytes. */
const rowOverhead = 96
const messageBytes = 256
/** A chat's entry itself, so that many chats asked once each are bounded too. */
const entryBytes = 512

/** The rows of one pool scope, as read at `now` (served again at any later time). */
export interface ScopeRows {
  readonly now: number
  readonly rows: ReadonlyArray<Row>
  /** The topic (as stored) the scope is of: its own (home) or the one it leaves out (fallback). */
  readonly topic: string
  /** Whether the rows are of the rest of the chat (they then read chat-wide windows, unless `activeOnly`). */
  readonly fallback: boolean
  /** Whether the rows are only of active objects. */
  readonly activeOnly: boolean
  /** The sender whose own objects the rows include (their window spans every topic), if any. */
  readonly owner: string | null
  readonly bytes: number
}

/**
 * What one committed write (or unit of work) changed in a chat: the scopes, windows and sourced
 * objects it cannot have changed stay cached (see {@link ContextCache.wrote}).
 */
export interface Touched {
  /** The messages written (their metadata is kept). */
  readonly messages: Array<MessageMeta>
  /** Topics (as stored) of the messages written and of the objects written or removed, before and after. */
  readonly topics: Set<string>
  /** Topics (as stored) of the objects written or removed that were or are activated (`active_until` set). */
  readonly activeTopics: Set<string>
  /** Creators of the objects written or removed. */
  readonly creators: Set<string>
  /** Source messages of the objects written or removed. */
  readonly sources: Set<string>
  /** Something chat-wide changed (whether it is a forum): nothing cached of the chat stays. */
  everything: boolean
}

/** Nothing touched yet. */
export const untouched = (): Touched => ({
  messages: [],
  topics: new Set(),
  activeTopics: new Set(),
  creators: new Set(),
  sources: new Set(),
  everything: false
})

/** Adds what `more` touched to `into`. */
export const touchAll = (into: Touched, more: Touched): void => {
  for (const m of more.messages) into.messages.push(m)
  for (const t of more.topics) into.topics.add(t)
  for (const t of more.activeTopics) into.activeTopics.add(t)
  for (const c of more.creators) into.creators.add(c)
  for (const s of more.sources) into.sources.add(s)
  if (more.everything) into.everything = true
}

/**
 * Whether a write that touched `t` can have changed a scope's rows. Every part of a home scope
 * reads its own topic only, but for the sender's own objects (a window over every topic). A
 * fallback of active objects reads the activated objects of the other topics only; any other fallback
 * reads windows over the whole chat, so any write changes it. (An object has the topic of its
 * message once that is stored; one that moves is touched in both topics.)
 */
const stale = (s: ScopeRows, t: Touched): boolean => {
  if (!s.fallback) return t.topics.has(s.topic) || (s.owner !== null && t.creators.has(s.owner))
  if (!s.activeOnly) return true
  for (const topic of t.activeTopics) if (topic !== s.topic) return true
  return false
}

export interface ChatEntry {
  readonly chatId: string
  revision: number
  readonly scopes: Map<string, ScopeRows>
  readonly messages: Map<string, MessageMeta | null>
  /**
   * At `revision`: the rows (`body`, in `seq` order) of all the objects whose source is the
   * message, by message id (an empty list: the message is the source of none).
   */
  readonly sourced: Map<string, SourcedRows>
  /** Topics (as stored) whose recent window was read into `messages` and `sourced` at `revision`. */
  readonly windows: Set<string>
  /** Preferred kinds asked of this chat (a hint of what to read with a scope; kept across revisions). */
  readonly kinds: Set<string>
  bytes: number
}

export interface SourcedRows {
  readonly rows: ReadonlyArray<Row>
  readonly bytes: number
}

const rowsBytes = (rows: ReadonlyArray<Row>): number => {
  let total = 0
  for (const row of rows) {
    total += rowOverhead
    for (const k in row) {
      const v = row[k]
      total += typeof v === "string" ? 16 + 2 * v.length : 8
    }
  }
  return total
}

export interface ContextCache {
  /** Whether anything is kept (a budget of 0 turns the cache off). */
  readonly enabled: boolean
  /** The chat's entry at `revision`, emptied first when it was filled at another revision. */
  readonly entry: (chatId: string, revision: number) => ChatEntry | undefined
  /** The chat's entry at whatever revision it was filled, left as it is (undefined when none is kept). */
  readonly current: (chatId: string) => ChatEntry | undefined
  /** A scope's rows kept under `key`, marked as just used. */
  readonly scope: (entry: ChatEntry, key: string) => ScopeRows | undefined
  /**
   * Keeps a scope's rows read after the chat was seen at `revision` (nothing, should the entry
   * have moved on meanwhile); returns how many chats left to make room.
   */
  readonly putScope: (entry: ChatEntry, revision: number, key: string, scope: Omit<ScopeRows, "bytes">) => number
  /** Keeps looked-up message metadata (`null`: known absent), as `putScope` keeps rows. */
  readonly putMessages: (entry: ChatEntry, revision: number, messages: Iterable<readonly [string, MessageMeta | null]>) => number
  /**
   * Keeps what a chain (or a topic's window) read brought: the messages' metadata, the complete
   * object rows of the messages in `sourced`, and (`window`) that the topic's window was read.
   */
  readonly putChain: (
    entry: ChatEntry,
    revision: number,
    messages: Iterable<readonly [string, MessageMeta | null]>,
    sourced: Iterable<readonly [string, ReadonlyArray<Row>]>,
    window: string | undefined
  ) => number
  /** Remembers a preferred kind asked of the chat. */
  readonly askedKind: (entry: ChatEntry, kind: string) => void
  /**
   * After this process committed a write that moved the chat from `from` to `from + 1`: when the
   * entry was at `from` it follows — written messages kept, and only the scopes, windows and
   * sourced objects the write can have changed dropped (the rest is what the database holds at
   * `from + 1` too) — else it starts over.
   */
  readonly wrote: (chatId: string, from: number, touched: Touched) => number
  /** Chats evicted since the last call (for the evictions metric). */
  readonly takeEvictions: () => number
  /** Bytes held (the estimate the budget is checked against) and chats cached. */
  readonly size: () => { readonly bytes: number; readonly chats: number }
}

export const makeContextCache = (budgetBytes: number): ContextCache => {
  const chats = new Map<string, ChatEntry>()
  let bytes = 0
  let evictions = 0
  const enabled = budgetBytes > 0

  const touch = (entry: ChatEntry) => {
    chats.delete(entry.chatId)
    chats.set(entry.chatId, entry)
  }
  const grow = (entry: ChatEntry, by: number) => {
    entry.bytes += by
    bytes += by
  }
  const empty = (entry: ChatEntry, revision: number) => {
    bytes -= entry.bytes
    entry.bytes = 0
    entry.revision = revision
    entry.scopes.clear()
    entry.messages.clear()
    entry.sourced.clear()
    entry.windows.clear()
    grow(entry, entryBytes)
  }
  /** Evicts least recently used chats until the budget holds; returns how many left. */
  const fit = (): number => {
    let evicted = 0
    for (const [id, entry] of chats) {
      if (bytes <= budgetBytes) break
      chats.delete(id)
      bytes -= entry.bytes
      evicted++
    }
    evictions += evicted
    return evicted
  }

  const entry = (chatId: string, revision: number): ChatEntry | undefined => {
    if (!enabled) return undefined
    let found = chats.get(chatId)
    if (found === undefined) {
      found = {
        chatId,
        revision,
        scopes: new Map(),
        messages: new Map(),
        sourced: new Map(),
        windows: new Set(),
        kinds: new Set(),
        bytes: 0
      }
      grow(found, entryBytes)
    } else if (found.revision !== revision) {
      empty(found, revision)
    }
    touch(found)
    fit()
    return chats.get(chatId)
  }

  /**
   * Sets `key` in one of an entry's bounded maps as its most recently used (the least recently
   * used leaving when the map is full), the entry's bytes following.
   */
  const keep = <V extends { readonly bytes: number }>(e: ChatEntry, map: Map<string, V>, key: string, value: V, max: number) => {
    const before = map.get(key)
    if (before !== undefined) {
      map.delete(key)
      grow(e, -before.bytes)
    } else if (map.size >= max) {
      const [oldest, old] = map.entries().next().value!
      map.delete(oldest)
      grow(e, -old.bytes)
    }
    map.set(key, value)
    grow(e, value.bytes)
  }

  /** Whether rows read after seeing `revision` may go into `e`: another fiber may have moved it on. */
  const current = (e: ChatEntry, revision: number) => chats.get(e.chatId) === e && e.revision === revision

  const putScope = (e: ChatEntry, revision: number, key: string, scope: Omit<ScopeRows, "bytes">): number => {
    if (!current(e, revision)) return 0
    keep(e, e.scopes, key, { ...scope, bytes: rowsBytes(scope.rows) + 2 * key.length }, maxScopes)
    return fit()
  }

  const putMessages = (e: ChatEntry, revision: number, messages: Iterable<readonly [string, MessageMeta | null]>): number => {
    if (!current(e, revision)) return 0
    for (const [id, m] of messages) {
      if (!e.messages.has(id)) {
        if (e.messages.size >= maxMessages) {
          const oldest = e.messages.keys().next().value!
          e.messages.delete(oldest)
          grow(e, -messageBytes)
        }
        grow(e, messageBytes)
      }
      e.messages.set(id, m)
    }
    return fit()
  }

  const putChain = (
    e: ChatEntry,
    revision: number,
    messages: Iterable<readonly [string, MessageMeta | null]>,
    sourced: Iterable<readonly [string, ReadonlyArray<Row>]>,
    window: string | undefined
  ): number => {
    if (!current(e, revision)) return 0
    for (const [id, rows] of sourced) keep(e, e.sourced, id, { rows, bytes: rowOverhead + 2 * id.length + rowsBytes(rows) }, maxMessages)
    if (window !== undefined) e.windows.add(window)
    return putMessages(e, revision, messages)
  }

  const askedKind = (e: ChatEntry, kind: string) => {
    if (e.kinds.has(kind) || e.kinds.size >= maxKinds) return
    e.kinds.add(kind)
  }

  const wrote = (chatId: string, from: number, touched: Touched): number => {
    const found = chats.get(chatId)
    if (found === undefined) return 0
    if (found.revision !== from) {
      empty(found, from + 1)
    } else if (touched.everything) {
      grow(found, -[...found.scopes.values()].reduce((n, s) => n + s.bytes, 0))
      grow(found, -[...found.sourced.values()].reduce((n, s) => n + s.bytes, 0))
      found.scopes.clear()
      found.sourced.clear()
      found.windows.clear()
      found.revision = from + 1
    } else {
      for (const [key, s] of found.scopes) {
        if (!stale(s, touched)) continue
        found.scopes.delete(key)
        grow(found, -s.bytes)
      }
      for (const id of touched.sources) {
        const s = found.sourced.get(id)
        if (s === undefined) continue
        found.sourced.delete(id)
        grow(found, -s.bytes)
      }
      for (const topic of touched.topics) found.windows.delete(topic)
      found.revision = from + 1
    }
    return putMessages(found, from + 1, touched.messages.map((m) => [m.message_id, m] as const))
  }

  const scope = (e: ChatEntry, key: string): ScopeRows | undefined => {
    const kept = e.scopes.get(key)
    if (kept !== undefined) {
      e.scopes.delete(key)
      e.scopes.set(key, kept)
    }
    return kept
  }

  const takeEvictions = () => {
    const n = evictions
    evictions = 0
    return n
  }

  return {
    enabled,
    entry,
    current: (chatId) => chats.get(chatId),
    scope,
    putScope,
    putMessages,
    putChain,
    askedKind,
    wrote,
    takeEvictions,
    size: () => ({ bytes, chats: chats.size })
  }
}
