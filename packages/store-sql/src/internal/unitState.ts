/**
 * What a unit of work (unit.ts) shares with the stores that join it, in a module of its own so
 * that `db.ts` can see it too: the unit's state in a fiber ref and, for the optimistic
 * units of PostgreSQL, the group they run in and the gate that keeps every statement the group
 * did not plan for out of it.
 *
 * Optimistic units that arrive together run as one group, each in its own fiber, without a
 * transaction: the context store's `apply` of every member is read with one statement and
 * reduced in the members' order (a window), then every member's history `appendAll` likewise,
 * and the group writes it all with one call (`deixis_unit`, migration 16) that first checks
 * that nothing they read has moved. A member may call `apply` once and then `appendAll` once;
 * anything else that would run a statement in it — a write of another kind, a second write, a
 * read the group's writes could change — escalates the member: it leaves the group (which
 * runs again without it when it had a part in it already) and runs alone in a transaction, as
 * units always did.
 */
import type { SqlError } from "@effect/sql/SqlError"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import type { ContextCache, Touched } from "./contextCache.js"
import type { Fragment, Row } from "./statement.js"

/** A chat this unit wrote: its revision before the unit (bumped once, to `from + 1`) and what the unit touched in it. */
export interface Pending {
  readonly from: number
  readonly touched: Touched
}

export interface UnitState {
  /** The client whose unit this is: a store over another database does not join it. */
  readonly sql: SqlClient.SqlClient
  /** Per cache (one per context store), the chats written in this unit. */
  readonly written: Map<ContextCache, Map<string, Pending>>
  /** `locked`: inside the unit's transaction; `optimistic`: a member of a group (PostgreSQL). */
  readonly mode: "locked" | "optimistic"
  /** Set once the optimistic member met something it cannot defer: it runs again, alone and locked. */
  escalated: boolean
  /** The group of an optimistic unit, and the unit's place in it. */
  readonly group?: Group | undefined
  readonly index: number
}

/**
 * The unit of work running in this fiber, if any (internal: stores look for it to join it). A
 * fiber ref, not a service of the fiber's context: setting it copies the fiber's few refs, where
 * providing a service copied its whole context (every layer's service), once per unit and twice
 * more per group.
 */
export const currentUnit = FiberRef.unsafeMake<UnitState | undefined>(undefined)

/** What the unit checks below read of a fiber. */
export interface FiberView {
  getFiberRef<A>(ref: FiberRef.FiberRef<A>): A
}

/** An optimistic member met what it cannot defer (a defect, so a caller's `catchAll` cannot swallow it; `escalated` is set too). */
export class Escalate extends Data.TaggedError("Escalate")<{ readonly reason: string }> {}

export const escalate = (state: UnitState, reason: string): Effect.Effect<never> =>
  Effect.suspend(() => {
    state.escalated = true
    return Effect.die(new Escalate({ reason }))
  })

/** Statements a store runs in an optimistic unit knowingly (reads, never writes). */
export const optimisticRead = FiberRef.unsafeMake(false)

export const allowRead = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(effect, optimisticRead, true)

/** The optimistic unit of `sql` in `fiber`, when a statement there would run outside its plan. */
export const gated = (fiber: FiberView, sql: SqlClient.SqlClient, reading: boolean): UnitState | undefined => {
  const unit = fiber.getFiberRef(currentUnit)
  return unit !== undefined && unit.mode === "optimistic" && unit.sql === sql && !reading ? unit : undefined
}

/** The optimistic member of `sql`'s group running in `fiber`, if any. */
export const optimisticOf = (fiber: FiberView, sql: SqlClient.SqlClient): UnitState | undefined => {
  const unit = fiber.getFiberRef(currentUnit)
  return unit !== undefined && unit.mode === "optimistic" && unit.sql === sql && unit.group !== undefined ? unit : undefined
}

