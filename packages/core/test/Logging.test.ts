import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as LogLevel from "effect/LogLevel"
import * as Logging from "../src/Logging.js"

/** What the layer's logger prints for one effect, line by line. */
const printed = (options: Logging.LoggingOptions, effect: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const original = globalThis.console.log
    globalThis.console.log = (...args: ReadonlyArray<unknown>) => void lines.push(args.map(String).join(" "))
    yield* Effect.ensuring(
      Effect.provide(effect, Logging.layer(options)),
      Effect.sync(() => (globalThis.console.log = original))
    )
    return lines.join("\n").split("\n")
  })

const forged = "a chat id\ntimestamp=2026-01-01T00:00:00Z level=ERROR message=\"forged\""

describe("Logging", () => {
  it.effect("logfmt: a value with a newline stays on its one line, escaped", () =>
    Effect.gen(function*() {
      const lines = yield* printed(
        { level: LogLevel.Info, format: "logfmt" },
        Effect.logInfo(forged).pipe(Effect.annotateLogs({ chat_id: forged }))
      )
      assert.strictEqual(lines.length, 1)
      assert.include(lines[0], "level=INFO")
      assert.include(lines[0], "\\n")
      assert.notInclude(lines[0], "\n")
    }))

  it.effect("json: one object per line, the value intact once parsed", () =>
    Effect.gen(function*() {
      const lines = yield* printed({ level: LogLevel.Info, format: "json" }, Effect.logWarning(forged).pipe(Effect.annotateLogs({ chat_id: forged })))
      assert.strictEqual(lines.length, 1)
      const entry = JSON.parse(lines[0]!) as { message: unknown; logLevel: string; annotations: Record<string, unknown> }
      assert.strictEqual(entry.message, forged)
      assert.strictEqual(entry.annotations["chat_id"], forged)
      assert.strictEqual(entry.logLevel, "WARN")
    }))

  it.effect("the level drops what is below it", () =>
    Effect.gen(function*() {
      const lines = yield* printed({ level: LogLevel.Warning, format: "logfmt" }, Effect.zipRight(Effect.logInfo("quiet"), Effect.logError("loud")))
      assert.strictEqual(lines.length, 1)
      assert.include(lines[0], "loud")
    }))

  it.effect("DEIXIS_LOG_LEVEL and DEIXIS_LOG_FORMAT are read, and a wrong value is refused", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.either(Effect.withConfigProvider(Logging.config, ConfigProvider.fromMap(new Map(Object.entries(env)))))
      assert.deepStrictEqual(yield* read({}), Either.right({ level: LogLevel.Info, format: "logfmt" as const }))
      assert.deepStrictEqual(yield* read({ DEIXIS_LOG_LEVEL: "Debug", DEIXIS_LOG_FORMAT: "json" }), Either.right({ level: LogLevel.Debug, format: "json" as const }))
      assert.isTrue(Either.isLeft(yield* read({ DEIXIS_LOG_FORMAT: "xml" })))
      assert.isTrue(Either.isLeft(yield* read({ DEIXIS_LOG_LEVEL: "Loud" })))
    }))
})
