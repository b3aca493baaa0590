import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { createServer } from "node:http"
import { gzipSync } from "node:zlib"
import type { AddressInfo } from "node:net"
import * as FastPath from "../src/FastPath.js"
import * as Pipeline from "../src/Pipeline.js"
import * as Routes from "../src/Routes.js"
import { start } from "./harness.js"

const token = "s3cret"
const maxBodyBytes = 4096
const auth = { authorization: `Bearer ${token}` }
const json = { "content-type": "application/json", ...auth }

const events = [
  { type: "message_observed", chat_id: -1001, topic_id: 7, message_id: 10, sender_user_id: 42, links: [{ url: "https://example.com/a", title: "A" }] },
  { type: "object_activated", event_id: "s1", chat_id: -1001, reason: "summarized", source_message_id: 10, kind: "link" },
  { type: "message_observed", chat_id: -1001, topic_id: 7, message_id: 11, sender_user_id: 43, reply_to_message_id: 10 },
  { type: "message_observed", chat_id: -1001, topic_id: 8, message_id: 12, sender_user_id: 42, links: [{ url: "https://example.com/b" }] },
  { type: "object_activated", event_id: "s2", chat_id: -1001, reason: "summarized", source_message_id: 12, kind: "link" }
]

interface Case {
  readonly name: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string | Uint8Array
  readonly status: number
}