/**
 * A read of a store (`family`) in an optimistic unit: allowed while the unit is alone in its
 * group and has no write of that store waiting (it would not see it); else the unit escalates.
 * Outside such a unit, the read as it is.
 */
export const guardRead = (sql: SqlClient.SqlClient, family: Family) => <A, E, R>(read: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const unit = optimisticOf(fiber, sql)
    if (unit === undefined) return read
    return unit.group!.mayRead(family) ? allowRead(read) : escalate(unit, `a ${family} read in a group with writes`)
  })

/**
 * `ContextStore.chat` in an optimistic unit. What it answers only a group's `apply` can change
 * of it is the forum flag and the title; a migration never runs in a group. So besides the
 * reads `guardRead` allows, a member reads a chat before the group's batches are reduced (the
 * group runs again if one of them then changes that chat's flag or title), or after, when
 * they did not change it.
 */
export const guardChatRead = (sql: SqlClient.SqlClient, chatId: string) => <A, E, R>(read: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const unit = optimisticOf(fiber, sql)
    if (unit === undefined) return read
    return unit.group!.mayRead("context") || unit.group!.mayReadChat(chatId)
      ? allowRead(read)
      : escalate(unit, "a chat read in a group whose writes change it")
  })

/**
 * A result set once that fibers wait for: what a `Deferred` is here, for less (a `Deferred` is
 * made by copying Effect's prototype into a new object, some 3 µs each, and a recorded update
 * made four). Set once; a later `done` changes nothing. Internal to the units of work.
 */
export class Once<A, E = never> {
  private exit: Exit.Exit<A, E> | undefined = undefined
  private waiters: Array<(exit: Exit.Exit<A, E>) => void> | undefined = undefined

  /** Sets the result and wakes the fibers waiting for it (nothing when set already). */
  done(exit: Exit.Exit<A, E>): void {
    if (this.exit !== undefined) return
    this.exit = exit
    const waiters = this.waiters
    this.waiters = undefined
    if (waiters !== undefined) for (const wake of waiters) wake(exit)
  }

  /** The result, once set. */
  poll(): Exit.Exit<A, E> | undefined {
    return this.exit
  }

  /** Waits for the result (an interrupted waiter stops waiting). */
  wait(): Effect.Effect<A, E> {
    return Effect.async<A, E>((resume) => {
      if (this.exit !== undefined) return resume(this.exit)
      const waiters = this.waiters ??= []
      waiters.push(resume)
      return Effect.sync(() => {
        const at = this.waiters?.indexOf(resume) ?? -1
        if (at >= 0) this.waiters!.splice(at, 1)
      })
    })
  }
}

// -----------------------------------------------------------------------------
// Joint reads
// -----------------------------------------------------------------------------

/** Read statements run as one, each one's rows given back (PostgreSQL: `Dialect.readTogether`). */
export type ReadJointly = (reads: ReadonlyArray<Fragment>) => Effect.Effect<ReadonlyArray<ReadonlyArray<Row>>, SqlError>

/**
 * A window's share of a joint read: its first reads go to the database with the other
 * windows' first reads, in one statement (undefined: already read, its later reads run alone).
 */
export interface JointParty {
  readonly first: (reads: ReadonlyArray<Fragment>) => Effect.Effect<ReadonlyArray<ReadonlyArray<Row>>, SqlError> | undefined
}

/**
 * The joint party of the window processed in this fiber, if any: a store's reads (contextLoad.ts,
 * historyStore.ts) take it for their first statement.
 */
export const jointRead = FiberRef.unsafeMake<JointParty | undefined>(undefined)

/**
 * `parties` windows' first reads in one statement: run once every party has asked (or has
 * finished without asking: `leave`), in the fiber of the last to ask.
 */
