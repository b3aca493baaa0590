import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as fc from "fast-check"
import * as Errors from "../src/Errors.js"
import * as ConversationState from "../src/ConversationState.js"
import { conversationStateStoreContract } from "../src/ConversationStateTesting.js"

type JsonValue = ConversationState.JsonValue
type JsonObject = ConversationState.JsonObject
type Scope = ConversationState.ConversationScope

const {
  applyMergePatch,
  canonicalJson,
  ConversationStateStore,
  diffMergePatch,
  jsonEquals
} = ConversationState

const chat: Scope = { chat_id: "100", topic_id: null }
const topic7: Scope = { chat_id: "100", topic_id: "7" }
const topic8: Scope = { chat_id: "100", topic_id: "8" }
const noon = Date.parse("2026-11-22T12:00:00Z")

/** A fresh memory store and service for one test. */
const withState = (options: ConversationState.Options = {}) =>
  Effect.provide(ConversationState.layer(options).pipe(Layer.provide(ConversationState.layerMemory)))

/**
 * A memory store that yields to other fibers between a read and the following write, as a
 * database round trip would, so that unserialised writers really interleave.
 */
const yieldingMemory = Layer.effect(
  ConversationStateStore,
  Effect.map(ConversationStateStore, (inner) =>
    ConversationStateStore.of({
      get: (scope) => Effect.zipLeft(inner.get(scope), Effect.yieldNow()),
      put: inner.put,
      migrateChat: inner.migrateChat
    }))
).pipe(Layer.provide(ConversationState.layerMemory))

const withYieldingState = Effect.provide(ConversationState.layer().pipe(Layer.provide(yieldingMemory)))

const update = (request: ConversationState.UpdateRequest) =>
  Effect.flatMap(ConversationState.ConversationState, (service) => service.update(request))
const get = (scope: Scope) => Effect.flatMap(ConversationState.ConversationState, (service) => service.get(scope))

/** Runs `effect` expecting a failure, and returns it. */
const failure = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.either(effect), (result) =>
    Either.isLeft(result) ? Effect.succeed(result.left) : Effect.dieMessage("expected a failure, got a success"))

// -----------------------------------------------------------------------------
// The pure merge patch
// -----------------------------------------------------------------------------

