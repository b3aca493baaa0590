import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Envelope from "../src/Envelope.js"

const keys = (json: string) => Object.keys(JSON.parse(json) as object)

describe("Envelope", () => {
  it("a result within budget is rendered whole", () => {
    const envelope = Envelope.ok("2 active objects in topic", { objects: [{ id: "a" }, { id: "b" }] })
    assert.strictEqual(Envelope.render(envelope, 1000), JSON.stringify(envelope))
  })

  it("a long array keeps its first items and says how many were left out", () => {
    const objects = Array.from({ length: 200 }, (_, i) => ({ object_id: `5/${i}/link`, title: "x".repeat(40) }))
    const json = Envelope.render(Envelope.ok("200 active objects in topic", { objects }), 2000)
    assert.isAtMost(json.length, 2000)
    const parsed = JSON.parse(json) as { summary: string; data: { objects: Array<unknown> } }
    assert.deepStrictEqual(parsed.data.objects[0], { object_id: "5/0/link", title: "x".repeat(40) })
    assert.match(String(parsed.data.objects.at(-1)), /^…\d+ more$/)
    assert.include(parsed.summary, "[data cut to fit 2000 characters]")
  })

  it("an error keeps its code when everything else must go", () => {
    const envelope = Envelope.failure("ConversationStateConflict", "m".repeat(5000), { current_revision: 3, blob: "b".repeat(5000) })
    const json = Envelope.render(envelope, Envelope.MIN_BUDGET)
    assert.isAtMost(json.length, Envelope.MIN_BUDGET)
    const parsed = JSON.parse(json) as Envelope.Envelope
    assert.deepStrictEqual([parsed.status, parsed.error?.code], ["error", "ConversationStateConflict"])
  })

  it("surrogate pairs are never split", () => {
    const json = Envelope.render(Envelope.ok("emoji", { text: "🧮".repeat(3000) }), 500)
    assert.isAtMost(json.length, 500)
    const text = (JSON.parse(json) as { data: { text: string } }).data.text
    assert.notMatch(text, /[\ud800-\udbff](?![\udc00-\udfff])/)
  })

  it("non-JSON values are written as JSON would write them", () => {
    const data = { n: Number.NaN, u: undefined, big: 10n, nested: [undefined, () => 1] }
    const parsed = JSON.parse(Envelope.render(Envelope.ok("odd", data), 1000)) as { data: unknown }
    assert.deepStrictEqual(parsed.data, { n: null, big: "10", nested: [null, null] })
  })

  it("any result under any budget renders as valid JSON of the four keys within the budget", () =>
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.string({ maxLength: 400 }),
        fc.boolean(),
        fc.integer({ min: Envelope.MIN_BUDGET, max: 3000 }),
        (data, summary, failed, budget) => {
          const envelope = failed ? Envelope.failure("Boom", summary, data) : Envelope.ok(summary, data)
          const json = Envelope.render(envelope, budget)
          assert.isAtMost(json.length, budget)
          assert.deepStrictEqual(keys(json), ["status", "summary", "error", "data"])
          assert.strictEqual((JSON.parse(json) as Envelope.Envelope).status, failed ? "error" : "ok")
        }
      ),
      { numRuns: 300 }
    ))
})