const jointReads = (parties: number, readJointly: ReadJointly) => {
  let pending = parties
  const asked: Array<{ readonly reads: ReadonlyArray<Fragment>; readonly done: Once<ReadonlyArray<ReadonlyArray<Row>>, SqlError> }> = []
  const fire = (): Effect.Effect<void> =>
    Effect.flatMap(Effect.exit(readJointly(asked.flatMap((a) => a.reads))), (exit) =>
      Effect.sync(() => {
        let at = 0
        for (const a of asked) {
          const from = at
          at += a.reads.length
          a.done.done(Exit.map(exit, (all) => all.slice(from, at)))
        }
      }))
  const join = () => {
    let used = false
    const first: JointParty["first"] = (reads) => {
      if (used) return undefined
      used = true
      const done = new Once<ReadonlyArray<ReadonlyArray<Row>>, SqlError>()
      asked.push({ reads, done })
      return Effect.zipRight(--pending === 0 ? fire() : Effect.void, done.wait())
    }
    /** Finished (or failed) without a first read: the others do not wait for it. */
    const leave = Effect.suspend(() => {
      if (used) return Effect.void
      used = true
      return --pending === 0 && asked.length > 0 ? fire() : Effect.void
    })
    return { party: { first } satisfies JointParty, leave }
  }
  return { join }
}

// -----------------------------------------------------------------------------
// Groups
// -----------------------------------------------------------------------------

export type Family = "context" | "history"

/** What a store's window gives the group: each request's answer, and what to write (undefined: nothing). */
export interface Processed<Res> {
  readonly results: ReadonlyArray<Res>
  readonly write: object | undefined
  /** Context: per chat written, its revision as read and what was touched (the cache follows after the commit). */
  readonly written?: Map<string, Pending> | undefined
  /** Context: the chats whose forum flag or title the write changes (what `ContextStore.chat` answers). */
  readonly chatsChanged?: ReadonlySet<string> | undefined
}

/** One store's requests of an attempt, processed together once every member that may still send one has. */
interface Window {
  readonly requests: Array<{ readonly index: number; readonly request: unknown; readonly done: Once<unknown, SqlError | string> }>
  processed: boolean
  /** The store instance that processes the window (one per group: another one escalates). */
  owner: unknown
  process: ((requests: ReadonlyArray<unknown>) => Effect.Effect<Processed<unknown>, SqlError | string>) | undefined
}

/** What a member does when its group's attempt ends. */
export type Outcome =
  | { readonly _tag: "commit" }
  | { readonly _tag: "again" }
  | { readonly _tag: "locked" }
  | { readonly _tag: "fail"; readonly error: SqlError }

interface Member {
  /** 0 running, 1 waiting on the context window, 2 past it, 3 waiting on the history window, 4 past it. */
  phase: number
  /** Its history request came while it waited on the context window (both at once): past that window, it waits on history. */
  early: boolean
  done: boolean
  /** Out of the group for good: failed, escalated or interrupted (its outcome is given when the group ends). */
  out: boolean
  escalated: boolean
  /** A processed window holds its request (its part is in the group's write). */
  contributed: boolean
  /** Its effect completed in this attempt: its part in the write is whole. */
  finished: boolean
  outcome: Once<Outcome>
}

const newWindow = (): Window => ({ requests: [], processed: false, owner: undefined, process: undefined })

/** The fiber without the unit: set once in a fiber of its own (no restore needed). */
const leaveUnit = FiberRef.set(currentUnit, undefined)

/** Runs a window's processing in a fiber of its own, outside the member's unit (its reads are planned). */
const detached = (effect: Effect.Effect<void>): Effect.Effect<void> => Effect.asVoid(Effect.forkDaemon(Effect.zipRight(leaveUnit, effect)))

/**
 * An effect's exit, run outside the fiber's unit (a window's processing: its reads are planned),
 * the unit restored after. Only where nothing interrupts it (see `processWindow`): the ref is set
 * and restored in place, without the release machinery of `Effect.locally`.
 */
