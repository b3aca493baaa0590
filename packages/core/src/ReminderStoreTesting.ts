/**
 * The contract suite of the {@link ReminderStore.ReminderStore} port. Every adapter (memory,
 * SQLite, PostgreSQL) runs the very same cases with the same expectations:
 *
 * ```ts
 * import { reminderStoreContract } from "@deixis/core/ReminderStoreTesting"
 * reminderStoreContract("sqlite", MyReminderStore.layer)
 * ```
 *
 * Claims reach across chats, so each case builds the layer anew: it must give an empty store
 * each time (a fresh file, a fresh schema). Needs `@effect/vitest` and `vitest` (optional peers).
 *
 * @since 0.1.0
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ReminderStore from "./ReminderStore.js"

const t0 = Date.UTC(2026, 10, 22, 10, 0, 0)

const reminder = (
  chat: string,
  id: number,
  due: number,
  overrides: Partial<ReminderStore.Reminder> = {}
): ReminderStore.Reminder => ({
  object_id: `${chat}/${id}/reminder`,
  chat_id: chat,
  topic_id: null,
  source_message_id: String(id),
  created_by_user_id: "42",
  text: `reminder ${id} — naïve 🧮 "quoted"`,
  due_at: t0 + due,
  created_at: t0,
  ...overrides
})

const plain = (r: ReminderStore.ClaimedReminder): ReminderStore.Reminder => {
  const { attempts: _, ...rest } = r
  return rest
}

/**
 * Registers the contract as a `describe` block named after the adapter.
 *
 * @since 0.1.0
 * @category testing
 */
