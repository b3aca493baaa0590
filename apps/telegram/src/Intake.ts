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
import { type Handed, UpdateInbox } from "@deixis/core/UpdateInbox"
import type { UpdateMapper } from "@deixis/telegraf"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Predicate from "effect/Predicate"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type * as Bot from "./Bot.js"
import type { BotConfig } from "./BotConfig.js"
import * as Dispatcher from "./Dispatcher.js"
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
  "concurrency" | "queueCapacity" | "updateLease" | "updateRetention" | "updateMaxAttempts" | "shutdownTimeout"
> & {
  readonly owner: string
  readonly source: string
}

/**
 * A running intake.
 *
 * @since 0.3.0
 * @category models
 */
export interface Intake {
  readonly dispatcher: Dispatcher.Dispatcher
  /** Records a batch of updates (a getUpdates page, webhook requests together) and queues them. */
  readonly intakeAll: (items: ReadonlyArray<{ readonly update: unknown; readonly raw?: string | undefined }>) => Effect.Effect<ReadonlyArray<IntakeResult>>
  /** Records one update and queues it. */
  readonly intake: (update: unknown, raw?: string) => Effect.Effect<IntakeResult>
  /** Updates queued or running here (the dispatcher's, and those waiting in an open run). */
  readonly queued: () => number
}

