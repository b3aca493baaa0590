import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { connect } from "node:net"
import { vi } from "vitest"
import * as Pipeline from "../src/Pipeline.js"
import { start } from "./harness.js"

const portOf = (url: string) => Number(new URL(url).port)

/** Sends a request's head and part of its body on a socket of its own, then goes away. */
const sendAndLeave = (port: number, head: string, body: string) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      const socket = connect(port, "127.0.0.1")
      socket.once("error", () => resolve())
      socket.once("connect", () => {
        socket.write(head + body, () => {
          // After the bytes are out: the service sees them, then the connection end.
          setTimeout(() => {
            socket.destroy()
            resolve()
          }, 50)
        })
      })
    })
  )

/** Polls `check` on the real clock, at most `attempts` times; its last value. */
const eventually = <A>(check: () => Promise<A>, done: (a: A) => boolean, attempts = 100) =>
  Effect.promise(async () => {
    let value = await check()
    for (let i = 0; i < attempts && !done(value); i++) {
      await new Promise((r) => setTimeout(r, 50))
      value = await check()
    }
    return value
  })

describe("the pipeline", () => {
  it.scoped("reads each request's body once and parses it once, on every route that takes one, /mcp included", () =>
    Effect.gen(function*() {
      const api = yield* start({ token: "t" })
      const pipeline = Context.unsafeGet(api.context, Pipeline.Pipeline)
      const scope = { chat_id: -1001, current_message_id: 3 }
      const message = { message_id: 9, date: 1_700_000_000, chat: { id: -1001, type: "supergroup" }, from: { id: 7, is_bot: false, first_name: "A" }, text: "hi" }
      const requests: ReadonlyArray<readonly [string, string, unknown]> = [
        ["POST", "/v1/events", [{ type: "message_observed", chat_id: -1001, message_id: 1, sender_user_id: 7, sent_at: "2026-11-01T10:00:00Z" }]],
        ["POST", "/v1/tools/resolve_reference_target", scope],
        ["POST", "/v1/tools/list_active_context_objects", scope],
        ["POST", "/v1/telegram/updates", { update_id: 1, message }],
        ["POST", "/v1/telegram/sent", { message: { ...message, message_id: 10, from: { id: 999, is_bot: true, first_name: "b" } } }],
        ["PATCH", "/v1/chats/-1001/state", { step: 1 }],
        ["POST", "/v1/tools/resolve_reference_target", { ...scope, max_candidates: 99 }],
        // The MCP edge hands the parsed message to the library as it is: no second parse.
        ["POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "update_conversation_state", arguments: { chat_id: "-1001", patch: { mcp: 1 } } } }],
        ["POST", "/mcp", { jsonrpc: "2.0", id: 2, method: "tools/list" }]
      ]
      const before = { ...pipeline.counts }
      // Every JSON.parse in this process while the requests run (the answers are read as text),
      // of each body's text: one per request that sent it.
      const parse = vi.spyOn(JSON, "parse")
      const sent = new Map<string, number>()
      for (const [, , body] of requests) sent.set(JSON.stringify(body), (sent.get(JSON.stringify(body)) ?? 0) + 1)
      try {
        for (const [method, path, body] of requests) {
          const response = yield* Effect.promise(() => api.json(path, body, { method }).then(async (r) => ({ status: r.status, text: await r.text() })))
          assert.include([200, 400], response.status, `${path}: ${response.text}`)
        }
        const parsed = new Map<string, number>()
        for (const [text] of parse.mock.calls) if (sent.has(text)) parsed.set(text, (parsed.get(text) ?? 0) + 1)
        assert.deepStrictEqual(parsed, sent)
      } finally {
        parse.mockRestore()
      }
      assert.deepStrictEqual(
        { reads: pipeline.counts.reads - before.reads, parses: pipeline.counts.parses - before.parses },
        { reads: requests.length, parses: requests.length }
      )
    }))

  it.scopedLive("a client that goes away mid-body is counted as aborted (499), never answered or counted as 413", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const port = portOf(api.url)
      yield* sendAndLeave(
        port,
        "POST /v1/telegram/sent HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n",
        "{\"message\": {\"text\": \"" + "x".repeat(1000)
      )
      const metrics = yield* eventually(
        () => api.fetch("/metrics").then((r) => r.text()),
        (text) => /route="\/v1\/telegram\/sent",status="499"/.test(text)
      )
      const lines = metrics.split("\n").filter((l) => l.includes("route=\"/v1/telegram/sent\"") && /^deixis_http_requests_total\b/.test(l))
      assert.isTrue(lines.some((l) => l.includes("status=\"499\"")), lines.join("\n"))
      assert.isFalse(lines.some((l) => l.includes("status=\"413\"")), lines.join("\n"))
    }))

  it.scopedLive("an accepted /mcp write finishes though its client went away at once", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "update_conversation_state", arguments: { chat_id: "gone", patch: { written: true } } }
      })
      yield* sendAndLeave(
        portOf(api.url),
        `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`,
        body
      )
      const state = yield* eventually(
        () => api.fetch("/v1/chats/gone/state").then((r) => r.json() as Promise<{ readonly state: Record<string, unknown> }>),
        (s) => s.state["written"] === true
      )
      assert.strictEqual(state.state["written"], true)
    }))
})

describe("a refused request's body", () => {
  it.scoped("a value outside an enum is one line naming the field and every allowed value", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const response = yield* Effect.promise(() =>
        api.json("/v1/tools/resolve_reference_target", {
          chat_id: -1001,
          current_message_id: 3,
          normalized_reference_hints: { ordinal_hint: "fourth" }
        }).then(async (r) => ({ status: r.status, body: await r.json() as { readonly message: string; readonly issues: ReadonlyArray<{ readonly path: ReadonlyArray<string>; readonly message: string }> } }))
      )
      assert.strictEqual(response.status, 400)
      assert.strictEqual(response.body.issues.length, 1)
      assert.deepStrictEqual(response.body.issues[0]!.path, ["normalized_reference_hints", "ordinal_hint"])
      assert.strictEqual(
        response.body.message,
        "normalized_reference_hints.ordinal_hint: must be one of \"first\", \"second\", \"last\"; got \"fourth\""
      )
      // The issue's own example: a kind hint outside the built-in kinds (and not an extension kind).
      const kind = yield* Effect.promise(() =>
        api.json("/v1/tools/resolve_reference_target", { chat_id: -1001, current_message_id: 3, normalized_reference_hints: { target_kind_hint: "nope" } })
          .then((r) => r.json() as Promise<{ readonly message: string; readonly issues: ReadonlyArray<unknown> }>)
      )
      assert.strictEqual(kind.issues.length, 1, kind.message)
      assert.notInclude(kind.message, "\n")
      assert.match(kind.message, /^normalized_reference_hints\.target_kind_hint: must be one of "[a-z_]+"(, "[a-z_]+")+.*; got "nope"$/)
    }))
})