describe("applyMergePatch (RFC 7386)", () => {
  it("nested merge: objects merge recursively and untouched siblings survive", () => {
    const target = { household: { adults: 2, married: false, income: { wages: 50000, rent: 900 } }, reform: "flat" }
    const result = applyMergePatch(target, { household: { married: true, income: { rent: 1000 } } })
    assert.deepStrictEqual(result, {
      household: { adults: 2, married: true, income: { wages: 50000, rent: 1000 } },
      reform: "flat"
    })
  })

  it("null clears a key at any depth, and clearing a missing key changes nothing", () => {
    const target = { a: 1, b: { c: 2, d: 3 } }
    assert.deepStrictEqual(applyMergePatch(target, { a: null, b: { d: null } }), { b: { c: 2 } })
    assert.deepStrictEqual(applyMergePatch(target, { missing: null, b: { missing: null } }), target)
    // A null inside a new object is a deletion too, never a stored null.
    assert.deepStrictEqual(applyMergePatch({}, { x: { y: null, z: 1 } }), { x: { z: 1 } })
  })

  it("array replace: an array in the patch replaces the old array whole", () => {
    const target = { children: [{ age: 4 }, { age: 7 }], tags: ["a", "b", "c"] }
    const result = applyMergePatch(target, { children: [{ age: 5 }], tags: [] })
    assert.deepStrictEqual(result, { children: [{ age: 5 }], tags: [] })
    // Nulls inside a replacing array are data, not deletions.
    assert.deepStrictEqual(applyMergePatch({ a: [1] }, { a: [null, { b: null }] }), { a: [null, { b: null }] })
  })

  it("empty patch: applying {} returns an equal document", () => {
    const target = { a: [1, 2], b: { c: "x" } }
    assert.deepStrictEqual(applyMergePatch(target, {}), target)
  })

  it("a non-object patch replaces the target whole, and an object patch replaces a non-object target", () => {
    assert.deepStrictEqual(applyMergePatch({ a: 1 }, "text"), "text")
    assert.deepStrictEqual(applyMergePatch({ a: 1 }, null), null)
    assert.deepStrictEqual(applyMergePatch([1, 2], { a: 1 }), { a: 1 })
    assert.deepStrictEqual(applyMergePatch({ a: "scalar" }, { a: { b: 1 } }), { a: { b: 1 } })
  })

  it("every example of RFC 7386 Appendix A holds", () => {
    const cases: ReadonlyArray<readonly [JsonValue, JsonValue, JsonValue]> = [
      [{ a: "b" }, { a: "c" }, { a: "c" }],
      [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
      [{ a: "b" }, { a: null }, {}],
      [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
      [{ a: ["b"] }, { a: "c" }, { a: "c" }],
      [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
      [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
      [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
      [["a", "b"], ["c", "d"], ["c", "d"]],
      [{ a: "b" }, ["c"], ["c"]],
      [{ a: "foo" }, null, null],
      [{ a: "foo" }, "bar", "bar"],
      [{ e: null }, { a: 1 }, { e: null, a: 1 }],
      [[1, 2], { a: "b", c: null }, { a: "b" }],
      [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }]
    ]
    for (const [target, patch, expected] of cases) {
      assert.deepStrictEqual(applyMergePatch(target, patch), expected, JSON.stringify([target, patch]))
    }
  })

  it("neither the target nor the patch is mutated", () => {
    const target = { a: { b: 1 }, list: [1] }
    const patch = { a: { b: null, c: 2 }, list: [2] }
    const targetCopy = structuredClone(target)
    const patchCopy = structuredClone(patch)
    applyMergePatch(target, patch)
    assert.deepStrictEqual(target, targetCopy)
    assert.deepStrictEqual(patch, patchCopy)
  })
})

// -----------------------------------------------------------------------------
// Properties
// -----------------------------------------------------------------------------

// Few keys, so that patches and documents collide often.
const key = fc.constantFrom("a", "b", "c", "d", "ü", "__proto__x")
const leaf = fc.oneof(fc.boolean(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string())
const { patchArb } = fc.letrec<{ patchArb: JsonObject; valueArb: JsonValue }>((tie) => ({
  patchArb: fc.dictionary(key, fc.oneof(fc.constant(null), tie("valueArb")), { maxKeys: 4 }),
  valueArb: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(fc.oneof(leaf, fc.constant(null)), { maxLength: 3 }),
    tie("patchArb")
  )
}))
// A document is whatever a patch can produce from nothing: no null-valued object members.
const documentArb = patchArb.map((patch) => applyMergePatch({}, patch) as JsonObject)

/** The same JSON with every object's keys inserted in reverse order. */
const reverseKeys = (value: JsonValue): JsonValue => {
  if (Array.isArray(value)) return (value as ReadonlyArray<JsonValue>).map(reverseKeys)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reverseKeys(v)]))
  }
  return value
}

describe("merge patch laws", () => {
  it("applying the same patch twice is idempotent", () => {
    fc.assert(fc.property(documentArb, patchArb, (target, patch) => {
      const once = applyMergePatch(target, patch)
      assert.deepStrictEqual(applyMergePatch(once, patch), once)
    }))
  })

  it("a patch produced by diffing reproduces the target", () => {
    fc.assert(fc.property(documentArb, documentArb, (from, to) => {
      const patch = diffMergePatch(from, to)
      assert.deepStrictEqual(applyMergePatch(from, patch), to)
    }))
  })

  it("the diff of a document with itself is the empty patch", () => {
    fc.assert(fc.property(documentArb, (doc) => {
      assert.deepStrictEqual(diffMergePatch(doc, reverseKeys(doc)), {})
    }))
  })

  it("jsonEquals ignores key order but not array order or values", () => {
    fc.assert(fc.property(documentArb, (doc) => {
      assert.isTrue(jsonEquals(doc, reverseKeys(doc)))
      assert.isFalse(jsonEquals(doc, { ...doc, extra_key: 1 }))
    }))
    assert.isFalse(jsonEquals([1, 2], [2, 1]))
    assert.isFalse(jsonEquals({ a: 1 }, { a: "1" }))
    assert.isFalse(jsonEquals({ a: null }, {}))
  })
})

