/**
 * The contract suite of the {@link UpdateInbox.UpdateInbox} port. Every adapter (memory,
 * SQLite, PostgreSQL) runs the very same cases with the same expectations:
 *
 * ```ts
 * import { updateInboxContract } from "@deixis/core/UpdateInboxTesting"
 * updateInboxContract("sqlite", MyInbox.layer)
 * ```
 *
 * Each case builds the layer anew: it must give an empty inbox each time. Needs
 * `@effect/vitest` and `vitest` (optional peers).
 *
 * @since 0.1.0
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as UpdateInbox from "./UpdateInbox.js"

const t0 = Date.UTC(2026, 10, 22, 10, 0, 0)

const payload = (update_id: number) => JSON.stringify({ update_id, message: { text: `naïve 🧮 "${update_id}"` } })

const incoming = (
  ids: number | ReadonlyArray<number>,
  overrides: Partial<Omit<UpdateInbox.Incoming, "updates">> & { readonly payload?: string } = {}
): UpdateInbox.Incoming => ({
  source: "bot-1",
  owner: "a",
  now: t0,
  lease: 10_000,
  ...overrides,
  updates: (typeof ids === "number" ? [ids] : ids).map((update_id) => ({ update_id, payload: overrides.payload ?? payload(update_id) }))
})

/**
 * Registers the contract as a `describe` block named after the adapter.
 *
 * @since 0.1.0
 * @category testing
 */
