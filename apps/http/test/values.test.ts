/**
 * Values at every entrance of the HTTP service: ids (bodies, path and query parameters,
 * Telegram updates), timestamps, If-Match (RFC 9110), and unconditional PATCHes from two
 * instances over one PostgreSQL database.
 */
import { assert, describe, it } from "@effect/vitest"
import { SqlStore } from "@deixis/store-sql"
import * as SqlClient from "@effect/sql/SqlClient"
import { HttpServer } from "@effect/platform"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Server from "../src/Server.js"
import { type Running, start } from "./harness.js"
import { pgUrl as testPgUrl } from "deixis-test-support/pg"

const call = <A>(f: () => Promise<A>) => Effect.promise(f)

interface Answer {
  readonly status: number
  readonly text: string
}

const send = (api: Running, path: string, init?: RequestInit) =>
  call(async (): Promise<Answer> => {
    const response = await api.fetch(path, init)
    return { status: response.status, text: await response.text() }
  })

const postJson = (api: Running, path: string, body: unknown) =>
  call(async (): Promise<Answer> => {
    const response = await api.json(path, body)
    return { status: response.status, text: await response.text() }
  })

/** Raw JSON text, so a test can write a number JSON.stringify would not (2^53 + 1). */
const postText = (api: Running, path: string, text: string) =>
  call(async (): Promise<Answer> => {
    const response = await api.fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: text })
    return { status: response.status, text: await response.text() }
  })

const patch = (api: Running, chat: string, body: unknown, ifMatch?: string) =>
  call(async () => {
    const response = await api.fetch(`/v1/chats/${encodeURIComponent(chat)}/state`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json", ...(ifMatch === undefined ? {} : { "if-match": ifMatch }) },
      body: JSON.stringify(body)
    })
    return { status: response.status, etag: response.headers.get("etag"), body: (await response.json()) as Record<string, unknown> }
  })

const revisionOf = (api: Running, chat: string) =>
  call(() => api.fetch(`/v1/chats/${encodeURIComponent(chat)}/state`).then((r) => r.json() as Promise<{ revision: number; state: Record<string, unknown> }>))

const observed = (chatId: unknown, extra: Record<string, unknown> = {}) => ({
  type: "message_observed",
  chat_id: chatId,
  message_id: 1,
  ...extra
})

/** Nothing of chat `id` was stored: its context is empty. */
const nothingStored = (api: Running, id: string) =>
  Effect.gen(function*() {
    const context = yield* call(() =>
      api.fetch(`/v1/chats/${encodeURIComponent(id)}/context`).then((r) => r.json() as Promise<{ messages: ReadonlyArray<unknown> }>)
    )
    assert.deepStrictEqual(context.messages, [])
    const resolved = yield* call(() =>
      api.json("/v1/tools/list_active_context_objects", { chat_id: id, current_message_id: 2, include_inactive_debug: true })
        .then((r) => r.json() as Promise<{ inactive_debug: ReadonlyArray<unknown> }>)
    )
    assert.deepStrictEqual(resolved.inactive_debug, [])
  })

