/**
 * Two instances of the conversation state service — two layers, each with its own pool and
 * its own per-scope locks, as two processes have — over one database. A patch without
 * `expected_revision` asked for no condition, so it must never come back as a conflict.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ConversationState from "@deixis/core/ConversationState"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as path from "node:path"
import * as SqlStore from "../src/SqlStore.js"
import { freshSchema, pgLayer, pgUrl, tempDir } from "./helpers.js"

const patches = 300

/** Builds one service instance over `stores` for the current scope. */
const instance = <E>(stores: Layer.Layer<SqlStore.Stores, E>) =>
  Effect.map(
    Layer.build(ConversationState.layer().pipe(Layer.provide(stores))),
    (context) => context.unsafeMap.get(ConversationState.ConversationState.key) as ConversationState.ConversationStateService
  )

const hammer = (first: ConversationState.ConversationStateService, second: ConversationState.ConversationStateService) =>
  Effect.gen(function*() {
    const scope = { chat_id: `instances-${Date.now().toString(36)}`, topic_id: "7" }
    const results = yield* Effect.forEach(
      Array.from({ length: patches }, (_, i) => i),
      (i) => Effect.either((i % 2 === 0 ? first : second).update({ scope, patch: { [`k${i}`]: i } })),
      { concurrency: "unbounded" }
    )
    const failures = results.filter(Either.isLeft).map((r) => r.left._tag)
    assert.deepStrictEqual(failures, [])
    const final = yield* first.get(scope)
    assert.strictEqual(final.revision, patches)
    assert.strictEqual(Object.keys(final.state).length, patches)
    for (let i = 0; i < patches; i++) assert.strictEqual(final.state[`k${i}`], i, `k${i}`)
    // The other instance reads the same document.
    assert.deepStrictEqual(yield* second.get(scope), final)
  })

describe("conversation state: two instances over one database", () => {
  it.live(`postgres: ${patches} concurrent unconditional patches from two instances, zero conflicts, every key kept`, () =>
    Effect.gen(function*() {
      const schema = freshSchema()
      // The first layer creates the schema (and drops it afterwards); the second joins it.
      const first = yield* instance(pgLayer({}, schema))
      const second = yield* instance(SqlStore.layerPg({ url: pgUrl, schema, max_connections: 4, sweep_interval: 0 }))
      yield* hammer(first, second)
    }).pipe(Effect.scoped), 120_000)

  it.live(`sqlite: ${patches} concurrent unconditional patches from two instances on one file, zero conflicts, every key kept`, () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "deixis.db")
      const first = yield* instance(SqlStore.layerSqlite({ filename, sweep_interval: 0 }))
      const second = yield* instance(SqlStore.layerSqlite({ filename, sweep_interval: 0 }))
      yield* hammer(first, second)
    }).pipe(Effect.scoped), 120_000)

  it.live("postgres: a conditional patch against a revision another instance moved on still conflicts", () =>
    Effect.gen(function*() {
      const schema = freshSchema()
      const first = yield* instance(pgLayer({}, schema))
      const second = yield* instance(SqlStore.layerPg({ url: pgUrl, schema, max_connections: 4, sweep_interval: 0 }))
      const scope = { chat_id: "conditional", topic_id: null }
      yield* first.update({ scope, patch: { a: 1 }, expected_revision: 0 })
      yield* second.update({ scope, patch: { a: 2 }, expected_revision: 1 })
      const stale = yield* Effect.either(first.update({ scope, patch: { a: 3 }, expected_revision: 1 }))
      assert.isTrue(Either.isLeft(stale) && stale.left._tag === "ConversationStateConflict")
      assert.deepStrictEqual((yield* first.get(scope)).state, { a: 2 })
    }).pipe(Effect.scoped), 60_000)
})
