/**
 * /mcp as JSON-RPC 2.0 and MCP 2025-06-18 (the revision @effect/ai's McpServer speaks) require
 * it: raw HTTP over a real socket to the running service, and the official MCP SDK client.
 */
import { assert, describe, it } from "@effect/vitest"
import { DeixisToolkit } from "@deixis/tools"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import * as fs from "node:fs"
import * as McpEdge from "../src/McpEdge.js"
import { type Running, start } from "./harness.js"

const call = <A>(f: () => Promise<A>) => Effect.promise(f)

interface Answer {
  readonly status: number
  readonly text: string
  readonly body: unknown
  readonly headers: Headers
}

interface RpcError {
  readonly jsonrpc: "2.0"
  readonly id: string | number | null
  readonly error: { readonly code: number; readonly message: string; readonly data?: unknown }
}

interface RpcResult<A = unknown> {
  readonly jsonrpc: "2.0"
  readonly id: string | number
  readonly result: A
}

const headers = (version?: string): Record<string, string> => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  ...(version === undefined ? {} : { "mcp-protocol-version": version })
})

/** POSTs `body` as JSON to /mcp. */
const post = (api: Running, body: unknown, version?: string) => postText(api, JSON.stringify(body), version)

/** POSTs `text` as it is to /mcp. */
const postText = (api: Running, payload: string, version?: string, contentType = "application/json") =>
  call(async (): Promise<Answer> => {
    const response = await api.fetch("/mcp", {
      method: "POST",
      headers: { ...headers(version), "content-type": contentType },
      body: payload
    })
    const text = await response.text()
    let parsed: unknown = undefined
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      parsed = text
    }
    return { status: response.status, text, body: parsed, headers: response.headers }
  })

const request = (id: string | number, method: string, params?: unknown) => ({
  jsonrpc: "2.0",
  id,
  method,
  ...(params === undefined ? {} : { params })
})

const toolCall = (id: string | number, name: string, args: Record<string, unknown>) =>
  request(id, "tools/call", { name, arguments: args })

/** The state's revision, read through MCP itself. */
const revision = (api: Running, chatId: string) =>
  Effect.map(post(api, toolCall("r", "get_conversation_state", { chat_id: chatId }), "2025-06-18"), (answer) => {
    const result = (answer.body as RpcResult<{ structuredContent: { data: { revision: number } } }>).result
    return result.structuredContent.data.revision
  })

const envelopeOf = (answer: Answer) =>
  (answer.body as RpcResult<{ isError?: boolean; structuredContent: { status: string; error: { code: string; message: string } | null; data: Record<string, unknown> } }>)
    .result

