import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type {
  ChainBound,
  ChainReport,
  ContextLoaderSettings,
  ContextLoaderShape,
  Gap,
  LoadedContext,
  LoadedEntry,
  LoadRequest,
  ReplyReport,
  Source
} from "../ContextLoader.js"
import type { HistoryEntry, HistoryScope, HistoryStoreShape, Position, StoreError } from "../HistoryStore.js"
import { comparePositions, entryKey } from "../HistoryStore.js"

export const formatDuration = (ms: number): string => {
  const minutes = Math.floor(Math.max(0, ms) / 60_000)
  if (minutes < 1) return "less than a minute"
  if (minutes < 60) return minutes === 1 ? "1 minute" : `${minutes} minutes`
  const hours = Math.floor(minutes / 60)
  if (hours < 2) return "about an hour"
  if (hours < 24) return `${hours} hours`
  const days = Math.floor(hours / 24)
  if (days < 2) return "about a day"
  return `${days} days`
}

export const gapNote = (gapMs: number, thresholdMinutes: number): string | null =>
  gapMs > thresholdMinutes * 60_000
    ? `Conversation gap: ${
      formatDuration(gapMs)
    } since the previous message in this conversation. Earlier messages may be stale; the topic may have changed.`
    : null

interface Slot {
  readonly entry: HistoryEntry
  readonly sources: Array<Source>
}

/** De-duplicates by entry key and keeps only what is positioned before the current message. */
class Merge {
  readonly slots = new Map<string, Slot>()
  constructor(readonly bound: Position) {}
  add(entry: HistoryEntry, source: Source) {
    if (comparePositions(entry, this.bound) >= 0) return
    const key = entryKey(entry)
    const known = this.slots.get(key)
    if (known === undefined) this.slots.set(key, { entry, sources: [source] })
    else if (!known.sources.includes(source)) known.sources.push(source)
  }
  entries(): ReadonlyArray<LoadedEntry> {
    return Array.from(this.slots.values())
      .sort((a, b) => comparePositions(a.entry, b.entry))
      .map(({ entry, sources }) => ({ item: entry.item, anchor: entry.anchor, seq: entry.seq, sources }))
  }
}

const walkChain = (
  store: HistoryStoreShape,
  settings: ContextLoaderSettings,
  scope: HistoryScope,
  target: HistoryEntry,
  before: string,
  merge: Merge
): Effect.Effect<ChainReport, StoreError> =>
  Effect.gen(function*() {
    const chain: Array<HistoryEntry> = [target]
    const inChain = new Set([entryKey(target)])
    const truncated: Array<ChainBound> = []
    const cut = (bound: ChainBound) => {
      if (!truncated.includes(bound)) truncated.push(bound)
    }
    let missing: string | null = null
    let current = target
    while (current.item.reply_to_message_id !== null) {
      if (chain.length >= Math.max(1, settings.chain_max_messages)) {
        cut("chain_max_messages")
        break
      }
      const parentId = current.item.reply_to_message_id
      const parent = yield* store.lookup(scope, parentId)
      if (Option.isNone(parent)) {
        missing = parentId
        break
      }
      const key = entryKey(parent.value)
      if (inChain.has(key)) break // a reply loop only corrupt data can make
      inChain.add(key)
      chain.push(parent.value)
      merge.add(parent.value, "reply_chain")
      current = parent.value
    }

    const side: Array<HistoryEntry> = []
    const perMessage = settings.chain_side_replies_per_message
    let remaining = settings.chain_side_replies_total
    if (perMessage > 0 && remaining > 0) {
      for (const member of chain) {
        const id = member.item.message_id
        if (id === null) continue
        // One extra for the chain member among the replies, one more to see a cut.
        const found = yield* store.replies(scope, id, { limit: perMessage + 2, before })
        const candidates = found.filter((e) => !inChain.has(entryKey(e)))
        if (candidates.length === 0) continue
        if (remaining === 0) {
          cut("side_replies_total")
          break
        }
        if (candidates.length > perMessage) cut("side_replies_per_message")
        let take = candidates.slice(Math.max(0, candidates.length - perMessage))
        if (take.length > remaining) {
          cut("side_replies_total")
          take = take.slice(take.length - remaining)
        }
        for (const entry of take) {
          side.push(entry)
          merge.add(entry, "side_reply")
        }
        remaining -= take.length
      }
    }
    return {
      message_ids: chain.map(entryKey),
      side_reply_ids: side.map(entryKey),
      truncated_by: truncated,
      missing_parent_id: missing
    }
  })

export const makeLoader = (store: HistoryStoreShape, settings: ContextLoaderSettings): ContextLoaderShape => ({
  settings,
  load: (request: LoadRequest) =>
    Effect.gen(function*() {
      const scope: HistoryScope = { chat_id: request.chat_id, topic_id: request.topic_id }
      const now = request.sent_at ?? (yield* Clock.currentTimeMillis)
      const before = request.message_id
      const merge = new Merge({ anchor: before, seq: 0 })

      // One read serves the recency window and the gap (its last item is the previous one).
      const recent = yield* store.recent(scope, Math.max(settings.recency_window, 1), { before })
      const previous = recent[recent.length - 1]
      for (let i = Math.max(0, recent.length - settings.recency_window); i < recent.length; i++) {
        merge.add(recent[i]!, "recent")
      }

      let reply: ReplyReport = { target_id: null, status: "none" }
      let chain: ChainReport | null = null
      const replyTo = request.reply_to_message_id
      if (replyTo !== null) {
        const found = yield* store.lookup(scope, replyTo)
        const target = Option.isSome(found) && comparePositions(found.value, merge.bound) < 0 ? found.value : null
        if (target === null) {
          reply = { target_id: replyTo, status: "not_found" }
          yield* Effect.logDebug("reply target not in history; loading the context without it").pipe(
            Effect.annotateLogs({
              chat_id: request.chat_id,
              topic_id: request.topic_id,
              message_id: request.message_id,
              reply_to_message_id: replyTo
            })
          )
        } else {
          reply = { target_id: replyTo, status: "found" }
          merge.add(target, "reply_target")
          const window = settings.reply_context_window
          const around = yield* store.around(scope, replyTo, { before: window, after: window })
          const targetKey = entryKey(target)
          for (const entry of around) {
            if (entryKey(entry) !== targetKey) merge.add(entry, "reply_context")
          }
          if (settings.reply_chain) chain = yield* walkChain(store, settings, scope, target, before, merge)
        }
      }

      const entries = merge.entries()
      let gap: Gap | null = null
      let note: string | null = null
      if (previous !== undefined) {
        const ms = Math.max(0, now - previous.item.sent_at)
        note = gapNote(ms, settings.gap_threshold_minutes)
        gap = {
          ms,
          previous_message_id: previous.item.message_id,
          previous_sent_at: previous.item.sent_at,
          exceeds_threshold: note !== null
        }
      }
      const context: LoadedContext = {
        scope,
        message_id: request.message_id,
        entries,
        messages: entries.map((entry) => entry.item),
        reply,
        chain,
        gap,
        gap_note: note
      }
      return context
    })
})
