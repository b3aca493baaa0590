/**
 * Runs a built bot against Telegram for the lifetime of a scope:
 *
 * - **Intake**: every update is recorded in the `UpdateInbox` before it is acknowledged (the
 *   webhook answers 200, polling moves its offset); a redelivered `update_id` is skipped; the
 *   update is then handled through the {@link Dispatcher} (one chat's — topic's — updates in
 *   order, chats in parallel, bounded) and marked done. Updates whose handler died with its
 *   process, or whose recording failed in a store (then no handler ran), are handed out again
 *   when their lease ends (here or in another process), at most `BOT_UPDATE_MAX_ATTEMPTS`
 *   times in all; then they are given up (marked done, logged at Error, counted `abandoned`).
 *   A handler's own failure (a bug, a send Telegram refused) is logged and the update marked
 *   done: handling it again would repeat what it already sent.
 * - **Long polling** never dies quietly: 409 Conflict (another instance polling, or a webhook
 *   still set) and network errors are logged and retried with back-off; a conflict lasting
 *   `BOT_POLL_CONFLICT_TIMEOUT`, or a refused token, fails {@link Running.wait}, and the
 *   process exits non-zero for its supervisor.
 * - **Webhook**: the secret is checked in constant time, the body bounded, and 200 is answered
 *   once the update is in the inbox (503 when the bot is full: Telegram retries later).
 * - The reminder sender, `setMyCommands` for private chats and groups, and the inbox sweep.
 *
 * @since 0.1.0
 */
import { type Handed, UpdateInbox } from "@deixis/core/UpdateInbox"
import type { UpdateMapper } from "@deixis/telegraf"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as crypto from "node:crypto"
import * as http from "node:http"
import type { UserFromGetMe } from "telegraf/types"
import * as Bot from "./Bot.js"
import * as Commands from "./Commands.js"
import type { BotConfig } from "./BotConfig.js"
import * as Dispatcher from "./Dispatcher.js"
import * as Metrics from "./Metrics.js"
import * as Reminders from "./Reminders.js"
import * as TelegramSend from "./TelegramSend.js"

/**
 * Long polling cannot go on: a 409 Conflict lasted too long, or Telegram refused the token.
 *
 * @since 0.1.0
 * @category errors
 */
export class PollingStopped extends Data.TaggedError("PollingStopped")<{ readonly reason: string }> {
  override get message() {
    return `long polling stopped: ${this.reason}`
  }
}

/**
 * A running bot.
 *
 * @since 0.1.0
 * @category models
 */
export interface Running {
  readonly me: UserFromGetMe
  /** The webhook server's port (null when polling). */
  readonly port: number | null
  readonly dispatcher: Dispatcher.Dispatcher
  readonly sender: Reminders.Sender
  /** Never succeeds; fails when polling cannot go on. */
  readonly wait: Effect.Effect<never, PollingStopped>
  /** Whether the bot is healthy now (polling not stuck in a conflict, not too far behind). */
  readonly healthy: () => boolean
  /** Records an update and queues it (what both transports do); for tests and the bench. */
  readonly intake: (update: unknown, raw?: string) => Effect.Effect<IntakeResult>
}

/**
 * What intake did with an update.
 *
 * @since 0.1.0
 * @category models
 */
export type IntakeResult = "queued" | "deferred" | "duplicate" | "malformed" | "busy" | "unrecorded"

/**
 * The settings launch uses.
 *
 * @since 0.1.0
 * @category models
 */
export type LaunchOptions = Pick<
  BotConfig,
  | "transport"
  | "send"
  | "polling"
  | "concurrency"
  | "queueCapacity"
  | "updateLease"
  | "updateRetention"
  | "updateMaxAttempts"
  | "reminderLease"
  | "reminderRetryDelay"
  | "reminderPollInterval"
  | "shutdownTimeout"
> & {
  /** This process's name in claims (unique per process). */
  readonly owner: string
}


type CallApiSignal = NonNullable<NonNullable<Parameters<Bot.Bot["api"]["telegram"]["callApi"]>[2]>["signal"]>

/**
 * Connects a built bot: `getMe`, `setMyCommands`, the dispatcher, the reminder sender, and
 * long polling (after `deleteWebhook`) or the webhook server plus `setWebhook`.
 *
 * @since 0.1.0
 * @category launching
 */
