/**
 * Where the user pointed more precisely than a reply (issue 27), over HTTP and MCP, on every
 * store: the fixture corpus (Telegram's exact updates) posted to /v1/telegram/updates, then a
 * quote of one of two links, "my last photo", a reply to a pin notice named as Telegram names
 * it, resolved over POST /v1/tools/resolve_reference_target and MCP's tools/call; and MCP's
 * read_url reading a page on loopback through an injected, loopback-only connector.
 */
import type * as DeixisServices from "@deixis/chathistory/DeixisServices"
import { chats, corpus, options } from "@deixis/telegraf/TelegramFixtures"
import { SqlStore } from "@deixis/store-sql"
import { UrlReader } from "@deixis/tools"
import * as UrlReaderTesting from "@deixis/tools/UrlReaderTesting"
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as Store from "../src/Store.js"
import { start } from "./harness.js"
import { pgUrl as testPgUrl } from "deixis-test-support/pg"

const pgUrl = testPgUrl()
const S = String(chats.supergroup.id)

let guard = UrlReaderTesting.loopbackOnly()
afterEach(() => {
  // No read of any case went beyond loopback.
  assert.deepStrictEqual(guard.violations, [])
  guard = UrlReaderTesting.loopbackOnly()
})

const sqlite = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "deixis-http-pointing-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ),
  (dir) => SqlStore.layerSqlite({ filename: path.join(dir, "deixis.db"), sweep_interval: 0 })
))

const postgres = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => `deixis_http_pointing_${Date.now().toString(36)}_${process.pid}`),
    (schema) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(
        Effect.provide(SqlStore.layerPgClient({ url: pgUrl, max_connections: 1 })),
        Effect.orDie
      )
  ),
  (schema) => SqlStore.layerPg({ url: pgUrl, schema, max_connections: 4, sweep_interval: 0 })
))

/** A page on loopback, read as plans.example (allowed) by an injected reader. */
const page = Effect.acquireRelease(
  Effect.async<http.Server>((resume) => {
    const s = http.createServer((_, res) =>
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<title>Plan B</title><main><p>Ship on Friday.</p></main>"))
    s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
  }),
  (s) => Effect.async<void>((resume) => void s.close(() => resume(Effect.void)))
)

const serve = (stores: Layer.Layer<DeixisServices.Stores, unknown>) =>
  Effect.gen(function*() {
    const dns = UrlReaderTesting.tableResolver({ "plans.example": ["127.0.0.1"], "intranet.example": ["10.0.0.9"] })
    const reader = UrlReader.layer({ allow_hosts: ["plans.example"] }, { resolver: dns.resolver, connector: guard.connector })
    const running = yield* start({
      maxBodyBytes: 8 * 1024 * 1024,
      telegram: { botId: options.botId, botUsername: options.botUsername },
      stores: Layer.merge(stores, reader)
    })
    const base = running.url
    const post = (route: string, body: unknown, headers: Record<string, string> = {}) =>
      Effect.promise(() =>
        fetch(base + route, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) })
          .then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> })))
    const resolve = (body: Record<string, unknown>) =>
      Effect.map(post("/v1/tools/resolve_reference_target", body), (r) => r.body as { status: string; best_match: { object_id: string } | null; reasons: Array<string> })
    let id = 0
    const mcp = (name: string, args: Record<string, unknown>) =>
      Effect.map(
        post("/mcp", { jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args } }, {
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18"
        }),
        (r) => (r.body as { result: { isError?: boolean; structuredContent: { status: string; error: { code: string } | null; data: Record<string, unknown> } } }).result
      )
    // The corpus as the bot's webhook would post it (the group's upgrade left out: its data would move).
    const recorded = yield* post("/v1/telegram/updates", corpus.filter((f) => f.expected.migration === undefined).map((f) => f.update))
    assert.strictEqual(recorded.status, 200)
    // A photo inspected elsewhere in the chat: without the reply, it would win.
    yield* post("/v1/events", [{ type: "object_activated", event_id: "inspect-82", chat_id: S, reason: "media_inspected", object_id: `${S}/82/media.image` }])
    return { post, resolve, mcp }
  })

const stores = [["memory", Store.layerMemory], ["sqlite", sqlite], ["postgres", postgres]] as const

