/**
 * The inbox of a bot's incoming updates: an update is recorded durably before it is
 * acknowledged (a webhook answers 200, long polling moves its offset), handled afterwards, and
 * its id remembered, so that a redelivered update (Telegram delivers at least once) is skipped
 * and an update whose handler died with its process is handled by the next one.
 *
 * - `receive` records a batch of updates (one write), those whose ids were not seen before,
 *   claimed by the receiver for a lease; `done` marks them handled (payloads dropped, ids kept
 *   until swept).
 * - `claimStale` hands out updates received but never marked done whose lease expired
 *   (`FOR UPDATE SKIP LOCKED` on PostgreSQL: each to one process), each with its count of
 *   attempts: its receipt is the first, every hand-out one more — so a receiver can give up an
 *   update that keeps failing (mark it done) instead of handing it out forever. A claimed update
 *   the receiver had no room for is given back to its count with `defer`.
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
    /** The update as received (JSON text). */
    readonly payload: string
  }>
  /** The receiver (unique per process), which holds the claim. */
  readonly owner: string
  readonly now: number
  /** How long the receiver's claim holds, in milliseconds. */
  readonly lease: number
}

/**
 * An update handed out again.
 *
 * @since 0.1.0
 * @category models
 */
export interface Stale {
  readonly update_id: number
  readonly payload: string
  /**
   * How many times the update has been handed out to be handled, this hand-out included: its
   * receipt is the first, each `claimStale` one more, each `defer` one less.
   */
  readonly attempts: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface UpdateInboxShape {
  /**
   * Records the updates whose ids were not seen before, in one write (one transaction); returns
   * those ids. An id seen before — or twice in the batch — is recorded once.
   */
  readonly receive: (incoming: Incoming) => Effect.Effect<ReadonlyArray<number>, StoreError>
  /** The updates were handled (or given up): their payloads are dropped, their ids remembered. */
  readonly done: (source: string, updateIds: ReadonlyArray<number>) => Effect.Effect<void, StoreError>
  /**
   * Updates received, not done, whose claim expired: claimed for `owner`, oldest id first, each
   * counted as one more attempt (in the same write as the claim).
   */
  readonly claimStale: (request: {
    readonly source: string
    readonly now: number
    readonly owner: string
    readonly lease: number
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<Stale>, StoreError>
  /**
   * Claimed updates (received or handed out) that the receiver had no room to handle: their
   * claim stands — they come back when it ends — but this hand-out does not count as an
   * attempt. Call it once per hand-out; ids done or unknown are left alone.
   */
  readonly defer: (source: string, updateIds: ReadonlyArray<number>) => Effect.Effect<void, StoreError>
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
  payload: string | null
  readonly received_at: number
  lease_until: number
  attempts: number
}

/**
 * An in-memory inbox (lost on restart).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (): UpdateInboxShape => {
  const rows = new Map<string, Row>()
  const key = (source: string, id: number) => `${source}\u0000${id}`
  return {
    receive: ({ lease, now, source, updates }) =>
      Effect.sync(() => {
        const fresh: Array<number> = []
        for (const { payload, update_id } of updates) {
          const k = key(source, update_id)
          if (rows.has(k)) continue
          rows.set(k, { source, update_id, payload, received_at: now, lease_until: now + lease, attempts: 1 })
          fresh.push(update_id)
        }
        return fresh
      }),
    done: (source, updateIds) =>
      Effect.sync(() => {
        for (const id of updateIds) {
          const row = rows.get(key(source, id))
          if (row !== undefined) row.payload = null
        }
      }),
    claimStale: ({ lease, limit, now, source }) =>
      Effect.sync(() =>
        [...rows.values()]
          .filter((r) => r.source === source && r.payload !== null && r.lease_until <= now)
          .sort((a, b) => a.update_id - b.update_id)
          .slice(0, Math.max(0, limit))
          .map((r) => {
            r.lease_until = now + lease
            r.attempts++
            return { update_id: r.update_id, payload: r.payload!, attempts: r.attempts }
          })
      ),
    defer: (source, updateIds) =>
      Effect.sync(() => {
        for (const id of updateIds) {
          const row = rows.get(key(source, id))
          if (row !== undefined && row.payload !== null && row.attempts > 0) row.attempts--
        }
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