export const launch = (
  bot: Bot.Bot,
  options: LaunchOptions
): Effect.Effect<Running, TelegramSend.SendError, Scope.Scope | Bot.Services> =>
  Effect.gen(function*() {
    const inbox = yield* UpdateInbox
    const me = yield* bot.api.identify
    const source = String(me.id)
    const lease = Duration.toMillis(options.updateLease)

    yield* Effect.forEach(
      Commands.everywhere,
      (scope) => bot.api.call("setMyCommands", { commands: Commands.listedIn(bot.commands, scope), scope: { type: scope } }),
      { discard: true }
    ).pipe(Effect.catchAll((error) => Effect.logWarning("commands not registered", error)))

    // Acquired before the transports, so it is released after them: on shutdown the
    // transports stop taking updates first, then the dispatcher drains (bounded), then the
    // last settlement is written (the finalizer below runs after the dispatcher's).
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
        return yield* Effect.logWarning("updates not settled in the inbox; trying again", handed.left)
      }
      for (const chat of release) heldSince.delete(chat)
      for (const chat of hold) heldSince.set(chat, now)
      yield* queue(handed.right.map(fromStore), performance.now(), now)
    })
    const owe = Queue.offer(wake, undefined)

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
          Effect.matchEffect({
            onFailure: (error) =>
              Effect.zipRight(
                stall,
                Effect.logWarning("updates not recorded, so not handled; they are handled again when their chat's claim ends (BOT_UPDATE_LEASE)", error)
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
          yield* Effect.logError("updates not recorded", received.left).pipe(Effect.annotateLogs({ updates: valid.length }))
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
    }).pipe(Effect.catchAll((error) => Effect.logWarning("unfinished updates not claimed", error)))

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
      Effect.catchAll((error) => Effect.logWarning("update inbox sweep failed", error)),
      Effect.repeat(Schedule.spaced(Duration.minutes(10))),
      Effect.forkScoped
    )

    const sender = yield* Reminders.start(dispatcher, {
      owner: options.owner,
      lease: options.reminderLease,
      retryDelay: options.reminderRetryDelay,
      pollInterval: options.reminderPollInterval,
      maxInFlight: 256,
      keyOf: (r) => (r.topic_id === null ? r.chat_id : `${r.chat_id}/${r.topic_id}`),
      send: bot.fireReminder
    })

    const stopped = yield* Deferred.make<never, PollingStopped>()
    let healthy = true

    if (options.transport._tag === "polling") {
      yield* bot.api.call("deleteWebhook", { drop_pending_updates: false })
      const loop = poll(bot, options, intakeAll, queuedNow, dispatcher.hold, (h) => (healthy = h)).pipe(
        // Whatever ends the loop but shutdown — a failure or a bug — ends `wait` too: never a
        // process that stays up without polling.
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.void
            : Effect.logError("long polling stopped", cause).pipe(Effect.zipRight(Deferred.failCause(stopped, cause)))
        )
      )
      yield* Effect.forkScoped(loop)
      return { me, port: null, dispatcher, sender, wait: Deferred.await(stopped), healthy: () => healthy, intake }
    }

    const transport = options.transport
    const secret = Option.match(transport.secret, { onNone: () => crypto.randomBytes(32).toString("hex"), onSome: Redacted.value })
    const port = yield* webhookServer(intake, new URL(transport.url).pathname, secret, transport.port, transport.host)
    yield* bot.api.call("setWebhook", { url: transport.url, secret_token: secret, allowed_updates: [...Bot.allowedUpdates] })
    return { me, port, dispatcher, sender, wait: Deferred.await(stopped), healthy: () => healthy, intake }
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

