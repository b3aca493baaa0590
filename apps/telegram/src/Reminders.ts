/**
 * The reminder sender: claims due reminders from the `ReminderStore` (a lease per claim, so N
 * bot processes on one PostgreSQL send each reminder once, and one that dies mid-send leaves
 * its claims to another), hands each to the dispatcher under its chat's key (a 429 or a hung
 * send in one chat delays only that chat), extends the claim right before sending (a claim that
 * waited past its lease and was taken over by another process is not sent here), and settles
 * the claim by the outcome: sent → `complete`; retryable failure → `retryAt`; refused for
 * good → dropped with an error log.
 *
 * It sleeps until the next reminder is due, at most `pollInterval` (other processes add
 * reminders too), or until {@link Sender.wake} (this process added one).
 *
 * @since 0.1.0
 */
import type { ClaimedReminder } from "@deixis/core/ReminderStore"
import * as Supervisor from "@deixis/core/Supervisor"
import { ReminderStore } from "@deixis/core/ReminderStore"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import type * as Dispatcher from "./Dispatcher.js"
import * as Metrics from "./Metrics.js"
import * as StoreOutage from "./StoreOutage.js"

/**
 * What sending one reminder came to.
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome =
  | { readonly _tag: "sent" }
  | { readonly _tag: "retry" }
  | { readonly _tag: "drop"; readonly reason: string }
  /** The chat became a supergroup: the reminder (and the chat's others) move and are sent there. */
  | { readonly _tag: "migrated"; readonly to: string }

/**
 * @since 0.1.0
 * @category models
 */
export interface SenderOptions {
  /** This process's claim owner (unique per process). */
  readonly owner: string
  readonly lease: Duration.Duration
  readonly retryDelay: Duration.Duration
  readonly pollInterval: Duration.Duration
  /** Claims held at once (being sent or waiting in the dispatcher). */
  readonly maxInFlight: number
  /** The dispatcher key of a chat (the reminder's topic is ordered with its chat's updates). */
  readonly keyOf: (reminder: ClaimedReminder) => string
  readonly send: (reminder: ClaimedReminder) => Effect.Effect<Outcome>
}

/**
 * A running sender.
 *
 * @since 0.1.0
 * @category models
 */
export interface Sender {
  /** Makes the sender look for due reminders now (a reminder was just added). */
  readonly wake: Effect.Effect<void>
  /** Claims being sent. */
  readonly inFlight: () => number
}

/**
 * Starts the sender for the lifetime of the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
/**
 * The sender's wake-up call: `/remind` wakes it after storing a reminder, so it looks for due
 * ones at once rather than at its next poll. A service, provided by {@link layerWakeup}, shared
 * by the bot that adds reminders and the sender that sends them.
 *
 * @since 0.3.0
 * @category services
 */
export class Wakeup extends Context.Tag("@deixis/telegram-bot/Reminders/Wakeup")<Wakeup, {
  /** Makes the sender look for due reminders now. */
  readonly wake: Effect.Effect<void>
  /** Waits for the next `wake` (one pending at most). */
  readonly woken: Effect.Effect<void>
}>() {}

/**
 * A {@link Wakeup} for one process.
 *
 * @since 0.3.0
 * @category layers
 */
export const layerWakeup: Layer.Layer<Wakeup> = Layer.effect(
  Wakeup,
  Effect.map(Queue.sliding<void>(1), (signal) => ({ wake: Effect.asVoid(signal.offer(undefined)), woken: signal.take }))
)

/**
 * Wakes the sender (see {@link Wakeup}).
 *
 * @since 0.3.0
 * @category services
 */
export const wake: Effect.Effect<void, never, Wakeup> = Effect.flatMap(Wakeup, (w) => w.wake)

