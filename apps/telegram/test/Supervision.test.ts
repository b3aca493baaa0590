/**
 * Every long-lived fiber of the bot is supervised: a defect injected through the layer it uses
 * (the update inbox, the reminder store) restarts it with a line at Error, and its work goes
 * on; readiness is false while the inbox writer is down. One that keeps failing ends the
 * process with a Fatal line and a non-zero exit (a process of its own).
 */
import { ReminderStore } from "@deixis/core/ReminderStore"
import * as Supervisor from "@deixis/core/Supervisor"
import { UpdateInbox } from "@deixis/core/UpdateInbox"
import { StoreConfig } from "@deixis/store-sql"
import * as FakeBotApi from "@deixis/telegraf/testing"
import { assert, describe, it } from "@effect/vitest"
import { type Running, start } from "deixis-test-support/process"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as TestClock from "effect/TestClock"
import { join } from "node:path"
import * as App from "../src/App.js"
import * as Bot from "../src/Bot.js"
import * as BotApi from "../src/BotApi.js"
import * as LlmTurns from "../src/LlmTurns.js"
import * as Ops from "../src/Ops.js"
import { config, eventually, eventuallyEffect, F, launch, message, now, type Services, setup, sleeperIn, texts } from "./utils/harness.js"

const fault = () => faulty("none")

