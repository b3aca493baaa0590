import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { start } from "./harness.js"

const message = (id: number, extra: Record<string, unknown> = {}) => ({
  type: "message_observed",
  chat_id: -1001,
  topic_id: 7,
  message_id: id,
  sender_user_id: 42,
  ...extra
})

const call = <A>(f: () => Promise<A>) => Effect.promise(f)
/** A response body, typed by what the test reads of it. */
const body = <T>(response: Response) => response.json() as Promise<T>

interface Resolved {
  readonly status: string
  readonly best_match: { readonly object_id: string }
  readonly scope_used: string
}
interface Listed {
  readonly objects: ReadonlyArray<{ readonly object_id: string }>
  readonly generated_at: string
}

describe("apps/http", () => {
  it.scoped("ingests events idempotently and answers both tools", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const batch = [
        message(10, { links: [{ url: "https://example.com/a", title: "A" }] }),
        { type: "object_activated", event_id: "s1", chat_id: -1001, reason: "summarized", source_message_id: 10, kind: "link" },
        message(11)
      ]
      const first = yield* call(() => api.json("/v1/events", batch).then(body<unknown>))
      assert.deepStrictEqual(first, { applied: 3, duplicates: 0, skipped: [] })
      const again = yield* call(() => api.json("/v1/events", batch).then(body<unknown>))
      assert.deepStrictEqual(again, { applied: 0, duplicates: 3, skipped: [] })

      const resolved = yield* call(() =>
        api.json("/v1/tools/resolve_reference_target", {
          chat_id: -1001, topic_id: 7, current_message_id: 11, sender_user_id: 42, raw_user_text: "this?",
          normalized_reference_hints: { target_kind_hint: "article" }
        }).then(body<Resolved>)
      )
      assert.strictEqual(resolved.status, "resolved")
      assert.strictEqual(resolved.best_match.object_id, "-1001/10/link")
      assert.strictEqual(resolved.scope_used, "topic")

      const listed = yield* call(() =>
        api.json("/v1/tools/list_active_context_objects", { chat_id: "-1001", topic_id: "7", current_message_id: "11" }).then(body<Listed>)
      )
      assert.deepStrictEqual(listed.objects.map((o) => o.object_id), ["-1001/10/link"])
      assert.match(listed.generated_at, /^\d{4}-\d\d-\d\dT/)
    }))

  {
    it.scoped(`resolve answers without the scoring diagnostics unless include_diagnostics is true`, () =>
      Effect.gen(function*() {
        const api = yield* start()
        yield* call(() => api.json("/v1/events", [
          message(10, { links: [{ url: "https://example.com/a" }] }),
          { type: "object_activated", event_id: "s1", chat_id: -1001, reason: "summarized", source_message_id: 10, kind: "link" }
        ]).then((r) => r.arrayBuffer()))
        const ask = (extra: Record<string, unknown>) =>
          call(() => api.json("/v1/tools/resolve_reference_target", { chat_id: -1001, topic_id: 7, current_message_id: 11, ...extra }).then(body<Record<string, unknown>>))
        const plain = yield* ask({})
        assert.strictEqual(plain["status"], "resolved")
        assert.notProperty(plain, "diagnostics")
        assert.notProperty(yield* ask({ include_diagnostics: false }), "diagnostics")
        const { diagnostics, ...rest } = yield* ask({ include_diagnostics: true })
        assert.deepStrictEqual(rest, plain)
        assert.deepInclude(diagnostics as object, { candidate_count: 1, fallback: false })
        assert.isAbove(JSON.stringify({ ...rest, diagnostics }).length, JSON.stringify(plain).length)
      }))
  }

  it.scoped("a body that fails the Schema is a 400 naming the failing path, and writes nothing", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const response = yield* call(() => api.json("/v1/events", [message(1), { ...message(2), chat_id: "" }]))
      assert.strictEqual(response.status, 400)
      const error = yield* call(() => response.text())
      assert.include(error, "chat_id")
      const malformed = yield* call(() => api.json("/v1/events", "{not json"))
      assert.strictEqual(malformed.status, 400)
      const listed = yield* call(() =>
        api.json("/v1/tools/resolve_reference_target", { chat_id: -1001, current_message_id: 3, reply_to_message_id: 1 }).then(body<Resolved>)
      )
      assert.strictEqual(listed.status, "not_found")
    }))

  it.scoped("a batch over the limit is refused before its events are decoded", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const valid = Array.from({ length: 1001 }, (_, i) => message(i + 1))
      const lengthError = {
        _tag: "HttpApiDecodeError",
        issues: [{ _tag: "Refinement", path: [], message: "a batch holds at most 1000 events" }],
        message: "a batch holds at most 1000 events"
      }
      const refused = yield* call(() => api.json("/v1/events", valid))
      assert.strictEqual(refused.status, 400)
      assert.deepStrictEqual(yield* call(() => body<unknown>(refused)), lengthError)
      // Elements past the bound are never looked at: one that fails decoding (here the 1001st,
      // and in a second batch the first) changes nothing in the answer.
      for (const bad of [1000, 0]) {
        const batch = valid.map((e, i) => (i === bad ? { ...e, chat_id: "" } : e))
        const response = yield* call(() => api.json("/v1/events", batch))
        assert.strictEqual(response.status, 400)
        assert.deepStrictEqual(yield* call(() => body<unknown>(response)), lengthError, `invalid event at ${bad}`)
      }
      // The bound itself is accepted, and nothing over it was written.
      const accepted = yield* call(() => api.json("/v1/events", valid.slice(0, 1000)).then(body<{ applied: number }>))
      assert.strictEqual(accepted.applied, 1000)

      // The webhook's array of updates, the same way (its messages quote the input, so the issues
      // are compared by kind and path, and by message with the input put back).
      const updates = Array.from({ length: 1001 }, (_, i): unknown => ({ update_id: i }))
      interface DecodeError {
        readonly issues: ReadonlyArray<{ readonly _tag: string; readonly path: ReadonlyArray<unknown>; readonly message: string }>
      }
      const issues = (input: ReadonlyArray<unknown>) =>
        Effect.gen(function*() {
          const response = yield* call(() => api.json("/v1/telegram/updates", input))
          assert.strictEqual(response.status, 400)
          const { issues } = yield* call(() => body<DecodeError>(response))
          return issues.map((i) => [i._tag, i.path, i.message.replace(JSON.stringify(input), "<input>")])
        })
      const expected = [
        ["Type", [], "Expected TelegramUpdate, actual <input>"],
        ["Refinement", [], "Expected an array of at most 1000 item(s), actual <input>"]
      ]
      assert.deepStrictEqual(yield* issues(updates), expected)
      assert.deepStrictEqual(yield* issues(updates.map((u, i) => (i === 1000 ? 5 : u))), expected)
    }))

  it.scoped("unknown routes are a JSON 404", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const response = yield* call(() => api.fetch("/v1/nope"))
      assert.strictEqual(response.status, 404)
      assert.strictEqual((yield* call(() => body<{ _tag: string }>(response)))._tag, "NotFound")
    }))

  it.scoped("with DEIXIS_API_TOKEN, /v1 and /mcp need the bearer token", () =>
    Effect.gen(function*() {
      const api = yield* start({ token: "s3cret" })
      const anonymous = yield* call(() => fetch(api.url + "/v1/events", { method: "POST", body: "[]", headers: { "content-type": "application/json" } }))
      assert.strictEqual(anonymous.status, 401)
      const wrong = yield* call(() => fetch(api.url + "/v1/events", { method: "POST", body: "[]", headers: { authorization: "Bearer nope", "content-type": "application/json" } }))
      assert.strictEqual(wrong.status, 401)
      const mcp = yield* call(() => fetch(api.url + "/mcp", { method: "POST", body: "{}", headers: { "content-type": "application/json" } }))
      assert.strictEqual(mcp.status, 401)
      const ok = yield* call(() => api.json("/v1/events", []))
      assert.strictEqual(ok.status, 200)
      const health = yield* call(() => fetch(api.url + "/healthz"))
      assert.strictEqual(health.status, 200)
    }))

  it.scoped("a body over the limit is a 413 and writes nothing", () =>
    Effect.gen(function*() {
      const api = yield* start({ maxBodyBytes: 2048 })
      const big = [message(1, { links: Array.from({ length: 40 }, (_, i) => ({ url: `https://example.com/${"x".repeat(40)}/${i}` })) })]
      const response = yield* call(() => api.json("/v1/events", big))
      assert.strictEqual(response.status, 413)
      const context = yield* call(() => api.fetch("/v1/chats/-1001/context?topic_id=7").then(body<{ messages: ReadonlyArray<unknown> }>))
      assert.deepStrictEqual(context.messages, [])
    }))

  it.scoped("conversation state: ETag, If-Match, 412 on a stale revision", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const empty = yield* call(() => api.fetch("/v1/chats/-1001/state?topic_id=7"))
      assert.strictEqual(empty.headers.get("etag"), "\"0\"")
      const patch = (body: unknown, ifMatch?: string) =>
        api.fetch("/v1/chats/-1001/state?topic_id=7", {
          method: "PATCH",
          body: JSON.stringify(body),
          headers: { "content-type": "application/merge-patch+json", ...(ifMatch === undefined ? {} : { "if-match": ifMatch }) }
        })
      const first = yield* call(() => patch({ household: { married: false, children: 2 } }, "\"0\""))
      assert.strictEqual(first.status, 200)
      assert.strictEqual(first.headers.get("etag"), "\"1\"")
      const stale = yield* call(() => patch({ household: { married: true } }, "\"0\""))
      assert.strictEqual(stale.status, 412)
      assert.strictEqual((yield* call(() => body<{ current_revision: number }>(stale))).current_revision, 1)
      const second = yield* call(() => patch({ household: { married: true, children: null } }, "\"1\""))
      const patched = yield* call(() => body<{ state: unknown }>(second))
      assert.deepStrictEqual(patched.state, { household: { married: true } })
      const other = yield* call(() => api.fetch("/v1/chats/-1001/state?topic_id=8").then(body<{ revision: number; state: unknown }>))
      assert.deepStrictEqual([other.revision, other.state], [0, {}])
      const badHeader = yield* call(() => patch({ a: 1 }, "yesterday"))
      assert.strictEqual(badHeader.status, 400)
    }))

  it.scoped("health, readiness and Prometheus metrics", () =>
    Effect.gen(function*() {
      const api = yield* start()
      assert.strictEqual((yield* call(() => api.fetch("/readyz"))).status, 200)
      // The metric registry is process-wide: compare before and after.
      const sample = (text: string, series: string) => Number(text.split("\n").find((l) => l.startsWith(series + " "))?.split(" ")[1] ?? 0)
      const requests = "deixis_http_requests_total{method=\"POST\",route=\"/v1/events\",status=\"200\"}"
      const slowest = "deixis_http_request_duration_seconds_bucket{method=\"POST\",route=\"/v1/events\",le=\"+Inf\"}"
      const before = yield* call(() => api.fetch("/metrics").then((r) => r.text()))
      yield* call(() => api.json("/v1/events", [message(1)]))
      const text = yield* call(() => api.fetch("/metrics").then((r) => r.text()))
      assert.strictEqual(sample(text, requests) - sample(before, requests), 1)
      assert.strictEqual(sample(text, slowest) - sample(before, slowest), 1)
      assert.strictEqual(sample(text, "deixis_context_messages"), 1)
      assert.match(text, /# TYPE deixis_http_request_duration_seconds histogram/)
    }))
})