const OK = JSON.stringify({ chat_id: -1001, topic_id: 7, current_message_id: 13 })
const routes = ["/v1/tools/resolve_reference_target", "/v1/tools/list_active_context_objects"]
const corpus: ReadonlyArray<Case> = routes.flatMap((path): ReadonlyArray<Case> => [
  { name: "resolved", path, headers: json, body: JSON.stringify({ chat_id: -1001, topic_id: 7, current_message_id: 13, reply_to_message_id: 11, normalized_reference_hints: { target_kind_hint: "article" } }), status: 200 },
  { name: "other topic, string ids", path, headers: json, body: JSON.stringify({ chat_id: "-1001", topic_id: "8", current_message_id: "13", sender_user_id: "42" }), status: 200 },
  { name: "nothing there", path, headers: json, body: JSON.stringify({ chat_id: 5, current_message_id: 1 }), status: 200 },
  { name: "charset parameter", path, headers: { ...json, "content-type": "application/json; charset=utf-8" }, body: JSON.stringify({ chat_id: -1001, topic_id: 7, current_message_id: 13 }), status: 200 },
  { name: "no content-type", path, headers: auth, body: new TextEncoder().encode(JSON.stringify({ chat_id: -1001, current_message_id: 13 })), status: 200 },
  { name: "malformed JSON", path, headers: json, body: "{not json", status: 400 },
  { name: "empty body", path, headers: json, body: "", status: 400 },
  { name: "schema failure: empty id", path, headers: json, body: JSON.stringify({ chat_id: "", current_message_id: 1 }), status: 400 },
  { name: "schema failure: missing field", path, headers: json, body: JSON.stringify({ chat_id: -1001 }), status: 400 },
  { name: "schema failure: wrong type", path, headers: json, body: JSON.stringify({ chat_id: -1001, current_message_id: 1.5, topic_id: [] }), status: 400 },
  { name: "schema failure: an array", path, headers: json, body: "[]", status: 400 },
  { name: "schema failure: null", path, headers: json, body: "null", status: 400 },
  // A well-formed custom kind that no KindRegistry descriptor names: the tool's InvalidRequest.
  { name: "unregistered custom kind", path, headers: json, body: JSON.stringify({ chat_id: -1001, current_message_id: 13, allowed_kinds: ["x.nope"] }), status: 400 },
  { name: "missing token", path, headers: { "content-type": "application/json" }, body: "{}", status: 401 },
  { name: "wrong token", path, headers: { ...json, authorization: "Bearer nope" }, body: "{}", status: 401 },
  // Every spelling of the header is read alike by the fast path and by HttpApiSecurity.bearer.
  { name: "scheme in lower case", path, headers: { ...json, authorization: `bearer ${token}` }, body: "{}", status: 400 },
  { name: "two spaces", path, headers: { ...json, authorization: `Bearer  ${token}` }, body: "{}", status: 401 },
  // Field values lose surrounding whitespace on the wire (RFC 9110 §5.5).
  { name: "trailing space", path, headers: { ...json, authorization: `Bearer ${token} ` }, body: "{}", status: 400 },
  { name: "token alone", path, headers: { ...json, authorization: token }, body: "{}", status: 401 },
  // Only the Bearer scheme presents a token: another seven characters before it do not.
  { name: "another scheme", path, headers: { ...json, authorization: `Basic  ${token}` }, body: "{}", status: 401 },
  { name: "seven other characters", path, headers: { ...json, authorization: `XXXXXXX${token}` }, body: "{}", status: 401 },
  { name: "a tab after the scheme", path, headers: { ...json, authorization: `Bearer\t${token}` }, body: "{}", status: 401 },
  { name: "scheme in capitals", path, headers: { ...json, authorization: `BEARER ${token}` }, body: "{}", status: 400 },
  { name: "empty header", path, headers: { ...json, authorization: "" }, body: "{}", status: 401 },
  { name: "oversized", path, headers: json, body: JSON.stringify({ chat_id: -1001, current_message_id: 1, raw_user_text: "x".repeat(maxBodyBytes) }), status: 413 },
  // Only JSON is read, as it is sent: another media type or a content coding is a 415 unread.
  { name: "text/plain body", path, headers: { ...json, "content-type": "text/plain" }, body: "{}", status: 415 },
  { name: "a form body", path, headers: { ...json, "content-type": "application/x-www-form-urlencoded" }, body: "chat_id=-1001&current_message_id=13", status: 415 },
  { name: "gzip", path, headers: { ...json, "content-encoding": "gzip" }, body: gzipSync(OK), status: 415 },
  { name: "an unknown coding", path, headers: { ...json, "content-encoding": "x-bogus" }, body: OK, status: 415 },
  { name: "identity coding", path, headers: { ...json, "content-encoding": "identity" }, body: OK, status: 200 },
  { name: "another parameter", path, headers: { ...json, "content-type": "application/json; x=1" }, body: OK, status: 200 },
  // Hostile bodies: both answer them alike, byte for byte.
  { name: "a byte order mark", path, headers: json, body: "\uFEFF" + OK, status: 400 },
  { name: "a NUL after the JSON", path, headers: json, body: OK + "\u0000", status: 400 },
  { name: "whitespace only", path, headers: json, body: " \n ", status: 400 },
  { name: "true", path, headers: json, body: "true", status: 400 },
  { name: "a string", path, headers: json, body: "\"x\"", status: 400 },
  { name: "__proto__ key", path, headers: json, body: OK.slice(0, -1) + ",\"__proto__\":{\"max_results\":1,\"max_candidates\":1}}", status: 200 },
  { name: "constructor key", path, headers: json, body: OK.slice(0, -1) + ",\"constructor\":{\"prototype\":{}}}", status: 200 },
  { name: "an integer past 2^53", path, headers: json, body: "{\"chat_id\":9007199254740993,\"current_message_id\":13}", status: 400 },
  { name: "1e400", path, headers: json, body: "{\"chat_id\":-1001,\"current_message_id\":1e400}", status: 400 },
  { name: "duplicate keys", path, headers: json, body: "{\"chat_id\":5,\"current_message_id\":13,\"chat_id\":-1001}", status: 200 },
  { name: "an escaped lone surrogate in a string", path, headers: json, body: "{\"chat_id\":\"\\ud800\",\"current_message_id\":13}", status: 400 },
  // Read as UTF-8 with replacement characters, by both alike.
  { name: "bytes that are not UTF-8", path, headers: json, body: Buffer.concat([Buffer.from("{\"chat_id\":\""), Buffer.from([0xff, 0xed, 0xa0, 0x80]), Buffer.from("\",\"current_message_id\":13}")]), status: 200 },
  { name: "deeply nested", path, headers: json, body: "[".repeat(1500) + "]".repeat(1500), status: 400 },
  { name: "query string", path: path + "?x=1", headers: json, body: JSON.stringify({ chat_id: -1001, current_message_id: 13 }), status: 200 }
])

