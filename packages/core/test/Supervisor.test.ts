import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import * as Clock from "effect/Clock"
import * as Layer from "effect/Layer"
import * as ContextStoreModule from "../src/ContextStore.js"
import * as Supervisor from "../src/Supervisor.js"

const captured = () => {
  const lines: Array<{ readonly level: string; readonly message: string; readonly annotations: Record<string, unknown> }> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    lines.push({ level: logLevel.label, message: String(Array.isArray(message) ? message[0] : message), annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

describe("Supervisor", () => {
  it.scoped("a defect restarts the fiber with a line at Error naming it, and its work goes on", () => {
    const logs = captured()
    return Effect.gen(function*() {
      const done = yield* Queue.unbounded<number>()
      const runs = yield* Ref.make(0)
      const work = Effect.gen(function*() {
        const n = yield* Ref.updateAndGet(runs, (r) => r + 1)
        if (n === 1) return yield* Effect.dieMessage("boom")
        yield* Queue.offer(done, n)
        return yield* Effect.never
      })
      yield* Supervisor.fork("the test writer", work, Supervisor.restart())
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Queue.take(done), 2)
      const line = logs.lines.find((l) => l.level === "ERROR")
      assert.strictEqual(line?.message, "the test writer failed; restarting it")
      assert.strictEqual(line?.annotations["restart"], 1)
    }).pipe(Effect.provide(Supervisor.layer), Effect.provide(logs.layer))
  })

  it.scoped("a fiber that keeps failing stops the process once its restarts are spent", () =>
    Effect.gen(function*() {
      const runs = yield* Ref.make(0)
      const supervisor = yield* Supervisor.Supervisor
      const downs = yield* Ref.make(0)
      yield* Supervisor.fork("the failing sender", Effect.zipRight(Ref.update(runs, (r) => r + 1), Effect.fail("store down")), Supervisor.restart({ limit: 3 }), {
        onDown: () => Ref.update(downs, (d) => d + 1)
      })
      const waiting = yield* Effect.fork(supervisor.failed)
      yield* TestClock.adjust("10 seconds")
      const exit = yield* Fiber.await(waiting)
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.include(String(exit.cause), "the failing sender failed after 3 restarts")
      assert.strictEqual(yield* Ref.get(runs), 4)
      assert.strictEqual(yield* Ref.get(downs), 4)
    }).pipe(Effect.provide(Supervisor.layer)))

  it.scoped("the stop policy ends the process at the first defect; a periodic job restarts forever", () =>
    Effect.gen(function*() {
      const supervisor = yield* Supervisor.Supervisor
      const sweeps = yield* Ref.make(0)
      yield* Supervisor.forkRestarting("the sweep", Effect.zipRight(Ref.update(sweeps, (r) => r + 1), Effect.dieMessage("bug")), Supervisor.restartForever({ delay: "1 second", maxDelay: "4 seconds" }))
      yield* TestClock.adjust("1 minute")
      assert.isAbove(yield* Ref.get(sweeps), 10)
      yield* Supervisor.fork("the inbox writer", Effect.dieMessage("bug"), Supervisor.stop)
      const exit = yield* Effect.exit(supervisor.failed)
      assert.isTrue(Exit.isFailure(exit) && String(exit.cause).includes("the inbox writer failed"))
    }).pipe(Effect.provide(Supervisor.layer)))

  it.live("a defect in the memory context store's sweep (a clock that fails once, injected through the layer) restarts it with a line at Error, and it sweeps again", () => {
    const logs = captured()
    let reads = 0
    const real = Clock.make()
    // The sweep reads the time first: the first read is a defect.
    const faulty: Clock.Clock = {
      [Clock.ClockTypeId]: Clock.ClockTypeId,
      unsafeCurrentTimeMillis: () => real.unsafeCurrentTimeMillis(),
      unsafeCurrentTimeNanos: () => real.unsafeCurrentTimeNanos(),
      currentTimeNanos: real.currentTimeNanos,
      sleep: (duration) => real.sleep(duration),
      currentTimeMillis: Effect.suspend(() => (++reads === 1 ? Effect.dieMessage("injected defect in the clock") : real.currentTimeMillis))
    }
    return Effect.gen(function*() {
      yield* Effect.withClock(Layer.build(ContextStoreModule.layerMemory({ sweep_interval: 5 })), faulty)
      for (let i = 0; i < 2000 && reads < 3; i++) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
      const line = logs.lines.find((l) => l.message === "the memory context store sweep failed; restarting it")
      assert.strictEqual(line?.level, "ERROR", `reads ${reads}`)
      assert.isAtLeast(reads, 3)
    }).pipe(Effect.scoped, Effect.provide(logs.layer))
  })
})
