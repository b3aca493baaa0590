import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as UnitOfWork from "../src/UnitOfWork.js"

// A unit that says its stores' calls are better sent at once (as store-sql's on PostgreSQL).
const atOnce = Effect.provideService(UnitOfWork.UnitOfWork, { ...UnitOfWork.passThrough, callsAtOnce: true })

// A call that never ends, and says when it started and when it was interrupted.
const hanging = Effect.gen(function*() {
  const started = yield* Deferred.make<void>()
  const interrupted = yield* Deferred.make<void>()
  const call = Deferred.succeed(started, undefined).pipe(
    Effect.zipRight(Effect.never),
    Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
  )
  return { call, started, interrupted }
})

describe("UnitOfWork.both", () => {
  it.effect("runs the calls one after the other where the stores do not say otherwise, the first before the second", () =>
    Effect.gen(function*() {
      const order: Array<string> = []
      const call = (name: string) => Effect.sync(() => order.push(`${name} started`)).pipe(Effect.zipRight(Effect.yieldNow()), Effect.zipRight(Effect.sync(() => {
        order.push(`${name} done`)
        return name
      })))
      const result = yield* UnitOfWork.both(call("first"), call("second"))
      assert.deepStrictEqual(result, ["first", "second"])
      assert.deepStrictEqual(order, ["first started", "first done", "second started", "second done"])
    }))

  it.effect("runs the calls at once where the stores say so (callsAtOnce): the first can wait for the second", () =>
    Effect.gen(function*() {
      const opened = yield* Deferred.make<number>()
      // One after the other, the first would wait for ever.
      const first = Effect.map(Deferred.await(opened), (n) => n + 1)
      const second = Effect.as(Deferred.succeed(opened, 41), "second")
      assert.deepStrictEqual(yield* UnitOfWork.both(first, second).pipe(atOnce), [42, "second"])
    }))

  it.effect("at once, a failure of the first interrupts the second and is the result", () =>
    Effect.gen(function*() {
      const second = yield* hanging
      const first = Effect.zipRight(Deferred.await(second.started), Effect.fail("the first failed" as const))
      const exit = yield* Effect.exit(UnitOfWork.both(first, second.call).pipe(atOnce))
      assert.deepStrictEqual(exit, Exit.fail("the first failed"))
      assert.isTrue(yield* Deferred.isDone(second.interrupted))
    }))

  it.effect("at once, a failure of the second is the result", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(UnitOfWork.both(Effect.succeed(1), Effect.fail("the second failed" as const)).pipe(atOnce))
      assert.deepStrictEqual(exit, Exit.fail("the second failed"))
    }))

  it.effect("at once, interrupting the caller interrupts the second", () =>
    Effect.gen(function*() {
      const second = yield* hanging
      const caller = yield* Effect.fork(UnitOfWork.both(Effect.zipRight(Deferred.await(second.started), Effect.never), second.call).pipe(atOnce))
      yield* Deferred.await(second.started)
      yield* Fiber.interrupt(caller)
      assert.isTrue(yield* Deferred.isDone(second.interrupted))
    }))
})