const poll = (
  bot: Bot.Bot,
  options: LaunchOptions,
  intakeAll: (items: ReadonlyArray<{ readonly update: unknown }>) => Effect.Effect<ReadonlyArray<IntakeResult>>,
  queued: () => number,
  hold: (held: boolean) => void,
  setHealthy: (healthy: boolean) => void
): Effect.Effect<never, PollingStopped> =>
  Effect.gen(function*() {
    let offset = 0
    let failures = 0
    let conflictSince: number | null = null
    const timeout = Math.max(0, Math.round(Duration.toSeconds(options.polling.timeout)))
    // A batch always fits in an empty dispatcher.
    const limit = Math.max(1, Math.min(100, options.queueCapacity))
    // The HTTP call may take the long poll's timeout, plus the usual per-call limit.
    const policy = { ...options.send, maxAttempts: 1, timeout: Duration.sum(options.polling.timeout, options.send.timeout) }
    while (true) {
      const result = yield* TelegramSend.send(
        "getUpdates",
        (signal) =>
          bot.api.telegram.callApi("getUpdates", { timeout, offset, limit, allowed_updates: [...Bot.allowedUpdates] }, {
            signal: signal as unknown as CallApiSignal
          }),
        policy
      ).pipe(Effect.either)
      const now = yield* Clock.currentTimeMillis
      // Recording waits (briefly) while a page is taken in and, after a full page (Telegram
      // likely holds more), while the next is read: the commands of a backlog are answered
      // without waiting for its recording, and the backlog is recorded in large runs. Not once
      // three quarters of the queue are taken: under sustained load (the queue stays near full),
      // recording must not idle through every getUpdates round trip.
      const page = result._tag === "Right" && Array.isArray(result.right) ? result.right.length : 0
      hold(page > 0 && queued() < options.queueCapacity * 0.75)
      if (result._tag === "Left") {
        const error = result.left
        failures++
        if (error.code === 401 || error.code === 404) {
          return yield* new PollingStopped({ reason: `Telegram refused the bot token (${error.code} ${error.description})` })
        }
        if (error.code === 409) {
          conflictSince ??= now
          setHealthy(false)
          yield* Effect.logError(
            "409 Conflict from getUpdates: another instance is polling with this token, or a webhook is set; retrying"
          ).pipe(Effect.annotateLogs({ description: error.description, conflict_for_ms: now - conflictSince }))
          if (now - conflictSince >= Duration.toMillis(options.polling.conflictTimeout)) {
            return yield* new PollingStopped({ reason: `409 Conflict for ${Duration.format(options.polling.conflictTimeout)}: ${error.description}` })
          }
        } else {
          yield* Effect.logWarning("getUpdates failed; retrying").pipe(
            Effect.annotateLogs({ code: error.code ?? "network", description: error.description, failures })
          )
          if (failures >= 5) setHealthy(false)
        }
        const wait = error.code === 429 && error.retry_after !== null
          ? Duration.seconds(error.retry_after)
          : Duration.min(Duration.times(options.send.baseDelay, 2 ** Math.min(failures - 1, 10)), options.send.maxDelay)
        yield* Effect.sleep(wait)
        continue
      }
      failures = 0
      conflictSince = null
      setHealthy(true)
      const updates = (Array.isArray(result.right) ? (result.right as ReadonlyArray<unknown>) : []).filter((update) => {
        const id = Predicate.isRecord(update) ? update["update_id"] : undefined
        return !(typeof id === "number" && Number.isSafeInteger(id) && id < offset)
      })
      if (updates.length === 0) {
        hold(false)
        continue
      }
      // Full: wait for room rather than drop anything (the offset is not moved past the batch).
      while (queued() + updates.length > options.queueCapacity) {
        hold(false)
        yield* Effect.sleep(Duration.millis(50))
      }
      const outcomes = yield* intakeAll(updates.map((update) => ({ update })))
      if (page < limit) hold(false)
      if (outcomes.some((o) => o === "unrecorded" || o === "busy")) {
        hold(false)
        // The store is failing: do not confirm the batch; it comes again with the next poll.
        yield* Effect.sleep(options.send.baseDelay)
        continue
      }
      for (const update of updates) {
        const id = Predicate.isRecord(update) ? update["update_id"] : undefined
        if (typeof id === "number" && Number.isSafeInteger(id) && id >= offset) offset = id + 1
      }
    }
  }).pipe(Effect.ensuring(Effect.sync(() => hold(false))), Effect.annotateLogs({ component: "polling" }))

const secretHeader = "x-telegram-bot-api-secret-token"
const maxBody = 1024 * 1024

/**
 * The webhook server's bounds. Telegram opens at most 100 connections (setWebhook's
 * `max_connections`, 40 by default) and sends each update at once; anyone else who finds the
 * port gets no more than these: connections beyond the bound are closed on arrival, and a
 * client has a few seconds for its headers and its whole request.
 *
 * @since 0.1.0
 * @category constants
 */
export const webhookLimits = {
  maxConnections: 128,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000
} as const

const sameSecret = (given: string | Array<string> | undefined, secret: string) => {
  if (typeof given !== "string") return false
  const a = crypto.createHash("sha256").update(given).digest()
  const b = crypto.createHash("sha256").update(secret).digest()
  return crypto.timingSafeEqual(a, b)
}

const webhookServer = (
  intake: (update: unknown, raw?: string) => Effect.Effect<IntakeResult>,
  path: string,
  secret: string,
  port: number,
  host: string
) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const server = http.createServer((req, res) => {
      if (req.method !== "POST" || (req.url ?? "").split("?")[0] !== path) return void res.writeHead(404).end()
      if (!sameSecret(req.headers[secretHeader], secret)) return void res.writeHead(401).end()
      const chunks: Array<Buffer> = []
      let size = 0
      req.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size > maxBody) {
          res.writeHead(413, { connection: "close" }).end()
          req.destroy()
        } else chunks.push(chunk)
      })
      req.on("end", () => {
        if (size > maxBody) return
        const raw = Buffer.concat(chunks).toString("utf8")
        let update: unknown
        try {
          update = JSON.parse(raw)
        } catch {
          return void res.writeHead(400).end()
        }
        void Runtime.runPromise(runtime)(intake(update, raw)).then((outcome) => {
          // Telegram retries anything but 2xx: "busy" and "unrecorded" come back later.
          const status = outcome === "busy" || outcome === "unrecorded" ? 503 : 200
          res.writeHead(status, { "content-type": "application/json" }).end("{}")
        }, () => res.writeHead(500).end())
      })
    })
    server.maxConnections = webhookLimits.maxConnections
    server.headersTimeout = webhookLimits.headersTimeoutMs
    server.requestTimeout = webhookLimits.requestTimeoutMs
    server.keepAliveTimeout = webhookLimits.keepAliveTimeoutMs
    yield* Effect.acquireRelease(
      Effect.async<void, TelegramSend.SendError>((resume) => {
        server.once("error", (error) =>
          resume(Effect.fail(new TelegramSend.SendError({ method: "listen", code: null, description: error.message, retry_after: null }))))
        server.listen(port, host, () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeIdleConnections()
        })
    )
    const address = server.address()
    return typeof address === "object" && address !== null ? address.port : port
  })
