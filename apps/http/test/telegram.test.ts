import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { start } from "./harness.js"

const call = <A>(f: () => Promise<A>) => Effect.promise(f)
const body = <T>(response: Response) => response.json() as Promise<T>

const forumMessage = (updateId: number, messageId: number, extra: Record<string, unknown> = {}) => ({
  update_id: updateId,
  message: {
    message_id: messageId,
    date: 1_795_000_000,
    chat: { id: -1001234567890, type: "supergroup", title: "Team", is_forum: true },
    from: { id: 42, is_bot: false, first_name: "Alice", username: "alice" },
    message_thread_id: 7,
    is_topic_message: true,
    ...extra
  }
})

describe("POST /v1/telegram/updates", () => {
  it.scoped("maps raw updates with the shared mapper into events and history", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const text = "read https://example.com/post"
      const result = yield* call(() =>
        api.json("/v1/telegram/updates", [
          forumMessage(1, 100, { text, entities: [{ type: "url", offset: 5, length: 24 }] }),
          forumMessage(2, 101, { text: "@deixis_bot summarise this", reply_to_message: { message_id: 100 }, entities: [{ type: "mention", offset: 0, length: 11 }] }),
          { update_id: 3, some_future_update: { id: 1 } }
        ]).then(body<{ updates: number; skipped: ReadonlyArray<{ index: number }>; events: { applied: number }; history_items: number }>)
      )
      assert.strictEqual(result.updates, 3)
      assert.deepStrictEqual(result.skipped.map((s) => s.index), [2])
      assert.strictEqual(result.events.applied, 2)
      // smart mode (the default) records what addressed the bot: the second message.
      assert.strictEqual(result.history_items, 1)

      const resolved = yield* call(() =>
        api.json("/v1/tools/resolve_reference_target", {
          chat_id: -1001234567890, topic_id: 7, current_message_id: 101, reply_to_message_id: 100,
          normalized_reference_hints: { target_kind_hint: "article" }
        }).then(body<{ status: string; best_match: { ref: string } }>)
      )
      assert.strictEqual(resolved.status, "resolved")
      assert.strictEqual(resolved.best_match.ref, "https://example.com/post")

      const context = yield* call(() =>
        api.fetch("/v1/chats/-1001234567890/context?topic_id=7").then(body<{ messages: ReadonlyArray<{ message_id: string }>; chat_history_context: string }>)
      )
      assert.deepStrictEqual(context.messages.map((m) => m.message_id), ["101"])
      assert.include(context.chat_history_context, "summarise this")
    }))

  it.scoped("a hostile update is skipped, never a crash, and a single update is accepted too", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const hostile = yield* call(() =>
        api.json("/v1/telegram/updates", { update_id: 9, message: { message_id: "x", chat: null, text: 5 } })
          .then(body<{ updates: number; skipped: ReadonlyArray<{ index: number; reason: string }> }>)
      )
      assert.strictEqual(hostile.updates, 1)
      assert.strictEqual(hostile.skipped.length, 1)
      const notAnObject = yield* call(() => api.json("/v1/telegram/updates", "[1, 2]"))
      assert.strictEqual(notAnObject.status, 400)
      assert.strictEqual((yield* call(() => api.fetch("/healthz"))).status, 200)
    }))
})
