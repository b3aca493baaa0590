import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fc from "effect/FastCheck"
import * as FiberId from "effect/FiberId"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as List from "effect/List"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as LogSpan from "effect/LogSpan"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as ConfigKeys from "../src/ConfigKeys.js"
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

  it.effect("DEIXIS_LOG_LEVEL takes every documented spelling in any case, and names itself and the spellings when wrong", () =>
    Effect.gen(function*() {
      const read = (value: string) =>
        Effect.either(Effect.withConfigProvider(Logging.config, ConfigProvider.fromMap(new Map([["DEIXIS_LOG_LEVEL", value]]))))
      const spellings: ReadonlyArray<readonly [string, LogLevel.LogLevel]> = [
        ["Info", LogLevel.Info], ["INFO", LogLevel.Info], ["info", LogLevel.Info], [" Info ", LogLevel.Info],
        ["Warning", LogLevel.Warning], ["WARNING", LogLevel.Warning], ["WARN", LogLevel.Warning], ["warn", LogLevel.Warning],
        ["Debug", LogLevel.Debug], ["DEBUG", LogLevel.Debug], ["Error", LogLevel.Error], ["error", LogLevel.Error],
        ["Fatal", LogLevel.Fatal], ["FATAL", LogLevel.Fatal], ["Trace", LogLevel.Trace], ["All", LogLevel.All],
        ["None", LogLevel.None], ["none", LogLevel.None], ["Off", LogLevel.None], ["OFF", LogLevel.None]
      ]
      for (const [value, level] of spellings) {
        const result = yield* read(value)
        assert.isTrue(Either.isRight(result) && result.right.level === level, `${value} → ${level._tag}`)
      }
      const wrong = yield* read("Loud")
      assert.isTrue(Either.isLeft(wrong))
      if (Either.isLeft(wrong)) {
        assert.include(String(wrong.left), "DEIXIS_LOG_LEVEL must be one of All, Trace, Debug, Info, Warning, Error, Fatal, None")
        assert.include(String(wrong.left), "\"Loud\"")
      }
      assert.isTrue(Option.isNone(Logging.parseLevel("Verbose")))
    }))

  for (const format of ["logfmt", "json"] as const) {
    it.effect(`${format}: a failure's stack trace only at Debug; at Info its errors' names and messages`, () =>
      Effect.gen(function*() {
        const atInfo = (yield* printed({ level: LogLevel.Info, format }, Effect.logError("failed", Cause.fail(new Error("boom", { cause: new Error("socket hang up") }))))).join("\n")
        assert.include(atInfo, "Error: boom")
        assert.include(atInfo, "socket hang up")
        assert.notMatch(atInfo, /\bat .*Logging\.test\.ts/)
        const atDebug = (yield* printed({ level: LogLevel.Debug, format }, Effect.logError("failed", Cause.fail(new Error("boom"))))).join("\n")
        assert.include(atDebug, "Error: boom")
        assert.match(atDebug, /\bat .*Logging\.test\.ts/)
        // An interruption reads as one.
        const interrupted = (yield* printed({ level: LogLevel.Info, format }, Effect.logError("stopped", Cause.interrupt(FiberId.make(1, 0))))).join("\n")
        assert.include(interrupted, "All fibers interrupted without errors.")
      }))

    it.effect(`${format}: a secret never shows, in a message, an annotation, a cause or a URL, at every level`, () =>
      Effect.gen(function*() {
        const token = " 123456:AAH-secret_\"quoted\" value"
        const secrets = [Redacted.make(token), Redacted.make("pg-pässword")]
        const url = `https://api.telegram.org/bot${encodeURIComponent(token)}/getMe`
        const path = new URL(`https://api.telegram.org/bot${token}/getMe`).href
        for (const level of [LogLevel.All, LogLevel.Debug, LogLevel.Info, LogLevel.Error]) {
          const lines = yield* printed(
            { level, format, secrets },
            Effect.logFatal(`request to ${url} failed`, Cause.die(new Error(`connect ECONNREFUSED ${path} ${token}`))).pipe(
              Effect.annotateLogs({ token, url: "postgres://deixis:pg-pässword@db/x", encoded: encodeURI("pg-pässword") })
            )
          )
          const text = lines.join("\n")
          assert.include(text, "<redacted>")
          for (const leak of ["AAH-secret", "pg-pässword", encodeURIComponent("pg-pässword"), encodeURI("pg-pässword")]) {
            assert.notInclude(text, leak, `${level._tag}: ${leak}`)
          }
        }
      }))
  }

  it("logfmt with stack traces and no secrets formats every line as Effect's logfmtLogger does", () => {
    const fast = Logging.makeLogfmtLogger({ stack: true, redact: (text) => text })
    fc.assert(fc.property(logInput, (input) => assert.strictEqual(fast.log(input), Logger.logfmtLogger.log(input))), { numRuns: 2_000 })
  })

  it("json with stack traces and no secrets formats every line as Effect's jsonLogger does", () => {
    const json = Logging.makeJsonLogger({ stack: true, redact: (text) => text })
    fc.assert(fc.property(logInput, (input) => assert.strictEqual(json.log(input), Logger.jsonLogger.log(input))), { numRuns: 500 })
  })

  it("the redactor leaves a text without secrets as it is, and with none given is the identity", () => {
    const redact = Logging.makeRedactor([Redacted.make("s3cr3t"), Redacted.make("")])
    assert.strictEqual(redact("nothing to see"), "nothing to see")
    assert.strictEqual(redact("a s3cr3t and s3cr3t"), "a <redacted> and <redacted>")
    assert.strictEqual(Logging.makeRedactor([])("s3cr3t"), "s3cr3t")
  })
})