const outsideUnit = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<Exit.Exit<A, E>> =>
  Effect.withFiberRuntime((fiber) => {
    const unit = fiber.getFiberRef(currentUnit)
    return unit === undefined
      ? Effect.exit(effect)
      : Effect.zipRight(leaveUnit, Effect.flatMap(Effect.exit(effect), (exit) => Effect.as(FiberRef.set(currentUnit, unit), exit)))
  })

/** Optimistic attempts before a group whose chats keep moving runs each member locked. */
export const groupAttempts = 4

export class Group {
  readonly members: Array<Member>
  attempt = 0
  tainted = false
  ending = false
  windows: Record<Family, Window> = { context: newWindow(), history: newWindow() }
  writes: Partial<Record<Family, object>> = {}
  written = new Map<ContextCache, Map<string, Pending>>()
  /** Windows being processed (the attempt ends after them). */
  busy = 0
  /** Chats read with `ContextStore.chat` before the context window was processed. */
  chatsRead = new Set<string>()
  /** The chats whose flag or title the processed context window changes. */
  chatsChanged: ReadonlySet<string> = new Set()

  constructor(
    size: number,
    /** The group's one write; false when something read has moved. */
    private readonly write: (writes: Partial<Record<Family, object>>, members: number) => Effect.Effect<boolean, SqlError>,
    private readonly followCaches: (written: Map<ContextCache, Map<string, Pending>>) => void,
    private readonly ended: () => void,
    /** Where reads can run as one statement (PostgreSQL): both windows' first reads, when every member sent both at once. */
    private readonly readJointly?: ReadJointly | undefined
  ) {
    this.members = []
    for (let i = 0; i < size; i++) {
      this.members.push({
        phase: 0, early: false, done: false, out: false, escalated: false, contributed: false, finished: false, outcome: new Once<Outcome>()
      })
    }
  }

  private live() {
    return this.members.filter((m) => !m.out)
  }

  /** Whether a member may read `family` now: alone in the group, with no write of that store waiting. */
  mayRead(family: Family): boolean {
    return this.live().length === 1 && this.windows[family].requests.length === 0 && this.writes[family] === undefined
  }

  /** Whether a member may read chat `chatId` now (see `guardChatRead`). */
  mayReadChat(chatId: string): boolean {
    if (!this.windows.context.processed) {
      this.chatsRead.add(chatId)
      return true
    }
    return !this.chatsChanged.has(chatId)
  }

  /**
   * A member's request to a store's window: answered when the window is processed (every member
   * that may still send one has, or is done). `context` may come first and once; `history` once,
   * after `context` or beside it (the member sends both at once: its history request comes while
   * it waits on the context window).
   */
  submit<Res>(
    state: UnitState,
    family: Family,
    owner: unknown,
    request: unknown,
    process: (requests: ReadonlyArray<unknown>) => Effect.Effect<Processed<Res>, SqlError | string>
  ): Effect.Effect<Res, SqlError | string> {
    return Effect.suspend(() => {
      const member = this.members[state.index]!
      const window = this.windows[family]
      const allowed = family === "context"
        ? member.phase === 0
        : member.phase === 0 || member.phase === 2 || (member.phase === 1 && !member.early)
      if (!allowed || window.processed || (window.owner !== undefined && window.owner !== owner)) {
        return escalate(state, `a ${family} write the group cannot take`)
      }
      window.owner = owner
      window.process = process as Window["process"]
      const done = new Once<unknown, SqlError | string>()
      window.requests.push({ index: state.index, request, done })
      if (member.phase === 1) member.early = true
      else member.phase = family === "context" ? 1 : 3
      const awaited = done.wait() as Effect.Effect<Res, SqlError | string>
      // Where the two windows can be read as one, a context request lets the member's other
      // fibers run first: a history request sent beside it is then in its window too.
      return Effect.zipRight(family === "context" && this.readJointly !== undefined ? Effect.zipRight(Effect.yieldNow(), this.tick()) : this.tick(), awaited)
    })
  }

