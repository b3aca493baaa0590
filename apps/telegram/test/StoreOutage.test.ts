/**
 * `StoreOutage.retryOutage`: a call failing with the store's outage is tried again on the
 * schedule, as `Effect.retry({ while: isOutage, schedule })` would; anything else is not.
 */
import { StoreError } from "@deixis/core/ContextStore"
import { StoreUnavailable } from "@deixis/store-sql/Availability"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as TestClock from "effect/TestClock"
import * as StoreOutage from "../src/StoreOutage.js"

const schedule = Schedule.spaced(Duration.millis(250)).pipe(Schedule.upTo(Duration.seconds(1)))
const down = new StoreUnavailable({ message: "the database is down" })

// A store call that fails with `failure` its first `failing` times, and counts its calls.
const storeCall = (failing: number, failure: StoreError = down) => {
  let calls = 0
  const call = Effect.suspend(() => (++calls <= failing ? Effect.fail(failure) : Effect.succeed(calls)))
  return { call, calls: () => calls }
}

describe("apps/telegram: StoreOutage.retryOutage", () => {
  it.effect("a call that succeeds runs once", () =>
    Effect.gen(function*() {
      const store = storeCall(0)
      assert.strictEqual(yield* StoreOutage.retryOutage(schedule)(store.call), 1)
      assert.strictEqual(store.calls(), 1)
    }))

  it.effect("through an outage, the call is tried again on the schedule's spacing until it succeeds", () =>
    Effect.gen(function*() {
      const store = storeCall(2)
      const fiber = yield* Effect.fork(StoreOutage.retryOutage(schedule)(store.call))
      yield* Effect.yieldNow()
      // The first failure waits the schedule's first delay: nothing is tried at once.
      assert.strictEqual(store.calls(), 1)
      yield* TestClock.adjust("250 millis")
      assert.strictEqual(store.calls(), 2)
      yield* TestClock.adjust("250 millis")
      assert.strictEqual(yield* Fiber.join(fiber), 3)
    }))

  it.effect("an outage outlasting the schedule fails with the outage", () =>
    Effect.gen(function*() {
      const store = storeCall(1000)
      const fiber = yield* Effect.fork(StoreOutage.retryOutage(schedule)(store.call))
      yield* TestClock.adjust("10 seconds")
      const exit = yield* Fiber.await(fiber)
      assert.deepStrictEqual(exit, Exit.fail(down))
      // Tried at 0, then every 250 ms for the schedule's second.
      assert.isAtLeast(store.calls(), 4)
      assert.isAtMost(store.calls(), 6)
    }))

  it.effect("a failure other than an outage is not tried again", () =>
    Effect.gen(function*() {
      const refused = new StoreError({ message: "constraint failed" })
      const store = storeCall(1, refused)
      const exit = yield* Effect.exit(StoreOutage.retryOutage(schedule)(store.call))
      assert.deepStrictEqual(exit, Exit.fail(refused))
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(store.calls(), 1)
    }))
})
