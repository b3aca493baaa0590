/**
 * The reminder sender's claims: a claim whose lease ends while it waits in the dispatcher is
 * extended right before its send, or — when another process took it over meanwhile — not
 * sent here at all; a claim this process takes again while it is still queued is queued once.
 */
import * as Supervisor from "@deixis/core/Supervisor"
import * as ReminderStore from "@deixis/core/ReminderStore"
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as Dispatcher from "../src/Dispatcher.js"
import * as Reminders from "../src/Reminders.js"
import { eventually, sleeperIn } from "./utils/harness.js"

const reminder = (n: number): ReminderStore.Reminder => ({
  object_id: `-100${n}/1/reminder`,
  chat_id: `-100${n}`,
  topic_id: null,
  source_message_id: "1",
  created_by_user_id: null,
  text: `r-${n}`,
  due_at: 0,
  created_at: 0
})

// Two reminders, one dispatcher worker: the second waits behind the first, whose send hangs
// until `release` is completed.
const setup = (maxInFlight: number) =>
  Effect.gen(function*() {
    const store = ReminderStore.makeMemory()
    yield* store.add(reminder(1))
    yield* store.add(reminder(2))
    const dispatcher = yield* Dispatcher.make({ concurrency: 1, capacity: 10, shutdownTimeout: "1 second" })
    const release = yield* Deferred.make<void>()
    const sent: Array<string> = []
    const sender = yield* Reminders.start(dispatcher, {
      owner: "a",
      lease: Duration.seconds(10),
      retryDelay: Duration.minutes(1),
      pollInterval: Duration.minutes(1),
      maxInFlight,
      keyOf: (r) => r.chat_id,
      send: (r) =>
        Effect.zipRight(
          Effect.sync(() => sent.push(r.text)),
          Effect.as(r.text === "r-1" ? Deferred.await(release) : Effect.void, { _tag: "sent" } as const)
        )
    }).pipe(Effect.provideService(ReminderStore.ReminderStore, store), Effect.provide(Reminders.layerWakeup), Effect.provide(Supervisor.layer))
    yield* eventually("the first send is under way and the second queued", () => sent.length === 1 && sender.inFlight() === 2)
    return { store, release, sent, sender }
  })

describe("apps/telegram: reminder claims", () => {
  it.scoped("a claim taken over by another process while it waited in the queue is not sent a second time", () =>
    Effect.gen(function*() {
      const { release, sender, sent, store } = yield* setup(2)
      // Both claims' leases end while r-1's send hangs; "process b" claims both.
      yield* TestClock.adjust("20 seconds")
      const taken = yield* store.claimDue({ now: 20_000, owner: "b", lease: 10_000, limit: 10 })
      assert.deepStrictEqual(taken.map((r) => r.text).sort(), ["r-1", "r-2"])
      yield* Deferred.succeed(release, undefined)
      yield* eventually("both claims are settled", () => sender.inFlight() === 0)
      // r-1 was already on its way to Telegram (at least once); r-2 is left to b.
      assert.deepStrictEqual(sent, ["r-1"])
      assert.isTrue(yield* store.complete("-1002", "-1002/1/reminder", "b"))
      assert.isTrue(yield* store.complete("-1001", "-1001/1/reminder", "b"))
    }))

  it.scoped("a claim this process takes again while it is still queued is sent once", () =>
    Effect.gen(function*() {
      const { release, sender, sent, store } = yield* setup(10)
      // The leases end while r-2 waits; the sender's own next round claims both again.
      yield* sleeperIn("10 seconds")
      yield* TestClock.adjust("10 seconds")
      // Claimed again: due next when the new leases end.
      yield* eventually("both are claimed again by this process", () =>
        Option.getOrNull(Effect.runSync(store.nextDueAt)) === 20_000)
      yield* Deferred.succeed(release, undefined)
      yield* eventually("both reminders are sent and settled", () => sender.inFlight() === 0)
      assert.deepStrictEqual(sent, ["r-1", "r-2"])
      assert.isTrue(Option.isNone(yield* store.nextDueAt))
    }))
})