export const updateInboxContract = <E>(name: string, inboxLayer: Layer.Layer<UpdateInbox.UpdateInbox, E>): void => {
  const test = (title: string, body: (inbox: UpdateInbox.UpdateInboxShape) => Effect.Effect<void, unknown>) =>
    it.effect(title, () => Effect.flatMap(UpdateInbox.UpdateInbox, body).pipe(Effect.provide(inboxLayer)), 60_000)

  describe(`UpdateInbox contract: ${name}`, () => {
    test("an update is new once; its id again is a duplicate, for another source it is new", (inbox) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* inbox.receive(incoming(5)), [5])
        assert.deepStrictEqual(yield* inbox.receive(incoming(5, { owner: "b", payload: "{}" })), [])
        assert.deepStrictEqual(yield* inbox.receive(incoming(5, { source: "bot-2" })), [5])
        assert.deepStrictEqual(yield* inbox.receive(incoming(6)), [6])
      }))

    test("a batch records its new ids once, skipping ids seen before or repeated in it", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming(3))
        const fresh = yield* inbox.receive(incoming([1, 2, 3, 2, 4]))
        assert.deepStrictEqual([...fresh].sort(), [1, 2, 4])
        assert.deepStrictEqual(yield* inbox.receive(incoming([])), [])
        const stale = yield* inbox.claimStale({ source: "bot-1", owner: "b", lease: 1, limit: 10, now: t0 + 10_000 })
        assert.deepStrictEqual(stale.map((s) => s.update_id), [1, 2, 3, 4])
        assert.strictEqual(stale[1]!.payload, payload(2))
      }))

    test("a handled update stays a duplicate", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming([5, 6]))
        yield* inbox.done("bot-1", [5, 6])
        yield* inbox.done("bot-1", [])
        assert.deepStrictEqual(yield* inbox.receive(incoming([5, 6], { now: t0 + 1_000_000 })), [])
      }))

    test("an update never marked done comes back once its claim expired, with its payload", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming(7))
        yield* inbox.receive(incoming(5))
        yield* inbox.receive(incoming(6))
        yield* inbox.done("bot-1", [6])
        const request = { source: "bot-1", owner: "b", lease: 10_000, limit: 10 }
        assert.deepStrictEqual(yield* inbox.claimStale({ ...request, now: t0 + 9_999 }), [])
        const stale = yield* inbox.claimStale({ ...request, now: t0 + 10_000 })
        assert.deepStrictEqual(stale, [
          { update_id: 5, payload: payload(5), attempts: 2 },
          { update_id: 7, payload: payload(7), attempts: 2 }
        ])
        // Claimed anew: not handed out again until this claim expires too.
        assert.deepStrictEqual(yield* inbox.claimStale({ ...request, owner: "c", now: t0 + 19_999 }), [])
        assert.strictEqual((yield* inbox.claimStale({ ...request, owner: "c", now: t0 + 20_000, limit: 1 })).length, 1)
        assert.deepStrictEqual(yield* inbox.claimStale({ ...request, source: "bot-2", now: t0 + 99_000 }), [])
      }))

    test("claimStale counts attempts", (inbox) =>
      Effect.gen(function*() {
        const request = { source: "bot-1", owner: "b", lease: 10_000, limit: 10 }
        const claim = (now: number) => Effect.map(inbox.claimStale({ ...request, now }), (stale) => stale.map((s) => [s.update_id, s.attempts]))
        yield* inbox.receive(incoming([5, 6]))
        // The receipt is the first attempt; each hand-out one more, per update.
        assert.deepStrictEqual(yield* claim(t0 + 10_000), [[5, 2], [6, 2]])
        yield* inbox.done("bot-1", [6])
        assert.deepStrictEqual(yield* claim(t0 + 20_000), [[5, 3]])
        // A redelivery of a pending id neither resets nor counts.
        assert.deepStrictEqual(yield* inbox.receive(incoming(5, { now: t0 + 25_000 })), [])
        assert.deepStrictEqual(yield* claim(t0 + 30_000), [[5, 4]])
        // A hand-out the receiver had no room for is not an attempt; its claim stands.
        yield* inbox.defer("bot-1", [5])
        assert.deepStrictEqual(yield* claim(t0 + 39_999), [])
        assert.deepStrictEqual(yield* claim(t0 + 40_000), [[5, 4]])
        // Deferred at its receipt: its first hand-out is its first attempt.
        yield* inbox.receive(incoming(7, { now: t0 + 40_000 }))
        yield* inbox.defer("bot-1", [7])
        assert.deepStrictEqual(yield* claim(t0 + 50_000), [[5, 5], [7, 1]])
        // Done, unknown, other sources' and empty lists are left alone.
        yield* inbox.defer("bot-1", [6, 99])
        yield* inbox.defer("bot-2", [5])
        yield* inbox.defer("bot-1", [])
        assert.deepStrictEqual(yield* claim(t0 + 60_000), [[5, 6], [7, 2]])
        assert.deepStrictEqual(yield* inbox.receive(incoming(6, { now: t0 + 60_000 })), [])
      }))

    test("of concurrent receivers of one batch each id is recorded by exactly one", (inbox) =>
      Effect.gen(function*() {
        const results = yield* Effect.forEach(
          Array.from({ length: 12 }, (_, i) => `owner-${i}`),
          (owner) => inbox.receive(incoming([9, 10], { owner })),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual([...results.flat()].sort((a, b) => a - b), [9, 10])
      }))

    test("concurrent claimants of stale updates never get the same one", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming(Array.from({ length: 40 }, (_, i) => i + 1)))
        const claims = yield* Effect.forEach(
          Array.from({ length: 6 }, (_, i) => `owner-${i}`),
          (owner) =>
            Effect.map(
              Effect.forEach(
                Array.from({ length: 4 }, () => 0),
                () => inbox.claimStale({ source: "bot-1", now: t0 + 60_000, owner, lease: 60_000, limit: 3 })
              ),
              (batches) => batches.flat()
            ),
          { concurrency: "unbounded" }
        )
        const ids = claims.flat().map((s) => s.update_id)
        assert.strictEqual(new Set(ids).size, ids.length)
        assert.strictEqual(ids.length, 40)
      }))

    test("sweep forgets handled ids received before the cut, never pending ones", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming(1))
        yield* inbox.receive(incoming(2))
        yield* inbox.receive(incoming(3, { now: t0 + 5_000 }))
        yield* inbox.done("bot-1", [1, 3])
        assert.strictEqual(yield* inbox.sweep(t0 + 1_000, 100), 1)
        assert.deepStrictEqual(yield* inbox.receive(incoming([1, 2, 3], { now: t0 + 6_000 })), [1])
      }))
  })
}