// -----------------------------------------------------------------------------
// Rendering
// -----------------------------------------------------------------------------

describe("rendering", () => {
  it("rendering stability: equal states render identically whatever their key order", () => {
    fc.assert(fc.property(documentArb, (state) => {
      const snapshot = { ...chat, state, revision: 3, updated_at: noon, updated_by: "42" }
      const reordered = { ...snapshot, state: reverseKeys(state) as JsonObject }
      assert.strictEqual(ConversationState.render(reordered), ConversationState.render(snapshot))
      assert.isTrue(jsonEquals(JSON.parse(canonicalJson(state)), state))
    }))
  })

  it("renders a header with revision, time and author, then compact JSON with sorted keys", () => {
    const rendered = ConversationState.render({
      ...chat,
      state: { reform: "flat tax", household: { married: true, adults: 2, children: [{ age: 4 }] } },
      revision: 3,
      updated_at: noon,
      updated_by: "42"
    })
    assert.strictEqual(
      rendered,
      "Conversation state, revision 3 (updated 2026-11-22T12:00:00.000Z by \"42\"):\n" +
        "{\"household\":{\"adults\":2,\"children\":[{\"age\":4}],\"married\":true},\"reform\":\"flat tax\"}"
    )
  })

  it("renders a scope never written as revision 0 and {}", () => {
    assert.strictEqual(
      ConversationState.render(ConversationState.emptySnapshot(topic7)),
      "Conversation state, revision 0 (empty):\n{}"
    )
  })

  it.effect("the service renders the stored state of the scope asked for", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(noon)
      yield* update({ scope: topic7, patch: { b: 1, a: 2 }, updated_by: "5" })
      const service = yield* ConversationState.ConversationState
      assert.strictEqual(
        yield* service.render(topic7),
        "Conversation state, revision 1 (updated 2026-11-22T12:00:00.000Z by \"5\"):\n{\"a\":2,\"b\":1}"
      )
      assert.strictEqual(yield* service.render(topic8), "Conversation state, revision 0 (empty):\n{}")
    }).pipe(withState()))
})

// -----------------------------------------------------------------------------
// The service
// -----------------------------------------------------------------------------

