/**
 * The update inbox's writes (core's `UpdateInbox`) as plain synchronous bodies: each a generator
 * that yields its statements and is given each one's rows back, so one body serves both
 * engines — driven statement by statement in a transaction by the main thread (PostgreSQL, see
 * `Db.body`), or run whole on the raw handle inside SQLite's writer thread (sqliteProcedures.ts),
 * one message there and back. Claims are taken in the body's transaction: on PostgreSQL the rows
 * are locked in sorted order (`FOR UPDATE`, `SKIP LOCKED` for stale claims); on SQLite the
 * transaction holds the database's write lock.
 */
import type { Exchanged, Handed, Incoming, Received, Settlement } from "@deixis/core/UpdateInbox"
import type { Dialect } from "./dialect.js"
import { chunks, empty, type Fragment, limit as limitOf, list, num, raw, type Row, sql, str, tuples } from "./statement.js"

/** A write body: yields statements, is given their rows, returns its result. */
export type Body<A> = Generator<Fragment, A, ReadonlyArray<Row>>

/** The bodies a caller may name (sqliteProcedures.ts runs them by name). */
export type InboxBody = "receive" | "settle" | "exchange" | "claimStale"

/** `claimStale`'s request. */
export interface ClaimRequest {
  readonly source: string
  readonly now: number
  readonly owner: string
  readonly lease: number
  readonly limit: number
}

const handedOf = (row: Row): Handed => ({
  update_id: num(row["update_id"]),
  chat: str(row["chat"]),
  payload: str(row["payload"]),
  attempts: num(row["attempts"]) + 1
})

function* markHanded(source: string, ids: ReadonlyArray<number>, until: number): Body<void> {
  for (const chunk of chunks(ids, 1)) {
    yield sql`UPDATE deixis_updates SET lease_until = ${until}, attempts = attempts + 1 WHERE source = ${source} AND update_id IN ${list(chunk)}`
  }
}

/**
 * The updates of `chats` not done (`waitingOnly`: those not handed), oldest first, handed to
 * the caller in the same transaction: each hand-out one more attempt.
 */
function* handPending(source: string, chats: ReadonlyArray<string>, waitingOnly: boolean, until: number): Body<Array<Handed>> {
  if (chats.length === 0) return []
  const out: Array<Handed> = []
  for (const chunk of chunks(chats, 1)) {
    const rows = yield sql`SELECT update_id, chat, payload, attempts FROM deixis_updates
      WHERE source = ${source} AND chat IN ${list(chunk)} AND payload IS NOT NULL${waitingOnly ? raw(" AND lease_until IS NULL") : empty}`
    for (const row of rows) out.push(handedOf(row))
  }
  yield* markHanded(source, out.map((h) => h.update_id), until)
  return out.sort((a, b) => a.update_id - b.update_id)
}

/** Chats claimed with nothing to hand over (their updates were done meanwhile) are released at once. */
function* releaseIdle(source: string, owner: string, chats: ReadonlyArray<string>, handed: ReadonlyArray<Handed>): Body<void> {
  const busy = new Set(handed.map((h) => h.chat))
  for (const chunk of chunks(chats.filter((chat) => !busy.has(chat)).sort(), 1)) {
    yield sql`DELETE FROM deixis_update_chats WHERE source = ${source} AND owner = ${owner} AND waiting = 0 AND chat IN ${list(chunk)}`
  }
}

