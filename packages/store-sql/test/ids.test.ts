/**
 * Core's one id rule at the stores' door: an id it refuses finds nothing, without a driver
 * error (PostgreSQL text has no NUL) and without aliasing (a lone surrogate stored as UTF-8 is
 * U+FFFD, the very character of another id); a write with one is refused, naming it.
 */
import { assert, describe, layer } from "@effect/vitest"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import * as ContextStore from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as SqlStore from "../src/SqlStore.js"
import { pgLayer, sqliteLayer } from "./helpers.js"

const refusedIds = ["a\u0000b", "a\uD800", "x".repeat(129), "line\nforged", ""]

const suite = (name: string, stores: Layer.Layer<SqlStore.Stores, SqlStore.SqlStoreError>) =>
  layer(stores)(`${name}: ids the rule refuses`, (it) => {
    it.effect("reads with a refused chat, topic or message id find nothing and never fail", () =>
      Effect.gen(function*() {
        const context = yield* ContextStore.ContextStore
        const history = yield* HistoryStore
        const state = yield* ConversationState.ConversationStateStore
        for (const id of refusedIds) {
          assert.isTrue(Option.isNone(yield* context.message(id, "1")), JSON.stringify(id))
          assert.isTrue(Option.isNone(yield* context.message("ok", id)), JSON.stringify(id))
          assert.isTrue(Option.isNone(yield* context.object(id, "ok/1/link")), JSON.stringify(id))
          assert.deepStrictEqual(yield* context.replyChain(id, "1", 8), [])
          assert.deepStrictEqual(yield* context.snapshot(id), { messages: [], objects: [] })
          assert.isTrue(Option.isNone(yield* history.lookup({ chat_id: id, topic_id: null }, "1")), JSON.stringify(id))
          assert.isTrue(Option.isNone(yield* history.lookup({ chat_id: "ok", topic_id: id }, "1")), JSON.stringify(id))
          assert.isTrue(Option.isNone(yield* history.lookup({ chat_id: "ok", topic_id: null }, id)), JSON.stringify(id))
          assert.deepStrictEqual(yield* history.recent({ chat_id: id, topic_id: null }, 5), [])
          assert.deepStrictEqual(yield* history.replies({ chat_id: "ok", topic_id: null }, id, { limit: 5 }), [])
          assert.isTrue(Option.isNone(yield* state.get({ chat_id: id, topic_id: null })), JSON.stringify(id))
        }
      }))

    it.effect("a lone surrogate does not find the state of the chat whose id it would become in UTF-8", () =>
      Effect.gen(function*() {
        const state = yield* ConversationState.ConversationStateStore
        const scope = { chat_id: `alias-${Date.now()}-\uFFFD`, topic_id: null }
        yield* state.put({ ...scope, state: { mine: true }, revision: 1, updated_at: 0, updated_by: null })
        const lone = { chat_id: scope.chat_id.replace("\uFFFD", "\uD800"), topic_id: null }
        assert.isTrue(Option.isNone(yield* state.get(lone)))
        assert.isTrue(Option.isSome(yield* state.get(scope)))
      }))

    it.effect("a state write under a refused id fails naming it, and writes nothing", () =>
      Effect.gen(function*() {
        const state = yield* ConversationState.ConversationStateStore
        const scope = { chat_id: "nul\u0000chat", topic_id: null }
        const put = yield* Effect.either(state.put({ ...scope, state: { a: 1 }, revision: 1, updated_at: 0, updated_by: null }))
        assert.isTrue(Either.isLeft(put))
        if (Either.isLeft(put)) {
          assert.strictEqual(put.left._tag, "ConversationStateStoreError")
          assert.include(put.left.message, "chat_id is not a valid id")
        }
        const modify = state.modify
        assert.isDefined(modify)
        if (modify === undefined) return
        const modified = yield* Effect.either(modify({ chat_id: "ok", topic_id: "t\r" }, () => Effect.succeed([1, Option.none()] as const)))
        assert.isTrue(Either.isLeft(modified) && modified.left._tag === "ConversationStateStoreError")
        if (Either.isLeft(modified) && modified.left._tag === "ConversationStateStoreError") {
          assert.include(modified.left.message, "topic_id is not a valid id")
        }
      }))
  })

describe("store-sql and core's id rule", () => {
  suite("sqlite", sqliteLayer())
  suite("postgres", pgLayer())
})