describe("ConversationState service", () => {
  it.effect("a scope never written reads as revision 0 with an empty state", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* get(chat), {
        chat_id: "100",
        topic_id: null,
        state: {},
        revision: 0,
        updated_at: null,
        updated_by: null
      })
    }).pipe(withState()))

  it.effect("nested merge: a follow-up patches one nested field, keeps the rest, and bumps the revision", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(noon)
      const first = yield* update({
        scope: chat,
        patch: { household: { adults: 2, married: false, children: [{ age: 4 }] }, reform: "flat" },
        updated_by: "u1"
      })
      assert.strictEqual(first.revision, 1)
      assert.isTrue(first.changed)
      yield* TestClock.adjust("90 seconds")
      const second = yield* update({ scope: chat, patch: { household: { married: true } }, updated_by: "u2" })
      assert.deepStrictEqual(second, {
        chat_id: "100",
        topic_id: null,
        state: { household: { adults: 2, married: true, children: [{ age: 4 }] }, reform: "flat" },
        revision: 2,
        updated_at: noon + 90_000,
        updated_by: "u2",
        changed: true
      })
      const { changed: _, ...stored } = second
      assert.deepStrictEqual(yield* get(chat), stored)
    }).pipe(withState()))

  it.effect("null clears: a null member deletes the key from the stored state", () =>
    Effect.gen(function*() {
      yield* update({ scope: chat, patch: { a: 1, b: { c: 2, d: 3 } } })
      const result = yield* update({ scope: chat, patch: { a: null, b: { c: null } } })
      assert.deepStrictEqual(result.state, { b: { d: 3 } })
      assert.isFalse(Object.hasOwn((yield* get(chat)).state, "a"))
      assert.strictEqual(result.revision, 2)
    }).pipe(withState()))

  it.effect("array replace: an array in a patch replaces the stored array whole", () =>
    Effect.gen(function*() {
      yield* update({ scope: chat, patch: { children: [{ age: 4 }, { age: 7 }] } })
      const result = yield* update({ scope: chat, patch: { children: [{ age: 8 }] } })
      assert.deepStrictEqual((yield* get(chat)).state, { children: [{ age: 8 }] })
      assert.strictEqual(result.revision, 2)
    }).pipe(withState()))

  it.effect("empty patch: a patch that changes nothing keeps the revision, time and author", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(noon)
      yield* update({ scope: chat, patch: { a: 1, list: [1, 2], nested: { b: true } }, updated_by: "u1" })
      yield* TestClock.adjust("1 hour")
      const noops: ReadonlyArray<JsonObject> = [
        {},
        { a: 1 },
        { list: [1, 2] },
        { nested: { b: true } },
        { absent: null },
        { nested: { absent: null } }
      ]
      for (const patch of noops) {
        const result = yield* update({ scope: chat, patch, updated_by: "u2", expected_revision: 1 })
        assert.isFalse(result.changed, JSON.stringify(patch))
        assert.strictEqual(result.revision, 1)
        assert.strictEqual(result.updated_at, noon)
        assert.strictEqual(result.updated_by, "u1")
      }
      assert.strictEqual((yield* get(chat)).revision, 1)
      // An empty patch on a scope never written does not create it either.
      const fresh = yield* update({ scope: topic7, patch: {} })
      assert.strictEqual(fresh.revision, 0)
      assert.isFalse(fresh.changed)
    }).pipe(withState()))

  it.effect("conflict: a stale expected_revision is rejected with the current revision and nothing is written", () =>
    Effect.gen(function*() {
      yield* update({ scope: topic7, patch: { a: 1 } })
      yield* update({ scope: topic7, patch: { a: 2 } })
      const error = yield* failure(update({ scope: topic7, patch: { a: 3 }, expected_revision: 1 }))
      assert.strictEqual(error._tag, "ConversationStateConflict")
      if (error._tag === "ConversationStateConflict") {
        assert.strictEqual(error.current_revision, 2)
        assert.strictEqual(error.expected_revision, 1)
        assert.strictEqual(error.topic_id, "7")
      }
      assert.deepStrictEqual((yield* get(topic7)).state, { a: 2 })
      // Even a patch that would change nothing is refused when stale.
      const stale = yield* failure(update({ scope: topic7, patch: {}, expected_revision: 0 }))
      assert.strictEqual(stale._tag, "ConversationStateConflict")
      // The current revision applies.
      const ok = yield* update({ scope: topic7, patch: { a: 3 }, expected_revision: 2 })
      assert.strictEqual(ok.revision, 3)
    }).pipe(withState()))

  it.effect("conflict: a scope never written accepts only expected_revision 0", () =>
    Effect.gen(function*() {
      const error = yield* failure(update({ scope: chat, patch: { a: 1 }, expected_revision: 1 }))
      assert.strictEqual(error._tag === "ConversationStateConflict" && error.current_revision, 0)
      const ok = yield* update({ scope: chat, patch: { a: 1 }, expected_revision: 0 })
      assert.strictEqual(ok.revision, 1)
    }).pipe(withState()))

  const Household = Schema.Struct({
    household: Schema.Struct({
      adults: Schema.Int.pipe(Schema.between(1, 10)),
      married: Schema.Boolean,
      children: Schema.Array(Schema.Struct({ age: Schema.Int }))
    }),
    reform: Schema.optional(Schema.String)
  })
  const valid = { household: { adults: 2, married: false, children: [{ age: 4 }] } }

  it.effect("schema rejection: a result that does not decode is rejected with the failing path, nothing written", () =>
    Effect.gen(function*() {
      yield* update({ scope: chat, patch: valid })
      const cases: ReadonlyArray<readonly [JsonObject, string]> = [
        [{ household: { children: [{ age: "four" }] } }, "household.children[0].age"],
        [{ household: { adults: 11 } }, "household.adults"],
        [{ household: { married: null } }, "household.married"],
        [{ reform: 3 }, "reform"],
        [{ marital_stauts: "married" }, "marital_stauts"]
      ]
      for (const [patch, path] of cases) {
        const error = yield* failure(update({ scope: chat, patch }))
        assert.strictEqual(error._tag, "ConversationStateRejected", JSON.stringify(patch))
        if (error._tag === "ConversationStateRejected") {
          assert.strictEqual(error.path, path)
          assert.include(error.message, path)
        }
      }
      const stored = yield* get(chat)
      assert.strictEqual(stored.revision, 1)
      assert.deepStrictEqual(stored.state, valid)
      const ok = yield* update({ scope: chat, patch: { household: { married: true }, reform: "flat" } })
      assert.strictEqual(ok.revision, 2)
    }).pipe(withState({ schema: Household })))

  it.effect("schema rejection: the first write must already decode, and the root path is $", () =>
    Effect.gen(function*() {
      const error = yield* failure(update({ scope: chat, patch: { reform: "flat" } }))
      assert.strictEqual(error._tag === "ConversationStateRejected" && error.path, "household")
      const schemaOfRoot = Schema.Struct({ a: Schema.Number }).pipe(
        Schema.filter((s) => s.a > 0 || "a must be positive")
      )
      const rootError = yield* failure(update({ scope: chat, patch: { a: -1 } }).pipe(withState({ schema: schemaOfRoot })))
      assert.strictEqual(rootError._tag === "ConversationStateRejected" && rootError.path, "$")
      assert.strictEqual((yield* get(chat)).revision, 0)
    }).pipe(withState({ schema: Household })))

  it.effect("size cap: a state over the cap is rejected with its size; a state at the cap is accepted", () =>
    Effect.gen(function*() {
      // {"a":"…"} is 8 bytes of JSON plus the string; "é" is 2 UTF-8 bytes.
      const atCap = { a: "é".repeat(28) }
      assert.strictEqual(ConversationState.stateSize(atCap), 64)
      const ok = yield* update({ scope: chat, patch: atCap })
      assert.strictEqual(ok.revision, 1)
      const error = yield* failure(update({ scope: chat, patch: { b: 1 } }))
      assert.strictEqual(error._tag, "ConversationStateTooLarge")
      if (error._tag === "ConversationStateTooLarge") {
        assert.strictEqual(error.size_bytes, 70)
        assert.strictEqual(error.max_bytes, 64)
      }
      assert.deepStrictEqual((yield* get(chat)).state, atCap)
      // Shrinking is always allowed.
      const shrunk = yield* update({ scope: chat, patch: { a: "short" } })
      assert.strictEqual(shrunk.revision, 2)
    }).pipe(withState({ maxBytes: 64 })))

  it.effect("size cap: DEIXIS_STATE_MAX_BYTES defaults to 8192 bytes", () =>
    Effect.gen(function*() {
      const filler = (total: number) => ({ f: "x".repeat(total - 8) })
      assert.strictEqual(ConversationState.stateSize(filler(8192)), 8192)
      yield* update({ scope: chat, patch: filler(8192) })
      const error = yield* failure(update({ scope: chat, patch: filler(8193) }))
      assert.strictEqual(error._tag === "ConversationStateTooLarge" && error.max_bytes, 8192)
    }).pipe(
      Effect.provide(ConversationState.layerConfig().pipe(Layer.provide(ConversationState.layerMemory))),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
    ))

  it.effect("size cap: DEIXIS_STATE_MAX_BYTES configures the cap, and a non-positive value fails the layer", () =>
    Effect.gen(function*() {
      const live = ConversationState.layerConfig().pipe(Layer.provide(ConversationState.layerMemory))
      const error = yield* failure(update({ scope: chat, patch: { a: "123456789" } }).pipe(
        Effect.provide(live),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["DEIXIS_STATE_MAX_BYTES", "16"]])))
      ))
      assert.strictEqual(error._tag === "ConversationStateTooLarge" && error.max_bytes, 16)
      const exit = yield* Effect.exit(Layer.build(live).pipe(
        Effect.scoped,
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["DEIXIS_STATE_MAX_BYTES", "0"]])))
      ))
      assert.isTrue(Exit.isFailure(exit))
    }))

  it.effect("invalid patch: a non-object patch or non-JSON content is refused with its path", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [[1, 2], "$"],
        ["text", "$"],
        [null, "$"],
        [{ a: { b: Number.NaN } }, "a.b"],
        [{ a: [1, undefined] }, "a[1]"],
        [{ a: new Date(0) }, "a"],
        [JSON.parse("{\"x\":{\"__proto__\":{\"polluted\":true}}}"), "x.__proto__"]
      ]
      for (const [patch, path] of cases) {
        // The typed API is also called from plain JavaScript: check at run time.
        const error = yield* failure(update({ scope: chat, patch: patch as JsonValue }))
        assert.strictEqual(error._tag, "InvalidMergePatch", String(path))
        if (error._tag === "InvalidMergePatch") assert.strictEqual(error.path, path)
      }
      assert.strictEqual((yield* get(chat)).revision, 0)
      assert.isFalse("polluted" in {})
    }).pipe(withState()))

  it.effect("concurrency: 100 concurrent blind patches on one scope are all applied, none lost", () =>
    Effect.gen(function*() {
      const results = yield* Effect.forEach(
        Array.from({ length: 100 }, (_, i) => i),
        (i) => update({ scope: chat, patch: { [`k${i}`]: i } }),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(results.map((r) => r.revision).sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i + 1))
      const final = yield* get(chat)
      assert.strictEqual(final.revision, 100)
      assert.deepStrictEqual(final.state, Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i])))
    }).pipe(withYieldingState))

  it.effect("concurrency: 100 concurrent patches at one expected revision: one applied, 99 cleanly conflicted", () =>
    Effect.gen(function*() {
      yield* update({ scope: chat, patch: { start: true } })
      const results = yield* Effect.forEach(
        Array.from({ length: 100 }, (_, i) => i),
        (i) => Effect.either(update({ scope: chat, patch: { winner: i }, expected_revision: 1 })),
        { concurrency: "unbounded" }
      )
      const applied = results.filter(Either.isRight)
      const conflicted = results.filter(Either.isLeft)
      assert.strictEqual(applied.length, 1)
      assert.strictEqual(conflicted.length, 99)
      for (const { left } of conflicted) {
        assert.isTrue(left._tag === "ConversationStateConflict" && left.current_revision === 2)
      }
      const final = yield* get(chat)
      assert.strictEqual(final.revision, 2)
      assert.strictEqual(final.state["winner"], results.findIndex(Either.isRight))
    }).pipe(withYieldingState))

  it.effect("concurrency: 100 read-modify-write increments retried on conflict end at exactly 100", () =>
    Effect.gen(function*() {
      const increment = Effect.gen(function*() {
        const current = yield* get(chat)
        yield* Effect.yieldNow()
        const count = current.state["count"]
        yield* update({
          scope: chat,
          patch: { count: (typeof count === "number" ? count : 0) + 1 },
          expected_revision: current.revision
        })
      }).pipe(Effect.retry({ while: (e) => e._tag === "ConversationStateConflict" }))
      yield* Effect.all(Array.from({ length: 100 }, () => increment), { concurrency: "unbounded", discard: true })
      const final = yield* get(chat)
      assert.strictEqual(final.state["count"], 100)
      assert.strictEqual(final.revision, 100)
    }).pipe(withState()))

  it.effect("concurrency: two service instances over one store (two processes) lose no blind patch", () =>
    Effect.gen(function*() {
      // Two instances share one store but not their per-scope locks, as two processes would.
      const first = yield* ConversationState.make()
      const second = yield* ConversationState.make()
      yield* Effect.forEach(
        Array.from({ length: 40 }, (_, i) => i),
        (i) => (i % 2 === 0 ? first : second).update({ scope: chat, patch: { [`k${i}`]: i } }),
        { concurrency: "unbounded", discard: true }
      )
      const final = yield* first.get(chat)
      assert.strictEqual(final.revision, 40)
      assert.strictEqual(Object.keys(final.state).length, 40)
    }).pipe(Effect.provide(yieldingMemory)))

  it.effect("scope isolation: another topic's state is never read or written", () =>
    Effect.gen(function*() {
      const inner = yield* ConversationStateStore
      const touched: Array<string> = []
      const record = (scope: Scope) => touched.push(`${scope.chat_id}/${scope.topic_id ?? "-"}`)
      const spy = ConversationStateStore.of({
        get: (scope) => Effect.zipRight(Effect.sync(() => record(scope)), inner.get(scope)),
        put: (snapshot) => Effect.zipRight(Effect.sync(() => record(snapshot)), inner.put(snapshot)),
        migrateChat: inner.migrateChat
      })
      const service = yield* Effect.provideService(ConversationState.make(), ConversationStateStore, spy)
      yield* service.update({ scope: topic7, patch: { in7: true } })
      yield* service.update({ scope: topic7, patch: { more: 1 } })
      touched.length = 0

      const in8 = yield* service.update({ scope: topic8, patch: { in8: true }, expected_revision: 0 })
      const inChat = yield* service.get(chat)
      const inOtherChat = yield* service.get({ chat_id: "101", topic_id: "7" })
      assert.deepStrictEqual(touched, ["100/8", "100/8", "100/-", "101/7"])
      assert.deepStrictEqual(in8.state, { in8: true })
      assert.strictEqual(in8.revision, 1)
      assert.deepStrictEqual(inChat.state, {})
      assert.deepStrictEqual(inOtherChat.state, {})
      assert.deepStrictEqual((yield* service.get(topic7)).state, { in7: true, more: 1 })
      assert.strictEqual((yield* service.get(topic7)).revision, 2)
    }).pipe(Effect.provide(ConversationState.layerMemory)))

  it("scope isolation: patches to interleaved topics each equal the fold of their own patches", () => {
    const scopes: ReadonlyArray<Scope> = [chat, topic7, topic8, { chat_id: "101", topic_id: null }]
    fc.assert(fc.property(
      fc.array(fc.tuple(fc.integer({ min: 0, max: scopes.length - 1 }), patchArb), { maxLength: 25 }),
      (steps) => {
        const program = Effect.gen(function*() {
          for (const [i, patch] of steps) yield* update({ scope: scopes[i] ?? chat, patch })
          return yield* Effect.forEach(scopes, get)
        }).pipe(withState())
        const finals = Effect.runSync(program)
        scopes.forEach((_, i) => {
          const own = steps.filter(([j]) => j === i).reduce<JsonValue>((doc, [, patch]) => applyMergePatch(doc, patch), {})
          assert.deepStrictEqual(finals[i]?.state, own)
        })
      }
    ))
  })
})

