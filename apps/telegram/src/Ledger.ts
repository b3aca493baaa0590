/**
 * The intake's bookkeeping as a value: what is in flight here (updates queued or running, by
 * claimed chat and by dispatcher key), which chats this process holds and since when, which
 * chats stalled on a failed recording, and what is owed to the inbox — the next settlement
 * (updates done, given back, chats to release or stall) and the one being written. Every
 * change is a pure function from a ledger to the next (and what it decided); the intake keeps
 * the current ledger in one place and applies them in turn. Nothing here runs an effect.
 *
 * A settlement being written stays in the ledger (`writing`) until the write is known to have
 * happened: a write that failed or was interrupted (by shutdown) puts it back into what is
 * owed, so it goes with the next — the last one at shutdown at the latest.
 *
 * @since 0.3.0
 */
import type * as UpdateInbox from "@deixis/core/UpdateInbox"
import * as Chunk from "effect/Chunk"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Option from "effect/Option"

/**
 * What this process owes the inbox.
 *
 * @since 0.3.0
 * @category models
 */
export interface Owed {
  readonly done: Chunk.Chunk<number>
  readonly returned: Chunk.Chunk<number>
  readonly stall: HashSet.HashSet<string>
  readonly release: HashSet.HashSet<string>
}

/**
 * A settlement taken from the ledger (the inbox's `Settlement` without source and owner).
 *
 * @since 0.3.0
 * @category models
 */
export type Taken = Omit<UpdateInbox.Settlement, "source" | "owner">

/**
 * @since 0.3.0
 * @category models
 */
export interface Ledger {
  /** Updates queued or running here, by claimed chat (a chat with none is not in the map). */
  readonly inFlight: HashMap.HashMap<string, number>
  /** The same updates by dispatcher key (a chat, or a topic of it): a key's share of the queue. */
  readonly byKey: HashMap.HashMap<string, number>
  /** Updates queued or running here, in all. */
  readonly total: number
  /** Chats this process holds, and when their claim was last extended. */
  readonly heldSince: HashMap.HashMap<string, number>
  /**
   * A time no chat in flight here was last held before (a lower bound of their `heldSince`;
   * `Infinity` when none is): `take` looks through the chats in flight for claims to extend only
   * once an eighth of the lease has passed since it, not at every settlement.
   */
  readonly holdFrom: number
  /** Chats whose recording failed: their updates still queued here are given back, not handled. */
  readonly stalled: HashSet.HashSet<string>
  /** What the next settlement writes. */
  readonly owed: Owed
  /** The settlement being written, until it is known to be written. */
  readonly writing: Taken | undefined
}

const noneOwed: Owed = { done: Chunk.empty(), returned: Chunk.empty(), stall: HashSet.empty(), release: HashSet.empty() }

/**
 * A ledger with nothing in flight and nothing owed.
 *
 * @since 0.3.0
 * @category constructors
 */
export const empty: Ledger = {
  inFlight: HashMap.empty(),
  byKey: HashMap.empty(),
  total: 0,
  heldSince: HashMap.empty(),
  holdFrom: Infinity,
  stalled: HashSet.empty(),
  owed: noneOwed,
  writing: undefined
}

/**
 * An update handed to this process, as the ledger sees it; `unreadable` when its stored payload
 * could not be read (nothing to handle: it is done).
 *
 * @since 0.3.0
 * @category models
 */
export type Arrival =
  | { readonly update_id: number; readonly chat: string; readonly key: string; readonly attempts: number }
  | { readonly update_id: number; readonly unreadable: true }

/**
 * What became of an arrival: queued here; deferred (given back: its chat is over its share of
 * the queue); abandoned (handled and failed `maxAttempts` times); unreadable.
 *
 * @since 0.3.0
 * @category models
 */
export type Decision = "queued" | "deferred" | "abandoned" | "unreadable"

/**
 * The bounds `admit` applies.
 *
 * @since 0.3.0
 * @category models
 */
export interface Limits {
  /** Updates one key may have queued here (a chat whose calls hang must not fill the queue). */
  readonly perKey: number
  readonly maxAttempts: number
}

const inc = (map: HashMap.HashMap<string, number>, key: string, by: number) => {
  const next = Option.getOrElse(HashMap.get(map, key), () => 0) + by
  return next > 0 ? HashMap.set(map, key, next) : HashMap.remove(map, key)
}

/**
 * Takes a batch of handed updates (in `update_id` order) at `now`: each is queued, deferred,
 * abandoned or unreadable. Once one update of a chat is deferred, the batch's later updates of
 * that chat are too (they may not overtake it). Deferred, abandoned and unreadable ids are owed
 * to the inbox at once (given back, or done).
 *
 * @since 0.3.0
 * @category transitions
 */
