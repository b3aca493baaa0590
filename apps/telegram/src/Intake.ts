/**
 * The bot's intake, between the transports and the dispatcher: every update is recorded in the
 * `UpdateInbox` before it is acknowledged (a redelivered `update_id` is skipped), handed out
 * under its chat's claim, queued in the {@link Dispatcher} — a chat's run of updates that need
 * no answer as one task, recorded in one unit of work; an update that needs an answer as a task
 * of its own, recorded then answered — and settled (done, given back, its chat's claim held or
 * released). One fiber, the inbox writer, makes every inbox call in turn. Updates whose handler
 * died with its process, or whose recording failed in a store, are handed out again when their
 * chat's claim ends (here or in another process), at most `BOT_UPDATE_MAX_ATTEMPTS` times.
 *
 * @since 0.3.0
 */
import * as Supervisor from "@deixis/core/Supervisor"
import type { StoreError } from "@deixis/core/ContextStore"
import { type Exchanged, type Handed, type Incoming, UpdateInbox } from "@deixis/core/UpdateInbox"
import * as WritePriority from "@deixis/store-sql/WritePriority"
import type { UpdateMapper } from "@deixis/telegraf"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as Bot from "./Bot.js"
import type { BotConfig } from "./BotConfig.js"
import * as Dispatcher from "./Dispatcher.js"
import * as Ledger from "./Ledger.js"
import * as Metrics from "./Metrics.js"
import * as StoreOutage from "./StoreOutage.js"

/**
 * What intake did with an update.
 *
 * @since 0.3.0
 * @category models
 */
export type IntakeResult = "queued" | "deferred" | "duplicate" | "malformed" | "busy" | "unrecorded"

/**
 * What intake is built from: the `BOT_*` settings it uses, this process's name in claims, and
 * the bot's id (the inbox's `source`).
 *
 * @since 0.3.0
 * @category models
 */
export type IntakeOptions = Pick<
  BotConfig,
  "concurrency" | "recordingConcurrency" | "queueCapacity" | "updateLease" | "updateRetention" | "updateMaxAttempts" | "shutdownTimeout"
> & {
  readonly owner: string
  readonly source: string
}

/**
 * A batch of updates as a transport hands it to intake.
 *
 * @since 0.3.0
 * @category models
 */
export type Items = ReadonlyArray<{ readonly update: unknown; readonly raw?: string | undefined }>

/**
 * A running intake: the sink the transports hand updates to. A transport takes no more than
 * `room` says (as grammY runner's supplier asks its sink for capacity): polling asks for at
 * most that many updates; the webhook answers 503 when there is none.
 *
 * @since 0.3.0
 * @category models
 */
export interface Intake {
  readonly dispatcher: Dispatcher.Dispatcher
  /** Records a batch of updates (a getUpdates page, webhook requests together) and queues them. */
  readonly intakeAll: (items: Items) => Effect.Effect<ReadonlyArray<IntakeResult>>
  /** Records one update and queues it. */
  readonly intake: (update: unknown, raw?: string) => Effect.Effect<IntakeResult>
  /** Updates queued or running here. */
  readonly queued: () => number
  /** Waits until the queue has room, and says how much (at least 1). */
  readonly room: Effect.Effect<number>
  /** Whether intake can progress: false while the inbox writer is down (failed, restarting). */
  readonly ready: SubscriptionRef.SubscriptionRef<boolean>
  /** The ledger now (for tests and metrics). */
  readonly ledger: () => Ledger.Ledger
}

/**
 * @since 0.3.0
 * @category tags
 */
export class IntakeService extends Context.Tag("@deixis/telegram-bot/Intake")<IntakeService, Intake>() {}

