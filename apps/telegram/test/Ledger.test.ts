import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as FastCheck from "effect/FastCheck"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Ledger from "../src/Ledger.js"

const limits: Ledger.Limits = { perKey: 2, maxAttempts: 3 }
const arrival = (update_id: number, chat: string, attempts = 1, key = chat) => ({ update_id, chat, key, attempts })
const lease = 80_000

describe("Ledger", () => {
  it("admits updates up to a key's share; a chat's later updates in the batch are deferred after its first deferral", () => {
    const [ledger, decisions] = Ledger.admit(
      Ledger.empty,
      [arrival(1, "a"), arrival(2, "a"), arrival(3, "a"), arrival(4, "b"), arrival(5, "a", 1, "a/7"), arrival(6, "b", 4), { update_id: 7, unreadable: true }],
      1_000,
      limits
    )
    assert.deepStrictEqual(decisions, ["queued", "queued", "deferred", "queued", "deferred", "abandoned", "unreadable"])
    assert.strictEqual(ledger.total, 3)
    assert.strictEqual(Ledger.queuedOf(ledger, "a"), 2)
    assert.deepStrictEqual(Chunk.toReadonlyArray(ledger.owed.returned), [3, 5])
    assert.deepStrictEqual(Chunk.toReadonlyArray(ledger.owed.done), [6, 7])
    assert.strictEqual(Ledger.room(ledger, 10), 7)
  })

  it("a chat with nothing left in flight is owed a release; a stalled chat's later runs are given back until then", () => {
    let [ledger] = Ledger.admit(Ledger.empty, [arrival(1, "a"), arrival(2, "a")], 0, limits)
    ledger = Ledger.finish(ledger, { chat: "a", key: "a", ids: [1] }, "stalled")
    assert.isTrue(Ledger.isStalled(ledger, "a"))
    assert.isFalse(HashSet.has(ledger.owed.release, "a"))
    ledger = Ledger.finish(ledger, { chat: "a", key: "a", ids: [2] }, "returned")
    assert.isFalse(Ledger.isStalled(ledger, "a"))
    assert.isTrue(HashSet.has(ledger.owed.release, "a"))
    assert.isTrue(HashSet.has(ledger.owed.stall, "a"))
    assert.deepStrictEqual(Chunk.toReadonlyArray(ledger.owed.returned), [2])
    assert.strictEqual(ledger.total, 0)
  })

  it("a settlement stays owed until written: one that failed or was interrupted goes with the next, ahead of what came since", () => {
    let [ledger] = Ledger.admit(Ledger.empty, [arrival(1, "a"), arrival(2, "b")], 0, limits)
    ledger = Ledger.finish(ledger, { chat: "a", key: "a", ids: [1] }, "done")
    const [writing, taken] = Ledger.take(ledger, 20_000, lease)
    assert.deepStrictEqual(taken?.done, [1])
    assert.deepStrictEqual(taken?.release, ["a"])
    // b was claimed at 0, an eighth of the lease ago: its claim is extended.
    assert.deepStrictEqual(taken?.hold, ["b"])
    // One at a time: nothing is taken while one is written.
    assert.isUndefined(Ledger.take(writing, 20_000, lease)[1])
    // Meanwhile b finishes; the write is interrupted.
    const later = Ledger.finish(writing, { chat: "b", key: "b", ids: [2] }, "done")
    const again = Ledger.unwritten(later)
    assert.isTrue(Ledger.owesAnything(again))
    const [, retaken] = Ledger.take(again, 21_000, lease)
    assert.deepStrictEqual(retaken?.done, [1, 2])
    assert.deepStrictEqual([...(retaken?.release ?? [])].sort(), ["a", "b"])
    // Written: nothing owed, released chats no longer held.
    const done = Ledger.written(Ledger.take(again, 21_000, lease)[0])
    assert.isFalse(Ledger.owesAnything(done))
    assert.isFalse(HashMap.has(done.heldSince, "a"))
    assert.isFalse(HashMap.has(done.heldSince, "b"))
  })

  it("a chat owed a release that took updates since is not released (it is owed one when they finish)", () => {
    let [ledger] = Ledger.admit(Ledger.empty, [arrival(1, "a")], 0, limits)
    ledger = Ledger.finish(ledger, { chat: "a", key: "a", ids: [1] }, "done")
    ;[ledger] = Ledger.admit(ledger, [arrival(2, "a")], 1, limits)
    const [, taken] = Ledger.take(ledger, 2, lease)
    assert.deepStrictEqual(taken?.release, [])
    assert.deepStrictEqual(taken?.done, [1])
  })

  it("stopping, finished and stalled chats are given up, not released; a chat still in flight is neither; a lost write owes them again", () => {
    let [ledger] = Ledger.admit(Ledger.empty, [arrival(1, "a"), arrival(2, "b"), arrival(3, "c"), arrival(4, "d")], 0, limits)
    ledger = Ledger.finish(ledger, { chat: "a", key: "a", ids: [1] }, "done")
    ledger = Ledger.finish(ledger, { chat: "b", key: "b", ids: [2] }, "returned")
    ledger = Ledger.finish(ledger, { chat: "c", key: "c", ids: [3] }, "stalled")
    // Not stopping: released, c stalled.
    const [, plain] = Ledger.take(ledger, 1, lease)
    assert.deepStrictEqual([[...plain!.release].sort(), plain!.stall, plain!.surrender], [["a", "b", "c"], ["c"], []])
    const [writing, taken] = Ledger.take(ledger, 1, lease, true)
    assert.deepStrictEqual([taken!.release, taken!.stall, [...taken!.surrender!].sort()], [[], [], ["a", "b", "c"]])
    assert.deepStrictEqual([taken!.done, taken!.returned], [[1], [2]])
    // d is still in flight: neither given up nor released.
    assert.isTrue(HashMap.has(writing.inFlight, "d"))
    const [, again] = Ledger.take(Ledger.unwritten(writing), 2, lease, true)
    assert.deepStrictEqual([...again!.surrender!].sort(), ["a", "b", "c"])
    const done = Ledger.written(writing)
    assert.deepStrictEqual([...HashMap.keys(done.heldSince)], ["d"])
  })

  it("a chat is held again once an eighth of the lease has passed since its claim was last extended, not before", () => {
    let [ledger] = Ledger.admit(Ledger.empty, [arrival(1, "a")], 0, limits)
    ;[ledger] = Ledger.admit(ledger, [arrival(2, "b")], 4_000, limits)
    // An eighth of the lease is 10 s: nothing is due at 9.999 s.
    assert.isUndefined(Ledger.take(ledger, 9_999, lease)[1])
    const [writing, taken] = Ledger.take(ledger, 10_000, lease)
    assert.deepStrictEqual(taken?.hold, ["a"])
    ledger = Ledger.written(writing)
    // a extended at 10 s, b still from 4 s: b is due at 14 s, a at 20 s.
    assert.isUndefined(Ledger.take(ledger, 13_999, lease)[1])
    assert.deepStrictEqual(Ledger.take(ledger, 14_000, lease)[1]?.hold, ["b"])
    // A chat whose release is not written yet takes updates again: it keeps its claim's time.
    ledger = Ledger.finish(ledger, { chat: "a", key: "a", ids: [1] }, "done")
    ;[ledger] = Ledger.admit(ledger, [arrival(3, "a")], 19_000, limits)
    const [, later] = Ledger.take(Ledger.finish(ledger, { chat: "b", key: "b", ids: [2] }, "done"), 20_000, lease)
    assert.deepStrictEqual(later?.hold, ["a"])
  })

  it("a settlement that was not written leaves its chats due: the next one holds them", () => {
    let [ledger] = Ledger.admit(Ledger.empty, [arrival(1, "a")], 0, limits)
    ;[ledger] = Ledger.admit(ledger, [arrival(2, "b")], 5_000, limits)
    const [writing, taken] = Ledger.take(ledger, 10_000, lease)
    assert.deepStrictEqual(taken?.hold, ["a"])
    assert.deepStrictEqual(Ledger.take(Ledger.unwritten(writing), 10_100, lease)[1]?.hold, ["a"])
    // A chat finished and released by a settlement that was lost, then given updates again: it
    // keeps its claim's time, and is held when that is due.
    ;[ledger] = Ledger.admit(Ledger.empty, [arrival(3, "c")], 0, limits)
    ;[ledger] = Ledger.admit(ledger, [arrival(4, "d")], 1_000, limits)
    ledger = Ledger.finish(ledger, { chat: "c", key: "c", ids: [3] }, "done")
    const [releasing, released] = Ledger.take(ledger, 10_500, lease)
    assert.deepStrictEqual([released?.release, released?.hold], [["c"], []])
    ;[ledger] = Ledger.admit(Ledger.unwritten(releasing), [arrival(5, "c")], 10_600, limits)
    assert.deepStrictEqual(Ledger.take(ledger, 10_700, lease)[1]?.hold, ["c"])
  })

  it.prop(
    "whatever happens between settlements, a settlement holds exactly the chats in flight whose claim is an eighth of the lease old",
    [
      FastCheck.array(FastCheck.tuple(FastCheck.integer({ min: 0, max: 3 }), FastCheck.integer({ min: 0, max: 5 }), FastCheck.integer({ min: 0, max: 4_000 })), {
        maxLength: 80
      })
    ],
    ([steps]) => {
      let ledger = Ledger.empty
      let now = 0
      let id = 1
      const queued: Array<{ readonly id: number; readonly chat: string }> = []
      for (const [op, chat, elapsed] of steps) {
        now += elapsed
        if (op === 0 || op === 1) {
          const [after, [decision]] = Ledger.admit(ledger, [arrival(id, `c${chat}`)], now, { perKey: 100, maxAttempts: 3 })
          if (decision === "queued") queued.push({ id, chat: `c${chat}` })
          id++
          ledger = after
        } else if (op === 2 && queued.length > 0) {
          const run = queued.splice(chat % queued.length, 1)[0]!
          ledger = Ledger.finish(ledger, { chat: run.chat, key: run.chat, ids: [run.id] }, "done")
        } else {
          const due = [...HashMap.keys(ledger.inFlight)]
            .filter((c) => now - HashMap.unsafeGet(ledger.heldSince, c) >= lease / 8)
            .sort()
          const [taking, taken] = Ledger.take(ledger, now, lease)
          if (ledger.writing === undefined) assert.deepStrictEqual([...(taken?.hold ?? [])].sort(), due)
          ledger = chat % 3 === 0 ? Ledger.unwritten(taking) : Ledger.written(taking)
        }
      }
    },
    { fastCheck: { numRuns: 1000 } }
  )

  it.prop(
    "whatever the order of arrivals and finishes, every admitted id is owed exactly once and nothing stays in flight",
    [FastCheck.array(FastCheck.tuple(FastCheck.integer({ min: 0, max: 4 }), FastCheck.integer({ min: 1, max: 4 })), { maxLength: 60 }), FastCheck.integer()],
    ([arrivals, seed]) => {
      let ledger = Ledger.empty
      let next = 1
      const queued: Array<{ readonly id: number; readonly chat: string }> = []
      const admitted: Array<number> = []
      const settled: Array<number> = []
      let rng = seed
      const flip = () => ((rng = (rng * 1103515245 + 12345) & 0x7fffffff) % 3)
      for (const [chat, attempts] of arrivals) {
        const id = next++
        const [after, [decision]] = Ledger.admit(ledger, [arrival(id, `c${chat}`, attempts)], id, limits)
        ledger = after
        if (decision === "queued") queued.push({ id, chat: `c${chat}` })
        admitted.push(id)
        // Now and then a run finishes, or a settlement is written or lost.
        const r = flip()
        if (r === 0 && queued.length > 0) {
          const run = queued.shift()!
          ledger = Ledger.finish(ledger, { chat: run.chat, key: run.chat, ids: [run.id] }, flip() === 0 ? "returned" : "done")
        } else if (r === 1) {
          const [taking, taken] = Ledger.take(ledger, id, lease)
          if (taken !== undefined && flip() !== 0) {
            settled.push(...taken.done, ...taken.returned)
            ledger = Ledger.written(taking)
          } else ledger = Ledger.unwritten(taking)
        }
      }
      for (const run of queued) ledger = Ledger.finish(ledger, { chat: run.chat, key: run.chat, ids: [run.id] }, "done")
      const [last, taken] = Ledger.take(ledger, next, lease)
      settled.push(...(taken?.done ?? []), ...(taken?.returned ?? []))
      ledger = Ledger.written(last)
      assert.deepStrictEqual([...settled].sort((a, b) => a - b), admitted)
      assert.strictEqual(ledger.total, 0)
      assert.strictEqual(HashMap.size(ledger.inFlight), 0)
      assert.isFalse(Ledger.owesAnything(ledger))
    }
  )
})