export const admit = (
  ledger: Ledger,
  arrivals: ReadonlyArray<Arrival>,
  now: number,
  limits: Limits
): readonly [Ledger, ReadonlyArray<Decision>] => {
  // Counted per batch in plain maps, then written once per chat and key: a page of a hundred
  // updates in a few chats costs a few persistent-map writes, not two or three per update.
  const byChatAdded = new Map<string, number>()
  const byKeyNow = new Map<string, number>()
  const done: Array<number> = []
  const returned: Array<number> = []
  const full = new Set<string>()
  const decisions = arrivals.map((a): Decision => {
    if ("unreadable" in a) {
      done.push(a.update_id)
      return "unreadable"
    }
    if (a.attempts > limits.maxAttempts) {
      done.push(a.update_id)
      return "abandoned"
    }
    const queued = byKeyNow.get(a.key) ?? queuedOf(ledger, a.key)
    if (full.has(a.chat) || queued >= limits.perKey) {
      full.add(a.chat)
      returned.push(a.update_id)
      return "deferred"
    }
    byKeyNow.set(a.key, queued + 1)
    byChatAdded.set(a.chat, (byChatAdded.get(a.chat) ?? 0) + 1)
    return "queued"
  })
  let { byKey, heldSince, holdFrom, inFlight, total } = ledger
  for (const [key, n] of byKeyNow) byKey = HashMap.set(byKey, key, n)
  for (const [chat, n] of byChatAdded) {
    // A chat still held (its release not yet written) keeps its claim's time.
    const since = Option.getOrUndefined(HashMap.get(heldSince, chat))
    if (since === undefined) heldSince = HashMap.set(heldSince, chat, now)
    holdFrom = Math.min(holdFrom, since ?? now)
    inFlight = inc(inFlight, chat, n)
    total += n
  }
  const owed = done.length + returned.length === 0 ? ledger.owed : {
    ...ledger.owed,
    done: Chunk.appendAll(ledger.owed.done, Chunk.unsafeFromArray(done)),
    returned: Chunk.appendAll(ledger.owed.returned, Chunk.unsafeFromArray(returned))
  }
  return [{ ...ledger, byKey, heldSince, holdFrom, inFlight, total, owed }, decisions]
}

/**
 * How a run of updates ended: handled (`done`), given back unhandled because its chat had
 * stalled (`returned`), or not recorded (`stalled`: the chat stalls, its updates stay claimed
 * and are handed out again when the claim ends).
 *
 * @since 0.3.0
 * @category models
 */
export type Outcome = "done" | "returned" | "stalled"

/**
 * A run of `ids` of one chat and key ended with `outcome`. A chat with nothing left in flight
 * is owed a release (and is no longer stalled).
 *
 * @since 0.3.0
 * @category transitions
 */
export const finish = (ledger: Ledger, run: { readonly chat: string; readonly key: string; readonly ids: ReadonlyArray<number> }, outcome: Outcome): Ledger => {
  const n = run.ids.length
  let { owed, stalled } = ledger
  if (outcome === "done") owed = { ...owed, done: Chunk.appendAll(owed.done, Chunk.unsafeFromArray(run.ids)) }
  else if (outcome === "returned") owed = { ...owed, returned: Chunk.appendAll(owed.returned, Chunk.unsafeFromArray(run.ids)) }
  else {
    stalled = HashSet.add(stalled, run.chat)
    owed = { ...owed, stall: HashSet.add(owed.stall, run.chat) }
  }
  const inFlight = inc(ledger.inFlight, run.chat, -n)
  if (!HashMap.has(inFlight, run.chat)) {
    stalled = HashSet.remove(stalled, run.chat)
    owed = { ...owed, release: HashSet.add(owed.release, run.chat) }
  }
  return { ...ledger, inFlight, stalled, owed, byKey: inc(ledger.byKey, run.key, -n), total: ledger.total - n }
}

/**
 * Whether a chat's updates are being given back rather than handled.
 *
 * @since 0.3.0
 * @category getters
 */
export const isStalled = (ledger: Ledger, chat: string): boolean => HashSet.has(ledger.stalled, chat)

/**
 * Updates a key has queued here.
 *
 * @since 0.3.0
 * @category getters
 */
export const queuedOf = (ledger: Ledger, key: string): number => Option.getOrElse(HashMap.get(ledger.byKey, key), () => 0)

/**
 * Room left for updates under a capacity.
 *
 * @since 0.3.0
 * @category getters
 */
