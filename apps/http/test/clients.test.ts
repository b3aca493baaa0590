import { FetchHttpClient, HttpApiClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Validator } from "@seriousme/openapi-schema-validator"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Api } from "../src/Api.js"
import { ContextEvent, ReferenceResolver } from "@deixis/core"
import { start } from "./harness.js"

const call = <A>(f: () => Promise<A>) => Effect.promise(f)

/** A tool result's JSON, from its text content. */
const payload = <T>(result: object): T =>
  JSON.parse(((result as { readonly content: ReadonlyArray<{ readonly text?: string }> }).content).map((c) => c.text ?? "").join("")) as T

describe("apps/http with real clients", () => {
  it.scoped("the HttpApiClient derived from the API drives every endpoint", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const client = yield* HttpApiClient.make(Api, { baseUrl: api.url })
      const events = Schema.decodeUnknownSync(ContextEvent.ContextEventBatch)([
        { type: "message_observed", chat_id: 5, message_id: 1, topic_id: 3, sender_user_id: 9, poll: { poll_id: "p", question: "Lunch?" } },
        { type: "object_activated", event_id: "c", chat_id: 5, reason: "poll_created", source_message_id: 1, kind: "poll" }
      ])
      const applied = yield* client.events.ingest({ payload: events })
      assert.strictEqual(applied.applied, 2)
      const resolved = yield* client.tools.resolve({
        payload: Schema.decodeSync(ReferenceResolver.ResolveRequest)({
          chat_id: 5, topic_id: 3, current_message_id: 2, normalized_reference_hints: { target_kind_hint: "poll" }
        })
      })
      assert.strictEqual(resolved.best_match?.title_or_label, "Lunch?")
      const listed = yield* client.tools.list({
        payload: { chat_id: "5", topic_id: "3", current_message_id: "2", reply_to_message_id: null, sender_user_id: null, max_results: 5, include_inactive_debug: false }
      })
      assert.deepStrictEqual(listed.objects.map((o) => o.why_active.includes("open_poll")), [true])
      const state = yield* client.chats.getState({ path: { chat_id: "5" }, urlParams: { topic_id: "3" } })
      assert.strictEqual(state.revision, 0)
      const patched = yield* client.chats.patchState({
        path: { chat_id: "5" }, urlParams: { topic_id: "3" }, headers: { "if-match": "\"0\"" }, payload: { step: "poll" }
      })
      assert.deepStrictEqual([patched.revision, patched.changed], [1, true])
      const conflict = yield* Effect.flip(client.chats.patchState({
        path: { chat_id: "5" }, urlParams: { topic_id: "3" }, headers: { "if-match": "\"0\"" }, payload: { step: "again" }
      }))
      assert.strictEqual(conflict._tag, "ConversationStateConflict")
      const context = yield* client.chats.context({ path: { chat_id: "5" }, urlParams: {} })
      assert.deepStrictEqual(context.messages, [])
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.scoped("the OpenAPI document is a valid OpenAPI 3.1 document covering every endpoint, and /docs serves it", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const spec = yield* call(() => api.fetch("/openapi.json").then((r) => r.json() as Promise<{ openapi: string; paths: Record<string, unknown> }>))
      assert.strictEqual(spec.openapi, "3.1.0")
      const validator = new Validator()
      const result = yield* call(() => validator.validate(spec))
      assert.deepStrictEqual(result.errors, undefined)
      assert.isTrue(result.valid)
      assert.sameMembers(Object.keys(spec.paths), [
        "/v1/events",
        "/v1/telegram/updates",
        "/v1/tools/resolve_reference_target",
        "/v1/tools/list_active_context_objects",
        "/v1/chats/{chat_id}/context",
        "/v1/chats/{chat_id}/state"
      ])
      const docs = yield* call(() => api.fetch("/docs").then((r) => r.text()))
      assert.include(docs, "SwaggerUIBundle")
    }))

  it.scoped("an MCP client lists and calls the tools", () =>
    Effect.gen(function*() {
      const api = yield* start({ token: "t0k3n" })
      yield* call(() => api.json("/v1/events", [
        { type: "message_observed", chat_id: 8, message_id: 1, links: [{ url: "https://example.com/x", title: "X" }] },
        { type: "object_activated", event_id: "u", chat_id: 8, reason: "url_fetched", source_message_id: 1, kind: "link" }
      ]))
      const client = new Client({ name: "deixis-test", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(api.url + "/mcp"), {
        requestInit: { headers: { authorization: "Bearer t0k3n" } }
      })
      yield* Effect.acquireRelease(call(() => client.connect(transport)), () => call(() => client.close()))
      const tools = yield* call(() => client.listTools())
      assert.sameMembers(tools.tools.map((t) => t.name), [
        "resolve_reference_target",
        "list_active_context_objects",
        "get_conversation_state",
        "update_conversation_state"
      ])
      const resolve = tools.tools.find((t) => t.name === "resolve_reference_target")!
      assert.include(Object.keys(resolve.inputSchema.properties ?? {}), "normalized_reference_hints")

      const resolved = yield* call(() => client.callTool({ name: "resolve_reference_target", arguments: { chat_id: "8", current_message_id: "2" } }))
      assert.strictEqual(payload<{ best_match: { object_id: string } }>(resolved).best_match.object_id, "8/1/link")
      const updated = yield* call(() => client.callTool({ name: "update_conversation_state", arguments: { chat_id: "8", patch: { topic: "x" } } }))
      assert.strictEqual(payload<{ revision: number }>(updated).revision, 1)
      const read = yield* call(() => client.callTool({ name: "get_conversation_state", arguments: { chat_id: "8" } }))
      assert.deepStrictEqual(payload<{ state: unknown }>(read).state, { topic: "x" })
      const listed = yield* call(() => client.callTool({ name: "list_active_context_objects", arguments: { chat_id: "8", current_message_id: "2" } }))
      assert.deepStrictEqual(payload<{ objects: Array<{ why_active: Array<string> }> }>(listed).objects[0]?.why_active, ["activated_by_url_fetch", "touched_recently"])
      const stale = yield* call(() => client.callTool({ name: "update_conversation_state", arguments: { chat_id: "8", patch: { topic: "y" }, expected_revision: 0 } }))
      assert.isTrue(stale.isError)
      assert.strictEqual(payload<{ _tag: string; current_revision: number }>(stale).current_revision, 1)
    }))
})
