import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Times from "../src/Times.js"

// Thursday 12 March 2026, 16:00 UTC (17:00 in Berlin, before the DST change of 29 March).
const now = Date.UTC(2026, 2, 12, 16, 0)

const parsed = (input: string, zone = "UTC") => {
  const result = Times.parseWhen(input, now, zone)
  return Either.isRight(result) ? [new Date(result.right.due_at).toISOString(), result.right.text] : result.left
}

describe("/remind phrasings", () => {
  it("understands durations, short forms and dates, first or last, and keeps the rest as the text", () => {
    const table: ReadonlyArray<readonly [string, string, string]> = [
      ["in 10 minutes stand-up notes", "2026-03-12T16:10:00.000Z", "stand-up notes"],
      ["10min tea", "2026-03-12T16:10:00.000Z", "tea"],
      ["10m tea", "2026-03-12T16:10:00.000Z", "tea"],
      ["1h30m deploy", "2026-03-12T17:30:00.000Z", "deploy"],
      ["1h 30m deploy", "2026-03-12T17:30:00.000Z", "deploy"],
      ["in 2d review", "2026-03-14T16:00:00.000Z", "review"],
      ["90s kettle", "2026-03-12T16:01:30.000Z", "kettle"],
      ["in 2 hours call Anna", "2026-03-12T18:00:00.000Z", "call Anna"],
      ["tomorrow 9:00 stand-up", "2026-03-13T09:00:00.000Z", "stand-up"],
      ["tomorrow at 9am stand-up", "2026-03-13T09:00:00.000Z", "stand-up"],
      ["friday 18:30 retro", "2026-03-13T18:30:00.000Z", "retro"],
      ["next monday 10:00 planning", "2026-03-16T10:00:00.000Z", "planning"],
      ["2027-01-05 10:00 party", "2027-01-05T10:00:00.000Z", "party"],
      ["buy milk tomorrow at 9am", "2026-03-13T09:00:00.000Z", "buy milk"],
      ["morgen um 9 Uhr Brötchen holen", "2026-03-13T09:00:00.000Z", "Brötchen holen"],
      ["demain à 9h café", "2026-03-13T09:00:00.000Z", "café"],
      ["mañana a las 9 pan", "2026-03-13T09:00:00.000Z", "pan"],
      ["через 10 минут чай", "2026-03-12T16:10:00.000Z", "чай"]
    ]
    for (const [input, due, text] of table) assert.deepStrictEqual(parsed(input), [due, text], input)
  })

  it("reads wall-clock times in the chat's zone, across a DST change too", () => {
    assert.deepStrictEqual(parsed("tomorrow 9:00 stand-up", "Europe/Berlin"), ["2026-03-13T08:00:00.000Z", "stand-up"])
    // 29 March 2026: Berlin is on summer time (UTC+2) by then, as it is not now.
    assert.deepStrictEqual(parsed("March 29 10:00 brunch", "Europe/Berlin"), ["2026-03-29T08:00:00.000Z", "brunch"])
    assert.deepStrictEqual(parsed("in 10 minutes tea", "America/New_York"), ["2026-03-12T16:10:00.000Z", "tea"])
  })

  it("refuses what it cannot use, saying why", () => {
    assert.strictEqual(parsed("soon tea"), "no_time")
    assert.strictEqual(parsed("tea"), "no_time")
    assert.strictEqual(parsed(""), "no_time")
    assert.strictEqual(parsed("yesterday 9:00 tea"), "past")
    assert.strictEqual(parsed("in 400 days tea"), "too_far")
    assert.strictEqual(parsed("in 10 minutes"), "no_text")
    assert.strictEqual(parsed("10min"), "no_text")
  })
})

describe("local times", () => {
  it("writes times as people read them, with the zone, never ISO", () => {
    assert.strictEqual(Times.formatLocal(now + 90 * 60_000, now, "Europe/Berlin"), "today 18:30, Europe/Berlin")
    assert.strictEqual(Times.formatLocal(Date.UTC(2026, 2, 13, 8), now, "Europe/Berlin"), "tomorrow 09:00, Europe/Berlin")
    assert.strictEqual(Times.formatLocal(Date.UTC(2026, 2, 16, 9), now, "UTC"), "Mon 09:00, UTC")
    assert.strictEqual(Times.formatLocal(Date.UTC(2026, 3, 20, 9), now, "UTC"), "Mon 20 Apr 09:00, UTC")
    assert.strictEqual(Times.formatLocal(Date.UTC(2027, 0, 5, 10), now, "UTC"), "Tue 5 Jan 2027 10:00, UTC")
    assert.strictEqual(Times.formatDuration(90 * 60_000), "1 hour 30 minutes")
    assert.strictEqual(Times.formatDuration(2 * 86_400_000 + 60_000), "2 days 1 minute")
  })

  it("knows IANA zones and their canonical names", () => {
    assert.isTrue(Times.isTimeZone("Europe/Berlin"))
    assert.isFalse(Times.isTimeZone("Mars/Olympus"))
    assert.isFalse(Times.isTimeZone(""))
    assert.strictEqual(Times.canonicalZone("europe/berlin"), "Europe/Berlin")
  })
})
