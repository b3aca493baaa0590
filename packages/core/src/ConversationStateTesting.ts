/**
 * The contract suite of the {@link ConversationState.ConversationStateStore} port. Every
 * adapter (memory, SQLite, Postgres) runs the very same cases with the same expectations:
 *
 * ```ts
 * import { conversationStateStoreContract } from "@deixis/core/ConversationStateTesting"
 * conversationStateStoreContract("sqlite", SqliteConversationStateStore.layer)
 * ```
 *
 * Cases use scope ids unique to each run, so an adapter over a persistent database may share
 * one layer between cases and runs. Needs `@effect/vitest` and `vitest` (optional peers).
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ConversationState from "./ConversationState.js"

const snapshot = (
  scope: ConversationState.ConversationScope,
  revision: number,
  state: ConversationState.JsonObject,
  updated_by: string | null = null
): ConversationState.ConversationStateSnapshot => ({
  chat_id: scope.chat_id,
  topic_id: scope.topic_id,
  state,
  revision,
  updated_at: Date.UTC(2026, 10, 22, 10, 0, revision, 123),
  updated_by
})

/**
 * Registers the store contract as a `describe` block named after the adapter.
 *
 * @since 0.1.0
 * @category testing
 */
export const conversationStateStoreContract = <E>(
  name: string,
  storeLayer: Layer.Layer<ConversationState.ConversationStateStore, E>,
  options: {
    /** Whether the adapter provides the optional `modify` (default true); its cases run only then. */
    readonly modify?: boolean | undefined
  } = {}
): void => {
  const withModify = options.modify ?? true
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`
  let counter = 0
  const chat = (label: string) => `contract-${run}-${++counter}-${label}`

  layer(storeLayer)(`ConversationStateStore contract: ${name}`, (it) => {
    it.effect("a scope never written reads as none", () =>
      Effect.gen(function*() {
        const store = yield* ConversationState.ConversationStateStore
        const found = yield* store.get({ chat_id: chat("unknown"), topic_id: null })
        assert.isTrue(Option.isNone(found))
      }))

    it.effect("the first write at revision 1 reads back exactly", () =>
      Effect.gen(function*() {
        const store = yield* ConversationState.ConversationStateStore
        const scope = { chat_id: chat("first"), topic_id: "17" }
        const written = snapshot(scope, 1, {
          household: { adults: 2, married: false, children: [{ age: 4 }, { age: 7 }] },
          notes: "naïve 🧮 \"quoted\" \\ back\nslash",
          weights: [0.25, -3, 1e21, null, true],
          empty: {},
          list: []
        }, "42")
        yield* store.put(written)
        const found = yield* store.get(scope)
        assert.deepStrictEqual(Option.getOrThrow(found), written)
      }))

    it.effect("a write at the next revision replaces the document whole", () =>
      Effect.gen(function*() {
        const store = yield* ConversationState.ConversationStateStore
        const scope = { chat_id: chat("replace"), topic_id: null }
        yield* store.put(snapshot(scope, 1, { a: 1, b: { c: 2 } }))
        const second = snapshot(scope, 2, { b: { d: 3 } }, "7")
        yield* store.put(second)
        assert.deepStrictEqual(Option.getOrThrow(yield* store.get(scope)), second)
      }))

    it.effect("a stale revision conflicts with the stored revision and writes nothing", () =>
      Effect.gen(function*() {
        const store = yield* ConversationState.ConversationStateStore
        const scope = { chat_id: chat("stale"), topic_id: null }
        const first = snapshot(scope, 1, { a: 1 })
        const second = snapshot(scope, 2, { a: 2 })
        yield* store.put(first)
        yield* store.put(second)
        const result = yield* Effect.either(store.put(snapshot(scope, 2, { a: "lost" })))
        assert.isTrue(Either.isLeft(result))
        if (Either.isLeft(result)) {
          assert.strictEqual(result.left._tag, "ConversationStateConflict")
          if (result.left._tag === "ConversationStateConflict") {
            assert.strictEqual(result.left.current_revision, 2)
            assert.strictEqual(result.left.expected_revision, 1)
            assert.strictEqual(result.left.chat_id, scope.chat_id)
          }
        }
        assert.deepStrictEqual(Option.getOrThrow(yield* store.get(scope)), second)
      }))

    it.effect("a revision ahead of the stored one conflicts; an absent scope is at revision 0", () =>
      Effect.gen(function*() {
        const store = yield* ConversationState.ConversationStateStore
        const scope = { chat_id: chat("ahead"), topic_id: null }
        const result = yield* Effect.either(store.put(snapshot(scope, 3, { a: 1 })))
        assert.isTrue(Either.isLeft(result) && result.left._tag === "ConversationStateConflict")
        if (Either.isLeft(result) && result.left._tag === "ConversationStateConflict") {
          assert.strictEqual(result.left.current_revision, 0)
        }
        assert.isTrue(Option.isNone(yield* store.get(scope)))
      }))

    it.effect("scopes are isolated: topics, the topicless scope, other chats, look-alike ids", () =>
      Effect.gen(function*() {
        const store = yield* ConversationState.ConversationStateStore
        const base = chat("iso")
        const moved = { chat_id: base, topic_id: "1" }
        const scopes: ReadonlyArray<ConversationState.ConversationScope> = [
          { chat_id: base, topic_id: null },
          moved,
          { chat_id: base, topic_id: "2" },
          { chat_id: base, topic_id: "null" },
          { chat_id: base, topic_id: "0" },
          { chat_id: `${base}:1`, topic_id: null },
          { chat_id: `${base}|1`, topic_id: null },
          { chat_id: `${base}1`, topic_id: null }
        ]
        yield* Effect.forEach(scopes, (scope, i) => store.put(snapshot(scope, 1, { index: i })))
        const seen = yield* Effect.forEach(scopes, (scope) => store.get(scope))
        assert.deepStrictEqual(
          seen.map((found) => Option.getOrThrow(found).state),
          scopes.map((_, i) => ({ index: i }))
        )
        // Advancing one scope leaves every other at revision 1.
        yield* store.put(snapshot(moved, 2, { index: "moved" }))
        const after = yield* Effect.forEach(scopes, (scope) => store.get(scope))
        assert.deepStrictEqual(
          after.map((found) => Option.getOrThrow(found).revision),
          [1, 2, 1, 1, 1, 1, 1, 1]
        )
      }))

    it.effect("of concurrent writers at the same revision exactly one wins", () =>
      Effect.gen(function*() {
        const store = yield* ConversationState.ConversationStateStore
        const scope = { chat_id: chat("race"), topic_id: "5" }
        const results = yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => i),
          (i) => Effect.either(store.put(snapshot(scope, 1, { writer: i }))),
          { concurrency: "unbounded" }
        )
        const winners = results.filter(Either.isRight)
        const losers = results.filter(Either.isLeft)
        assert.strictEqual(winners.length, 1)
        assert.strictEqual(losers.length, 19)
        for (const loser of losers) {
          assert.strictEqual(loser.left._tag, "ConversationStateConflict")
        }
        const stored = Option.getOrThrow(yield* store.get(scope))
        assert.strictEqual(stored.revision, 1)
        assert.strictEqual(results.findIndex(Either.isRight), stored.state["writer"])
      }))

    if (withModify) {
      it.effect("modify: concurrent read-modify-writes on one scope never conflict and none is lost", () =>
        Effect.gen(function*() {
          const store = yield* ConversationState.ConversationStateStore
          const modify = store.modify
          assert.isDefined(modify)
          if (modify === undefined) return
          const scope = { chat_id: chat("modify"), topic_id: "3" }
          const seen = yield* Effect.forEach(
            Array.from({ length: 30 }, (_, i) => i),
            (i) =>
              modify(scope, (current) => {
                const revision = Option.match(current, { onNone: () => 0, onSome: (s) => s.revision })
                const state: ConversationState.JsonObject = Option.match(current, { onNone: () => ({}), onSome: (s) => s.state })
                const count = Number(state["count"] ?? 0)
                return Effect.succeed([revision, Option.some(snapshot(scope, revision + 1, { ...state, count: count + 1, [`w${i}`]: i }))] as const)
              }),
            { concurrency: "unbounded" }
          )
          const stored = Option.getOrThrow(yield* store.get(scope))
          assert.strictEqual(stored.revision, 30)
          assert.strictEqual(stored.state["count"], 30)
          assert.strictEqual(Object.keys(stored.state).length, 31)
          // Each writer saw a different revision: they ran one after another.
          assert.deepStrictEqual([...seen].sort((a, b) => a - b), Array.from({ length: 30 }, (_, i) => i))
        }))

      it.effect("modify: none writes nothing, and a failure of the function writes nothing", () =>
        Effect.gen(function*() {
          const store = yield* ConversationState.ConversationStateStore
          const modify = store.modify
          assert.isDefined(modify)
          if (modify === undefined) return
          const scope = { chat_id: chat("modify-none"), topic_id: null }
          const first = snapshot(scope, 1, { a: 1 })
          yield* store.put(first)
          const kept = yield* modify(scope, () => Effect.succeed(["kept", Option.none()] as const))
          assert.strictEqual(kept, "kept")
          const failed = yield* Effect.either(modify(scope, () => Effect.fail("refused" as const)))
          assert.deepStrictEqual(failed, Either.left("refused"))
          assert.deepStrictEqual(Option.getOrThrow(yield* store.get(scope)), first)
        }))
    }

    it.layer(ConversationState.layer())("the service over this store", (it) => {
      it.effect("100 concurrent blind patches on one scope are all applied", () =>
        Effect.gen(function*() {
          const service = yield* ConversationState.ConversationState
          const scope = { chat_id: chat("service"), topic_id: null }
          yield* Effect.forEach(
            Array.from({ length: 100 }, (_, i) => i),
            (i) => service.update({ scope, patch: { [`k${i}`]: i } }),
            { concurrency: "unbounded", discard: true }
          )
          const final = yield* service.get(scope)
          assert.strictEqual(final.revision, 100)
          assert.strictEqual(Object.keys(final.state).length, 100)
          assert.strictEqual(final.state["k99"], 99)
        }))
    })

    it.effect("a chat's states migrate to its new id once, each keeping its revision; the new chat's own state wins", () =>
      Effect.gen(function*() {
        const store = yield* ConversationState.ConversationStateStore
        const from = chat("old")
        const to = chat("new")
        yield* store.put(snapshot({ chat_id: from, topic_id: null }, 1, { plan: "a" }, "7"))
        yield* store.put(snapshot({ chat_id: from, topic_id: null }, 2, { plan: "b" }, "7"))
        yield* store.put(snapshot({ chat_id: from, topic_id: "5" }, 1, { topic: 5 }))
        yield* store.put(snapshot({ chat_id: to, topic_id: "5" }, 1, { newer: true }))
        assert.strictEqual(yield* store.migrateChat(from, to), 1)
        assert.strictEqual(yield* store.migrateChat(from, to), 0)
        assert.isTrue(Option.isNone(yield* store.get({ chat_id: from, topic_id: null })))
        assert.isTrue(Option.isNone(yield* store.get({ chat_id: from, topic_id: "5" })))
        assert.deepStrictEqual(
          Option.getOrThrow(yield* store.get({ chat_id: to, topic_id: null })),
          snapshot({ chat_id: to, topic_id: null }, 2, { plan: "b" }, "7")
        )
        assert.deepStrictEqual(Option.getOrThrow(yield* store.get({ chat_id: to, topic_id: "5" })).state, { newer: true })
        // The moved state goes on from its revision.
        yield* store.put(snapshot({ chat_id: to, topic_id: null }, 3, { plan: "c" }))
        assert.strictEqual(Option.getOrThrow(yield* store.get({ chat_id: to, topic_id: null })).revision, 3)
      }))
  })
}