export const start = (
  dispatcher: Dispatcher.Dispatcher,
  options: SenderOptions
): Effect.Effect<Sender, never, ReminderStore | Wakeup | Scope.Scope | Supervisor.Supervisor> =>
  Effect.gen(function*() {
    const store = yield* ReminderStore
    const wakeup = yield* Wakeup
    // The claims this process is sending or has queued, by chat and object id: a claim whose
    // lease ended while it waited in the dispatcher may be claimed again by this very process,
    // and must not be queued twice.
    const inFlight = new Set<string>()
    const idOf = (r: ClaimedReminder) => `${r.chat_id}\u0000${r.object_id}`
    const lease = Duration.toMillis(options.lease)

    // What the outcome of a send leaves in the store.
    const record = (r: ClaimedReminder) => (outcome: Outcome): Effect.Effect<void, unknown> => {
      switch (outcome._tag) {
        case "sent":
          return Effect.zipRight(
            Effect.sync(() => Metrics.remindersSent.inc()),
            Effect.flatMap(store.complete(r.chat_id, r.object_id, options.owner), (held) =>
              held ? Effect.void : Effect.logWarning("reminder sent after its claim had expired; another process may send it too"))
          )
        case "retry":
          return Effect.flatMap(Clock.currentTimeMillis, (now) =>
            store.retryAt(r.chat_id, r.object_id, options.owner, now + Duration.toMillis(options.retryDelay)))
        case "drop":
          return Effect.logError("reminder cannot be delivered; dropped").pipe(
            Effect.annotateLogs({ reason: outcome.reason }),
            Effect.zipRight(Effect.sync(() => Metrics.remindersDropped.inc())),
            Effect.zipRight(store.complete(r.chat_id, r.object_id, options.owner))
          )
        case "migrated":
          return Effect.logInfo("chat upgraded to a supergroup; its reminders follow").pipe(
            Effect.annotateLogs({ to: outcome.to }),
            Effect.zipRight(store.migrateChat(r.chat_id, outcome.to)),
            Effect.zipRight(wakeup.wake)
          )
      }
    }

    // Right before sending, the claim is extended by a whole lease: if another process took it
    // over meanwhile (the lease ended while it waited behind a slow chat), it is not sent here.
    const settle = (r: ClaimedReminder) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => store.extend(r.chat_id, r.object_id, options.owner, now + lease)).pipe(
        Effect.flatMap((held) =>
          held
            ? Effect.flatMap(options.send(r), record(r))
            : Effect.logInfo("reminder claim taken over by another process while it waited; not sent here")
        ),
        Effect.catchAllCause((cause) => StoreOutage.logFailure("Error", "reminder bookkeeping failed; its claim will expire and it is tried again", cause)),
        Effect.annotateLogs({ object_id: r.object_id, chat_id: r.chat_id }),
        Effect.ensuring(Effect.zipRight(Effect.sync(() => inFlight.delete(idOf(r))), wakeup.wake))
      )

    const round = Effect.gen(function*() {
      const room = options.maxInFlight - inFlight.size
      if (room <= 0) return false
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* store.claimDue({ now, owner: options.owner, lease, limit: Math.min(room, 64) })
      for (const r of claimed) {
        Metrics.remindersClaimed.inc()
        // Claimed again by this process after its lease ended in the queue: the queued send
        // (which extends the claim first) is the one that goes.
        if (inFlight.has(idOf(r))) continue
        inFlight.add(idOf(r))
        // In the send lane: a slow send (a 429's wait) takes none of recording's workers.
        yield* dispatcher.submit(options.keyOf(r), settle(r), { send: true })
      }
      return claimed.length === Math.min(room, 64)
    })

    const nap = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const next = yield* store.nextDueAt.pipe(Effect.orElseSucceed(() => Option.none<number>()))
      const wait = Math.min(
        Duration.toMillis(options.pollInterval),
        Option.match(next, { onNone: () => Number.POSITIVE_INFINITY, onSome: (at) => Math.max(0, at - now) })
      )
      // A claim held by this process is not due for anyone until its lease ends: poll then.
      yield* Effect.raceFirst(Effect.sleep(Duration.millis(Math.max(wait, inFlight.size > 0 && wait === 0 ? 50 : 0))), wakeup.woken)
    })

    // Supervised: a defect outside a round (a bug while it naps) restarts it, logged.
    yield* Supervisor.fork("the reminder sender", Effect.gen(function*() {
      while (true) {
        const more = yield* round.pipe(
          // A failure, or a bug, costs one round, never the sender.
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause)
              : Effect.as(StoreOutage.logFailure("Warning", "due reminders not claimed; trying again", cause), false)
          )
        )
        if (!more) yield* nap
      }
    }), Supervisor.restart()).pipe(Effect.annotateLogs({ component: "reminders" }))

    return { wake: wakeup.wake, inFlight: () => inFlight.size }
  })
