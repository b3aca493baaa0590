import { assert, describe, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as fc from "effect/FastCheck"
import { ActiveContext, ReferenceResolver } from "../src/index.js"
import { activate, advance, ingest, list, message, minutes, resolve, withCore } from "./fixtures.js"

// The fast encoders must give exactly Schema.encode's JSON: same fields, same order, same strings.
let compared = 0
const sameJson = <A, I>(schema: Schema.Schema<A, I>, fast: (value: A) => I) => (value: A) => {
  // Not a value the tool can produce (a NaN timestamp, a date past year 275760): nothing to compare.
  let slow: Either.Either<I, unknown>
  try {
    slow = Schema.encodeEither(schema)(value)
  } catch {
    return false
  }
  if (Either.isLeft(slow)) return false
  assert.strictEqual(JSON.stringify(fast(value)), JSON.stringify(slow.right))
  compared++
  return true
}

describe("encodeResult", () => {
  it("ReferenceResolver.encodeResult is Schema.encode, byte for byte, on any valid result", () => {
    const check = sameJson(ReferenceResolver.ResolveResult, ReferenceResolver.encodeResult)
    compared = 0
    fc.assert(fc.property(Arbitrary.make(ReferenceResolver.ResolveResult), (result) => void check(result)), { numRuns: 300 })
    assert.isAbove(compared, 150) // most generated results are comparable
  })

  it("ActiveContext.encodeResult is Schema.encode, byte for byte, on any valid result", () => {
    const check = sameJson(ActiveContext.ListResult, ActiveContext.encodeResult)
    compared = 0
    fc.assert(fc.property(Arbitrary.make(ActiveContext.ListResult), (result) => void check(result)), { numRuns: 300 })
    assert.isAbove(compared, 150)
  })

  it("a record key \"__proto__\" (a custom feature may be named anything) is dropped, as Schema.encode drops it", () => {
    const features = JSON.parse(`{"recency": 1, "__proto__": 5, "x.embedding": 2}`) as Record<string, number>
    const result = ReferenceResolver.ResolveResult.make({
      status: "not_found", best_match: null, candidates: [], confidence: 0, reasons: ["below_min_score"], scope_used: "chat",
      diagnostics: { candidate_count: 1, fallback: false, chain_length: 0, top_score: 3, score_gap: 3, scored: [{ object_id: "1/1/link", score: 3, features }] }
    })
    assert.isTrue(sameJson(ReferenceResolver.ResolveResult, ReferenceResolver.encodeResult)(result))
    assert.deepStrictEqual(Object.keys(ReferenceResolver.encodeResult(result).diagnostics.scored[0]!.features), ["recency", "x.embedding"])
  })

  it.effect("and on the tools' real answers: polls, reminders, media, debug lists", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(
        message(1, { topic_id: 7, poll: { poll_id: "p1", question: "Lunch?" } }),
        message(2, { topic_id: 7, links: [{ url: "https://example.com/a", title: "A" }], sender_user_id: 200 }),
        message(3, { topic_id: 7, media: [{ kind: "media.image", file_id: "f", label: "cat.jpg" }] }),
        activate("summarized", { source_message_id: 2, kind: "link" }),
        activate("reminder_created", { source_message_id: 3, kind: "reminder", due_at: "2026-11-23T10:00:00Z" }),
        { type: "poll_closed", event_id: "close-1", poll_id: "p1" }
      )
      yield* advance(minutes(5))
      const resolved = yield* resolve({ chat_id: 1, topic_id: 7, current_message_id: 4, reply_to_message_id: 1, sender_user_id: 100, raw_user_text: "" })
      const listed = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 4, sender_user_id: 200, include_inactive_debug: true })
      assert.isTrue(sameJson(ReferenceResolver.ResolveResult, ReferenceResolver.encodeResult)(resolved))
      assert.isTrue(sameJson(ActiveContext.ListResult, ActiveContext.encodeResult)(listed))
      assert.isAbove(listed.objects.length, 1)
      assert.isDefined(listed.inactive_debug)
    })))
})