  /** A member's attempt ended (`exit`); the member then waits for the attempt's outcome. */
  finish(index: number, exit: Exit.Exit<unknown, unknown>, escalated: boolean): Effect.Effect<Outcome> {
    return Effect.suspend(() => {
      const member = this.members[index]!
      member.done = true
      if (escalated || Exit.isFailure(exit)) {
        member.out = true
        member.escalated = escalated
        // A request it sent beside the one that failed has no part in the write.
        this.withdraw(index)
      } else {
        member.finished = true
      }
      return Effect.zipRight(this.tick(), member.outcome.wait())
    })
  }

  /** A member interrupted: out of the group (which runs again without it when it had a part in the attempt and had not completed). */
  leave(index: number): Effect.Effect<void> {
    return Effect.suspend(() => {
      const member = this.members[index]!
      if (member.out) return Effect.void
      member.out = true
      member.done = true
      this.withdraw(index)
      return this.tick()
    })
  }

  /** A member's requests out of the windows not yet processed. */
  private withdraw(index: number) {
    for (const window of Object.values(this.windows)) {
      const at = window.requests.findIndex((r) => r.index === index)
      if (at >= 0 && !window.processed) window.requests.splice(at, 1)
    }
  }

  /** Processes what can be processed, and ends the attempt when every member is done. */
  private tick(): Effect.Effect<void> {
    return Effect.suspend(() => {
      // The members still running, and the lowest phase among them (a tick runs several times
      // per attempt: no array nor closure built for it).
      let running = 0
      let lowest = 4
      for (const m of this.members) {
        if (m.done || m.out) continue
        running++
        if (m.phase < lowest) lowest = m.phase
      }
      // A window is ready when it holds requests and every member running has reached it.
      const { context, history } = this.windows
      // The context window first: a member waiting on it may still send history. When every
      // member sent history beside it, both windows are read as one.
      if (!context.processed && context.requests.length > 0 && lowest >= 1) {
        let joint = this.readJointly !== undefined && history.requests.length > 0
        if (joint) {
          for (const m of this.members) {
            if (!m.done && !m.out && !(m.phase >= 3 || (m.phase === 1 && m.early))) joint = false
          }
        }
        return joint ? this.processJointly(this.readJointly!) : this.processWindow("context", 2)
      }
      if (!history.processed && history.requests.length > 0 && lowest >= 3) return this.processWindow("history", 4)
      if (running === 0 && this.busy === 0 && !this.ending) {
        this.ending = true
        // In the fiber that finished last, which waits for the outcome anyway: uninterruptible, so
        // the group's write and every member's outcome are never cut short (a fiber of its own
        // cost a fork per group). Its statements are planned: none is gated by the unit.
        return Effect.uninterruptible(this.endAttempt())
      }
      return Effect.void
    })
  }

  private processWindow(family: Family, next: number): Effect.Effect<void> {
    const window = this.windows[family]
    window.processed = true
    this.busy++
    const requests = [...window.requests].sort((a, b) => a.index - b.index)
    // In the fiber that completed the window, which waits for its answer anyway: uninterruptible,
    // as `endAttempt`, so every member's answer is given (a fiber of its own cost a fork and two
    // hops through the scheduler per window).
    return Effect.uninterruptible(Effect.flatMap(outsideUnit(window.process!(requests.map((r) => r.request))), (exit) =>
      Effect.suspend(() => {
        this.busy--
        this.settleWindow(family, requests, exit, next)
        return this.tick()
      })))
  }

  /**
   * Both windows processed at once, their first reads in one statement (`jointReads`): every
   * member waiting on the context window sent its history request beside it.
   */
  private processJointly(readJointly: ReadJointly): Effect.Effect<void> {
    const families: ReadonlyArray<Family> = ["context", "history"]
    const joint = jointReads(families.length, readJointly)
    const runs = families.map((family) => {
      const window = this.windows[family]
      window.processed = true
      const requests = [...window.requests].sort((a, b) => a.index - b.index)
      const { leave, party } = joint.join()
      const run = Effect.exit(Effect.ensuring(Effect.locally(window.process!(requests.map((r) => r.request)), jointRead, party), leave))
      return { family, requests, run }
    })
    this.busy++
    return detached(Effect.flatMap(Effect.all(runs.map((r) => r.run), { concurrency: "unbounded" }), (exits) =>
      Effect.suspend(() => {
        this.busy--
        runs.forEach((r, i) => this.settleWindow(r.family, r.requests, exits[i]!, r.family === "context" ? 2 : 4))
        return this.tick()
      })))
  }