/**
 * The intake as a layer, for the lifetime of the layer's scope (see {@link make}).
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = (bot: Bot.Bot, options: IntakeOptions): Layer.Layer<IntakeService, never, UpdateInbox | Supervisor.Supervisor> =>
  Layer.scoped(IntakeService, make(bot, options))

/**
 * Starts the intake for the lifetime of the scope: its dispatcher, the inbox writer, the claim
 * of stale chats and the inbox sweep, each supervised (`Supervisor`). Closing the scope drains
 * the dispatcher (bounded), then writes the last settlement — also one whose write the
 * shutdown interrupted — bounded by `shutdownTimeout`.
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (bot: Bot.Bot, options: IntakeOptions): Effect.Effect<Intake, never, Scope.Scope | UpdateInbox | Supervisor.Supervisor> =>
  Effect.gen(function*() {
    const inbox = yield* UpdateInbox
    const source = options.source
    const lease = Duration.toMillis(options.updateLease)
    const capacity = options.queueCapacity
    // One chat (or topic) holds at most a quarter of the queue: a chat whose calls hang or
    // are throttled, flooded with updates, must not fill it and stall every other chat.
    const limits: Ledger.Limits = { perKey: Math.max(1, Math.floor(capacity / 4)), maxAttempts: options.updateMaxAttempts }
    const ready = yield* SubscriptionRef.make(false)

    // The one ledger, changed only by its pure transitions. Whoever waits for room is woken
    // when a change makes some.
    let ledger = Ledger.empty
    // Set when the intake's scope closes: its last settlements give chats up (see the finalizer).
    let stopping = false
    let roomWaiters: Array<() => void> = []
    const apply = (next: Ledger.Ledger) => {
      const before = ledger.total
      ledger = next
      if (next.total < before && roomWaiters.length > 0 && Ledger.room(next, capacity) > 0) {
        const waiting = roomWaiters
        roomWaiters = []
        for (const wake of waiting) wake()
      }
    }
    const room: Effect.Effect<number> = Effect.suspend(() => {
      const free = Ledger.room(ledger, capacity)
      return free > 0 ? Effect.succeed(free) : Effect.zipRight(
        Effect.async<void>((resume) => {
          const wake = () => resume(Effect.void)
          roomWaiters.push(wake)
          return Effect.sync(() => {
            roomWaiters = roomWaiters.filter((w) => w !== wake)
          })
        }),
        room
      )
    })

    // The settlement. Only the inbox writer (below) writes to the inbox, one call at a time, so
    // a chat is never released while an update of it is being handed here. What it carries
    // stays in the ledger until the write is known to be done: failed, it is owed again.
    // Uninterruptible for the reason `receive` is (below): what a settlement hands over must
    // reach the ledger.
    const takeSettlement = (now: number): Ledger.Taken | undefined => {
      const [next, taken] = Ledger.take(ledger, now, lease, stopping)
      apply(next)
      return taken
    }
    const settlementWritten = <A, E>(exit: Exit.Exit<A, E>) =>
      Effect.sync(() => apply(Exit.isSuccess(exit) ? Ledger.written(ledger) : Ledger.unwritten(ledger)))
    // Written with the next settlement (an id not written when the process dies is handled again).
    const notSettled = (error: StoreError) => StoreOutage.logFailure("Warning", "updates not settled in the inbox; trying again", error)
    const settleNow: Effect.Effect<void> = Effect.uninterruptible(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const taken = takeSettlement(now)
      if (taken === undefined) return
      const handed = yield* inbox.settle({ source, owner: options.owner, ...taken }).pipe(Effect.onExit(settlementWritten), Effect.either)
      if (handed._tag === "Left") return yield* notSettled(handed.left)
      yield* queue(handed.right.map(fromStore), performance.now(), now)
    }))

    // Acquired before the dispatcher (and the transports, which come after the intake), so it is
    // released after them: on shutdown the transports stop taking updates first, then the
    // dispatcher drains (bounded), then the last settlement is written — whatever the writer
    // fiber was doing when it was interrupted (a settlement it was writing is owed again).
    // Stopping: runs the dispatcher never started (its drain timed out) are given back, and
    // the chats finished here are given up rather than released (`Ledger.take`): a release would
    // hand this process the updates waiting for them, held unhandled until the lease ends; given
    // up, the next process to claim them (a restart, another replica) takes them at once.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        stopping = true
        for (const run of unstarted) apply(Ledger.finish(ledger, { chat: run.chat, key: run.key, ids: run.items.map((w) => w.update_id) }, "returned"))
        unstarted.clear()
      }).pipe(Effect.zipRight(Effect.interruptible(Effect.whileLoop({
        while: () => Ledger.owesAnything(ledger),
        // A failed write is tried again (a store back within the bound still gets it).
        body: () => settleNow.pipe(Effect.zipRight(Effect.suspend(() => (Ledger.owesAnything(ledger) ? Effect.sleep(Duration.millis(100)) : Effect.void)))),
        step: () => undefined
      })))).pipe(
        Effect.timeout(options.shutdownTimeout),
        Effect.catchAll(() => Effect.logError("the last settlement was not written within the shutdown timeout; its updates are handled again after the next start")),
        Effect.annotateLogs({ component: "intake" })
      )
    )
    const dispatcher = yield* Dispatcher.make({
      concurrency: options.concurrency,
      recordingConcurrency: options.recordingConcurrency,
      // The reminder sender's tasks (at most `reminderRoom`) share the dispatcher, never the
      // updates' room: the ledger admits at most `capacity` updates, so `submit` never waits.
      // They run in the send lane (`reminderConcurrency` workers): a few slow sends (a 429's
      // wait) never hold up the recording of every chat.
      sendConcurrency: reminderConcurrency,
      capacity: capacity + reminderRoom,
      shutdownTimeout: options.shutdownTimeout
    })
    const wake = yield* Queue.sliding<void>(1)
    const owe = Queue.offer(wake, undefined)
    const outageRetry = Schedule.spaced(Duration.millis(250)).pipe(Schedule.upTo(Duration.millis(lease / 2)))

    interface Work extends Bot.Arrival {
      readonly update_id: number
      readonly chat: string
      readonly attempts: number
      readonly update: Record<string, unknown>
      readonly mapped: UpdateMapper.MappedUpdate
      readonly key: string
    }
    // Mapped on first read: an update that needs no answer is mapped when its run is recorded,
    // so intake (and the answers behind it) does not wait for the mapping of a backlog. A class
    // with the getter on its prototype: one small object per update, of one shape.
    class Held implements Work {
      #mapped: UpdateMapper.MappedUpdate | undefined
      constructor(
        readonly update_id: number,
        readonly chat: string,
        readonly attempts: number,
        readonly update: Record<string, unknown>,
        readonly key: string
      ) {}
      get mapped() {
        return (this.#mapped ??= bot.map(this.update))
      }
    }
    const fromStore = (h: Handed): Work | number => {
      let update: unknown
      try {
        update = JSON.parse(h.payload)
      } catch {
        update = null
      }
      return Predicate.isRecord(update) ? new Held(h.update_id, h.chat, h.attempts, update, Dispatcher.keyOf(update)) : h.update_id
    }

    // A chat's run of updates that need no answer, recorded in one unit of work; or one update
    // that needs an answer, recorded then answered. A run waiting in the dispatcher is open:
    // later updates of its key that need no answer join it (at most `maxRun`) until it starts,
    // so a backlog is recorded in few, large units of work rather than one per getUpdates page.
    // (Open runs are the dispatcher's side of things; what is in flight and owed is the ledger's.)
    interface Run {
      readonly key: string
      readonly chat: string
      readonly answer: boolean
      readonly items: Array<Work>
      /** When each update arrived (for the latency metric). */
      readonly arrived: Array<number>
    }
    const maxRun = 32
    const open = new Map<string, Run>()
    // Runs submitted to the dispatcher and not started yet.
    const unstarted = new Set<Run>()

    const task = (run: Run) =>
      Effect.suspend(() => {
        // Started: later updates of the key start a run of their own.
        if (open.get(run.key) === run) open.delete(run.key)
        unstarted.delete(run)
        const { chat, items } = run
        const ids = items.map((w) => w.update_id)
        const end = (outcome: Ledger.Outcome) =>
          Effect.suspend(() => {
            apply(Ledger.finish(ledger, { chat, key: run.key, ids }, outcome))
            return Effect.asVoid(owe)
          })
        if (Ledger.isStalled(ledger, chat)) return end("returned")
        // Not recorded, so not handled — or interrupted by shutdown: the chat stalls, and its
        // updates are handed out again (to whichever process claims it first) when its claim ends.
        const handled = bot.record(items.map((w) => w.mapped)).pipe(
          // The store's outage, not the updates': recorded once it is back (the run keeps its place
          // in its chat's order), within half the claim's lease — past it the chat stalls as below.
          StoreOutage.retryOutage(outageRetry),
          Effect.matchEffect({
            onFailure: (error) =>
              StoreOutage.logFailure("Warning", "updates not recorded, so not handled; they are handled again when their chat's claim ends (BOT_UPDATE_LEASE)", error).pipe(
                Effect.annotateLogs({ update_id: ids.join(","), chat }),
                Effect.zipRight(Effect.sync(() => Metrics.countUpdates("unrecorded", items.length))),
                Effect.as<Ledger.Outcome>("stalled")
              ),
            onSuccess: () =>
              Effect.zipRight(
                run.answer ? bot.answer(items[0]!.update, items[0]!.mapped) : Effect.void,
                Effect.sync((): Ledger.Outcome => {
                  Metrics.countUpdates("handled", items.length)
                  const end = performance.now()
                  for (const at of run.arrived) Metrics.observeLatency((end - at) / 1000)
                  return "done"
                })
              )
          }),
          Effect.onExit((exit) => end(Exit.isSuccess(exit) ? exit.value : "stalled"))
        )
        // An answer's writes (its update's record, the reply's) go ahead of other chats' recording.
        return run.answer ? WritePriority.asUrgent(handled) : handled
      })

    // Queues handed updates (in update_id order) behind their chat's: an update that needs no
    // answer joins its key's open run, or opens one; an update that needs one is a task of its
    // own (the dispatcher runs it, and its key's earlier tasks, in the urgent lane).
    const queue = (handed: ReadonlyArray<Work | number>, arrived: number, now: number) =>
      Effect.gen(function*() {
        const [next, decisions] = Ledger.admit(
          ledger,
          handed.map((item) => typeof item === "number" ? { update_id: item, unreadable: true } as const : item),
          now,
          limits
        )
        apply(next)
        let deferred = false
        // Admitted, not yet in a task: if queueing dies half-way (a bug), they are not left in
        // flight for ever — their chats stall, and they are handed out again when the claim ends.
        let queuedUpTo = 0
        const unqueued = Effect.sync(() => {
          for (let i = queuedUpTo; i < handed.length; i++) {
            const item = handed[i]!
            if (typeof item !== "number" && decisions[i] === "queued") {
              apply(Ledger.finish(ledger, { chat: item.chat, key: item.key, ids: [item.update_id] }, "stalled"))
            }
          }
        })
        yield* Effect.onExit(Effect.gen(function*() {
          for (const [i, item] of handed.entries()) {
            queuedUpTo = i
            const decision = decisions[i]!
            if (typeof item === "number" || decision === "unreadable") continue
            if (decision === "abandoned") {
              // Handled (and failed) as often as allowed: given up, never handed out again.
              Metrics.countUpdates("abandoned", 1)
              yield* Effect.logError("update given up after BOT_UPDATE_MAX_ATTEMPTS attempts; it is not handled").pipe(
                Effect.annotateLogs({ update_id: item.update_id, attempts: item.attempts - 1 })
              )
              continue
            }
            if (decision === "deferred") {
              // Over its chat's share: given back, handed over again once the chat's queued
              // updates are done.
              deferred = true
              Metrics.countUpdates("deferred", 1)
              continue
            }
            const { chat, key } = item
            // A chat-wide update comes after every earlier one of its chat, and before the later
            // ones: the open runs on either side of it take no more.
            if (key.endsWith("/*")) {
              for (const k of [...open.keys()]) if (k !== key && (k === chat || k.startsWith(`${chat}/`))) open.delete(k)
            } else if (open.size > 0) open.delete(Dispatcher.chatWide(chat))
            // Before it queues behind its chat: a newer message may cancel the sender's LLM turn
            // (with LLM mode off, `Effect.void`: not run, a step of the loop per update saved).
            const preempted = bot.preempt(item)
            if (preempted !== Effect.void) yield* preempted
            const answer = bot.needsAnswer(item)
            const run = open.get(key)
            if (!answer && run !== undefined && run.items.length < maxRun) {
              run.items.push(item)
              run.arrived.push(arrived)
              continue
            }
            const next: Run = { key, chat, answer, items: [item], arrived: [arrived] }
            // Updates after an answer come after it.
            if (answer) open.delete(key)
            else open.set(key, next)
            unstarted.add(next)
            // Never waits: the ledger admits no more updates than the dispatcher has room for.
            yield* dispatcher.submit(key, task(next), { urgent: answer })
          }
          queuedUpTo = handed.length
        }), (exit) => (Exit.isSuccess(exit) ? Effect.void : unqueued))
        if (deferred || decisions.some((d) => d === "unreadable" || d === "abandoned")) yield* owe
      })

    // Uninterruptible: what the inbox hands this process in `receive` must reach the ledger, or
    // a stop between the two (the write runs on the store's writer thread, so the write commits
    // whatever happens here) would leave its chats claimed, and unsettled, until the lease ends.
    // `settleFirst`: the settlement owed is written first, in the same write as the batch where the
    // inbox can (`settleAndReceive`: one round trip, where two calls in turn took two).
    const receive = (items: Items, settleFirst: boolean) =>
      Effect.uninterruptible(Effect.gen(function*() {
        const arrived = performance.now()
        const results: Array<IntakeResult> = items.map(() => "queued")
        const valid: Array<{ readonly index: number; readonly work: Work; readonly payload: string }> = []
        for (const [index, { raw, update }] of items.entries()) {
          const payload = Predicate.isRecord(update) && Number.isSafeInteger(update["update_id"]) ? raw ?? serialise(update) : undefined
          if (payload === undefined || !Predicate.isRecord(update)) {
            Metrics.countUpdates("malformed", 1)
            yield* Effect.logWarning("malformed update ignored")
            results[index] = "malformed"
            continue
          }
          const key = Dispatcher.keyOf(update)
          valid.push({ index, payload, work: new Held(update["update_id"] as number, claimChat(key), 1, update, key) })
        }
        const busy = valid.length > 0 && ledger.total + valid.length > capacity
        if (valid.length === 0 || busy) {
          for (const v of valid) results[v.index] = "busy"
          if (settleFirst) yield* settleNow
          return results
        }
        const now = yield* Clock.currentTimeMillis
        const incoming: Incoming = {
          source,
          updates: valid.map((v) => ({ update_id: v.work.update_id, chat: v.work.chat, payload: v.payload })),
          owner: options.owner,
          now,
          lease
        }
        const both = settleFirst ? inbox.settleAndReceive : undefined
        const taken = both === undefined ? undefined : takeSettlement(now)
        const written = yield* (both === undefined || taken === undefined
          ? Effect.map(inbox.receive(incoming), (received): Exchanged => ({ settled: [], received }))
          : both({ source, owner: options.owner, ...taken }, incoming).pipe(Effect.onExit(settlementWritten))).pipe(Effect.either)
        if (written._tag === "Left") {
          if (taken !== undefined) yield* notSettled(written.left)
          yield* StoreOutage.logFailure("Error", "updates not recorded", written.left).pipe(Effect.annotateLogs({ updates: valid.length }))
          for (const v of valid) results[v.index] = "unrecorded"
          return results
        }
        // What the settlement handed over comes before the batch (as two calls in turn would have it).
        if (taken !== undefined) yield* queue(written.right.settled.map(fromStore), performance.now(), now)
        const received = written.right.received
        const fresh = new Set(received.fresh)
        const mine = new Map<number, Work>()
        for (const v of valid) {
          if (fresh.has(v.work.update_id)) {
            // An id repeated in one batch is handled once.
            fresh.delete(v.work.update_id)
            mine.set(v.work.update_id, v.work)
            continue
          }
          Metrics.countUpdates("duplicate", 1)
          results[v.index] = "duplicate"
        }
        // The batch's own updates as mapped above; earlier ones of their chats from the store.
        yield* queue(
          received.handed.map((h) => {
            const own = mine.get(h.update_id)
            return own === undefined ? fromStore(h) : own
          }),
          arrived,
          now
        )
        return results
      }))

    // Chats whose holder stopped (died, or stalled on a failed recording) once their claim ended;
    // uninterruptible for the reason `receive` is.
    const claimStale = Effect.uninterruptible(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const handed = yield* inbox.claimStale({ source, now, owner: options.owner, lease, limit: 100 })
      if (handed.length === 0) return
      yield* Effect.logInfo("handling updates left unfinished").pipe(
        Effect.annotateLogs({ updates: handed.length, first_update_id: handed[0]!.update_id })
      )
      yield* queue(handed.map(fromStore), performance.now(), now)
    }).pipe(Effect.catchAll((error) => StoreOutage.logFailure("Warning", "unfinished updates not claimed", error))))

    // The inbox writer: one fiber makes every inbox call, in turn — the settlement owed, a claim
    // of stale chats when one is due, then every update that arrived meanwhile (webhook requests
    // arriving together, or a polled page) in one receive — so none of them waits behind the
    // others for long, and under load each call covers many updates. Where the inbox has
    // `settleAndReceive`, updates waiting take the settlement owed into their write (one round
    // trip), and a settlement owed while none wait is held briefly for the next ones.
    interface Entry {
      readonly items: Items
      readonly result: Deferred.Deferred<ReadonlyArray<IntakeResult>>
    }
    const inbound = yield* Queue.unbounded<Entry>()
    let claimDue: Deferred.Deferred<void> | undefined
    // The entries the writer took and has not answered yet: answered "unrecorded" when it dies
    // (the transport does not confirm them; Telegram sends them again).
    let taking: ReadonlyArray<Entry> = []
    // A settlement owed while no update waits is held for the next batch, for at most
    // `settleDelayMillis` of real time (a scheduling matter, not the Clock): under load a batch
    // comes within that, and the settlement goes in its write — one round trip, where a
    // settlement at every finished run took one each, and a page waited behind it.
    let batchArrived: (() => void) | undefined
    const batchOrSoon = Effect.async<void>((resume) => {
      const done = () => {
        clearTimeout(timer)
        batchArrived = undefined
        resume(Effect.void)
      }
      const timer = setTimeout(done, settleDelayMillis)
      batchArrived = done
      return Effect.sync(() => {
        clearTimeout(timer)
        batchArrived = undefined
      })
    })
    const writeAll: Effect.Effect<void> = Effect.gen(function*() {
      for (;;) {
        if (
          inbox.settleAndReceive !== undefined && claimDue === undefined && ledger.writing === undefined && Ledger.owesAnything(ledger) &&
          (yield* Queue.size(inbound)) === 0
        ) yield* batchOrSoon
        // Updates waiting (and no claim of stale chats due): the settlement goes in their write.
        const early = inbox.settleAndReceive !== undefined && claimDue === undefined ? [...(yield* Queue.takeUpTo(inbound, 100))] : []
        taking = early
        if (early.length === 0) {
          yield* settleNow
          const claim = claimDue
          claimDue = undefined
          if (claim !== undefined) yield* Effect.ensuring(claimStale, Deferred.succeed(claim, undefined))
        }
        const entries = early.length > 0 ? early : [...(yield* Queue.takeUpTo(inbound, 100))]
        if (entries.length === 0) return
        taking = entries
        const results = yield* receive(entries.flatMap((e) => e.items), early.length > 0)
        taking = []
        let at = 0
        for (const entry of entries) {
          yield* Deferred.succeed(entry.result, results.slice(at, at + entry.items.length))
          at += entry.items.length
        }
      }
    })
    // Woken by every arrival and finished task, and now and then to extend long-running claims
    // (a waker of its own: a race per wake-up would fork two fibers and a timer each time).
    // Supervised: a defect restarts it (logged); one that keeps coming stops the process.
    yield* Supervisor.fork(
      "the inbox writer",
      // Its calls are urgent: every update, and so every answer, comes in through them.
      Queue.take(wake).pipe(Effect.zipRight(Effect.yieldNow()), Effect.zipRight(WritePriority.asUrgent(writeAll)), Effect.forever),
      Supervisor.restart(),
      {
        onUp: Effect.zipRight(SubscriptionRef.set(ready, true), owe),
        onDown: () =>
          Effect.gen(function*() {
            yield* SubscriptionRef.set(ready, false)
            const lost = taking
            taking = []
            for (const entry of lost) yield* Deferred.succeed(entry.result, entry.items.map(() => "unrecorded" as const))
            if (claimDue !== undefined) yield* Deferred.succeed(claimDue, undefined)
            claimDue = undefined
          })
      }
    ).pipe(Effect.annotateLogs({ component: "intake" }))
    yield* Supervisor.forkRestarting("the claim extender", owe.pipe(Effect.delay(Duration.millis(lease / 8)), Effect.forever))
    const intakeAll = (items: Items) =>
      Effect.flatMap(Deferred.make<ReadonlyArray<IntakeResult>>(), (result) =>
        Queue.offer(inbound, { items, result }).pipe(
          Effect.zipRight(Effect.sync(() => batchArrived?.())),
          Effect.zipRight(owe),
          Effect.zipRight(Deferred.await(result))
        ))
    const intake = (update: unknown, raw?: string): Effect.Effect<IntakeResult> =>
      Effect.map(intakeAll([{ update, raw }]), (results) => results[0]!)

    yield* Supervisor.forkRestarting(
      "the stale claim loop",
      Effect.flatMap(Deferred.make<void>(), (done) =>
        Effect.sync(() => (claimDue = done)).pipe(Effect.zipRight(owe), Effect.zipRight(Deferred.await(done)))).pipe(
          Effect.repeat(Schedule.spaced(Duration.millis(Math.max(1000, lease / 2))))
        )
    )

    // Handled ids are remembered for the retention, then forgotten in batches.
    yield* Supervisor.forkRestarting(
      "the update inbox sweep",
      Effect.gen(function*() {
        const before = (yield* Clock.currentTimeMillis) - Duration.toMillis(options.updateRetention)
        while ((yield* inbox.sweep(before, 1000)) === 1000) yield* Effect.yieldNow()
      }).pipe(
        Effect.catchAll((error) => StoreOutage.logFailure("Warning", "update inbox sweep failed", error)),
        Effect.repeat(Schedule.spaced(Duration.minutes(10)))
      )
    )

    return { dispatcher, intake, intakeAll, queued: () => ledger.total, room, ready, ledger: () => ledger }
  })