/**
 * Starts the intake for the lifetime of the scope: its dispatcher, the inbox writer, the claim
 * of stale chats and the inbox sweep. Closing the scope drains the dispatcher (bounded), then
 * writes the last settlement.
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (bot: Bot.Bot, options: IntakeOptions): Effect.Effect<Intake, never, Scope.Scope | UpdateInbox> =>
  Effect.gen(function*() {
    const inbox = yield* UpdateInbox
    const source = options.source
    const lease = Duration.toMillis(options.updateLease)

    // Acquired before the dispatcher (and the transports, which come after the intake), so it is
    // released after them: on shutdown the transports stop taking updates first, then the
    // dispatcher drains (bounded), then the last settlement is written.
    yield* Effect.addFinalizer(() => settleNow)
    const dispatcher = yield* Dispatcher.make({
      concurrency: options.concurrency,
      capacity: options.queueCapacity,
      shutdownTimeout: options.shutdownTimeout
    })
    // One chat (or topic) holds at most a quarter of the queue: a chat whose calls hang or
    // are throttled, flooded with updates, must not fill it and stall every other chat.
    const perKey = Math.max(1, Math.floor(options.queueCapacity / 4))

    // What this process owes the inbox, written in one settlement by the inbox writer: a
    // settlement is written while the next one gathers, so under load each covers many updates.
    const owed = { done: [] as Array<number>, returned: [] as Array<number>, stall: new Set<string>(), release: new Set<string>() }
    // Updates queued here, by claimed chat; a chat with none left is released.
    const inFlight = new Map<string, number>()
    // Chats held here and when their claim was last extended.
    const heldSince = new Map<string, number>()
    // Chats whose recording failed: their updates still queued here are given back, not handled.
    const stalled = new Set<string>()
    const wake = yield* Queue.sliding<void>(1)

    const finished = (chat: string, n: number) => {
      const left = (inFlight.get(chat) ?? 0) - n
      if (left > 0) return void inFlight.set(chat, left)
      inFlight.delete(chat)
      stalled.delete(chat)
      owed.release.add(chat)
    }

    // The settlement. Only the inbox writer (below) writes to the inbox, one call at a time, so
    // a chat is never released while an update of it is being handed here.
    const settleNow: Effect.Effect<void> = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const release = [...owed.release].filter((chat) => !inFlight.has(chat))
      const hold = [...inFlight.keys()].filter((chat) => now - (heldSince.get(chat) ?? 0) >= lease / 8)
      const settlement = {
        source,
        owner: options.owner,
        now,
        lease,
        done: owed.done.splice(0),
        returned: owed.returned.splice(0),
        hold,
        release,
        stall: [...owed.stall]
      }
      owed.release.clear()
      owed.stall.clear()
      if (settlement.done.length + settlement.returned.length + hold.length + release.length + settlement.stall.length === 0) return
      const handed = yield* inbox.settle(settlement).pipe(Effect.either)
      if (handed._tag === "Left") {
        // Written with the next settlement (an id not written when the process dies is handled again).
        owed.done.push(...settlement.done)
        owed.returned.push(...settlement.returned)
        for (const chat of release) owed.release.add(chat)
        for (const chat of settlement.stall) owed.stall.add(chat)
        return yield* StoreOutage.logFailure("Warning", "updates not settled in the inbox; trying again", handed.left)
      }
      for (const chat of release) heldSince.delete(chat)
      for (const chat of hold) heldSince.set(chat, now)
      yield* queue(handed.right.map(fromStore), performance.now(), now)
    })
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
    // so intake (and the answers behind it) does not wait for the mapping of a backlog.
    const work = (update_id: number, chat: string, attempts: number, update: Record<string, unknown>): Work => {
      let mapped: UpdateMapper.MappedUpdate | undefined
      return {
        update_id,
        chat,
        attempts,
        update,
        get mapped() {
          return (mapped ??= bot.map(update))
        },
        key: Dispatcher.keyOf(update)
      }
    }
    const fromStore = (h: Handed): Work | number => {
      let update: unknown
      try {
        update = JSON.parse(h.payload)
      } catch {
        update = null
      }
      return Predicate.isRecord(update) ? work(h.update_id, h.chat, h.attempts, update) : h.update_id
    }

    // A chat's run of updates that need no answer, recorded in one unit of work; or one update
    // that needs an answer, recorded then answered. A run waiting in the dispatcher is open:
    // later updates of its key that need no answer join it (at most `maxRun`) until it starts,
    // so a backlog is recorded in few, large units of work rather than one per getUpdates page.
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
    // Updates queued per key (a key's share of the queue), and those queued in another's task
    // (they hold no place of their own in the dispatcher, but count against its capacity).
    const queuedOf = new Map<string, number>()
    let joined = 0
    const queuedNow = () => dispatcher.depth().queued + joined
    const settled = (run: Run) => {
      const n = run.items.length
      joined -= n - 1
      const left = (queuedOf.get(run.key) ?? 0) - n
      if (left > 0) queuedOf.set(run.key, left)
      else queuedOf.delete(run.key)
      finished(run.chat, n)
    }

    const task = (run: Run) =>
      Effect.suspend(() => {
        // Started: later updates of the key start a run of their own.
        if (open.get(run.key) === run) open.delete(run.key)
        const { chat, items } = run
        const ids = items.map((w) => w.update_id)
        if (stalled.has(chat)) {
          owed.returned.push(...ids)
          settled(run)
          return owe
        }
        // Not recorded, so not handled — or interrupted by shutdown: the chat stalls, and its
        // updates are handed out again (to whichever process claims it first) when its claim ends.
        const stall = Effect.sync(() => {
          stalled.add(chat)
          owed.stall.add(chat)
        })
        return bot.record(items.map((w) => w.mapped)).pipe(
          // The store's outage, not the updates': recorded once it is back (the run keeps its place
          // in its chat's order), within half the claim's lease — past it the chat stalls as below.
          Effect.retry({ while: StoreOutage.isOutage, schedule: outageRetry }),
          Effect.matchEffect({
            onFailure: (error) =>
              Effect.zipRight(
                stall,
                StoreOutage.logFailure("Warning", "updates not recorded, so not handled; they are handled again when their chat's claim ends (BOT_UPDATE_LEASE)", error)
                  .pipe(Effect.annotateLogs({ update_id: ids.join(","), chat }))
              ).pipe(Effect.zipRight(Effect.sync(() => Metrics.updates.inc({ outcome: "unrecorded" }, items.length)))),
            onSuccess: () =>
              Effect.zipRight(
                run.answer ? bot.answer(items[0]!.update, items[0]!.mapped) : Effect.void,
                Effect.sync(() => {
                  owed.done.push(...ids)
                  Metrics.updates.inc({ outcome: "handled" }, items.length)
                  const end = performance.now()
                  for (const at of run.arrived) Metrics.updateSeconds.observe((end - at) / 1000)
                })
              )
          }),
          Effect.onExit((exit) =>
            Effect.zipRight(
              Exit.isInterrupted(exit) ? stall : Effect.void,
              Effect.suspend(() => {
                settled(run)
                return owe
              })
            )
          )
        )
      })

    // Queues handed updates (in update_id order) behind their chat's: an update that needs no
    // answer joins its key's open run, or opens one; an update that needs one is a task of its
    // own (the dispatcher runs it, and its key's earlier tasks, in the urgent lane).
    const queue = (handed: ReadonlyArray<Work | number>, arrived: number, now: number) =>
      Effect.gen(function*() {
        const full = new Set<string>()
        for (const item of handed) {
          if (typeof item === "number") {
            // Unreadable in the store: nothing to handle.
            owed.done.push(item)
            continue
          }
          if (item.attempts > options.updateMaxAttempts) {
            // Handled (and failed) as often as allowed: given up, never handed out again.
            owed.done.push(item.update_id)
            Metrics.updates.inc({ outcome: "abandoned" })
            yield* Effect.logError("update given up after BOT_UPDATE_MAX_ATTEMPTS attempts; it is not handled").pipe(
              Effect.annotateLogs({ update_id: item.update_id, attempts: item.attempts - 1 })
            )
            continue
          }
          const { chat, key } = item
          // Over its chat's share (and every later update of that chat): given back, to be handed
          // over again once the chat's queued updates are done.
          if (full.has(chat) || (queuedOf.get(key) ?? 0) >= perKey) {
            full.add(chat)
            owed.returned.push(item.update_id)
            Metrics.updates.inc({ outcome: "deferred" })
            continue
          }
          if (!heldSince.has(chat)) heldSince.set(chat, now)
          inFlight.set(chat, (inFlight.get(chat) ?? 0) + 1)
          queuedOf.set(key, (queuedOf.get(key) ?? 0) + 1)
          // A chat-wide update comes after every earlier one of its chat, and before the later
          // ones: the open runs on either side of it take no more.
          if (key.endsWith("/*")) {
            for (const k of [...open.keys()]) if (k !== key && (k === chat || k.startsWith(`${chat}/`))) open.delete(k)
          } else if (open.size > 0) open.delete(Dispatcher.chatWide(chat))
          // Before it queues behind its chat: a newer message may cancel the sender's LLM turn.
          yield* bot.preempt(item)
          const answer = bot.needsAnswer(item)
          const run = open.get(key)
          if (!answer && run !== undefined && run.items.length < maxRun) {
            run.items.push(item)
            run.arrived.push(arrived)
            joined++
            continue
          }
          const next: Run = { key, chat, answer, items: [item], arrived: [arrived] }
          // Updates after an answer come after it.
          if (answer) open.delete(key)
          else open.set(key, next)
          yield* dispatcher.submit(key, task(next), { urgent: answer })
        }
        if (full.size > 0) yield* owe
      })

    const receive = (items: ReadonlyArray<{ readonly update: unknown; readonly raw?: string | undefined }>) =>
      Effect.gen(function*() {
        const arrived = performance.now()
        const results: Array<IntakeResult> = items.map(() => "queued")
        const valid: Array<{ readonly index: number; readonly work: Work; readonly payload: string }> = []
        for (const [index, { raw, update }] of items.entries()) {
          const payload = Predicate.isRecord(update) && Number.isSafeInteger(update["update_id"]) ? raw ?? serialise(update) : undefined
          if (payload === undefined || !Predicate.isRecord(update)) {
            Metrics.updates.inc({ outcome: "malformed" })
            yield* Effect.logWarning("malformed update ignored")
            results[index] = "malformed"
            continue
          }
          const key = Dispatcher.keyOf(update)
          valid.push({ index, payload, work: work(update["update_id"] as number, claimChat(key), 1, update) })
        }
        if (valid.length === 0) return results
        if (queuedNow() + valid.length > options.queueCapacity) {
          for (const v of valid) results[v.index] = "busy"
          return results
        }
        const now = yield* Clock.currentTimeMillis
        const received = yield* inbox.receive({
          source,
          updates: valid.map((v) => ({ update_id: v.work.update_id, chat: v.work.chat, payload: v.payload })),
          owner: options.owner,
          now,
          lease
        }).pipe(Effect.either)
        if (received._tag === "Left") {
          yield* StoreOutage.logFailure("Error", "updates not recorded", received.left).pipe(Effect.annotateLogs({ updates: valid.length }))
          for (const v of valid) results[v.index] = "unrecorded"
          return results
        }
        const fresh = new Set(received.right.fresh)
        const mine = new Map<number, Work>()
        for (const v of valid) {
          if (fresh.has(v.work.update_id)) {
            // An id repeated in one batch is handled once.
            fresh.delete(v.work.update_id)
            mine.set(v.work.update_id, v.work)
            continue
          }
          Metrics.updates.inc({ outcome: "duplicate" })
          results[v.index] = "duplicate"
        }
        // The batch's own updates as mapped above; earlier ones of their chats from the store.
        yield* queue(
          received.right.handed.map((h) => {
            const own = mine.get(h.update_id)
            return own === undefined ? fromStore(h) : own
          }),
          arrived,
          now
        )
        return results
      })

    // Chats whose holder stopped (died, or stalled on a failed recording) once their claim ended.
    const claimStale = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const handed = yield* inbox.claimStale({ source, now, owner: options.owner, lease, limit: 100 })
      if (handed.length === 0) return
      yield* Effect.logInfo("handling updates left unfinished").pipe(
        Effect.annotateLogs({ updates: handed.length, first_update_id: handed[0]!.update_id })
      )
      yield* queue(handed.map(fromStore), performance.now(), now)
    }).pipe(Effect.catchAll((error) => StoreOutage.logFailure("Warning", "unfinished updates not claimed", error)))

    // The inbox writer: one fiber makes every inbox call, in turn — the settlement owed, a claim
    // of stale chats when one is due, then every update that arrived meanwhile (webhook requests
    // arriving together, or a polled page) in one receive — so none of them waits behind the
    // others for long, and under load each call covers many updates.
    const inbound = yield* Queue.unbounded<{
      readonly items: ReadonlyArray<{ readonly update: unknown; readonly raw?: string | undefined }>
      readonly result: Deferred.Deferred<ReadonlyArray<IntakeResult>>
    }>()
    let claimDue: Deferred.Deferred<void> | undefined
    const writeAll: Effect.Effect<void> = Effect.gen(function*() {
      for (;;) {
        yield* settleNow
        const claim = claimDue
        claimDue = undefined
        if (claim !== undefined) yield* Effect.ensuring(claimStale, Deferred.succeed(claim, undefined))
        const entries = [...(yield* Queue.takeUpTo(inbound, 100))]
        if (entries.length === 0) return
        const results = yield* receive(entries.flatMap((e) => e.items))
        let at = 0
        for (const entry of entries) {
          yield* Deferred.succeed(entry.result, results.slice(at, at + entry.items.length))
          at += entry.items.length
        }
      }
    })
    // Woken by every arrival and finished task, and now and then to extend long-running claims
    // (a waker of its own: a race per wake-up would fork two fibers and a timer each time).
    yield* Queue.take(wake).pipe(
      Effect.zipRight(Effect.yieldNow()),
      Effect.zipRight(writeAll),
      Effect.forever,
      Effect.forkScoped
    )
    yield* owe.pipe(Effect.delay(Duration.millis(lease / 8)), Effect.forever, Effect.forkScoped)
    const intakeAll = (items: ReadonlyArray<{ readonly update: unknown; readonly raw?: string | undefined }>) =>
      Effect.flatMap(Deferred.make<ReadonlyArray<IntakeResult>>(), (result) =>
        Queue.offer(inbound, { items, result }).pipe(Effect.zipRight(owe), Effect.zipRight(Deferred.await(result))))
    const intake = (update: unknown, raw?: string): Effect.Effect<IntakeResult> =>
      Effect.map(intakeAll([{ update, raw }]), (results) => results[0]!)

    yield* Effect.flatMap(Deferred.make<void>(), (done) =>
      Effect.sync(() => (claimDue = done)).pipe(Effect.zipRight(owe), Effect.zipRight(Deferred.await(done)))).pipe(
        Effect.repeat(Schedule.spaced(Duration.millis(Math.max(1000, lease / 2)))),
        Effect.forkScoped
      )

    // Handled ids are remembered for the retention, then forgotten in batches.
    yield* Effect.gen(function*() {
      const before = (yield* Clock.currentTimeMillis) - Duration.toMillis(options.updateRetention)
      while ((yield* inbox.sweep(before, 1000)) === 1000) yield* Effect.yieldNow()
    }).pipe(
      Effect.catchAll((error) => StoreOutage.logFailure("Warning", "update inbox sweep failed", error)),
      Effect.repeat(Schedule.spaced(Duration.minutes(10))),
      Effect.forkScoped
    )

    return { dispatcher, intake, intakeAll, queued: queuedNow }
  })

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
