import { FetchHttpClient, HttpApiClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Validator } from "@seriousme/openapi-schema-validator"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Api, ResolveRequest } from "../src/Api.js"
import { ContextEvent } from "@deixis/core"
import { start } from "./harness.js"

const call = <A>(f: () => Promise<A>) => Effect.promise(f)

interface Envelope {
  readonly status: "ok" | "error"
  readonly summary: string
  readonly error: { readonly code: string; readonly message: string } | null
  readonly data: unknown
}

/** A tool result's envelope `{status, summary, error, data}`, from its text content. */
const envelope = (result: object): Envelope =>
  JSON.parse(((result as { readonly content: ReadonlyArray<{ readonly text?: string }> }).content).map((c) => c.text ?? "").join("")) as Envelope

/** A tool result's data, from its envelope. */
const payload = <T>(result: object): T => envelope(result).data as T

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
        payload: Schema.decodeSync(ResolveRequest)({
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
      assert.strictEqual(conflict._tag, "PreconditionFailed")
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
        "/v1/telegram/sent",
        "/v1/tools/resolve_reference_target",
        "/v1/tools/list_active_context_objects",
        "/v1/chats/{chat_id}/context",
        "/v1/chats/{chat_id}/messages/{message_id}/context",
        "/v1/chats/{chat_id}/state",
        "/v1/inspect/chats",
        "/v1/inspect/thresholds",
        "/v1/inspect/live"
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
        "get_message_thread_context",
        "get_conversation_state",
        "update_conversation_state",
        "record_context_action",
        "read_url"
      ])
      for (const tool of tools.tools) {
        assert.strictEqual(tool.inputSchema.type, "object")
        assert.strictEqual((tool.inputSchema as { additionalProperties?: unknown }).additionalProperties, false, tool.name)
      }
      const resolve = tools.tools.find((t) => t.name === "resolve_reference_target")!
      assert.include(Object.keys(resolve.inputSchema.properties ?? {}), "normalized_reference_hints")

      const resolved = yield* call(() => client.callTool({ name: "resolve_reference_target", arguments: { chat_id: "8", current_message_id: "2" } }))
      assert.strictEqual(payload<{ best_match: { object_id: string } }>(resolved).best_match.object_id, "8/1/link")
      const updated = yield* call(() => client.callTool({ name: "update_conversation_state", arguments: { chat_id: "8", patch: { topic: "x" } } }))
      assert.strictEqual(payload<{ revision: number }>(updated).revision, 1)
      const read = yield* call(() => client.callTool({ name: "get_conversation_state", arguments: { chat_id: "8" } }))
      assert.deepStrictEqual(payload<{ state: unknown }>(read).state, { topic: "x" })
      const listed = yield* call(() => client.callTool({ name: "list_active_context_objects", arguments: { chat_id: "8", current_message_id: "2" } }))
      // The MCP resolution above was recorded as a resolver touch.
      assert.deepStrictEqual(payload<{ objects: Array<{ why_active: Array<string> }> }>(listed).objects[0]?.why_active, [
        "activated_by_url_fetch",
        "activated_by_resolver",
        "touched_recently"
      ])
      const stale = yield* call(() => client.callTool({ name: "update_conversation_state", arguments: { chat_id: "8", patch: { topic: "y" }, expected_revision: 0 } }))
      assert.isTrue(stale.isError)
      assert.strictEqual(payload<{ _tag: string; current_revision: number }>(stale).current_revision, 1)
      assert.deepStrictEqual([envelope(stale).status, envelope(stale).error?.code], ["error", "ConversationStateConflict"])
    }))

  it.scoped("an MCP client calls every tool and gets the budgeted envelope from each", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const chatId = -1001234567890
      const forum = (updateId: number, messageId: number, extra: Record<string, unknown>) => ({
        update_id: updateId,
        message: {
          message_id: messageId,
          date: 1_795_000_000 + messageId,
          chat: { id: chatId, type: "supergroup", title: "Team", is_forum: true },
          from: { id: 42, is_bot: false, first_name: "Alice", username: "alice" },
          message_thread_id: 7,
          is_topic_message: true,
          ...extra
        }
      })
      const mention = [{ type: "mention", offset: 0, length: 11 }]
      yield* call(() =>
        api.json("/v1/telegram/updates", [
          forum(1, 100, { text: "read https://example.com/post", entities: [{ type: "url", offset: 5, length: 24 }] }),
          forum(2, 101, { text: "@deixis_bot summarise this", reply_to_message: { message_id: 100 }, entities: mention }),
          forum(3, 102, { text: "@deixis_bot and then?", reply_to_message: { message_id: 101 }, entities: mention })
        ]))
      const client = new Client({ name: "deixis-test", version: "1.0.0" })
      yield* Effect.acquireRelease(
        call(() => client.connect(new StreamableHTTPClientTransport(new URL(api.url + "/mcp")))),
        () => call(() => client.close())
      )
      const scope = { chat_id: chatId, topic_id: 7 }
      const results = {
        resolve_reference_target: yield* call(() =>
          client.callTool({ name: "resolve_reference_target", arguments: { ...scope, current_message_id: 101, reply_to_message_id: 100, normalized_reference_hints: { target_kind_hint: "article" } } })),
        list_active_context_objects: yield* call(() =>
          client.callTool({ name: "list_active_context_objects", arguments: { ...scope, current_message_id: 102, include_inactive_debug: true } })),
        get_message_thread_context: yield* call(() =>
          client.callTool({ name: "get_message_thread_context", arguments: { ...scope, message_id: 102 } })),
        update_conversation_state: yield* call(() =>
          client.callTool({ name: "update_conversation_state", arguments: { ...scope, patch: { reading: "post" }, expected_revision: 0 } })),
        get_conversation_state: yield* call(() => client.callTool({ name: "get_conversation_state", arguments: scope }))
      }
      for (const [name, result] of Object.entries(results)) {
        assert.isNotTrue(result.isError, name)
        assert.deepStrictEqual(Object.keys(envelope(result)), ["status", "summary", "error", "data"], name)
        assert.strictEqual(envelope(result).status, "ok", name)
      }
      assert.strictEqual(payload<{ best_match: { ref: string } }>(results.resolve_reference_target).best_match.ref, "https://example.com/post")
      // A URL only seen is known, not active; the MCP resolution of it above was a resolver touch, which activates it.
      const listed = payload<{ objects: ReadonlyArray<{ object_id: string; why_active: ReadonlyArray<string> }>; inactive_debug: ReadonlyArray<object> }>(
        results.list_active_context_objects
      )
      assert.deepStrictEqual(listed.objects.map((o) => [o.object_id, o.why_active.includes("activated_by_resolver")]), [[`${chatId}/100/link`, true]])
      assert.deepStrictEqual(listed.inactive_debug, [])
      // Smart mode records every message the bot receives: the chain reaches 100, unaddressed as it was.
      const thread = payload<{
        message: { text: string }
        reply: { target_id: string; status: string }
        chain: { message_ids: ReadonlyArray<string>; missing_parent_id: string | null }
      }>(
        results.get_message_thread_context
      )
      assert.include(thread.message.text, "and then?")
      assert.deepStrictEqual(thread.reply, { target_id: "101", status: "found" })
      assert.deepStrictEqual([thread.chain.message_ids, thread.chain.missing_parent_id], [["101", "100"], null])
      assert.strictEqual(envelope(results.update_conversation_state).summary, "updated to revision 1")
      assert.deepStrictEqual(payload<{ state: unknown }>(results.get_conversation_state).state, { reading: "post" })
    }))
})
