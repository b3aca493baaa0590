import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import { Logging } from "@deixis/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Redacted from "effect/Redacted"
import * as Logs from "../src/Logs.js"

// Log lines carry a timestamp and a fiber id: equal lines but for those.
const stable = (line: string) => line.replace(/timestamp=\S+/, "timestamp=T").replace(/fiber=#\d+/, "fiber=#N")
  .replace(/"timestamp":"[^"]*"/, "\"timestamp\":\"T\"").replace(/"fiberId":"#\d+"/, "\"fiberId\":\"#N\"")

const program = Effect.gen(function*() {
  yield* Effect.logInfo("resolve_reference_target").pipe(
    Effect.annotateLogs({ request_id: "r 1", chat_id: "-1001", topic_id: null, candidate_count: 3, quote: "say \"hi\"" })
  )
  yield* Effect.logWarning("two\nlines", "and more")
  yield* Effect.logDebug("filtered out at Info")
  yield* Effect.logError("failed", new Error("boom"))
})

// What core's Logging layer writes: one console.log per line.
const reference = (options: Logging.LoggingOptions) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const base = yield* Effect.console
    const log = (...args: ReadonlyArray<unknown>) => void lines.push(args.map(String).join(" "))
    const capture = { ...base, unsafe: { ...base.unsafe, log } }
    // On a fiber of its own: the logger a provided layer adds outlives the provide in the
    // enclosing fiber.
    yield* Effect.promise(() => Effect.runPromise(program.pipe(Effect.withConsole(capture), Effect.provide(Logging.layer(options)))))
    return lines
  })

const batched = (options: Logging.LoggingOptions) =>
  Effect.gen(function*() {
    const writes: Array<string> = []
    yield* program.pipe(Effect.provide(Logs.layer(options, (chunk) => void writes.push(chunk))))
    return writes
  })

describe("batched logs", () => {
  for (const format of ["logfmt", "json"] as const) {
    it.effect(`${format}: writes the lines core's Logging layer writes, byte for byte, in one write`, () =>
      Effect.gen(function*() {
        const options = { level: LogLevel.Info, format }
        const expected = yield* reference(options)
        const writes = yield* batched(options)
        assert.strictEqual(expected.length, 3)
        // All of one turn's lines in one write, flushed when the layer is released.
        assert.strictEqual(writes.length, 1)
        assert.deepStrictEqual(writes[0]!.split("\n").map(stable), [...expected.map(stable), ""])
      }))
  }

  it("writes the lines of 10 ms at once, and everything at a flush", () => {
    const writes: Array<string> = []
    const sink = Logs.makeSink((chunk) => void writes.push(chunk))
    vi.useFakeTimers()
    try {
      sink.line("a")
      sink.line("b")
      assert.deepStrictEqual(writes, [])
      vi.advanceTimersByTime(9)
      assert.deepStrictEqual(writes, [])
      vi.advanceTimersByTime(1)
      assert.deepStrictEqual(writes, ["a\nb\n"])
    } finally {
      vi.useRealTimers()
    }
    sink.line("c")
    sink.flush()
    assert.deepStrictEqual(writes, ["a\nb\n", "c\n"])
    sink.flush()
    assert.strictEqual(writes.length, 2)
    // A large backlog is written without waiting for the timer.
    const long = "x".repeat(70 * 1024)
    sink.line(long)
    assert.deepStrictEqual(writes[2], long + "\n")
  })

  it.effect("keeps the minimum level", () =>
    Effect.gen(function*() {
      const writes = yield* batched({ level: LogLevel.Error, format: "logfmt" })
      assert.strictEqual(writes.length, 1)
      assert.strictEqual(writes[0]!.trim().split("\n").length, 1)
      assert.match(writes[0]!, /level=ERROR/)
    }))

  it.effect("writes core's lines: secrets redacted, a failure without its stack trace at Info", () =>
    Effect.gen(function*() {
      const writes: Array<string> = []
      yield* Effect.logError("call to https://api.example/botTOKEN-1/x failed", Cause.die(new Error("boom TOKEN-1"))).pipe(
        Effect.provide(Logs.layer({ level: LogLevel.Info, format: "logfmt", secrets: [Redacted.make("TOKEN-1")] }, (c) => void writes.push(c)))
      )
      const text = writes.join("")
      assert.notInclude(text, "TOKEN-1")
      assert.include(text, "bot<redacted>/x")
      assert.include(text, "Error: boom <redacted>")
      assert.notMatch(text, /\bat .*logs\.test\.ts/)
    }))

  it.effect("provided over a layer, as main.ts does", () =>
    Effect.gen(function*() {
      const writes: Array<string> = []
      const logged = Layer.effectDiscard(Effect.logInfo("listening"))
      yield* Effect.scoped(Layer.build(logged.pipe(Layer.provide(Logs.layer({ level: LogLevel.Info, format: "logfmt" }, (c) => void writes.push(c))))))
      assert.strictEqual(writes.length, 1)
      assert.match(writes[0]!, /message=listening/)
    }))
})
