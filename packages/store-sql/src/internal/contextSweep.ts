/**
 * Sweeping (retention, in short batches) and the store's counts.
 */
import type { StoreError, StoreStats } from "@deixis/core/ContextStore"
import * as Effect from "effect/Effect"
import { num, str } from "./db.js"
import { type Fragment, limit, raw, sql } from "./statement.js"
import { type ContextSettings, type ContextSql, failStore, makeBumpRevisions } from "./contextRows.js"

/** What one sweep of the context store removed, per table. */
export interface ContextSwept {
  readonly objects: number
  readonly messages: number
  readonly event_ids: number
  readonly poll_ids: number
  readonly poll_closes: number
}

export const makeSweep = ({ db }: ContextSql, settings: ContextSettings) => {
  const counters = { evicted_messages: 0, swept_objects: 0 }
  const bumpRevisions = makeBumpRevisions(db)

  /**
   * Deletes rows matching `where` in batches of `sweep_batch`, each its own statement; returns the
   * count. With `revise`, the chats that lost rows get a new revision in the same transaction
   * (their messages and objects are what stores cache).
   */
  const sweepTable = (table: string, keyColumns: string, where: Fragment, revise = false) =>
    Effect.gen(function*() {
      let total = 0
      for (;;) {
        // Each batch is its own short write transaction, so ingest never waits long behind a sweep.
        const rows = yield* db.transaction(Effect.tap(
          db.query(
            sql`DELETE FROM ${raw(table)} WHERE (${raw(keyColumns)}) IN (SELECT ${raw(keyColumns)} FROM ${raw(table)} WHERE ${where} ${limit(settings.sweep_batch)}) RETURNING ${
              raw(revise ? "chat_id" : "1")
            } AS gone`
          ),
          // Sorted, as apply locks chats, so a sweep and a batch do not wait on each other in a cycle.
          (gone) => revise ? bumpRevisions([...new Set(gone.map((r) => str(r["gone"])))].sort()) : Effect.void
        ))
        total += rows.length
        if (rows.length < settings.sweep_batch) return total
      }
    })

  /**
   * One sweep: what it removed from each table. A retention of 0 is off: nothing of that table
   * goes (poll-id mappings stay as long as objects do, so a poll's close always finds it).
   */
  const sweep = (now: number): Effect.Effect<ContextSwept, StoreError> =>
    Effect.gen(function*() {
      const objects = settings.object_retention <= 0
        ? 0
        : yield* sweepTable("deixis_objects", "chat_id, object_id", sql`since <= ${now - settings.object_retention}`, true)
      const messages = settings.message_retention <= 0 ? 0 : yield* sweepTable(
        "deixis_messages",
        "chat_id, id_len, message_id",
        sql`sent_at <= ${now - settings.message_retention}`,
        true
      )
      const horizon = now - settings.event_retention
      const event_ids = yield* sweepTable("deixis_events", "chat_id, event_id", sql`seen_at <= ${horizon}`)
      const poll_ids = settings.object_retention <= 0
        ? 0
        : yield* sweepTable("deixis_polls", "poll_id", sql`stored_at <= ${Math.min(horizon, now - settings.object_retention)}`)
      const poll_closes = yield* sweepTable("deixis_poll_closes", "poll_id", sql`stored_at <= ${horizon}`)
      counters.swept_objects += objects
      counters.evicted_messages += messages
      return { objects, messages, event_ids, poll_ids, poll_closes }
    }).pipe(Effect.mapError(failStore("sweep")), Effect.withSpan("SqlContextStore.sweep"))

  const stats: Effect.Effect<StoreStats, StoreError> = db.query(
    sql`SELECT (SELECT count(*) FROM deixis_chats) AS chats, (SELECT count(*) FROM deixis_messages) AS messages,
            (SELECT count(*) FROM deixis_objects) AS objects`).pipe(
    Effect.map((rows) => {
      const r = rows[0] ?? {}
      return {
        chats: num(r["chats"]),
        messages: num(r["messages"]),
        objects: num(r["objects"]),
        evicted_chats: 0,
        evicted_messages: counters.evicted_messages,
        evicted_objects: 0,
        swept_objects: counters.swept_objects
      }
    }),
    Effect.mapError(failStore("stats"))
  )


  return { sweep, stats }
}