/** `UpdateInbox.receive` (non-empty, ids unique). */
export function* receive(d: Dialect, { lease, now, owner, source, updates: unique }: Incoming): Body<Received> {
  const { C, forUpdate } = d
  const until = now + lease
  const fresh: Array<number> = []
  for (const chunk of chunks(unique, 7)) {
    // Written as handed to the receiver, its first attempt — what becomes of nearly every update
    // (its chat claimed here with nothing waiting) — so the row is written once; put back to
    // waiting below when its chat is held elsewhere or has earlier updates to hand first.
    const rows = yield sql`INSERT INTO deixis_updates (source, update_id, chat, received_at, lease_until, attempts, payload) VALUES ${
      tuples(chunk.map((u) => [source, u.update_id, u.chat, now, until, 1, u.payload]))
    } ON CONFLICT (source, update_id) DO NOTHING RETURNING update_id`
    for (const row of rows) fresh.push(num(row["update_id"]))
  }
  if (fresh.length === 0) return { fresh, handed: [], waiting: [] }
  const byId = new Map(unique.map((u) => [u.update_id, u] as const))
  const chats = [...new Set(fresh.map((id) => byId.get(id)!.chat))].sort()
  // The claims as they stand, locked (PostgreSQL) in sorted order; on SQLite the
  // transaction holds the write lock.
  const before = new Map<string, Row>()
  for (const chunk of chunks(chats, 1)) {
    const rows = yield sql`SELECT chat, owner, lease_until, waiting FROM deixis_update_chats
      WHERE source = ${source} AND chat IN ${list(chunk)} ORDER BY chat${C}${forUpdate}`
    for (const row of rows) before.set(str(row["chat"]), row)
  }
  const held = (row: Row | undefined) => row !== undefined && str(row["owner"]) !== owner && num(row["lease_until"]) > now
  const claimed = new Set<string>()
  for (const chunk of chunks(chats.filter((chat) => !held(before.get(chat))), 5)) {
    // A claim inserted meanwhile by another process (unseen above) stays theirs.
    const rows = yield sql`INSERT INTO deixis_update_chats (source, chat, owner, lease_until, waiting) VALUES ${
      tuples(chunk.map((chat) => [source, chat, owner, now + lease, 0]))
    } ON CONFLICT (source, chat) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until, waiting = 0
      WHERE deixis_update_chats.owner = excluded.owner OR deixis_update_chats.lease_until <= ${now} RETURNING chat`
    for (const row of rows) claimed.add(str(row["chat"]))
  }
  const waiting = chats.filter((chat) => !claimed.has(chat))
  for (const chunk of chunks(waiting, 1)) {
    yield sql`UPDATE deixis_update_chats SET waiting = 1 WHERE source = ${source} AND chat IN ${list(chunk)}`
  }
  // Taken over from another owner: every update not done; held with updates waiting: those;
  // otherwise only the fresh ones.
  const takenOver: Array<string> = []
  const withWaiting: Array<string> = []
  for (const chat of claimed) {
    const row = before.get(chat)
    if (row === undefined) continue
    if (str(row["owner"]) !== owner) takenOver.push(chat)
    else if (num(row["waiting"]) !== 0) withWaiting.push(chat)
  }
  // The fresh updates not handed with the rest: waiting (`lease_until` null, no attempt yet) for
  // their chat's holder, or handed below after their chat's earlier updates.
  const notPlain = new Set([...waiting, ...takenOver, ...withWaiting])
  const back = fresh.filter((id) => notPlain.has(byId.get(id)!.chat))
  for (const chunk of chunks(back, 1)) {
    yield sql`UPDATE deixis_updates SET lease_until = NULL, attempts = 0 WHERE source = ${source} AND update_id IN ${list(chunk)}`
  }
  const handed: Array<Handed> = [
    ...(yield* handPending(source, takenOver, false, until)),
    ...(yield* handPending(source, withWaiting, true, until))
  ]
  for (const id of fresh) {
    const u = byId.get(id)!
    if (!notPlain.has(u.chat)) handed.push({ update_id: u.update_id, chat: u.chat, payload: u.payload, attempts: 1 })
  }
  return { fresh, handed: handed.sort((a, b) => a.update_id - b.update_id), waiting }
}