// POST /v1/events: the batch through its Schema, answered as HttpApi answers it. Sent twice in
// a row to each side (the second time every event is a duplicate), so both stay in step.
const eventsPath = "/v1/events"
const message = (id: number, extra: Record<string, unknown> = {}) =>
  ({ type: "message_observed", chat_id: -2002, topic_id: 3, message_id: id, sender_user_id: 42, ...extra })
const eventsCorpus: ReadonlyArray<Case> = [
  { name: "one message", body: JSON.stringify([message(1)]), status: 200 },
  { name: "messages, an activation and a poll close", body: JSON.stringify([message(2, { links: [{ url: "https://example.com/c" }] }), { type: "object_activated", event_id: "e1", chat_id: -2002, reason: "summarized", source_message_id: 2, kind: "link" }, { type: "poll_closed", event_id: "p1", poll_id: "nope" }]), status: 200 },
  { name: "an edit", body: JSON.stringify([{ type: "message_edited", chat_id: -2002, message_id: 1, edited_at: "2026-11-22T10:00:00Z", text: "edited" }]), status: 200 },
  { name: "an empty batch", body: "[]", status: 200 },
  { name: "not an array", body: JSON.stringify(message(3)), status: 400 },
  { name: "an unknown event type", body: JSON.stringify([{ type: "message_exploded", chat_id: 1 }]), status: 400 },
  { name: "a bad id in the second event", body: JSON.stringify([message(4), message(5, { chat_id: "" })]), status: 400 },
  { name: "over 1,000 events", body: JSON.stringify(Array.from({ length: 1001 }, () => ({}))), status: 400 },
  { name: "malformed JSON", body: "[{", status: 400 },
  { name: "empty body", body: "", status: 400 },
  { name: "deeply nested", body: "[".repeat(1500) + "]".repeat(1500), status: 400 },
  { name: "missing token", headers: { "content-type": "application/json" }, body: "[]", status: 401 },
  { name: "oversized", body: JSON.stringify([message(6, { text: "x".repeat(maxBodyBytes) })]), status: 413 },
  { name: "text/plain body", headers: { ...json, "content-type": "text/plain" }, body: "[]", status: 415 },
  { name: "query string", path: eventsPath + "?x=1", body: JSON.stringify([message(7)]), status: 200 }
].map((c) => ({ path: eventsPath, headers: json, ...c }))

// POST /v1/telegram/updates: raw updates through the shared recorder, one or an array.
const telegramPath = "/v1/telegram/updates"
const update = (id: number, extra: Record<string, unknown> = {}) => ({
  update_id: id,
  message: {
    message_id: id, date: 1_700_000_000 + id, chat: { id: -3003, type: "supergroup", title: "fast" },
    from: { id: 42, is_bot: false, first_name: "A" }, text: `message ${id}`, ...extra
  }
})
const telegramCorpus: ReadonlyArray<Case> = [
  { name: "one update", body: JSON.stringify(update(1)) },
  { name: "a batch, one a reply with a link", body: JSON.stringify([update(2), update(3, { reply_to_message: update(2).message, entities: [{ type: "url", offset: 0, length: 9 }], text: "https://x" })]) },
  { name: "an update it cannot use (skipped)", body: JSON.stringify({ update_id: 4, message: { message_id: 4 } }) },
  { name: "not an update", body: "42", status: 400 },
  { name: "over 1,000 updates", body: JSON.stringify(Array.from({ length: 1001 }, () => ({}))), status: 400 },
  { name: "malformed JSON", body: "{\"update_id\":", status: 400 },
  { name: "missing token", headers: { "content-type": "application/json" }, body: JSON.stringify(update(5)), status: 401 }
].map((c) => ({ path: telegramPath, headers: json, status: 200, ...c }))

interface Answer {
  readonly status: number
  readonly contentType: string | null
  readonly body: string
}

const send = (url: string, c: Case): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const response = await fetch(url + c.path, { method: "POST", headers: c.headers, body: c.body })
    return { status: response.status, contentType: response.headers.get("content-type"), body: await response.text() }
  })

