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
  overrides: Partial<Omit<UpdateInbox.Incoming, "updates">> & { readonly payload?: string; readonly chat?: string } = {}
): UpdateInbox.Incoming => ({
  source: "bot-1",
  owner: "a",
  now: t0,
  lease: 10_000,
  ...overrides,
  updates: (typeof ids === "number" ? [ids] : ids).map((update_id) => ({
    update_id,
    chat: overrides.chat ?? "c",
    payload: overrides.payload ?? payload(update_id)
  }))
})

const settlement = (overrides: Partial<UpdateInbox.Settlement>): UpdateInbox.Settlement => ({
  source: "bot-1",
  owner: "a",
  now: t0,
  lease: 10_000,
  done: [],
  returned: [],
  hold: [],
  release: [],
  stall: [],
  ...overrides
})

const ids = (handed: ReadonlyArray<UpdateInbox.Handed>) => handed.map((h) => h.update_id)
const tries = (handed: ReadonlyArray<UpdateInbox.Handed>) => handed.map((h) => [h.update_id, h.attempts])

/**
 * Registers the contract as a `describe` block named after the adapter.
 *
 * @since 0.1.0
 * @category testing
 */
export const updateInboxContract = <E>(name: string, inboxLayer: Layer.Layer<UpdateInbox.UpdateInbox, E>): void => {
  const test = (title: string, body: (inbox: UpdateInbox.UpdateInboxShape) => Effect.Effect<void, unknown>) =>
    it.effect(title, () => Effect.flatMap(UpdateInbox.UpdateInbox, body).pipe(Effect.provide(inboxLayer)), 60_000)
  const stale = (inbox: UpdateInbox.UpdateInboxShape, now: number, owner = "b", limit = 10) =>
    inbox.claimStale({ source: "bot-1", owner, lease: 10_000, limit, now })

  describe(`UpdateInbox contract: ${name}`, () => {
    test("an update is new once; its id again is a duplicate, for another source it is new", (inbox) =>
      Effect.gen(function*() {
        assert.deepStrictEqual((yield* inbox.receive(incoming(5))).fresh, [5])
        assert.deepStrictEqual((yield* inbox.receive(incoming(5, { owner: "b", payload: "{}" }))).fresh, [])
        assert.deepStrictEqual((yield* inbox.receive(incoming(5, { source: "bot-2" }))).fresh, [5])
        assert.deepStrictEqual((yield* inbox.receive(incoming(6))).fresh, [6])
      }))

    test("a batch records its new ids once, skipping ids seen before or repeated in it, and hands them in order", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming(3))
        const received = yield* inbox.receive(incoming([4, 1, 2, 3, 2]))
        assert.deepStrictEqual([...received.fresh].sort(), [1, 2, 4])
        assert.deepStrictEqual(received.handed, [1, 2, 4].map((id) => ({ update_id: id, chat: "c", payload: payload(id), attempts: 1 })))
        assert.deepStrictEqual(received.waiting, [])
        assert.deepStrictEqual(yield* inbox.receive(incoming([])), { fresh: [], handed: [], waiting: [] })
      }))

    test("a handled update stays a duplicate", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming([5, 6]))
        yield* inbox.settle(settlement({ done: [5, 6], release: ["c"] }))
        assert.deepStrictEqual((yield* inbox.receive(incoming([5, 6], { now: t0 + 1_000_000 }))).fresh, [])
      }))

    test("a chat held by one receiver makes another's updates of it wait; the holder gets them first", (inbox) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(ids((yield* inbox.receive(incoming(1))).handed), [1])
        const other = yield* inbox.receive(incoming(2, { owner: "b" }))
        assert.deepStrictEqual(other, { fresh: [2], handed: [], waiting: ["c"] })
        // Another chat is free.
        assert.deepStrictEqual(ids((yield* inbox.receive(incoming(3, { owner: "b", chat: "d" }))).handed), [3])
        // The holder's next update of the chat comes after the one waiting.
        assert.deepStrictEqual(tries((yield* inbox.receive(incoming(4))).handed), [[2, 1], [4, 1]])
        assert.deepStrictEqual(yield* inbox.settle(settlement({ done: [1, 2, 4], release: ["c"] })), [])
        // Released: the chat is anyone's.
        assert.deepStrictEqual(ids((yield* inbox.receive(incoming(5, { owner: "b" }))).handed), [5])
      }))

    test("a released chat with updates waiting stays claimed and hands them over", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming(1))
        yield* inbox.receive(incoming([3, 2], { owner: "b" }))
        const over = yield* inbox.settle(settlement({ done: [1], release: ["c"] }))
        assert.deepStrictEqual(over, [2, 3].map((id) => ({ update_id: id, chat: "c", payload: payload(id), attempts: 1 })))
        assert.deepStrictEqual((yield* inbox.receive(incoming(4, { owner: "b" }))).waiting, ["c"])
        assert.deepStrictEqual(ids(yield* inbox.settle(settlement({ done: [2, 3], release: ["c"] }))), [4])
        assert.deepStrictEqual(yield* inbox.settle(settlement({ done: [4], release: ["c"] })), [])
        // Another owner's release of a chat it does not hold changes nothing.
        yield* inbox.receive(incoming(6))
        assert.deepStrictEqual(yield* inbox.settle(settlement({ owner: "b", release: ["c"], done: [] })), [])
        assert.deepStrictEqual((yield* inbox.receive(incoming(7, { owner: "b" }))).waiting, ["c"])
      }))

    test("settleAndReceive (where the adapter has it) settles, then receives, as the two calls in turn would", (inbox) =>
      Effect.gen(function*() {
        if (inbox.settleAndReceive === undefined) return
        yield* inbox.receive(incoming(1))
        yield* inbox.receive(incoming(2, { owner: "b" }))
        // Released first: the update waiting for the chat is handed over, then the batch's after it.
        const both = yield* inbox.settleAndReceive(settlement({ done: [1], release: ["c"] }), incoming([3, 4, 1]))
        assert.deepStrictEqual(both.settled, [{ update_id: 2, chat: "c", payload: payload(2), attempts: 1 }])
        assert.deepStrictEqual([...both.received.fresh].sort(), [3, 4])
        assert.deepStrictEqual(tries(both.received.handed), [[3, 1], [4, 1]])
        // A chat released with nothing waiting is free for the batch's other owner.
        const next = yield* inbox.settleAndReceive(settlement({ done: [2, 3, 4], release: ["c"] }), incoming(5, { owner: "b" }))
        assert.deepStrictEqual(next.settled, [])
        assert.deepStrictEqual(ids(next.received.handed), [5])
        // Nothing to settle, nothing received: nothing written.
        assert.deepStrictEqual(yield* inbox.settleAndReceive(settlement({}), incoming([])), { settled: [], received: { fresh: [], handed: [], waiting: [] } })
      }))

    test("an update given back waits again, its hand-out not counted", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming([1, 2]))
        assert.deepStrictEqual(yield* inbox.settle(settlement({ done: [1], returned: [2], hold: ["c"] })), [])
        assert.deepStrictEqual(tries(yield* inbox.settle(settlement({ release: ["c"] }))), [[2, 1]])
      }))

    test("a chat whose holder stopped settling is taken over after the lease, every update not done handed again", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming([1, 2]))
        yield* inbox.settle(settlement({ done: [1], hold: [] }))
        yield* inbox.receive(incoming(3, { owner: "b", now: t0 + 5_000 }))
        assert.deepStrictEqual(yield* stale(inbox, t0 + 9_999), [])
        assert.deepStrictEqual(tries(yield* stale(inbox, t0 + 10_000)), [[2, 2], [3, 1]])
        // Held by its new owner now: the old one's updates of it wait.
        assert.deepStrictEqual((yield* inbox.receive(incoming(4, { now: t0 + 10_000 }))).waiting, ["c"])
        assert.deepStrictEqual(yield* stale(inbox, t0 + 19_999, "c"), [])
        // Taken over again: each hand-out one more attempt.
        assert.deepStrictEqual(tries(yield* stale(inbox, t0 + 20_000, "c")), [[2, 3], [3, 2], [4, 1]])
        assert.deepStrictEqual(yield* inbox.claimStale({ source: "bot-2", owner: "b", lease: 1, limit: 10, now: t0 + 99_000 }), [])
      }))

    test("a chat taken over with nothing left to hand over is released at once", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming(9))
        yield* inbox.settle(settlement({ done: [9] }))
        assert.deepStrictEqual(yield* stale(inbox, t0 + 10_000), [])
        assert.deepStrictEqual(ids((yield* inbox.receive(incoming(10, { owner: "d", now: t0 + 10_000 }))).handed), [10])
      }))

    test("holding a chat extends its claim", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming(1))
        yield* inbox.settle(settlement({ now: t0 + 5_000, hold: ["c"] }))
        assert.deepStrictEqual(yield* stale(inbox, t0 + 14_999), [])
        assert.deepStrictEqual(ids(yield* stale(inbox, t0 + 15_000)), [1])
      }))

    test("a stalled chat is no one's until the lease ends, then handed out again in order", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming([1, 2]))
        yield* inbox.settle(settlement({ done: [1], stall: ["c"] }))
        assert.deepStrictEqual((yield* inbox.receive(incoming(3, { now: t0 + 1_000 }))).waiting, ["c"])
        assert.deepStrictEqual(yield* inbox.settle(settlement({ release: ["c"] })), [])
        assert.deepStrictEqual(yield* stale(inbox, t0 + 9_999, "a"), [])
        assert.deepStrictEqual(tries(yield* stale(inbox, t0 + 10_000, "a")), [[2, 2], [3, 1]])
      }))

    test("a chat given up (surrender) is not handed to its holder: it is anyone's at once, every update not done handed out in order", (inbox) =>
      Effect.gen(function*() {
        // "a" holds c with 1 and 2 handed; "b"'s 3 waits for it.
        yield* inbox.receive(incoming([1, 2]))
        assert.deepStrictEqual((yield* inbox.receive(incoming(3, { owner: "b" }))).waiting, ["c"])
        // "a" stops: 1 done, 2 given back, c given up — nothing handed to "a", though 3 waits.
        assert.deepStrictEqual(yield* inbox.settle(settlement({ done: [1], returned: [2], release: ["c"], surrender: ["c"] })), [])
        // Another holder's chat is not given up by "a".
        yield* inbox.receive(incoming(10, { owner: "b", chat: "d" }))
        assert.deepStrictEqual(yield* inbox.settle(settlement({ surrender: ["d"] })), [])
        // Claimable at once (no lease to wait out), by one process: 2's given-back hand-out not counted.
        const taken = yield* stale(inbox, t0)
        assert.deepStrictEqual(tries(taken), [[2, 1], [3, 1]])
        assert.deepStrictEqual(yield* stale(inbox, t0, "e"), [])
        assert.deepStrictEqual((yield* inbox.receive(incoming(11, { owner: "b", chat: "d" }))).handed.map((h) => h.update_id), [11])
      }))

    test("a chat given up with an update handed and not settled (its run interrupted) hands it out again at once, counted; one with nothing left is released", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming(1))
        yield* inbox.receive(incoming(2, { chat: "d" }))
        assert.deepStrictEqual(yield* inbox.settle(settlement({ done: [2], surrender: ["c", "d"] })), [])
        assert.deepStrictEqual(tries(yield* stale(inbox, t0)), [[1, 2]])
        // d had nothing left: anyone's, its next update handed to its receiver alone.
        assert.deepStrictEqual(tries((yield* inbox.receive(incoming(3, { owner: "e", chat: "d" }))).handed), [[3, 1]])
      }))

    test("a chat given up is taken over by the next receiver of one of its updates, earlier updates first", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming([1, 2]))
        yield* inbox.settle(settlement({ done: [1], returned: [2], surrender: ["c"] }))
        assert.deepStrictEqual(tries((yield* inbox.receive(incoming(3, { owner: "b", now: t0 + 1 }))).handed), [[2, 1], [3, 1]])
        // Held by "b" now.
        assert.deepStrictEqual((yield* inbox.receive(incoming(4, { now: t0 + 2 }))).waiting, ["c"])
      }))

    test("of concurrent receivers of one batch each id is recorded by exactly one, and handed once", (inbox) =>
      Effect.gen(function*() {
        const results = yield* Effect.forEach(
          Array.from({ length: 12 }, (_, i) => `owner-${i}`),
          (owner) => inbox.receive(incoming([9, 10], { owner })),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual([...results.flatMap((r) => r.fresh)].sort((a, b) => a - b), [9, 10])
        assert.deepStrictEqual([...results.flatMap((r) => ids(r.handed))].sort((a, b) => a - b), [9, 10])
      }))

    test("concurrent claimants of stale chats never get the same update", (inbox) =>
      Effect.gen(function*() {
        yield* Effect.forEach(Array.from({ length: 40 }, (_, i) => i + 1), (id) => inbox.receive(incoming(id, { chat: `chat-${id % 13}` })))
        const claims = yield* Effect.forEach(
          Array.from({ length: 6 }, (_, i) => `owner-${i}`),
          (owner) =>
            Effect.map(
              Effect.forEach(Array.from({ length: 4 }, () => 0), () => stale(inbox, t0 + 60_000, owner, 1)),
              (batches) => batches.flat()
            ),
          { concurrency: "unbounded" }
        )
        const handed = claims.flat().map((s) => s.update_id)
        assert.strictEqual(new Set(handed).size, handed.length)
        assert.strictEqual(handed.length, 40)
      }))

    test("sweep forgets handled ids received before the cut, never pending ones", (inbox) =>
      Effect.gen(function*() {
        yield* inbox.receive(incoming(1))
        yield* inbox.receive(incoming(2))
        yield* inbox.receive(incoming(3, { now: t0 + 5_000 }))
        yield* inbox.settle(settlement({ done: [1, 3] }))
        assert.strictEqual(yield* inbox.sweep(t0 + 1_000, 100), 1)
        assert.deepStrictEqual((yield* inbox.receive(incoming([1, 2, 3], { now: t0 + 6_000 }))).fresh, [1])
      }))
  })
}