export const room = (ledger: Ledger, capacity: number): number => Math.max(0, capacity - ledger.total)

/**
 * The next settlement at `now`, moved to `writing` — or none when nothing is owed. Chats held
 * here whose claim was last extended more than an eighth of the lease ago are held again;
 * chats owed a release that took updates since are not released (they are owed one again when
 * those finish). Only one settlement is written at a time: none is taken while one is.
 * `stopping` (the last settlements of a process that stops): the chats it would release, and
 * the stalled ones with nothing in flight, are given up (`surrender`) instead — a release
 * hands the releaser the updates that wait for the chat, which a stopping process would hold
 * unhandled until the lease ends.
 *
 * @since 0.3.0
 * @category transitions
 */
export const take = (ledger: Ledger, now: number, lease: number, stopping = false): readonly [Ledger, Taken | undefined] => {
  if (ledger.writing !== undefined) return [ledger, undefined]
  const { owed } = ledger
  const finished = [...owed.release].filter((chat) => !HashMap.has(ledger.inFlight, chat))
  // The chats in flight are looked through only when one of them may be due (see `holdFrom`);
  // then `holdFrom` becomes the oldest of their times.
  const hold: Array<string> = []
  let holdFrom = ledger.holdFrom
  if (now - holdFrom >= lease / 8) {
    holdFrom = Infinity
    for (const chat of HashMap.keys(ledger.inFlight)) {
      const since = Option.getOrElse(HashMap.get(ledger.heldSince, chat), () => 0)
      if (now - since >= lease / 8) hold.push(chat)
      holdFrom = Math.min(holdFrom, since)
    }
  }
  // Stopping, a finished chat is given up rather than released (a release hands over what
  // waits for it), and a stalled one too: the next process takes either at once.
  const surrender = stopping ? [...new Set([...finished, ...[...owed.stall].filter((chat) => !HashMap.has(ledger.inFlight, chat))])] : []
  const taken: Taken = {
    now,
    lease,
    done: Chunk.toReadonlyArray(owed.done),
    returned: Chunk.toReadonlyArray(owed.returned),
    hold,
    release: stopping ? [] : finished,
    stall: stopping ? [...owed.stall].filter((chat) => HashMap.has(ledger.inFlight, chat)) : [...owed.stall],
    surrender
  }
  if (taken.done.length + taken.returned.length + hold.length + finished.length + taken.stall.length + surrender.length === 0) {
    return [owed.release === noneOwed.release && holdFrom === ledger.holdFrom ? ledger : { ...ledger, holdFrom, owed: { ...owed, release: HashSet.empty() } }, undefined]
  }
  return [{ ...ledger, holdFrom, owed: noneOwed, writing: taken }, taken]
}

/**
 * The settlement being written was written: released chats are no longer held, held ones
 * were extended at its `now`.
 *
 * @since 0.3.0
 * @category transitions
 */
export const written = (ledger: Ledger): Ledger => {
  const w = ledger.writing
  if (w === undefined) return ledger
  let heldSince = ledger.heldSince
  for (const chat of [...w.release, ...(w.surrender ?? [])]) heldSince = HashMap.remove(heldSince, chat)
  for (const chat of w.hold) heldSince = HashMap.set(heldSince, chat, w.now)
  return { ...ledger, heldSince, writing: undefined }
}

/**
 * The settlement being written may not have been written (the write failed, or was
 * interrupted): what it carried is owed again, ahead of what was owed since.
 *
 * @since 0.3.0
 * @category transitions
 */
export const unwritten = (ledger: Ledger): Ledger => {
  const w = ledger.writing
  if (w === undefined) return ledger
  const { owed } = ledger
  return {
    ...ledger,
    writing: undefined,
    owed: {
      done: Chunk.appendAll(Chunk.unsafeFromArray(w.done), owed.done),
      returned: Chunk.appendAll(Chunk.unsafeFromArray(w.returned), owed.returned),
      stall: HashSet.union(owed.stall, w.stall),
      // A chat given up (only when stopping) is owed as finished: the next settlement gives it up again.
      release: HashSet.union(HashSet.union(owed.release, w.release), HashSet.fromIterable(w.surrender ?? []))
    }
  }
}

/**
 * Whether anything is owed to the inbox or being written.
 *
 * @since 0.3.0
 * @category getters
 */
export const owesAnything = (ledger: Ledger): boolean =>
  ledger.writing !== undefined || Chunk.isNonEmpty(ledger.owed.done) || Chunk.isNonEmpty(ledger.owed.returned) ||
  HashSet.size(ledger.owed.stall) > 0 || HashSet.size(ledger.owed.release) > 0