// -----------------------------------------------------------------------------
// Tools and wire format
// -----------------------------------------------------------------------------

describe("tools", () => {
  it.effect("update_conversation_state accepts integer ids and returns the wire form", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(noon)
      const result = yield* ConversationState.updateConversationState({
        chat_id: -100123,
        topic_id: 7,
        patch: { household: { adults: 2 } },
        updated_by: 42
      })
      assert.deepStrictEqual(result, {
        chat_id: "-100123",
        topic_id: "7",
        state: { household: { adults: 2 } },
        revision: 1,
        updated_at: "2026-11-22T12:00:00.000Z",
        updated_by: "42",
        changed: true
      })
      const read = yield* ConversationState.getConversationState({ chat_id: "-100123", topic_id: "7" })
      assert.strictEqual(read.revision, 1)
      const topicless = yield* ConversationState.getConversationState({ chat_id: -100123 })
      assert.strictEqual(topicless.revision, 0)
      assert.strictEqual(topicless.topic_id, null)
    }).pipe(withState()))

  it.effect("update_conversation_state: a malformed patch is an InvalidMergePatch, other bad arguments an InvalidRequest", () =>
    Effect.gen(function*() {
      const badPatch = yield* failure(ConversationState.updateConversationState({ chat_id: 1, patch: { a: { b: Infinity } } }))
      assert.isTrue(badPatch._tag === "InvalidMergePatch" && badPatch.path === "a.b")
      const arrayPatch = yield* failure(ConversationState.updateConversationState({ chat_id: 1, patch: [1] }))
      assert.isTrue(arrayPatch._tag === "InvalidMergePatch" && arrayPatch.path === "$")
      const badRevision = yield* failure(
        ConversationState.updateConversationState({ chat_id: 1, patch: {}, expected_revision: -1 })
      )
      assert.isTrue(badRevision._tag === "InvalidRequest" && badRevision.path === "expected_revision")
      const noChat = yield* failure(ConversationState.getConversationState({ topic_id: 1 }))
      assert.isTrue(noChat._tag === "InvalidRequest" && noChat.path === "chat_id")
    }).pipe(withState()))

  it("the parameters' JSON Schema describes the patch as an object and expected_revision as optional", () => {
    const schema = JSONSchema.make(ConversationState.tools.update_conversation_state.parameters)
    const definition = schema.$defs?.["UpdateConversationStateParams"]
    assert.isDefined(definition)
    assert.deepStrictEqual(
      definition !== undefined && "required" in definition ? definition.required : undefined,
      ["chat_id", "patch"]
    )
    const properties = definition !== undefined && "properties" in definition ? definition.properties : undefined
    assert.strictEqual(properties?.["patch"] !== undefined && "type" in properties["patch"] && properties["patch"].type, "object")
    assert.isDefined(properties?.["expected_revision"])
  })

  it("errors carry their HTTP status, read by Errors.statusOf for an HTTP edge", () => {
    const status = Errors.statusOf
    assert.strictEqual(status(ConversationState.InvalidMergePatch), 400)
    assert.strictEqual(status(ConversationState.ConversationStateConflict), 409)
    assert.strictEqual(status(ConversationState.ConversationStateTooLarge), 413)
    assert.strictEqual(status(ConversationState.ConversationStateRejected), 422)
  })

  it("a conflict round-trips through its Schema with current_revision on the wire", () => {
    const error = ConversationState.conflict(topic7, 1, 4)
    const wire = Schema.encodeSync(ConversationState.ConversationStateConflict)(error)
    assert.deepStrictEqual(wire, {
      _tag: "ConversationStateConflict",
      chat_id: "100",
      topic_id: "7",
      expected_revision: 1,
      current_revision: 4,
      message: "expected revision 1, but the state is at revision 4"
    })
    const decoded = Schema.decodeUnknownSync(ConversationState.ConversationStateConflict)(wire)
    assert.strictEqual(decoded.current_revision, 4)
    assert.instanceOf(decoded, ConversationState.ConversationStateConflict)
  })
})

conversationStateStoreContract("layerMemory", ConversationState.layerMemory)