/**
 * How long (real time, in milliseconds) a settlement owed waits for the next batch of updates
 * to go in its write (`UpdateInbox.settleAndReceive`), when the inbox has that.
 *
 * @since 0.3.0
 * @category constants
 */
export const settleDelayMillis = 10

/**
 * Room the dispatcher keeps for the reminder sender's tasks beside the updates' (`Runner`
 * starts the sender with this many in flight at most).
 *
 * @since 0.3.0
 * @category constants
 */
export const reminderRoom = 256

/**
 * Reminders sent at once: the workers of the dispatcher's send lane, which the reminder
 * sender's tasks take (in their chat's order) instead of recording's (`BOT_RECORDING_CONCURRENCY`).
 *
 * @since 0.3.0
 * @category constants
 */
export const reminderConcurrency = 32

// The chat an update is claimed by across processes: its dispatcher key's chat (a topic's
// updates are ordered within their chat's claim).
const claimChat = (key: string): string => {
  const slash = key.indexOf("/")
  return slash === -1 ? key : key.slice(0, slash)
}

// An update's JSON for the inbox, or undefined when it has none: nested deeper than
// JSON.stringify's stack allows (a throw here would end polling, and the unconfirmed update
// would come back to end it again after every restart).
const serialise = (update: Record<string, unknown>): string | undefined => {
  try {
    return JSON.stringify(update)
  } catch {
    return undefined
  }
}