const captured = () => {
  const lines: Array<{ readonly level: string; readonly message: string; readonly annotations: Record<string, unknown> }> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    lines.push({
      level: logLevel.label,
      message: String(Array.isArray(message) ? message[0] : message),
      annotations: Object.fromEntries(HashMap.toEntries(annotations))
    })
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

/**
 * The memory stores with one defect to inject: `fault` names the call of the update inbox or
 * the reminder store that dies the next `times` times it is made.
 */
const faulty = (fault: "settle" | "sweep" | "nextDueAt" | "none", times = 1) => {
  let left = times
  let calls = 0
  const die = <A, E>(call: Effect.Effect<A, E>) =>
    Effect.suspend(() => {
      calls++
      if (left <= 0) return call
      left--
      return Effect.dieMessage(`injected defect in ${fault}`)
    })
  const inbox = Layer.effect(
    UpdateInbox,
    Effect.map(UpdateInbox, (inner) => ({
      ...inner,
      settle: (s: Parameters<typeof inner.settle>[0]) => (fault === "settle" ? die(inner.settle(s)) : inner.settle(s)),
      sweep: (before: number, limit: number) => (fault === "sweep" ? die(inner.sweep(before, limit)) : inner.sweep(before, limit))
    }))
  )
  const reminders = Layer.effect(
    ReminderStore,
    Effect.map(ReminderStore, (inner) => ({ ...inner, nextDueAt: fault === "nextDueAt" ? die(inner.nextDueAt) : inner.nextDueAt }))
  )
  const stores = Layer.merge(inbox, reminders).pipe(Layer.provideMerge(StoreConfig.layerMemory))
  return {
    calls: () => calls,
    left: () => left,
    provide: <A, E, R extends Services>(effect: Effect.Effect<A, E, R>) =>
      Effect.zipRight(TestClock.setTime(now), Effect.provide(effect, App.services(stores)))
  }
}

describe("apps/telegram: supervised fibers", () => {
  it.scoped("a defect in the inbox writer restarts it with a line at Error; readiness is false until it runs again; no update is lost or answered twice", () => {
    const logs = captured()
    const fault = faulty("settle")
    return Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const running = yield* launch(bot, api.apiRoot)
      const port = yield* Ops.serve({ port: 0, host: "127.0.0.1" }, { ready: SubscriptionRef.get(running.ready), healthy: Effect.succeed(true) })
      const readyz = Effect.promise(() => fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status))
      yield* eventuallyEffect("intake is ready", SubscriptionRef.get(running.ready))
      assert.strictEqual(yield* readyz, 200)
      api.pushUpdates(message("/remind in 5 minutes task 1"))
      // Answered, then its settlement dies in the writer.
      yield* eventually("the first update is answered", () => texts(api).length === 1)
      yield* eventually("the writer's defect is logged", () => logs.lines.some((l) => l.message === "the inbox writer failed; restarting it"))
      assert.isFalse(yield* SubscriptionRef.get(running.ready))
      assert.strictEqual(yield* readyz, 503)
      const line = logs.lines.find((l) => l.message === "the inbox writer failed; restarting it")!
      assert.strictEqual(line.level, "ERROR")
      assert.strictEqual(line.annotations["restart"], 1)
      // The restart waits its back-off (on the TestClock), then intake is ready again.
      yield* sleeperIn("100 millis")
      yield* TestClock.adjust("100 millis")
      yield* eventuallyEffect("intake is ready again", SubscriptionRef.get(running.ready))
      assert.strictEqual(yield* readyz, 200)
      api.pushUpdates(message("/remind in 6 minutes task 2"))
      yield* eventually("the next update is answered", () => texts(api).length === 2)
      yield* running.dispatcher.idle
      // The settlement the defect cut short was written by a later one: nothing is handed out
      // again, even once every claim has ended.
      const inbox = yield* UpdateInbox
      yield* eventuallyEffect(
        "every update is settled",
        Effect.map(inbox.claimStale({ source: String(F.botId), now: now + 86_400_000, owner: "probe", lease: 0, limit: 100 }), (stale) => stale.length === 0)
      )
      assert.strictEqual(texts(api).filter((t) => t.includes("task 1")).length, 1)
    }).pipe(fault.provide, Effect.provide(logs.layer))
  })

  it.scoped("a defect while the writer queues updates (in the LLM turns' preempt) leaves nothing in flight: the update is handed out again when its claim ends and answered once", () => {
    const logs = captured()
    let left = 1
    const turns: LlmTurns.Turns = {
      enabled: true,
      addresses: () => false,
      preempt: () => Effect.suspend(() => (left-- > 0 ? Effect.dieMessage("injected defect in preempt") : Effect.void)),
      answer: () => Effect.void
    }
    return Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const settings = config(api.apiRoot, { updateLease: Duration.seconds(12) })
      const bot = yield* Bot.build().pipe(Effect.provide(Layer.merge(BotApi.layer(settings), Layer.succeed(LlmTurns.LlmTurns, turns))))
      const running = yield* launch(bot, api.apiRoot, { updateLease: Duration.seconds(12) })
      api.pushUpdates(message("/help"))
      yield* eventually("the writer's defect is logged", () => logs.lines.some((l) => l.message === "the inbox writer failed; restarting it"))
      yield* sleeperIn("100 millis")
      yield* TestClock.adjust("100 millis")
      yield* eventuallyEffect("intake is ready again", SubscriptionRef.get(running.ready))
      // Not left in flight: nothing queued here, and not answered yet.
      yield* running.dispatcher.idle
      assert.strictEqual(running.intakeService.queued(), 0)
      assert.strictEqual(api.callsOf("sendMessage").length, 0)
      // Its chat stalled: the claim loop (every 6 s) hands it out again once the claim has ended.
      for (let i = 0; i < 8 && api.callsOf("sendMessage").length === 0; i++) {
        yield* TestClock.adjust("3 seconds")
        yield* running.dispatcher.idle
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
      }
      yield* eventually("it is answered", () => api.delivered().length === 1)
      yield* running.dispatcher.idle
      assert.strictEqual(api.callsOf("sendMessage").length, 1)
    }).pipe(fault().provide, Effect.provide(logs.layer))
  })

  it.scoped("a defect in the update inbox sweep restarts it with a line at Error, and it sweeps again", () => {
    const logs = captured()
    const fault = faulty("sweep")
    return Effect.gen(function*() {
      const { api, bot } = yield* setup()
      yield* launch(bot, api.apiRoot)
      yield* eventually("the sweep's defect is logged", () => logs.lines.some((l) => l.message === "the update inbox sweep failed; restarting it"))
      yield* sleeperIn("1 second")
      yield* TestClock.adjust("1 second")
      yield* eventually("the sweep runs again", () => fault.calls() >= 2)
    }).pipe(fault.provide, Effect.provide(logs.layer))
  })

  it.scoped("a defect in the reminder sender restarts it with a line at Error, and a reminder is still sent when due", () => {
    const logs = captured()
    const fault = faulty("nextDueAt")
    return Effect.gen(function*() {
      const { api, bot } = yield* setup()
      yield* launch(bot, api.apiRoot)
      yield* eventually("the sender's defect is logged", () => logs.lines.some((l) => l.message === "the reminder sender failed; restarting it"))
      yield* sleeperIn("100 millis")
      yield* TestClock.adjust("100 millis")
      api.pushUpdates(message("/remind in 1 minute stand-up"))
      yield* eventually("the /remind is answered", () => texts(api).length === 1)
      yield* sleeperIn("5 seconds")
      yield* TestClock.adjust("1 minute")
      yield* api.waitFor("sendMessage", (p) => p["text"] === "⏰ Reminder: stand-up")
    }).pipe(fault.provide, Effect.provide(logs.layer))
  })
})

