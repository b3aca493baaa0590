/**
 * The fixture corpus: every update maps to exactly what the corpus says the recorder writes.
 */
import { decodeEvents } from "@deixis/core/ContextEvent"
import * as HistoryItem from "@deixis/chathistory/HistoryItem"
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { corpus, options } from "../src/TelegramFixtures.js"
import { mapUpdate } from "../src/UpdateMapper.js"

const decodeItem = Schema.decodeUnknownSync(HistoryItem.HistoryItem)

describe("TelegramFixtures: each real update maps to exactly what is recorded", () => {
  it("holds at least 60 update shapes, each named once", () => {
    assert.isAtLeast(corpus.length, 60)
    assert.strictEqual(new Set(corpus.map((f) => f.name)).size, corpus.length)
    assert.strictEqual(new Set(corpus.map((f) => f.update.update_id)).size, corpus.length)
  })

  for (const fixture of corpus) {
    it(fixture.name, () => {
      const mapped = mapUpdate(fixture.update, options)
      const { expected } = fixture
      assert.strictEqual(mapped.update_id, fixture.update.update_id)
      // The corpus states the wire forms; the mapper hands out what they decode to.
      assert.deepStrictEqual(mapped.events, Either.getOrThrow(decodeEvents(expected.events)))
      assert.deepStrictEqual(mapped.history, expected.history.map((item) => decodeItem(item)))
      assert.strictEqual(mapped.addressed, expected.addressed)
      assert.deepStrictEqual(mapped.migration, expected.migration)
      assert.deepStrictEqual(mapped.responses, expected.responses)
      assert.deepStrictEqual(mapped.retractions, expected.retractions)
      if (expected.skipped === undefined) assert.isUndefined(mapped.skipped, mapped.skipped)
      else assert.include(mapped.skipped ?? "(not skipped)", expected.skipped)
    })
  }
})