  /** A processed window's outcome: its write kept, each request answered, its members past it (`next`; a member that sent history beside context, on to history). */
  private settleWindow(
    family: Family,
    requests: Window["requests"],
    exit: Exit.Exit<Processed<unknown>, SqlError | string>,
    next: number
  ) {
    const window = this.windows[family]
    const past = (member: Member) => {
      if (member.phase < next) member.phase = family === "context" && member.early ? 3 : next
    }
    if (Exit.isSuccess(exit)) {
      const { chatsChanged, results, write, written } = exit.value
      if (write !== undefined) this.writes[family] = write
      if (written !== undefined) this.written.set(window.owner as ContextCache, written)
      if (chatsChanged !== undefined) {
        this.chatsChanged = chatsChanged
        // A chat read before the batches were reduced, which they change: the read was stale.
        for (const chat of chatsChanged) if (this.chatsRead.has(chat)) this.tainted = true
      }
      requests.forEach((r, i) => {
        const member = this.members[r.index]!
        member.contributed = true
        past(member)
        r.done.done(Exit.succeed(results[i]))
      })
    } else {
      for (const r of requests) {
        past(this.members[r.index]!)
        r.done.done(exit as Exit.Exit<never, SqlError | string>)
      }
    }
  }

  private endAttempt(): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      const live = this.live()
      // A member with a part in the write that did not complete (failed, escalated, interrupted):
      // its part must not be written, and the others may have read it.
      if (this.tainted || this.members.some((m) => m.contributed && !m.finished)) return this.again(live)
      if (this.writes.context === undefined && this.writes.history === undefined) return this.commit(live)
      // Every member interrupted: nothing was acknowledged, nothing is written.
      if (live.length === 0) return this.end(live, { _tag: "commit" })
      const written = yield* Effect.either(this.write(this.writes, live.length))
      if (written._tag === "Left") {
        // A failed write is each member's alone: with company, each runs again by itself.
        return live.length > 1 ? this.end(live, { _tag: "locked" }) : this.end(live, { _tag: "fail", error: written.left })
      }
      return written.right ? this.commit(live) : this.again(live)
    })
  }

  private commit(live: ReadonlyArray<Member>) {
    this.followCaches(this.written)
    this.end(live, { _tag: "commit" })
  }

  private again(live: ReadonlyArray<Member>) {
    if (++this.attempt >= groupAttempts || live.length === 0) return this.end(live, { _tag: "locked" })
    this.tainted = false
    this.ending = false
    this.windows = { context: newWindow(), history: newWindow() }
    this.writes = {}
    this.written = new Map()
    this.chatsRead = new Set()
    this.chatsChanged = new Set()
    for (const member of this.members) member.contributed = false
    for (const member of live) {
      const previous = member.outcome
      member.phase = 0
      member.early = false
      member.done = false
      member.finished = false
      member.outcome = new Once<Outcome>()
      previous.done(Exit.succeed({ _tag: "again" }))
    }
  }

  /** The group's last attempt: the live members' outcome, then the others' (escalated: locked; failed: their own exit). */
  private end(live: ReadonlyArray<Member>, outcome: Outcome) {
    for (const member of live) member.outcome.done(Exit.succeed(outcome))
    for (const member of this.members) {
      if (member.out) member.outcome.done(Exit.succeed<Outcome>(member.escalated ? { _tag: "locked" } : { _tag: "commit" }))
    }
    this.ended()
  }
}
