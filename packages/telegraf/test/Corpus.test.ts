/**
 * The fixture corpus: every update maps to exactly what the corpus says the recorder writes.
 */
import { assert, describe, it } from "@effect/vitest"
import { corpus, options } from "../src/TelegramFixtures.js"
import { mapUpdate } from "../src/UpdateMapper.js"

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
      assert.deepStrictEqual(mapped.events, expected.events)
      assert.deepStrictEqual(mapped.history, expected.history)
      assert.strictEqual(mapped.addressed, expected.addressed)
      assert.deepStrictEqual(mapped.migration, expected.migration)
      assert.deepStrictEqual(mapped.responses, expected.responses)
      assert.deepStrictEqual(mapped.retractions, expected.retractions)
      if (expected.skipped === undefined) assert.isUndefined(mapped.skipped, mapped.skipped)
      else assert.include(mapped.skipped ?? "(not skipped)", expected.skipped)
    })
  }
})
