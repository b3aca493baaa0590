import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as TestClock from "effect/TestClock"
import { logCall } from "../src/internal/log.js"

/** Everything a logger is handed for each line (the fiber aside: each run has its own). */
const captured = (effect: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const seen: Array<unknown> = []
    const logger = Logger.make(({ annotations, cause, date, logLevel, message, spans }) => {
      seen.push({ annotations: [...annotations], cause, date: date.getTime(), level: logLevel.label, message, spans: [...spans].map((s) => s.label) })
    })
    yield* Effect.provide(effect, Logger.replace(Logger.defaultLogger, logger))
    return seen
  })

const fields = { request_id: "r-1", chat_id: "-1001", topic_id: null, candidate_count: 3, status: "resolved", top_ids: "a,b", gap: 2.5 }

// The tool's line must stay the line `Effect.logInfo` under `Effect.annotateLogs` writes.
const around = (effect: Effect.Effect<void>) =>
  effect.pipe(Effect.annotateLogs({ outer: "kept", status: "overridden" }), Effect.withLogSpan("request"))

describe("logCall", () => {
  it.effect("hands the loggers what Effect.logInfo under Effect.annotateLogs hands them", () =>
    Effect.gen(function*() {
      yield* TestClock.adjust(1234)
      const fast = yield* captured(around(logCall("resolve_reference_target", () => fields)))
      const reference = yield* captured(around(Effect.logInfo("resolve_reference_target").pipe(Effect.annotateLogs(fields))))
      assert.strictEqual(fast.length, 1)
      assert.deepStrictEqual(fast, reference)
      // And the line itself, as the logfmt logger prints it.
      const line = (effect: Effect.Effect<void>) =>
        Effect.gen(function*() {
          const lines: Array<string> = []
          yield* Effect.provide(effect, Logger.replace(Logger.defaultLogger, Logger.map(Logger.logfmtLogger, (l) => void lines.push(l))))
          return lines
        })
      assert.deepStrictEqual(
        yield* line(around(logCall("resolve_reference_target", () => fields))),
        yield* line(around(Effect.logInfo("resolve_reference_target").pipe(Effect.annotateLogs(fields))))
      )
    }))

  it.effect("below Info, nothing is logged and the fields are never built", () =>
    Effect.gen(function*() {
      let built = 0
      const seen = yield* captured(
        logCall("resolve_reference_target", () => (built++, fields)).pipe(Logger.withMinimumLogLevel(LogLevel.Warning))
      )
      assert.deepStrictEqual(seen, [])
      assert.strictEqual(built, 0)
    }))
})
