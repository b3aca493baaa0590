import { assert, describe, it } from "@effect/vitest"
import { ActiveContext } from "@deixis/core"
import { ResolveRequest } from "../src/Api.js"
import * as Arbitrary from "effect/Arbitrary"
import * as Either from "effect/Either"
import * as fc from "effect/FastCheck"
import * as Schema from "effect/Schema"
import { HttpApi } from "@effect/platform"
import * as Option from "effect/Option"
import { Api } from "../src/Api.js"
import * as FastDecoder from "../src/FastDecoder.js"

// The contract: the fast decoder answers `undefined`, or exactly what the Schema decodes
// (the same value, with its keys in the same order), never a value the Schema refuses.
const agrees = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema)
  const fast = FastDecoder.make(schema)
  return (input: unknown): "fast" | "schema" => {
    const quick = fast(input)
    if (quick === FastDecoder.NO) return "schema"
    const slow = decode(input)
    assert.isTrue(Either.isRight(slow), `the fast decoder accepted what the Schema refuses: ${JSON.stringify(input)}`)
    assert.deepStrictEqual(quick, Either.getOrThrow(slow))
    assert.strictEqual(JSON.stringify(quick), JSON.stringify(Either.getOrThrow(slow)), "key order")
    return "fast"
  }
}

const cases = [
  { name: "resolve", schema: ResolveRequest },
  { name: "list", schema: ActiveContext.ListRequest }
] as const

// Every Schema an endpoint decodes: path, query, headers and payload.
const endpointSchemas: Array<{ readonly name: string; readonly schema: Schema.Schema<unknown, unknown> }> = []
HttpApi.reflect(Api, {
  onGroup: () => {},
  onEndpoint: ({ endpoint, group }) => {
    for (const [part, schema] of [
      ["path", endpoint.pathSchema],
      ["query", endpoint.urlParamsSchema],
      ["headers", endpoint.headersSchema],
      ["payload", endpoint.payloadSchema]
    ] as const) {
      if (Option.isSome(schema)) endpointSchemas.push({ name: `${group.identifier}.${endpoint.name} ${part}`, schema: schema.value as unknown as Schema.Schema<unknown, unknown> })
    }
  }
})

// Valid requests, as a client would send them: the Schema's encoded side of arbitrary values,
// through JSON.
const valid = <A, I>(schema: Schema.Schema<A, I>) =>
  Arbitrary.make(schema).map((value) => JSON.parse(JSON.stringify(Schema.encodeSync(schema)(value))) as Record<string, unknown>)

const idKeys = ["chat_id", "topic_id", "current_message_id", "reply_to_message_id", "sender_user_id"]

// A value in a field's place: the odd values the Schema must be the one to judge.
const oddValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    "", " ", "\u0000", "\u202e", "\ud800", "x".repeat(129), "x".repeat(16_385), 0, -0, 1.5, 2 ** 53, -(2 ** 53), 11, 51, 0,
    null, true, [], {}, ["article"], [], Array(13).fill("poll"), "media.x", "x.ticket", "article", "latest", "mine"
  ),
  fc.integer(),
  fc.maxSafeInteger()
)

const mutation = (request: Record<string, unknown>) =>
  fc.oneof(
    // A field set to an odd value (or a new key).
    fc.tuple(
      fc.oneof(fc.constantFrom(...Object.keys(request), ...idKeys, "max_candidates", "max_results", "allowed_kinds", "normalized_reference_hints", "record_touch", "include_diagnostics", "include_inactive_debug", "request_id", "raw_user_text"), fc.string()),
      oddValue
    ).map(([key, value]) => ({ ...request, [key]: value })),
    // A field removed.
    fc.constantFrom(...(Object.keys(request).length > 0 ? Object.keys(request) : ["chat_id"])).map((key) => {
      const copy = { ...request }
      delete copy[key]
      return copy
    }),
    // Ids as integers where they are digits.
    fc.constant(Object.fromEntries(Object.entries(request).map(([k, v]) =>
      idKeys.includes(k) && typeof v === "string" && /^-?\d{1,15}$/.test(v) ? [k, Number(v)] : [k, v]
    ))),
    // A hint changed.
    fc.tuple(fc.constantFrom("positional_hint", "ordinal_hint", "target_kind_hint", "ownership_hint", "recency_hint", "other"), oddValue)
      .map(([key, value]) => ({ ...request, normalized_reference_hints: { ...(request["normalized_reference_hints"] as object ?? {}), [key]: value } }))
  )