describe("/mcp: JSON-RPC 2.0 and MCP 2025-06-18", () => {
  it.scoped("initialize answers MCP 2025-06-18 to a client asking for a revision it does not know, and echoes one it does", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const init = (version: string) =>
        request(1, "initialize", { protocolVersion: version, capabilities: {}, clientInfo: { name: "raw", version: "1" } })
      const future = yield* post(api, init("2099-01-01"))
      assert.strictEqual(future.status, 200)
      assert.strictEqual((future.body as RpcResult<{ protocolVersion: string }>).result.protocolVersion, McpEdge.LATEST_PROTOCOL_VERSION)
      assert.strictEqual(McpEdge.LATEST_PROTOCOL_VERSION, "2025-06-18")
      const older = yield* post(api, init("2025-03-26"))
      assert.strictEqual((older.body as RpcResult<{ protocolVersion: string }>).result.protocolVersion, "2025-03-26")
      const info = (future.body as RpcResult<{ serverInfo: { name: string }; capabilities: { tools?: unknown } }>).result
      assert.strictEqual(info.serverInfo.name, "deixis")
      assert.isDefined(info.capabilities.tools)
    }))

  it.scoped("a body that is not JSON is -32700 Parse error with HTTP 400", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const body of ["{", "not json", "{\"jsonrpc\": \"2.0\", \"id\": 1,}", "\u0000", ""]) {
        const answer = yield* postText(api, body, undefined, "application/json")
        assert.strictEqual(answer.status, 400, JSON.stringify(body))
        assert.deepStrictEqual((answer.body as RpcError).error.code, -32700, JSON.stringify(body))
        assert.strictEqual((answer.body as RpcError).id, null)
        assert.strictEqual((answer.body as RpcError).jsonrpc, "2.0")
      }
    }))

  it.scoped("a body sent as text/plain or a form is a 415 before any of it is read, even a valid request (a page of another site can send those)", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const call = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "update_conversation_state", arguments: { chat_id: "c", patch: { k: 1 } } } })
      for (const contentType of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
        const answer = yield* postText(api, call, undefined, contentType)
        assert.strictEqual(answer.status, 415, contentType)
        assert.deepInclude(answer.body as object, { _tag: "UnsupportedMediaType", header: "content-type" })
      }
      const state = yield* Effect.promise(() => api.fetch("/v1/chats/c/state").then((r) => r.json() as Promise<{ revision: number }>))
      assert.strictEqual(state.revision, 0)
    }))

  it.scoped("JSON that is not a JSON-RPC request is -32600 Invalid Request with HTTP 400, never 500 or 200", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const cases: ReadonlyArray<readonly [unknown, string | number | null]> = [
        [{ hello: "world" }, null],
        [42, null],
        [null, null],
        ["tools/list", null],
        [true, null],
        [[], null],
        [{ id: 1, method: "ping" }, 1],
        [{ jsonrpc: "1.0", id: 1, method: "ping" }, 1],
        [{ jsonrpc: 2, id: 1, method: "ping" }, 1],
        [{ jsonrpc: "2.0", id: 1, method: 5 }, 1],
        [{ jsonrpc: "2.0", id: 1, method: "" }, 1],
        [{ jsonrpc: "2.0", id: 1, method: ["ping"] }, 1],
        [{ jsonrpc: "2.0", id: 1 }, 1],
        [{ jsonrpc: "2.0", id: {}, method: "ping" }, null],
        [{ jsonrpc: "2.0", id: [1], method: "ping" }, null],
        [{ jsonrpc: "2.0", id: null, method: "ping" }, null],
        [{ jsonrpc: "2.0", id: 1.5, method: "ping" }, null],
        [{ jsonrpc: "2.0", id: true, method: "ping" }, null],
        [{ jsonrpc: "2.0", id: "x", method: "ping", params: 5 }, "x"],
        [{ jsonrpc: "2.0", id: "x", method: "ping", params: "p" }, "x"]
      ]
      for (const [body, id] of cases) {
        const answer = yield* post(api, body)
        assert.strictEqual(answer.status, 400, JSON.stringify(body))
        const error = answer.body as RpcError
        assert.strictEqual(error.error.code, -32600, JSON.stringify(body))
        assert.strictEqual(error.id, id, JSON.stringify(body))
        assert.notInclude(answer.text, "TypeError")
        assert.notInclude(answer.text, "Defect")
      }
    }))

  it.scoped("an unknown method is -32601 Method not found under the request's own id", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const id of [7, "abc-1", "", -3]) {
        const answer = yield* post(api, request(id, "tools/explode", {}))
        assert.strictEqual(answer.status, 200)
        const error = answer.body as RpcError
        assert.deepStrictEqual([error.id, error.error.code], [id, -32601])
        assert.include(error.error.message, "tools/explode")
        assert.notInclude(answer.text, "Defect")
      }
    }))

  it.scoped("a string id comes back as the very same string, an integer id as the integer", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const text = yield* post(api, request("req-α/1", "ping"))
      assert.deepStrictEqual(text.body, { jsonrpc: "2.0", id: "req-α/1", result: {} })
      const number = yield* post(api, request(0, "ping"))
      assert.deepStrictEqual(number.body, { jsonrpc: "2.0", id: 0, result: {} })
      const listed = yield* post(api, request("list-1", "tools/list"))
      assert.strictEqual((listed.body as RpcResult).id, "list-1")
    }))

  it.scoped("params that do not fit the method are -32602 Invalid params naming the path", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const badName = yield* post(api, request(3, "tools/call", { name: 5, arguments: {} }))
      const error = badName.body as RpcError
      assert.deepStrictEqual([badName.status, error.id, error.error.code], [200, 3, -32602])
      assert.deepStrictEqual((error.error.data as { path: string }).path, "name")
      const init = yield* post(api, request(4, "initialize", { capabilities: {}, clientInfo: { name: "x", version: "1" } }))
      assert.deepStrictEqual([(init.body as RpcError).error.code, ((init.body as RpcError).error.data as { path: string }).path], [-32602, "protocolVersion"])
      const unknownTool = yield* post(api, toolCall(5, "drop_database", {}))
      assert.deepStrictEqual([(unknownTool.body as RpcError).id, (unknownTool.body as RpcError).error.code], [5, -32602])
      assert.include((unknownTool.body as RpcError).error.message, "drop_database")
    }))

  it.scoped("invalid tool arguments are a tool error naming the failing path, with no internal dump, and nothing is written", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
        ["update_conversation_state", { chat_id: "a\u0000b", patch: { x: 1 } }, "chat_id"],
        ["update_conversation_state", { patch: { x: 1 } }, "chat_id"],
        ["update_conversation_state", { chat_id: "c1", patch: { x: 1 }, expected_revision: -1 }, "expected_revision"],
        ["update_conversation_state", { chat_id: 2 ** 60, patch: { x: 1 } }, "chat_id"],
        ["resolve_reference_target", { chat_id: "c1", current_message_id: 1, normalized_reference_hints: { target_kind_hint: "bogus" } }, "normalized_reference_hints.target_kind_hint"],
        ["get_message_thread_context", { chat_id: "c1", message_id: "x".repeat(129) }, "message_id"],
        ["list_active_context_objects", { chat_id: "c1", current_message_id: 1, unexpected: true }, "unexpected"]
      ]
      for (const [tool, args, path] of cases) {
        const answer = yield* post(api, toolCall(`${tool}:${path}`, tool, args))
        assert.strictEqual(answer.status, 200)
        const result = envelopeOf(answer)
        assert.isTrue(result.isError, `${tool} ${path}`)
        const envelope = result.structuredContent
        assert.deepStrictEqual([envelope.status, envelope.error?.code], ["error", "InvalidParameters"])
        assert.strictEqual(envelope.data["path"], path, JSON.stringify(envelope))
        assert.strictEqual(envelope.data["tool"], tool)
        assert.include(envelope.error?.message ?? "", path)
        for (const dump of ["MalformedOutput", "stack", "Die", "ParseError", "Cause"]) assert.notInclude(answer.text, dump)
      }
      assert.strictEqual(yield* revision(api, "c1"), 0)
    }))

  it.scoped("notifications and responses get HTTP 202 with no body; a request without an id is refused, not run", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const method of ["notifications/initialized", "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed"]) {
        const answer = yield* post(api, { jsonrpc: "2.0", method, params: { requestId: 1, progressToken: 1, progress: 1 } })
        assert.deepStrictEqual([answer.status, answer.text], [202, ""], method)
      }
      const response = yield* post(api, { jsonrpc: "2.0", id: 9, result: {} })
      assert.deepStrictEqual([response.status, response.text], [202, ""])
      const unknown = yield* post(api, { jsonrpc: "2.0", method: "notifications/unheard_of" })
      assert.deepStrictEqual([unknown.status, (unknown.body as RpcError).error.code], [400, -32601])
      const idless = yield* post(api, { jsonrpc: "2.0", method: "tools/call", params: { name: "update_conversation_state", arguments: { chat_id: "n1", patch: { a: 1 } } } })
      assert.deepStrictEqual([idless.status, (idless.body as RpcError).error.code], [400, -32600])
      assert.strictEqual(yield* revision(api, "n1"), 0)
    }))

  it.scoped("a batch under MCP 2025-06-18 is refused as a whole and nothing of it is applied", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const batch = Array.from({ length: 1000 }, (_, i) => toolCall(i, "update_conversation_state", { chat_id: "b1", patch: { [`k${i}`]: i } }))
      const answer = yield* post(api, batch, "2025-06-18")
      assert.strictEqual(answer.status, 400)
      const error = answer.body as RpcError
      assert.deepStrictEqual([error.id, error.error.code], [null, -32600])
      assert.include(error.error.message, "batch")
      assert.strictEqual(yield* revision(api, "b1"), 0)
    }))

  it.scoped("a batch under MCP 2025-03-26 (or no version header) answers every member in order, each under its own id", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const [version, chat] of [["2025-03-26", "b2"], [undefined, "b3"]] as const) {
        const batch = [
          ...Array.from({ length: 10 }, (_, i) => toolCall(`u${i}`, "update_conversation_state", { chat_id: chat, patch: { [`k${i}`]: i } })),
          { jsonrpc: "2.0", method: "notifications/initialized" },
          { hello: "world" },
          request(99, "no/such/method"),
          request("init", "initialize", { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "x", version: "1" } }),
          request("p", "ping")
        ]
        const answer = yield* post(api, batch, version)
        assert.strictEqual(answer.status, 200)
        const answers = answer.body as ReadonlyArray<RpcResult | RpcError>
        // Every member but the notification is answered, in order.
        assert.deepStrictEqual(answers.map((a) => a.id), [...Array.from({ length: 10 }, (_, i) => `u${i}`), null, 99, "init", "p"])
        assert.deepStrictEqual(answers.slice(10, 13).map((a) => (a as RpcError).error.code), [-32600, -32601, -32600])
        assert.deepStrictEqual(answers[13], { jsonrpc: "2.0", id: "p", result: {} })
        for (const a of answers.slice(0, 10)) assert.isFalse((a as RpcResult<{ isError: boolean }>).result.isError)
        assert.strictEqual(yield* revision(api, chat), 10)
      }
    }))

  it.scoped(`a batch of more than ${McpEdge.maxBatch} messages is refused whole, and nothing is applied`, () =>
    Effect.gen(function*() {
      const api = yield* start()
      const batch = Array.from({ length: McpEdge.maxBatch + 1 }, (_, i) => toolCall(i, "update_conversation_state", { chat_id: "b4", patch: { [`k${i}`]: i } }))
      const answer = yield* post(api, batch, "2025-03-26")
      assert.deepStrictEqual([answer.status, (answer.body as RpcError).error.code], [400, -32600])
      assert.strictEqual(yield* revision(api, "b4"), 0)
      const notifications = yield* post(api, [{ jsonrpc: "2.0", method: "notifications/initialized" }], "2025-03-26")
      assert.deepStrictEqual([notifications.status, notifications.text], [202, ""])
    }))

  it.scoped("an MCP-Protocol-Version the server does not speak is HTTP 400", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const answer = yield* post(api, request(1, "ping"), "1999-01-01")
      assert.deepStrictEqual([answer.status, (answer.body as RpcError).error.code], [400, -32600])
      assert.include((answer.body as RpcError).error.message, "2025-06-18")
    }))

  it.scoped("GET and DELETE /mcp are 405 with Allow: POST (no event stream, no session)", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const method of ["GET", "DELETE"]) {
        const answer = yield* call(() => api.fetch("/mcp", { method, headers: { accept: "text/event-stream" } }))
        assert.strictEqual(answer.status, 405, method)
        assert.strictEqual(answer.headers.get("allow"), "POST")
        yield* call(() => answer.arrayBuffer())
      }
    }))

  it.scoped("over MCP too: an agent's URL fetch activates the link, and resolve_reference_target returns diagnostics only when asked for", () =>
    Effect.gen(function*() {
      const api = yield* start()
      yield* call(() => api.json("/v1/events", [{ type: "message_observed", chat_id: "m1", message_id: 1, sender_user_id: 4, links: [{ url: "https://a.example/x" }] }]))
      const fetched = envelopeOf(yield* post(api, toolCall(1, "record_context_action", { chat_id: "m1", action: "url_fetched", message_id: "1", url: "https://a.example/x" }), "2025-06-18"))
      assert.deepStrictEqual([fetched.isError ?? false, fetched.structuredContent.data["object_id"]], [false, "m1/1/link"])
      const plain = envelopeOf(yield* post(api, toolCall(2, "resolve_reference_target", { chat_id: "m1", current_message_id: 2 }), "2025-06-18"))
      assert.strictEqual((plain.structuredContent.data["best_match"] as { object_id: string }).object_id, "m1/1/link")
      assert.notProperty(plain.structuredContent.data, "diagnostics")
      const asked = envelopeOf(yield* post(api, toolCall(3, "resolve_reference_target", { chat_id: "m1", current_message_id: 2, include_diagnostics: true }), "2025-06-18"))
      assert.property(asked.structuredContent.data, "diagnostics")
      const missing = envelopeOf(yield* post(api, toolCall(4, "record_context_action", { chat_id: "m1", action: "media_described", message_id: "1" }), "2025-06-18"))
      assert.deepStrictEqual([missing.isError, missing.structuredContent.error?.code], [true, "InvalidRequest"])
    }))

  it.scoped("tools/list lists exactly the tools served, and the README's /mcp row names exactly them", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const answer = yield* post(api, request(1, "tools/list"))
      const listed = (answer.body as RpcResult<{ tools: ReadonlyArray<{ name: string }> }>).result.tools.map((t) => t.name)
      assert.sameMembers(listed, [...DeixisToolkit.toolNames])
      assert.strictEqual(listed.length, DeixisToolkit.toolNames.length)
      const readme = fs.readFileSync(new URL("../README.md", import.meta.url), "utf8")
      const row = readme.split("\n").find((line) => line.startsWith("| `POST /mcp` |"))
      assert.isDefined(row, "the README has a POST /mcp row")
      // "the tools `a`, `b`, …." — the names between "the tools" and the end of that sentence.
      const sentence = /the tools ([^.]*)\./.exec(row ?? "")?.[1] ?? ""
      const named = [...sentence.matchAll(/`([a-z_]+)`/g)].map((m) => m[1])
      assert.deepStrictEqual([...named].sort(), [...listed].sort())
    }))

  it.scoped("property: whatever JSON is posted, the answer is a JSON-RPC 2.0 answer or 202, never a 5xx or an internal error", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const methods = ["ping", "tools/list", "tools/call", "initialize", "resources/read", "prompts/get", "notifications/initialized", "nope"]
      const id = fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null), fc.double(), fc.boolean(), fc.constant(undefined))
      const message = fc.oneof(
        fc.jsonValue({ maxDepth: 3 }),
        fc.record(
          {
            jsonrpc: fc.oneof(fc.constant("2.0"), fc.jsonValue({ maxDepth: 1 })),
            id,
            method: fc.oneof(fc.constantFrom(...methods), fc.jsonValue({ maxDepth: 1 })),
            params: fc.oneof(
              fc.jsonValue({ maxDepth: 3 }),
              fc.record({
                name: fc.oneof(fc.constantFrom(...DeixisToolkit.toolNames), fc.string({ maxLength: 8 })),
                arguments: fc.dictionary(fc.constantFrom("chat_id", "patch", "message_id", "topic_id", "x"), fc.jsonValue({ maxDepth: 2 }))
              }, { requiredKeys: [] })
            )
          },
          { requiredKeys: [] }
        )
      )
      const samples = fc.sample(fc.oneof(message, fc.array(message, { maxLength: 4 })), { numRuns: 150, seed: 14 })
      for (const body of samples) {
        const text = JSON.stringify(body)
        if (text === undefined) continue
        const answer = yield* postText(api, text, "2025-03-26")
        assert.include([200, 202, 400], answer.status, text)
        if (answer.status === 202) {
          assert.strictEqual(answer.text, "", text)
          continue
        }
        const answers = Array.isArray(answer.body) ? answer.body as ReadonlyArray<unknown> : [answer.body]
        for (const a of answers) {
          const reply = a as { jsonrpc?: unknown; result?: unknown; error?: { code?: unknown } }
          assert.strictEqual(reply.jsonrpc, "2.0", text)
          assert.isTrue(("result" in reply) !== ("error" in reply), text)
          if (reply.error !== undefined) {
            assert.include([-32700, -32600, -32601, -32602, -32603], reply.error.code, text)
            for (const leak of ["Defect", "TypeError", "Cause", "stack"]) assert.notInclude(JSON.stringify(reply.error), leak, text)
          }
        }
      }
    }), 120_000)

  it.scoped("the MCP SDK client gets an unknown tool as an error and bad arguments as a tool error naming the path", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const client = new Client({ name: "deixis-test", version: "1.0.0" })
      yield* Effect.acquireRelease(
        call(() => client.connect(new StreamableHTTPClientTransport(new URL(api.url + "/mcp")))),
        () => call(() => client.close())
      )
      const bad = yield* call(() => client.callTool({ name: "get_conversation_state", arguments: { chat_id: "line\nforged" } }))
      assert.isTrue(bad.isError)
      const text = (bad.content as ReadonlyArray<{ text: string }>)[0]!.text
      const envelope = JSON.parse(text) as { error: { code: string; message: string }; data: { path: string } }
      assert.deepStrictEqual([envelope.error.code, envelope.data.path], ["InvalidParameters", "chat_id"])
      const unknown = yield* Effect.either(call(() => client.callTool({ name: "nope", arguments: {} }).then(
        (r) => ({ ok: r }),
        (e: unknown) => ({ failed: e as { code?: number } })
      )))
      assert.isTrue(unknown._tag === "Right" && "failed" in unknown.right && unknown.right.failed.code === -32602)
      const fine = yield* call(() => client.callTool({ name: "get_conversation_state", arguments: { chat_id: "sdk" } }))
      assert.isNotTrue(fine.isError)
    }))
})
