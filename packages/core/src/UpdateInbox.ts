/**
 * The inbox of a bot's incoming updates: an update is recorded durably before it is
 * acknowledged (a webhook answers 200, long polling moves its offset), handled afterwards, and
 * its id remembered, so that a redelivered update (Telegram delivers at least once) is skipped
 * and an update whose handler died with its process is handled by the next one.
 *
 * Updates are handled in `update_id` order per chat, whichever process received them: each
 * chat (the `chat` key an update is received with) is claimed by one process at a time, for a
 * lease.
 *
 * - `receive` records a batch of updates (a getUpdates page, a webhook burst) in one write and
 *   claims their chats: the updates of a chat the receiver holds (or now claims) are handed to
 *   it, after that chat's earlier updates still waiting; those of a chat another process holds
 *   wait for it.
 * - `settle` records, in one write, what the holder did: updates done (payloads dropped, ids
 *   kept until swept), updates given back (handed but not handled: they wait again), chats
 *   it still works on (their claim extended) and chats it has finished (released — or, when
 *   updates wait for them, kept and those updates handed over).
 * - `settle`'s `surrender` gives chats up without taking what waits for them (a stopping process:
 *   a release would hand it updates it will not handle): their claim ends at once.
 * - `claimStale` takes over chats whose claim expired (a process that died mid-run, or a chat
 *   stalled by a failed recording): every update of theirs not done is handed out again, oldest
 *   first, each counted as one more attempt, so a receiver can give up an update that keeps
 *   failing instead of handing it out forever (`FOR UPDATE SKIP LOCKED` on PostgreSQL: each chat
 *   to one process).
 *
 * Ids are per `source` (a bot id), so bots can share one database. Every adapter passes
 * `@deixis/core/UpdateInboxTesting`'s contract suite.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { StoreError } from "./ContextStore.js"

/**
 * Updates to record, as one write.
 *
 * @since 0.1.0
 * @category models
 */
export interface Incoming {
  readonly source: string
  readonly updates: ReadonlyArray<{
    readonly update_id: number
    /** What the update is ordered by across processes: its chat (or another key of its kind). */
    readonly chat: string
    /** The update as received (JSON text). */
    readonly payload: string
  }>
  /** The receiver (unique per process), which holds the claims. */
  readonly owner: string
  readonly now: number
  /** How long a claim holds, in milliseconds. */
  readonly lease: number
}

/**
 * An update handed to its chat's holder, to handle now.
 *
 * @since 0.1.0
 * @category models
 */
export interface Handed {
  readonly update_id: number
  readonly chat: string
  readonly payload: string
  /**
   * How many times the update has been handed out to be handled, this hand-out included; a
   * hand-out given back unhandled (`settle`'s `returned`) does not count.
   */
  readonly attempts: number
}

/**
 * What `receive` did.
 *
 * @since 0.3.0
 * @category models
 */
export interface Received {
  /** The ids recorded now (not seen before); any other id of the batch was a duplicate. */
  readonly fresh: ReadonlyArray<number>
  /**
   * The updates the receiver handles now, in `update_id` order: the fresh updates of the chats
   * it holds, each chat's earlier waiting updates (received by another process) before them.
   */
  readonly handed: ReadonlyArray<Handed>
  /** Chats whose fresh updates wait for the process that holds them. */
  readonly waiting: ReadonlyArray<string>
}

/**
 * What the holder of some chats did, as one write.
 *
 * @since 0.3.0
 * @category models
 */
export interface Settlement {
  readonly source: string
  readonly owner: string
  readonly now: number
  readonly lease: number
  /** Updates handled (or given up): their payloads are dropped, their ids remembered. */
  readonly done: ReadonlyArray<number>
  /** Updates handed but not handled (no room): they wait again, and this hand-out is not counted. */
  readonly returned: ReadonlyArray<number>
  /** Chats the owner still works on: their claim is extended by the lease. */
  readonly hold: ReadonlyArray<string>
  /**
   * Chats the owner has finished: released, unless updates wait for them — then kept, and
   * those updates handed over (the result).
   */
  readonly release: ReadonlyArray<string>
  /**
   * Chats whose handling failed (an update not recorded): the claim is held by no one until the
   * lease ends, then `claimStale` hands every update of theirs not done out again, in order.
   */
  readonly stall: ReadonlyArray<string>
  /**
   * Chats the owner gives up without taking what waits for them (a process that stops): held by
   * no one, their claim ended at once, so the next `claimStale` — or `receive` of an update of
   * theirs — of any process takes them over with every update of theirs not done, in order (a
   * chat with none is simply released).
   * Updates handed to the owner and not handled go in `returned`. Applied after `stall` and
   * before `release` (a chat in both is given up, not released).
   *
   * @since 0.3.0
   */
  readonly surrender?: ReadonlyArray<string>
}