describe("apps/telegram: a fiber that keeps failing ends the process", () => {
  it.live("the stores get the process's supervisor: a fiber of theirs that keeps dying fails it, as a SQLite writer thread that keeps dying does", () =>
    Effect.gen(function*() {
      const stores = Layer.merge(
        StoreConfig.layerMemory,
        Layer.scopedDiscard(Supervisor.fork("a store's fiber", Effect.dieMessage("injected defect"), Supervisor.restart({ limit: 1, delay: "1 millis" })))
      )
      const services = yield* Layer.build(App.services(stores).pipe(Layer.provide(Logger.replace(Logger.defaultLogger, Logger.none))))
      // Bounded: a supervisor the stores never reached would wait for ever.
      const died = yield* Effect.flip(Context.get(services, Supervisor.Supervisor).failed).pipe(
        Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the process's supervisor never heard of the stores' fiber") }),
        Effect.orDie
      )
      assert.deepStrictEqual([died.fiber, died.restarts], ["a store's fiber", 1])
    }).pipe(Effect.scoped))

  it.live("the inbox writer dying at every start: one FATAL line naming it, exit 1", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername })
      const r: Running = yield* Effect.acquireRelease(
        Effect.sync(() =>
          start(process.execPath, ["--conditions=@deixis/source", "--import", "tsx", "test/fixtures/faultyBot.ts"], {
            cwd: join(import.meta.dirname, ".."),
            env: { BOT_TOKEN: `${F.botId}:test-token`, BOT_API_ROOT: api.apiRoot, BOT_OPS_PORT: "0", BOT_OPS_HOST: "127.0.0.1", DEIXIS_STORE: "memory", FAULT: "receive" }
          })
        ),
        (p) => Effect.sync(p.kill)
      )
      yield* Effect.promise(() => r.waitFor(/bot started/, 120_000))
      // Each update it takes in kills the writer; polling gets them again, and so on.
      api.pushUpdates(message("/help"))
      const exit = yield* Effect.promise(() => r.exited)
      assert.strictEqual(exit.code, 1, r.output())
      const fatal = r.output().split("\n").filter((l) => l.includes("level=FATAL"))
      assert.strictEqual(fatal.length, 1, r.output())
      assert.include(fatal[0], "the inbox writer failed after 5 restarts")
      assert.strictEqual(r.output().split("\n").filter((l) => l.includes("the inbox writer failed; restarting it")).length, 5, r.output())
    }).pipe(Effect.scoped), 180_000)
})