/** `UpdateInbox.settle` (something to settle). */
export function* settle(_d: Dialect, { done, hold, lease, now, owner, release, returned, source, stall, surrender = [] }: Settlement): Body<Array<Handed>> {
  const until = now + lease
  for (const chunk of chunks(done, 1)) {
    yield sql`UPDATE deixis_updates SET payload = NULL, lease_until = NULL WHERE source = ${source} AND update_id IN ${list(chunk)}`
  }
  const givenBack = new Set<string>()
  for (const chunk of chunks(returned, 1)) {
    const rows = yield sql`UPDATE deixis_updates SET lease_until = NULL, attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END
      WHERE source = ${source} AND update_id IN ${list(chunk)} AND payload IS NOT NULL AND lease_until IS NOT NULL RETURNING chat`
    for (const row of rows) givenBack.add(str(row["chat"]))
  }
  // Claims are locked in sorted order (as `receive` takes them): no two writers deadlock.
  for (const chunk of chunks([...givenBack].sort(), 1)) {
    yield sql`UPDATE deixis_update_chats SET waiting = 1 WHERE source = ${source} AND chat IN ${list(chunk)}`
  }
  for (const chunk of chunks([...hold].sort(), 1)) {
    yield sql`UPDATE deixis_update_chats SET lease_until = ${until} WHERE source = ${source} AND owner = ${owner} AND chat IN ${list(chunk)}`
  }
  for (const chunk of chunks([...stall].sort(), 1)) {
    yield sql`UPDATE deixis_update_chats SET owner = '', lease_until = ${until}, waiting = 1
      WHERE source = ${source} AND owner = ${owner} AND chat IN ${list(chunk)}`
  }
  // Given up: released when nothing of the chat is left to do; otherwise no one's, the claim
  // ended now — the next claimant takes every update not done.
  for (const chunk of chunks([...surrender].sort(), 1)) {
    yield sql`DELETE FROM deixis_update_chats WHERE source = ${source} AND owner = ${owner} AND chat IN ${list(chunk)}
      AND NOT EXISTS (SELECT 1 FROM deixis_updates u WHERE u.source = deixis_update_chats.source AND u.chat = deixis_update_chats.chat AND u.payload IS NOT NULL)`
    yield sql`UPDATE deixis_update_chats SET owner = '', lease_until = ${now}, waiting = 1
      WHERE source = ${source} AND owner = ${owner} AND chat IN ${list(chunk)}`
  }
  const kept: Array<string> = []
  for (const chunk of chunks([...release].sort(), 1)) {
    yield sql`DELETE FROM deixis_update_chats WHERE source = ${source} AND owner = ${owner} AND waiting = 0 AND chat IN ${list(chunk)}`
    const rows = yield sql`UPDATE deixis_update_chats SET waiting = 0, lease_until = ${until}
      WHERE source = ${source} AND owner = ${owner} AND waiting = 1 AND chat IN ${list(chunk)} RETURNING chat`
    for (const row of rows) kept.push(str(row["chat"]))
  }
  const handed = yield* handPending(source, kept, true, until)
  yield* releaseIdle(source, owner, kept, handed)
  return handed
}

/** Whether a settlement has anything to write. */
export const settles = (s: Settlement): boolean =>
  s.done.length + s.returned.length + s.hold.length + s.release.length + s.stall.length + (s.surrender?.length ?? 0) > 0

/** `UpdateInbox.settleAndReceive`'s request (the batch's ids unique). */
export interface ExchangeRequest {
  readonly settlement: Settlement
  readonly incoming: Incoming
}

/** `UpdateInbox.settleAndReceive`: `settle`, then `receive`, in one transaction. */
export function* exchange(d: Dialect, { incoming, settlement }: ExchangeRequest): Body<Exchanged> {
  const settled = settles(settlement) ? yield* settle(d, settlement) : []
  const received = incoming.updates.length === 0 ? { fresh: [], handed: [], waiting: [] } : yield* receive(d, incoming)
  return { settled, received }
}

/** `UpdateInbox.claimStale`. */
export function* claimStale(d: Dialect, { lease, limit, now, owner, source }: ClaimRequest): Body<Array<Handed>> {
  const rows = yield sql`SELECT chat FROM deixis_update_chats WHERE source = ${source} AND lease_until <= ${now}
    ORDER BY lease_until, chat${d.C} ${limitOf(Math.max(0, Math.floor(limit)))}${d.skipLocked}`
  const chats = rows.map((row) => str(row["chat"]))
  for (const chunk of chunks(chats, 1)) {
    yield sql`UPDATE deixis_update_chats SET owner = ${owner}, lease_until = ${now + lease}, waiting = 0
      WHERE source = ${source} AND chat IN ${list(chunk)}`
  }
  const handed = yield* handPending(source, chats, false, now + lease)
  yield* releaseIdle(source, owner, chats, handed)
  return handed
}

/** Each body's argument and result. */
export interface Bodies {
  readonly receive: { readonly argument: Incoming; readonly result: Received }
  readonly settle: { readonly argument: Settlement; readonly result: Array<Handed> }
  readonly exchange: { readonly argument: ExchangeRequest; readonly result: Exchanged }
  readonly claimStale: { readonly argument: ClaimRequest; readonly result: Array<Handed> }
}

/** The bodies by name, over their plain-data argument. */
export const bodies = {
  receive: (d: Dialect, argument: unknown) => receive(d, argument as Incoming),
  settle: (d: Dialect, argument: unknown) => settle(d, argument as Settlement),
  exchange: (d: Dialect, argument: unknown) => exchange(d, argument as ExchangeRequest),
  claimStale: (d: Dialect, argument: unknown) => claimStale(d, argument as ClaimRequest)
} satisfies Record<InboxBody, (d: Dialect, argument: unknown) => Body<unknown>>