// The pipeline alone on its own port, over the same services as the service that built it, with
// no Effect app attached: what it answers, it answers without the Effect stack (the rest is a 503).
const pipelineAlone = (pipeline: Pipeline.PipelineShape) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly close: () => void }>((resume) => {
      const server = createServer((request, response) => pipeline.handle(request, response, { stopping: false, app: undefined }))
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, close: () => server.close() }))
      })
    }),
    (alone) => Effect.sync(alone.close)
  )

describe("the fast path (the tool routes, POST /v1/events and POST /v1/telegram/updates)", () => {
  it.effect("its routes are the ones the route table flags fast, each an endpoint of the API with a payload", () =>
    Effect.gen(function*() {
      const api = yield* start({ fastPath: true })
      const flagged = Routes.table.filter((r) => r.fast === true)
      assert.deepStrictEqual(flagged.map((r) => r.endpoint).sort(), ["events.ingest", "tools.list", "tools.resolve", "webhook.telegram"])
      assert.isTrue(flagged.every((r) => r.body === "json"))
      assert.deepStrictEqual([...Context.unsafeGet(api.context, FastPath.FastPath).keys()].sort(), flagged.map((r) => r.path).sort())
    }).pipe(Effect.scoped))

  it.scoped("answers every request of the corpus exactly as the Effect stack does: status, content-type, body", () =>
    Effect.gen(function*() {
      const fast = yield* start({ token, maxBodyBytes, fastPath: true })
      const slow = yield* start({ token, maxBodyBytes, fastPath: false })
      assert.isTrue(Option.isNone(Context.getOption(slow.context, FastPath.FastPath)))
      const alone = yield* pipelineAlone(Context.unsafeGet(fast.context, Pipeline.Pipeline))
      for (const api of [fast, slow]) {
        const seeded = yield* Effect.promise(() => api.json("/v1/events", events))
        assert.strictEqual(seeded.status, 200)
      }

      // Each case goes to each side twice (the fast side: through the service, then to the
      // pipeline alone over the same stores), so a write's second answer is compared too.
      for (const c of [...corpus, ...eventsCorpus, ...telegramCorpus]) {
        const expected = yield* send(slow.url, c)
        assert.strictEqual(expected.status, c.status, `${c.path} ${c.name}: the Effect stack`)
        const viaService = yield* send(fast.url, c)
        assert.deepStrictEqual(viaService, expected, `${c.path} ${c.name}: the service with the fast path`)
        const again = yield* send(slow.url, c)
        const viaPipeline = yield* send(alone.url, c)
        assert.deepStrictEqual(viaPipeline, again, `${c.path} ${c.name}: the pipeline and the fast path alone`)
      }
      // A route that is not fast is the Effect app's to answer.
      const patch = yield* Effect.promise(() => fetch(alone.url + "/v1/chats/1/state", { method: "PATCH", headers: json, body: "{}" }))
      assert.strictEqual(patch.status, 503)
      yield* Effect.promise(() => patch.arrayBuffer())
    }))

  it.scoped("counts its requests in the same /metrics series", () =>
    Effect.gen(function*() {
      const api = yield* start({ fastPath: true })
      const series = "deixis_http_requests_total{method=\"POST\",route=\"/v1/tools/resolve_reference_target\",status=\"400\"}"
      const slowest = "deixis_http_request_duration_seconds_bucket{method=\"POST\",route=\"/v1/tools/resolve_reference_target\",le=\"+Inf\"}"
      const sample = (text: string, name: string) => Number(text.split("\n").find((l) => l.startsWith(name + " "))?.split(" ")[1] ?? 0)
      const before = yield* Effect.promise(() => api.fetch("/metrics").then((r) => r.text()))
      const rejected = yield* Effect.promise(() => api.json("/v1/tools/resolve_reference_target", { chat_id: "" }))
      assert.strictEqual(rejected.status, 400)
      const after = yield* Effect.promise(() => api.fetch("/metrics").then((r) => r.text()))
      assert.strictEqual(sample(after, series) - sample(before, series), 1)
      assert.strictEqual(sample(after, slowest) - sample(before, slowest), 1)
    }))
})
