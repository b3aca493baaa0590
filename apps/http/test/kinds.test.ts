/**
 * One entrance to ingest: every way in refuses a kind nobody registered in the KindRegistry,
 * with the same error, and writes nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { ContextEvent, ContextIngest, ContextStore } from "@deixis/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { start } from "./harness.js"

const refusal = "kind \"x.nope\" is not registered in the KindRegistry"
const batch = [
  { type: "message_observed", chat_id: -4004, topic_id: 1, message_id: 10, sender_user_id: 42 },
  { type: "object_activated", event_id: "nope-1", chat_id: -4004, reason: "summarized", source_message_id: 10, kind: "x.nope" }
]
const request = { chat_id: -4004, topic_id: 1, current_message_id: 11, allowed_kinds: ["x.nope"] }

describe("one entrance to ingest", () => {
  {
    it.scoped(`the library's ingest and apply, POST /v1/events, the tools over HTTP and MCP refuse the unregistered kind x.nope alike, and nothing is written`, () =>
      Effect.gen(function*() {
        const api = yield* start()
        const ingest = Context.unsafeGet(api.context, ContextIngest.ContextIngest)
        const store = Context.unsafeGet(api.context, ContextStore.ContextStore)

        const viaIngest = yield* Effect.flip(ingest.ingest(batch))
        const viaApply = yield* Effect.flip(ingest.apply(Either.getOrThrow(ContextEvent.decodeEvents(batch))))
        const events = yield* Effect.promise(() => api.json("/v1/events", batch).then(async (r) => ({ status: r.status, body: await r.json() })))
        for (const refused of [viaIngest, viaApply, events.body]) {
          assert.deepInclude(refused, { _tag: "InvalidEvent", path: "[1].kind", message: refusal })
        }
        assert.strictEqual(events.status, 400)

        // The tools name kinds too: the same words, under the tool's own error.
        const tool = yield* Effect.promise(() =>
          api.json("/v1/tools/resolve_reference_target", request).then(async (r) => ({ status: r.status, body: await r.json() }))
        )
        assert.strictEqual(tool.status, 400)
        assert.deepInclude(tool.body, { _tag: "InvalidRequest", path: "allowed_kinds[0]", message: refusal })
        const mcp = yield* Effect.promise(() =>
          api.json("/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "resolve_reference_target", arguments: request } }, {
            headers: { accept: "application/json, text/event-stream" }
          }).then((r) => r.json() as Promise<{ readonly result: { readonly isError: boolean; readonly structuredContent: unknown } }>)
        )
        assert.isTrue(mcp.result.isError)
        assert.include(JSON.stringify(mcp.result.structuredContent), refusal.replaceAll("\"", "\\\""))

        assert.deepInclude(yield* store.stats, { chats: 0, messages: 0, objects: 0 })
      }))
  }
})