// Any log call Effect's loggers can receive.
const text = fc.oneof(fc.string(), fc.constantFrom("", " ", "a=b", "say \"hi\"", "tab\there", "line\nbreak", "\u2028", "é"))
const value = fc.oneof(text, fc.jsonValue({ maxDepth: 2 }), fc.double(), fc.boolean(), fc.constant(null), fc.constant(undefined))
const logInput = fc.record({
  message: fc.oneof(value, fc.array(value, { maxLength: 3 })),
  annotations: fc.array(fc.tuple(fc.oneof(text, fc.constantFrom("request_id", "chat_id", "a b", "x=y", "q\"")), value), { maxLength: 6 }),
  cause: fc.constantFrom(Cause.empty, Cause.fail("nope"), Cause.die(new Error("boom")), Cause.interrupt(FiberId.make(3, 0))),
  spans: fc.array(fc.tuple(text, fc.integer({ min: 0, max: 2_000_000_000_000 })), { maxLength: 2 }),
  fiber: fc.oneof(
    fc.nat().map((id) => FiberId.make(id, 0)),
    fc.constant(FiberId.none),
    fc.tuple(fc.nat(), fc.nat()).map(([a, b]) => FiberId.combine(FiberId.make(a, 0), FiberId.make(b, 1)))
  ),
  level: fc.constantFrom(...LogLevel.allLevels),
  time: fc.integer({ min: 0, max: 4_000_000_000_000 })
}).map((o) => ({
  fiberId: o.fiber,
  logLevel: o.level,
  message: o.message,
  cause: o.cause as Cause.Cause<unknown>,
  context: FiberRefs.empty(),
  spans: List.fromIterable(o.spans.map(([label, start]) => LogSpan.make(label, start))),
  annotations: HashMap.fromIterable(o.annotations as ReadonlyArray<readonly [string, unknown]>),
  date: new Date(o.time)
}))

describe("ConfigKeys for secrets", () => {
  const read = <A>(config: Config.Config<A>, env: Record<string, string>) =>
    Effect.runSync(Effect.either(Effect.withConfigProvider(config, ConfigProvider.fromMap(new Map(Object.entries(env))))))
  const token = ConfigKeys.secret("BOT_TOKEN", { pattern: /^\d+:[A-Za-z0-9_-]+$/, description: "digits, a colon, then letters" })

  it("a secret is trimmed of a stray space or newline, and the padded key is named for a warning", () => {
    const result = read(token, { BOT_TOKEN: " 123:abc-DEF_9\n" })
    assert.isTrue(Either.isRight(result) && Option.isSome(result.right) && Redacted.value(result.right.value) === "123:abc-DEF_9")
    assert.deepStrictEqual(read(ConfigKeys.padded(["BOT_TOKEN", "OTHER"]), { BOT_TOKEN: " 123:abc", OTHER: "fine" }), Either.right(["BOT_TOKEN"]))
    assert.deepStrictEqual(read(ConfigKeys.padded(["BOT_TOKEN"]), { BOT_TOKEN: "123:abc" }), Either.right([]))
    assert.deepStrictEqual(read(token, {}), Either.right(Option.none()))
  })

  it("a secret of the wrong shape is refused naming the key and the shape, never the value", () => {
    for (const value of ["123-SECRETVALUE", "SECRETVALUE", "123:SECRET VALUE", "123:SECRET/VALUE"]) {
      const result = read(token, { BOT_TOKEN: value })
      assert.isTrue(Either.isLeft(result), value)
      if (Either.isLeft(result)) {
        const text = ConfigKeys.describeError(result.left)
        assert.include(text, "BOT_TOKEN has the wrong shape: it must be digits, a colon, then letters")
        assert.notInclude(text, "SECRET")
      }
    }
    const empty = read(token, { BOT_TOKEN: "  " })
    assert.isTrue(Either.isLeft(empty) && ConfigKeys.describeError(empty.left).includes("BOT_TOKEN is empty"))
    const optional = ConfigKeys.secret("HOOK_SECRET", { pattern: /^\w+$/, description: "a word", emptyIsUnset: true })
    assert.deepStrictEqual(read(optional, { HOOK_SECRET: "" }), Either.right(Option.none()))
  })

  it("describeError names the key of each problem, Effect's own messages included", () => {
    const result = read(Config.all([Config.integer("PORT"), Config.string("HOST")]), { PORT: "eighty" })
    assert.isTrue(Either.isLeft(result))
    if (Either.isLeft(result)) {
      const text = ConfigKeys.describeError(result.left)
      assert.include(text, "PORT: Expected an integer value but received \"eighty\"")
      assert.include(text, "HOST: Expected HOST to exist")
    }
  })
})