describe("fast decoders compiled from the Schemas", () => {
  for (const c of endpointSchemas) {
    it(`${c.name}: agrees with the Schema on arbitrary JSON values and on valid values`, () => {
      const check = agrees(c.schema)
      fc.assert(fc.property(fc.jsonValue({ maxDepth: 3 }), (input) => void check(input)), { numRuns: 300 })
      // A Schema without an Arbitrary (the merge patch's recursive JSON) is judged on JSON values alone.
      const values = (() => {
        try {
          return valid(c.schema)
        } catch {
          return undefined
        }
      })()
      if (values !== undefined) fc.assert(fc.property(values, (input) => void check(input)), { numRuns: 200 })
    })
  }

  it("the payloads of the endpoints clients call most compile (no Schema interpreter on their common path)", () => {
    for (const schema of [ResolveRequest, ActiveContext.ListRequest] as const) assert.isTrue(FastDecoder.isCompiled(schema as Schema.Schema.Any))
    const payloads = endpointSchemas.filter((c) => /^(events\.ingest|webhook\.telegram) payload$/.test(c.name))
    assert.strictEqual(payloads.length, 2)
    for (const c of payloads) assert.isTrue(FastDecoder.isCompiled(c.schema), c.name)
  })

  for (const c of cases) {
    it(`${c.name}: agrees with the Schema on arbitrary JSON values`, () => {
      const check = agrees(c.schema as Schema.Schema<unknown, unknown>)
      fc.assert(fc.property(fc.jsonValue(), (input) => void check(input)), { numRuns: 2_000 })
    })

    it(`${c.name}: agrees with the Schema on valid requests and their mutations`, () => {
      const check = agrees(c.schema as Schema.Schema<unknown, unknown>)
      const seen = { fast: 0, schema: 0 }
      fc.assert(
        fc.property(valid(c.schema as Schema.Schema<unknown, unknown>), (request) => void seen[check(request)]++),
        { numRuns: 1_000 }
      )
      // Valid requests of the shapes clients send are answered without the Schema.
      assert.isAbove(seen.fast, seen.schema)
      fc.assert(
        fc.property(valid(c.schema as Schema.Schema<unknown, unknown>).chain(mutation), (input) => void check(input)),
        { numRuns: 3_000 }
      )
    })
  }

  it("agrees with the Schema at every bound", () => {
    const base = { chat_id: -1001, current_message_id: 13 }
    const values: ReadonlyArray<readonly [string, unknown]> = [
      ["raw_user_text", "x".repeat(16_384)], ["raw_user_text", "x".repeat(16_385)], ["raw_user_text", ""],
      ["max_candidates", 0], ["max_candidates", 1], ["max_candidates", 10], ["max_candidates", 11], ["max_candidates", 2.5],
      ["max_results", 0], ["max_results", 1], ["max_results", 50], ["max_results", 51],
      ["allowed_kinds", []], ["allowed_kinds", Array(12).fill("poll")], ["allowed_kinds", Array(13).fill("poll")],
      ["allowed_kinds", ["media.x"]], ["allowed_kinds", ["x.ticket"]], ["allowed_kinds", ["image"]],
      ["chat_id", "x".repeat(128)], ["chat_id", "x".repeat(129)], ["chat_id", "\u{1F600}".repeat(128)], ["chat_id", "\u{1F600}".repeat(129)],
      ["chat_id", 2 ** 53 - 1], ["chat_id", 2 ** 53], ["chat_id", -(2 ** 53 - 1)], ["chat_id", -(2 ** 53)], ["chat_id", -0], ["chat_id", 1e21],
      ["chat_id", "a\u0085"], ["chat_id", "a\u2028"], ["chat_id", "\udc00"], ["chat_id", ""], ["topic_id", null], ["topic_id", ""],
      ["request_id", 5], ["request_id", "r"], ["record_touch", 1], ["include_inactive_debug", "true"], ["include_diagnostics", true], ["include_diagnostics", "true"],
      ["normalized_reference_hints", { target_kind_hint: "image" }], ["normalized_reference_hints", { target_kind_hint: "media.image" }],
      ["normalized_reference_hints", { target_kind_hint: "x.y" }], ["normalized_reference_hints", []], ["normalized_reference_hints", null]
    ]
    for (const c of cases) {
      const check = agrees(c.schema as Schema.Schema<unknown, unknown>)
      for (const [key, value] of values) check({ ...base, [key]: value })
    }
  })

  it("answers the requests of the service's own examples without the Schema", () => {
    const requests: ReadonlyArray<unknown> = [
      { chat_id: -1001, topic_id: "7", current_message_id: 10_001, reply_to_message_id: 9997, sender_user_id: 1007, raw_user_text: "what does it say?", normalized_reference_hints: { target_kind_hint: "article" } },
      { chat_id: -1001, current_message_id: 13 },
      { chat_id: "-1001", topic_id: null, current_message_id: "13", allowed_kinds: ["poll", "x.ticket"], max_candidates: 5, request_id: "r-1", record_touch: true }
    ]
    const check = agrees(ResolveRequest as Schema.Schema<unknown, unknown>)
    for (const request of requests) assert.strictEqual(check(request), "fast", JSON.stringify(request))
    const checkList = agrees(ActiveContext.ListRequest as Schema.Schema<unknown, unknown>)
    assert.strictEqual(checkList({ chat_id: -1001, topic_id: 7, current_message_id: 13, max_results: 50, include_inactive_debug: true }), "fast")
  })
})