export const reminderStoreContract = <E>(
  name: string,
  storeLayer: Layer.Layer<ReminderStore.ReminderStore, E>
): void => {
  const test = (title: string, body: (store: ReminderStore.ReminderStoreShape) => Effect.Effect<void, unknown>) =>
    it.effect(title, () => Effect.flatMap(ReminderStore.ReminderStore, body).pipe(Effect.provide(storeLayer)), 60_000)

  describe(`ReminderStore contract: ${name}`, () => {
    test("a reminder reads back exactly; an unknown one is none", (store) =>
      Effect.gen(function*() {
        const r = reminder("-100", 1, 60_000, { topic_id: "7", created_by_user_id: null })
        yield* store.add(r)
        assert.deepStrictEqual(Option.getOrThrow(yield* store.get("-100", r.object_id)), r)
        assert.isTrue(Option.isNone(yield* store.get("-100", "-100/2/reminder")))
        assert.isTrue(Option.isNone(yield* store.get("-101", r.object_id)))
      }))

    test("adding the same reminder again replaces it", (store) =>
      Effect.gen(function*() {
        yield* store.add(reminder("-100", 1, 60_000))
        const changed = reminder("-100", 1, 120_000, { text: "changed" })
        yield* store.add(changed)
        assert.deepStrictEqual(Option.getOrThrow(yield* store.get("-100", changed.object_id)), changed)
        assert.strictEqual((yield* store.stats(t0)).pending, 1)
      }))

    test("remove says whether the reminder was there", (store) =>
      Effect.gen(function*() {
        const r = reminder("-100", 1, 60_000)
        yield* store.add(r)
        assert.isFalse(yield* store.remove("-101", r.object_id))
        assert.isTrue(yield* store.remove("-100", r.object_id))
        assert.isFalse(yield* store.remove("-100", r.object_id))
        assert.isTrue(Option.isNone(yield* store.get("-100", r.object_id)))
      }))

    test("list gives the topic's reminders first, then the rest of the chat, each by due time, bounded", (store) =>
      Effect.gen(function*() {
        yield* Effect.forEach([
          reminder("-100", 1, 50_000, { topic_id: "9" }),
          reminder("-100", 2, 40_000, { topic_id: "7" }),
          reminder("-100", 3, 10_000, { topic_id: null }),
          reminder("-100", 4, 30_000, { topic_id: "7" }),
          reminder("-100", 5, 20_000, { topic_id: "9" }),
          reminder("-200", 6, 1_000, { topic_id: "7" })
        ], store.add, { discard: true })
        const ids = (list: ReadonlyArray<ReminderStore.Reminder>) => list.map((r) => r.source_message_id)
        assert.deepStrictEqual(ids(yield* store.list("-100", { topic_id: "7", limit: 10 })), ["4", "2", "3", "5", "1"])
        assert.deepStrictEqual(ids(yield* store.list("-100", { topic_id: null, limit: 10 })), ["3", "5", "4", "2", "1"])
        assert.deepStrictEqual(ids(yield* store.list("-100", { topic_id: "7", limit: 3 })), ["4", "2", "3"])
        assert.deepStrictEqual(ids(yield* store.list("-300", { topic_id: "7", limit: 3 })), [])
      }))

    test("claimDue hands out due reminders only, earliest first, at most limit", (store) =>
      Effect.gen(function*() {
        yield* Effect.forEach(
          [reminder("-100", 1, 30_000), reminder("-200", 2, 10_000), reminder("-100", 3, 20_000), reminder("-100", 4, 90_000)],
          store.add,
          { discard: true }
        )
        const first = yield* store.claimDue({ now: t0 + 60_000, owner: "a", lease: 5_000, limit: 2 })
        assert.deepStrictEqual(first.map((r) => [r.source_message_id, r.attempts]), [["2", 0], ["3", 0]])
        assert.deepStrictEqual(plain(first[0]!), reminder("-200", 2, 10_000))
        const second = yield* store.claimDue({ now: t0 + 60_000, owner: "b", lease: 5_000, limit: 10 })
        assert.deepStrictEqual(second.map((r) => r.source_message_id), ["1"])
        assert.deepStrictEqual(yield* store.claimDue({ now: t0 + 60_000, owner: "c", lease: 5_000, limit: 10 }), [])
        assert.deepStrictEqual(yield* store.stats(t0 + 60_000), { pending: 4, due: 3 })
      }))

    test("a claim hides the reminder until its lease expires; then another claimant gets it, attempts counted", (store) =>
      Effect.gen(function*() {
        yield* store.add(reminder("-100", 1, 0))
        assert.strictEqual((yield* store.claimDue({ now: t0, owner: "a", lease: 10_000, limit: 10 })).length, 1)
        assert.deepStrictEqual(Option.getOrThrow(yield* store.nextDueAt), t0 + 10_000)
        assert.strictEqual((yield* store.claimDue({ now: t0 + 9_999, owner: "b", lease: 10_000, limit: 10 })).length, 0)
        const again = yield* store.claimDue({ now: t0 + 10_000, owner: "b", lease: 10_000, limit: 10 })
        assert.deepStrictEqual(again.map((r) => r.attempts), [1])
        // The first claimant lost its claim: it can neither complete nor release it.
        assert.isFalse(yield* store.complete("-100", "-100/1/reminder", "a"))
        assert.isFalse(yield* store.retryAt("-100", "-100/1/reminder", "a", t0))
        assert.isTrue(yield* store.complete("-100", "-100/1/reminder", "b"))
        assert.isTrue(Option.isNone(yield* store.get("-100", "-100/1/reminder")))
        assert.isTrue(Option.isNone(yield* store.nextDueAt))
      }))

    test("extend keeps a held claim past its lease; a claim taken over cannot be extended", (store) =>
      Effect.gen(function*() {
        yield* store.add(reminder("-100", 1, 0))
        yield* store.claimDue({ now: t0, owner: "a", lease: 10_000, limit: 10 })
        assert.isTrue(yield* store.extend("-100", "-100/1/reminder", "a", t0 + 30_000))
        assert.deepStrictEqual(Option.getOrThrow(yield* store.nextDueAt), t0 + 30_000)
        assert.strictEqual((yield* store.claimDue({ now: t0 + 29_999, owner: "b", lease: 10_000, limit: 10 })).length, 0)
        assert.strictEqual((yield* store.claimDue({ now: t0 + 30_000, owner: "b", lease: 10_000, limit: 10 })).length, 1)
        // a's lease ended and b holds the claim: a may no longer extend, complete or release it.
        assert.isFalse(yield* store.extend("-100", "-100/1/reminder", "a", t0 + 90_000))
        assert.deepStrictEqual(Option.getOrThrow(yield* store.nextDueAt), t0 + 40_000)
        assert.isFalse(yield* store.extend("-100", "-100/2/reminder", "a", t0 + 90_000))
        assert.isTrue(yield* store.complete("-100", "-100/1/reminder", "b"))
      }))

    test("complete needs the claim: an unclaimed reminder stays", (store) =>
      Effect.gen(function*() {
        yield* store.add(reminder("-100", 1, 0))
        assert.isFalse(yield* store.complete("-100", "-100/1/reminder", "a"))
        assert.isTrue(Option.isSome(yield* store.get("-100", "-100/1/reminder")))
      }))

    test("retryAt releases the claim: the reminder is due again at that time, not before", (store) =>
      Effect.gen(function*() {
        yield* store.add(reminder("-100", 1, 0))
        yield* store.claimDue({ now: t0, owner: "a", lease: 60_000, limit: 10 })
        assert.isTrue(yield* store.retryAt("-100", "-100/1/reminder", "a", t0 + 5_000))
        assert.deepStrictEqual(Option.getOrThrow(yield* store.nextDueAt), t0 + 5_000)
        assert.strictEqual((yield* store.claimDue({ now: t0 + 4_999, owner: "b", lease: 60_000, limit: 10 })).length, 0)
        const again = yield* store.claimDue({ now: t0 + 5_000, owner: "b", lease: 60_000, limit: 10 })
        assert.deepStrictEqual(again.map((r) => [r.source_message_id, r.attempts, r.due_at]), [["1", 1, t0]])
      }))

    test("nextDueAt is the earliest due time, none when empty", (store) =>
      Effect.gen(function*() {
        assert.isTrue(Option.isNone(yield* store.nextDueAt))
        yield* store.add(reminder("-100", 1, 50_000))
        yield* store.add(reminder("-200", 2, 20_000))
        assert.deepStrictEqual(Option.getOrThrow(yield* store.nextDueAt), t0 + 20_000)
      }))

    test("concurrent claimants never get the same reminder", (store) =>
      Effect.gen(function*() {
        const all = Array.from({ length: 60 }, (_, i) => reminder(`-${100 + (i % 7)}`, i + 1, i))
        yield* Effect.forEach(all, store.add, { discard: true })
        const claims = yield* Effect.forEach(
          Array.from({ length: 8 }, (_, i) => `owner-${i}`),
          (owner) =>
            Effect.map(
              Effect.forEach(
                Array.from({ length: 6 }, () => 0),
                () => store.claimDue({ now: t0 + 60_000, owner, lease: 60_000, limit: 3 })
              ),
              (batches) => batches.flat()
            ),
          { concurrency: "unbounded" }
        )
        const ids = claims.flat().map((r) => r.object_id)
        assert.strictEqual(new Set(ids).size, ids.length)
        assert.strictEqual(ids.length, 60)
      }))

    test("migrateChat moves a chat's reminders to the new id, once, and a reminder already there wins", (store) =>
      Effect.gen(function*() {
        yield* store.add(reminder("-100", 1, 10_000, { topic_id: "7" }))
        yield* store.add(reminder("-100", 2, 20_000))
        yield* store.add({ ...reminder("-100", 3, 30_000), chat_id: "-1009", text: "already moved" })
        yield* store.add(reminder("-100", 3, 30_000))
        yield* store.add(reminder("-200", 4, 40_000))
        yield* store.claimDue({ now: t0 + 15_000, owner: "a", lease: 60_000, limit: 10 })
        assert.strictEqual(yield* store.migrateChat("-100", "-1009"), 2)
        assert.deepStrictEqual(yield* store.list("-100", { topic_id: null, limit: 10 }), [])
        const moved = yield* store.list("-1009", { topic_id: "7", limit: 10 })
        assert.deepStrictEqual(moved.map((r) => [r.object_id, r.chat_id, r.topic_id]), [
          ["-100/1/reminder", "-1009", "7"],
          ["-100/2/reminder", "-1009", null],
          ["-100/3/reminder", "-1009", null]
        ])
        assert.strictEqual(moved[2]!.text, "already moved")
        // The claim did not move with it: the reminder is due for anyone again.
        const claimed = yield* store.claimDue({ now: t0 + 15_000, owner: "b", lease: 60_000, limit: 10 })
        // Its source message is the old chat's, under its migrated id (never a message of the new chat).
        assert.deepStrictEqual(claimed.map((r) => [r.chat_id, r.source_message_id]), [["-1009", "~1"]])
        assert.strictEqual(yield* store.migrateChat("-100", "-1009"), 0)
        assert.strictEqual(yield* store.migrateChat("-200", "-200"), 0)
        assert.strictEqual((yield* store.stats(t0)).pending, 4)
      }))
  })
}