for (const [name, layer] of stores) {
  describe(`what the user pointed at, over HTTP and MCP, ${name}`, () => {
    it.scoped("a quote of one of two links resolves to that link (the recorded quote, and a caller's quote_text)", () =>
      Effect.gen(function*() {
        const api = yield* serve(layer)
        const recorded = yield* api.resolve({ chat_id: S, current_message_id: 94, reply_to_message_id: 93, sender_user_id: 1002 })
        assert.deepStrictEqual([recorded.status, recorded.best_match?.object_id], ["resolved", `${S}/93/link/1`])
        assert.include(recorded.reasons, "quote_match")
        const quoted = yield* api.resolve({ chat_id: S, current_message_id: 9001, reply_to_message_id: 93, quote_text: "https://example.com/plan-a" })
        assert.deepStrictEqual([quoted.status, quoted.best_match?.object_id], ["resolved", `${S}/93/link`])
        const viaMcp = yield* api.mcp("resolve_reference_target", { chat_id: S, current_message_id: 94, reply_to_message_id: 93, sender_user_id: 1002 })
        assert.strictEqual((viaMcp.structuredContent.data["best_match"] as { object_id: string }).object_id, `${S}/93/link/1`)
      }))

    it.scoped("\"my last photo\" is the sender's own, though others posted photos since", () =>
      Effect.gen(function*() {
        const api = yield* serve(layer)
        const hints = { ownership_hint: "mine", ordinal_hint: "last", target_kind_hint: "image" }
        const mine = yield* api.resolve({ chat_id: S, current_message_id: 9100, sender_user_id: 1001, normalized_reference_hints: hints })
        assert.deepStrictEqual([mine.status, mine.best_match?.object_id], ["resolved", `${S}/82/media.image`])
        const viaMcp = yield* api.mcp("resolve_reference_target", { chat_id: S, current_message_id: 9100, sender_user_id: 1003, normalized_reference_hints: hints })
        assert.strictEqual((viaMcp.structuredContent.data["best_match"] as { object_id: string }).object_id, `${S}/95/media.image`)
      }))

    it.scoped("a reply to a pin notice, named as Telegram names it (the notice's id), means the pinned message", () =>
      Effect.gen(function*() {
        const api = yield* serve(layer)
        // The supergroup reply thread (the reply carries the notice's thread id), and the forum topic.
        const thread = yield* api.resolve({ chat_id: S, current_message_id: 92, reply_to_message_id: 91, sender_user_id: 1003 })
        assert.deepStrictEqual([thread.status, thread.best_match?.object_id], ["resolved", `${S}/90/link`])
        const forum = String(chats.forum.id)
        const topic = yield* api.mcp("resolve_reference_target", { chat_id: forum, topic_id: 500, current_message_id: 522, reply_to_message_id: 521, sender_user_id: 1003 })
        assert.strictEqual((topic.structuredContent.data["best_match"] as { object_id: string }).object_id, `${forum}/520/link`)
      }))

    it.scoped("MCP read_url reads a page and activates its link, the title its label; a private address is refused and nothing activated", () =>
      Effect.gen(function*() {
        const server = yield* page
        const api = yield* serve(layer)
        const url = `http://plans.example:${(server.address() as AddressInfo).port}/b`
        yield* api.post("/v1/events", [{ type: "message_observed", chat_id: S, message_id: 9200, links: [{ url }] }])
        const read = yield* api.mcp("read_url", { chat_id: S, url, message_id: 9200 })
        assert.notStrictEqual(read.isError, true, JSON.stringify(read))
        assert.strictEqual((read.structuredContent.data["page"] as { text: string }).text, "Ship on Friday.")
        const refused = yield* api.mcp("read_url", { chat_id: S, url: "http://intranet.example/", message_id: 9200 })
        assert.isTrue(refused.isError)
        assert.deepStrictEqual([refused.structuredContent.error?.code, refused.structuredContent.data["reason"]], ["ReadUrlError", "forbidden_address"])
        const listed = yield* api.post("/v1/tools/list_active_context_objects", { chat_id: S, current_message_id: 9201, max_results: 10 })
        const objects = listed.body["objects"] as ReadonlyArray<{ object_id: string; title_or_label: string }>
        assert.deepStrictEqual(objects.filter((o) => o.object_id.startsWith(`${S}/9200/`)).map((o) => [o.object_id, o.title_or_label]), [[`${S}/9200/link`, "Plan B"]])
      }))
  })
}