describe("values at the HTTP entrances", () => {
  it.scoped("an id with a NUL, a newline, a lone surrogate or 129 characters is a 400 naming the field, and nothing is written", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const bad of ["a\u0000b", "chat\nlevel=error msg=forged", "a\uD800", "x".repeat(129), "a\u2028b", ""]) {
        const answer = yield* postJson(api, "/v1/events", [observed("ok-chat", { message_id: 5 }), observed(bad)])
        assert.strictEqual(answer.status, 400, JSON.stringify(bad))
        assert.include(answer.text, "chat_id")
        assert.notInclude(answer.text, "\n")
      }
      // The good event of each refused batch was not applied either.
      yield* nothingStored(api, "ok-chat")
      const edge = yield* postJson(api, "/v1/events", [observed("x".repeat(128))])
      assert.strictEqual(edge.status, 200)
    }))

  it.scoped("a lone surrogate does not alias another id", () =>
    Effect.gen(function*() {
      const api = yield* start()
      // Stored as UTF-8, both would be "a\uFFFD" — the very id of the third.
      const a = yield* postText(api, "/v1/events", "[{\"type\":\"message_observed\",\"chat_id\":\"a\\ud800\",\"message_id\":1}]")
      const b = yield* postText(api, "/v1/events", "[{\"type\":\"message_observed\",\"chat_id\":\"a\\udbff\",\"message_id\":1}]")
      assert.deepStrictEqual([a.status, b.status], [400, 400])
      yield* nothingStored(api, "a\uFFFD")
    }))

  it.scoped("an integer id beyond 2^53 - 1 is a 400, so 2^53 and 2^53 + 1 cannot become one chat", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const literal of ["9007199254740992", "9007199254740993", "-9007199254740993", "1e300"]) {
        const answer = yield* postText(api, "/v1/events", `[{"type":"message_observed","chat_id":${literal},"message_id":1}]`)
        assert.strictEqual(answer.status, 400, literal)
        assert.include(answer.text, "chat_id")
      }
      yield* nothingStored(api, "9007199254740992")
      const safe = yield* postText(api, "/v1/events", `[{"type":"message_observed","chat_id":9007199254740991,"message_id":1}]`)
      assert.strictEqual(safe.status, 200)
    }))

  it.scoped("ids in tool requests are checked by the same rule", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const path of ["/v1/tools/resolve_reference_target", "/v1/tools/list_active_context_objects"]) {
        const answer = yield* postJson(api, path, { chat_id: "c\r\n", current_message_id: 1 })
        assert.strictEqual(answer.status, 400, path)
        assert.include(answer.text, "chat_id")
        const request = yield* postJson(api, path, { chat_id: "c", current_message_id: 1, request_id: "r\nforged" })
        assert.strictEqual(request.status, 400, path)
        assert.include(request.text, "request_id")
      }
    }))

  it.scoped("a path or query parameter that is not a valid id is a 400 naming it", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const [path, field] of [
        [`/v1/chats/${"x".repeat(129)}/state`, "chat_id"],
        [`/v1/chats/${"%F0%9F%98%80".repeat(129)}/state`, "chat_id"],
        ["/v1/chats/a%00b/state", "chat_id"],
        ["/v1/chats/a%0Ab/context", "chat_id"],
        ["/v1/chats/a%E2%80%A8b/state", "chat_id"],
        ["/v1/chats/ok/state?topic_id=t%0D%0Ax", "topic_id"],
        ["/v1/chats/ok/context?message_id=" + "9".repeat(129), "message_id"],
        ["/v1/chats/ok/context?topic_id=", "topic_id"]
      ] as const) {
        const answer = yield* send(api, path)
        assert.strictEqual(answer.status, 400, path)
        assert.include(answer.text, field, path)
      }
      const patched = yield* call(() =>
        api.fetch("/v1/chats/a%00b/state", { method: "PATCH", headers: { "content-type": "application/json" }, body: "{\"a\":1}" })
      )
      assert.strictEqual(patched.status, 400)
      const fine = yield* send(api, `/v1/chats/${encodeURIComponent("чат-😀")}/state?topic_id=${"7".repeat(128)}`)
      assert.strictEqual(fine.status, 200)
      assert.include(fine.text, "чат-😀")
      // 128 characters, each percent-encoded as four UTF-8 bytes, is still an id.
      const longest = yield* send(api, `/v1/chats/${"%F0%9F%98%80".repeat(128)}/state`)
      assert.strictEqual(longest.status, 200)
      assert.include(longest.text, "😀".repeat(128))
    }))

  it.scoped("Telegram updates with ids core refuses are skipped, never a 500, and nothing is written", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const text = `[
        {"update_id": 1, "message": {"message_id": 1, "date": 1795000000, "chat": {"id": 1152921504606846976, "type": "group"},
          "from": {"id": 42, "is_bot": false, "first_name": "A"}, "text": "hi"}},
        {"update_id": 2, "poll": {"id": "p\\nforged", "question": "Q?", "is_closed": true}},
        {"update_id": 3, "poll": {"id": "${"p".repeat(200)}", "question": "Q?", "is_closed": true}}
      ]`
      const answer = yield* postText(api, "/v1/telegram/updates", text)
      assert.strictEqual(answer.status, 200)
      const result = JSON.parse(answer.text) as { skipped: ReadonlyArray<{ index: number }>; events: { applied: number }; history_items: number }
      assert.deepStrictEqual(result.skipped.map((s) => s.index), [0, 1, 2])
      assert.deepStrictEqual([result.events.applied, result.history_items], [0, 0])
      yield* nothingStored(api, "1152921504606846976")
    }))

  it.scoped("a timestamp that is not a real calendar date is a 400 naming the field, not stored as another day", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const sentAt of ["2026-02-30T10:00:00Z", "2025-02-29T10:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T10:60:00Z", "2026-12-31T23:59:60Z", "2026-01-01T10:00:00+24:00"]) {
        const answer = yield* postJson(api, "/v1/events", [observed("dates", { sent_at: sentAt })])
        assert.strictEqual(answer.status, 400, sentAt)
        assert.include(answer.text, "sent_at", sentAt)
      }
      yield* nothingStored(api, "dates")
      const leap = yield* postJson(api, "/v1/events", [observed("dates", { sent_at: "2028-02-29T10:00:00Z" })])
      assert.strictEqual(leap.status, 200)
    }))

  it.scoped("If-Match: * succeeds when the state exists and is 412 when it was never written", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const missing = yield* patch(api, "star", { a: 1 }, "*")
      assert.strictEqual(missing.status, 412)
      assert.deepStrictEqual([missing.body["_tag"], missing.body["current_revision"]], ["PreconditionFailed", 0])
      assert.strictEqual((yield* revisionOf(api, "star")).revision, 0)
      const created = yield* patch(api, "star", { a: 1 })
      assert.deepStrictEqual([created.status, created.etag], [200, "\"1\""])
      const exists = yield* patch(api, "star", { b: 2 }, "*")
      assert.deepStrictEqual([exists.status, exists.etag], [200, "\"2\""])
      const spaced = yield* patch(api, "star", { c: 3 }, "  *  ")
      assert.strictEqual(spaced.status, 200)
      assert.deepStrictEqual((yield* revisionOf(api, "star")).state, { a: 1, b: 2, c: 3 })
    }))

  it.scoped("If-Match with a list of entity tags holds when one is the current ETag (strong comparison), else 412", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const first = yield* patch(api, "tags", { n: 0 }, "\"0\"")
      assert.strictEqual(first.status, 200)
      const listed = yield* patch(api, "tags", { n: 1 }, "\"3\", \"1\"")
      assert.deepStrictEqual([listed.status, listed.etag], [200, "\"2\""])
      const listedAgain = yield* patch(api, "tags", { n: 2 }, "\"1\",\"2\"")
      assert.deepStrictEqual([listedAgain.status, listedAgain.etag], [200, "\"3\""])
      const none = yield* patch(api, "tags", { n: 3 }, "\"1\", \"2\"")
      assert.deepStrictEqual([none.status, none.body["current_revision"], none.body["_tag"]], [412, 3, "PreconditionFailed"])
      // A weak tag never matches under If-Match, and "03" is not "3".
      const weak = yield* patch(api, "tags", { n: 3 }, "W/\"3\"")
      assert.strictEqual(weak.status, 412)
      const padded = yield* patch(api, "tags", { n: 3 }, "\"03\"")
      assert.strictEqual(padded.status, 412)
      const mixed = yield* patch(api, "tags", { n: 3 }, "W/\"3\", \"3\"")
      assert.strictEqual(mixed.status, 200)
      assert.deepStrictEqual((yield* revisionOf(api, "tags")).state, { n: 3 })
    }))

  it.scoped("a malformed If-Match is a 400 naming the header, and nothing is written", () =>
    Effect.gen(function*() {
      const api = yield* start()
      for (const header of ["3", "yesterday", "*, \"1\"", "\"1\" \"2\"", "\"a\"b\"", ",", Array.from({ length: 65 }, (_, i) => `"${i}"`).join(",")]) {
        const answer = yield* patch(api, "malformed", { a: 1 }, header)
        assert.strictEqual(answer.status, 400, header)
        assert.strictEqual(answer.body["path"], "if-match", header)
      }
      assert.strictEqual((yield* revisionOf(api, "malformed")).revision, 0)
    }))

  it.scoped("200 concurrent PATCHes without If-Match on one state all succeed", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const results = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => patch(api, "blind", { [`k${i}`]: i }),
        { concurrency: 32 }
      )
      assert.deepStrictEqual(results.filter((r) => r.status !== 200).map((r) => r.status), [])
      const final = yield* revisionOf(api, "blind")
      assert.strictEqual(final.revision, 200)
      assert.strictEqual(Object.keys(final.state).length, 200)
    }))

  it.scoped("two service instances on one PostgreSQL database: 300 concurrent PATCHes without If-Match, no 409, every key kept", () =>
    Effect.gen(function*() {
      const url = testPgUrl()
      const schema = `deixis_http_values_${Date.now().toString(36)}_${process.pid}`
      // The schema is dropped when the test ends, after both instances stopped.
      yield* Effect.acquireRelease(Effect.void, () =>
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(
          Effect.provide(SqlStore.layerPgClient({ url, max_connections: 1 })),
          Effect.orDie
        ))
      const instance = Effect.gen(function*() {
        const context = yield* Layer.build(
          Server.layer(
            {
              ...Server.defaults,
              port: 0,
              host: "127.0.0.1",
              apiToken: Option.none(),
              metricsToken: Option.none(),
              telegramSecret: Option.none(),
              maxBodyBytes: 1024 * 1024,
              telegram: {}
            },
            SqlStore.layerPg({ url, schema, max_connections: 4, sweep_interval: 0 })
          ).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))
        )
        const server = yield* Effect.provide(HttpServer.HttpServer, context)
        const address = server.address
        const base = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
        const running: Running = {
          url: base,
          context,
          fetch: (path, init) => fetch(base + path, init),
          json: (path, body) =>
            fetch(base + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
        }
        return running
      })
      const first = yield* instance
      const second = yield* instance
      const results = yield* Effect.forEach(
        Array.from({ length: 300 }, (_, i) => i),
        (i) => patch(i % 2 === 0 ? first : second, "-100777", { [`k${i}`]: i }),
        { concurrency: 48 }
      )
      assert.deepStrictEqual(results.filter((r) => r.status !== 200).map((r) => r.status), [])
      const final = yield* revisionOf(second, "-100777")
      assert.strictEqual(final.revision, 300)
      for (let i = 0; i < 300; i++) assert.strictEqual(final.state[`k${i}`], i)
    }), 120_000)
})
