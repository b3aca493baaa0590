/**
 * The recorder's notes on a mapped update (its warnings, why it was skipped) are Debug lines:
 * written when Debug is on, and not even built when it is off (an update of a sender without a
 * username carries a warning, so this runs for most updates).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as DeixisTelegraf from "../src/DeixisTelegraf.js"
import * as TelegramRecorder from "../src/TelegramRecorder.js"
import { options } from "../src/TelegramFixtures.js"

// A message from a user without a username: the mapper notes that the reference degrades.
const update = {
  update_id: 7,
  message: {
    message_id: 7,
    from: { id: 1000, is_bot: false, first_name: "User" },
    chat: { id: -1003000000001, type: "supergroup", title: "Logs" },
    date: 1_780_000_000,
    text: "see https://example.com/page/7 for the details",
    entities: [{ type: "url", offset: 4, length: "https://example.com/page/7".length }]
  }
}

const linesAt = (level: LogLevel.LogLevel) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const logger = Logger.make(({ message }) => {
      lines.push(String(Array.isArray(message) ? message[0] : message))
    })
    yield* TelegramRecorder.recordBatch([update], options).pipe(
      Effect.provide(Layer.merge(DeixisTelegraf.layerMemory(), Logger.replace(Logger.defaultLogger, logger))),
      Logger.withMinimumLogLevel(level)
    )
    return lines
  })

describe("TelegramRecorder: the mapper's notes", () => {
  it.effect("are written at Debug", () =>
    Effect.gen(function*() {
      assert.include(yield* linesAt(LogLevel.Debug), "update mapped with warnings")
    }))
  it.effect("are not written at Info", () =>
    Effect.gen(function*() {
      assert.notInclude(yield* linesAt(LogLevel.Info), "update mapped with warnings")
    }))
})