/**
 * What `settleAndReceive` did: the settlement's hand-over (`settle`'s result), then the batch's
 * (`receive`'s).
 *
 * @since 0.3.0
 * @category models
 */
export interface Exchanged {
  readonly settled: ReadonlyArray<Handed>
  readonly received: Received
}

/**
 * @since 0.1.0
 * @category models
 */
export interface UpdateInboxShape {
  /**
   * Records the updates whose ids were not seen before, in one write (one transaction), and
   * claims their chats for `owner`. An id seen before — or twice in the batch — is recorded once.
   */
  readonly receive: (incoming: Incoming) => Effect.Effect<Received, StoreError>
  /** Applies a {@link Settlement}; returns the updates handed over for the chats it kept. */
  readonly settle: (settlement: Settlement) => Effect.Effect<ReadonlyArray<Handed>, StoreError>
  /**
   * `settle` then `receive`, in that order, as one write (one transaction, one round trip): a
   * receiver that owes a settlement when a batch arrives writes both at once. Either fails with
   * the other (neither is written). Optional: where absent, a caller makes the two calls in turn.
   *
   * @since 0.3.0
   */
  readonly settleAndReceive?: ((settlement: Settlement, incoming: Incoming) => Effect.Effect<Exchanged, StoreError>) | undefined
  /**
   * Takes over at most `limit` chats whose claim expired: claimed for `owner`, every update of
   * theirs not done handed out, oldest id first, each counted as one more attempt (in the same
   * write as the claim); a chat with none left is released.
   */
  readonly claimStale: (request: {
    readonly source: string
    readonly now: number
    readonly owner: string
    readonly lease: number
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<Handed>, StoreError>
  /** Forgets handled ids received before `before` (at most `limit`); how many. */
  readonly sweep: (before: number, limit: number) => Effect.Effect<number, StoreError>
}

/**
 * The port.
 *
 * @since 0.1.0
 * @category tags
 */
export class UpdateInbox extends Context.Tag("@deixis/core/UpdateInbox")<UpdateInbox, UpdateInboxShape>() {}

interface Row {
  readonly source: string
  readonly update_id: number
  readonly chat: string
  payload: string | null
  readonly received_at: number
  /** False while the update waits for its chat's holder. */
  handed: boolean
  attempts: number
}

interface Claim {
  owner: string
  lease_until: number
  /** Whether updates of the chat wait (received by another process, or given back). */
  waiting: boolean
}

/**
 * An in-memory inbox (lost on restart).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (): UpdateInboxShape => {
  const rows = new Map<string, Row>()
  const claims = new Map<string, Claim>()
  // The updates not done, by chat: what a hand-over reads, without a scan of every id kept.
  const pending = new Map<string, Set<Row>>()
  const key = (source: string, id: number | string) => `${source}\u0000${id}`
  // The chat's updates not done, oldest first (handed or waiting, as `only` says).
  const pendingOf = (source: string, chat: string, only: "waiting" | "all") =>
    [...(pending.get(key(source, chat)) ?? [])]
      .filter((r) => only === "all" || !r.handed)
      .sort((a, b) => a.update_id - b.update_id)
  const finish = (row: Row) => {
    row.payload = null
    const rest = pending.get(key(row.source, row.chat))
    rest?.delete(row)
    if (rest?.size === 0) pending.delete(key(row.source, row.chat))
  }
  const hand = (r: Row): Handed => {
    r.handed = true
    r.attempts++
    return { update_id: r.update_id, chat: r.chat, payload: r.payload!, attempts: r.attempts }
  }
  return {
    receive: ({ lease, now, owner, source, updates }) =>
      Effect.sync(() => {
        const fresh: Array<Row> = []
        for (const { chat, payload, update_id } of updates) {
          const k = key(source, update_id)
          if (rows.has(k)) continue
          const row: Row = { source, update_id, chat, payload, received_at: now, handed: false, attempts: 0 }
          rows.set(k, row)
          const chatKey = key(source, chat)
          const rest = pending.get(chatKey)
          if (rest === undefined) pending.set(chatKey, new Set([row]))
          else rest.add(row)
          fresh.push(row)
        }
        const handed: Array<Handed> = []
        const waiting: Array<string> = []
        for (const chat of new Set(fresh.map((r) => r.chat))) {
          const claim = claims.get(key(source, chat))
          if (claim !== undefined && claim.owner !== owner && claim.lease_until > now) {
            claim.waiting = true
            waiting.push(chat)
            continue
          }
          // Claimed now, or held already: its waiting updates first (all of them when taken over).
          const takeover = claim !== undefined && claim.owner !== owner
          const mine = pendingOf(source, chat, takeover ? "all" : "waiting")
          claims.set(key(source, chat), { owner, lease_until: now + lease, waiting: false })
          for (const r of mine) handed.push(hand(r))
        }
        return { fresh: fresh.map((r) => r.update_id), handed: handed.sort((a, b) => a.update_id - b.update_id), waiting }
      }),
    settle: ({ done, hold, lease, now, owner, release, returned, source, stall, surrender = [] }) =>
      Effect.sync(() => {
        for (const id of done) {
          const row = rows.get(key(source, id))
          if (row !== undefined && row.payload !== null) finish(row)
        }
        for (const id of returned) {
          const row = rows.get(key(source, id))
          if (row === undefined || row.payload === null || !row.handed) continue
          row.handed = false
          row.attempts = Math.max(0, row.attempts - 1)
          const claim = claims.get(key(source, row.chat))
          if (claim !== undefined) claim.waiting = true
        }
        const mine = (chat: string) => {
          const claim = claims.get(key(source, chat))
          return claim !== undefined && claim.owner === owner ? claim : undefined
        }
        for (const chat of hold) {
          const claim = mine(chat)
          if (claim !== undefined) claim.lease_until = now + lease
        }
        for (const chat of stall) {
          const claim = mine(chat)
          if (claim !== undefined) Object.assign(claim, { owner: "", lease_until: now + lease, waiting: true })
        }
        for (const chat of surrender) {
          const claim = mine(chat)
          if (claim === undefined) continue
          // Nothing left to do: released; otherwise no one's, its claim ended now.
          if (pendingOf(source, chat, "all").length === 0) claims.delete(key(source, chat))
          else Object.assign(claim, { owner: "", lease_until: now, waiting: true })
        }
        const handed: Array<Handed> = []
        for (const chat of release) {
          const claim = mine(chat)
          if (claim === undefined) continue
          if (!claim.waiting) {
            claims.delete(key(source, chat))
            continue
          }
          Object.assign(claim, { lease_until: now + lease, waiting: false })
          const waiting = pendingOf(source, chat, "waiting")
          // Nothing to hand over after all: released.
          if (waiting.length === 0) claims.delete(key(source, chat))
          for (const r of waiting) handed.push(hand(r))
        }
        return handed.sort((a, b) => a.update_id - b.update_id)
      }),
    claimStale: ({ lease, limit, now, owner, source }) =>
      Effect.sync(() => {
        const expired = [...claims].filter(([k, c]) => k.startsWith(key(source, "")) && c.lease_until <= now)
          .sort((a, b) => a[1].lease_until - b[1].lease_until)
          .slice(0, Math.max(0, limit))
        const handed: Array<Handed> = []
        for (const [k, claim] of expired) {
          Object.assign(claim, { owner, lease_until: now + lease, waiting: false })
          const pending = pendingOf(source, k.slice(source.length + 1), "all")
          // Nothing left to hand over: released.
          if (pending.length === 0) claims.delete(k)
          for (const r of pending) handed.push(hand(r))
        }
        return handed.sort((a, b) => a.update_id - b.update_id)
      }),
    sweep: (before, limit) =>
      Effect.sync(() => {
        let removed = 0
        for (const [k, r] of rows) {
          if (removed >= limit) break
          if (r.payload === null && r.received_at < before) {
            rows.delete(k)
            removed++
          }
        }
        return removed
      })
  }
}

/**
 * The in-memory adapter as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<UpdateInbox> = Layer.sync(UpdateInbox, makeMemory)

/**
 * Core's store error, which every call fails with.
 *
 * @since 0.1.0
 * @category errors
 */
export { StoreError }
