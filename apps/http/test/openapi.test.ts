import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { execFile, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Api from "../src/Api.js"
import { start } from "./harness.js"

// The ecosystem's own tools, run on the document the service serves: Redocly CLI's recommended
// rules, Spectral's `spectral:oas`, and Stoplight Prism's validating proxy.
const bin = (name: string) => new URL(`../node_modules/.bin/${name}`, import.meta.url).pathname

/** A command's exit code and output, killed after `timeoutMs` (a tool that hangs fails the test). */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, timeoutMs = 120_000) =>
  Effect.promise(() =>
    new Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resolve) =>
      execFile(command, args, { cwd, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr }))
    )
  )

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "deixis-openapi-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

interface Findings {
  readonly redocly: ReadonlyArray<string>
  readonly spectral: ReadonlyArray<string>
}

/** Every error and warning both linters find in a document. */
const lint = (dir: string, document: unknown) =>
  Effect.gen(function*() {
    writeFileSync(join(dir, "openapi.json"), JSON.stringify(document, null, 2))
    writeFileSync(join(dir, ".spectral.yaml"), "extends: [\"spectral:oas\"]\n")
    const redocly = yield* run(bin("redocly"), ["lint", "openapi.json", "--extends=recommended", "--format=json"], dir)
    const report = JSON.parse(redocly.stdout) as { readonly problems: ReadonlyArray<{ readonly ruleId: string; readonly severity: string; readonly message: string }> }
    const spectral = yield* run(bin("spectral"), ["lint", "openapi.json", "--ruleset", ".spectral.yaml", "--format", "json", "--fail-severity", "hint"], dir)
    // Spectral prints its JSON, then (when it found nothing) a sentence.
    const results = JSON.parse(spectral.stdout.slice(0, spectral.stdout.lastIndexOf("]") + 1)) as ReadonlyArray<{
      readonly code: string
      readonly severity: number
      readonly message: string
      readonly path: ReadonlyArray<string>
    }>
    return {
      redocly: report.problems.filter((p) => p.severity === "error" || p.severity === "warn").map((p) => `${p.ruleId}: ${p.message}`),
      // 0 error, 1 warning.
      spectral: results.filter((r) => r.severity <= 1).map((r) => `${r.code} at ${r.path.join(".")}: ${r.message}`)
    } satisfies Findings
  })

const configurations = [
  { name: "no token", options: {} },
  { name: "a token and the Telegram secret", options: { token: "s3cret", telegramSecret: "tg_secret" } }
] as const

const operationsOf = (document: any): Array<{ readonly path: string; readonly method: string; readonly operation: any }> =>
  Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation })))

describe("the OpenAPI document, judged by the ecosystem's tools", () => {
  for (const { name, options } of configurations) {
    it.scoped(`${name}: Redocly's recommended rules and Spectral's spectral:oas find no error and no warning in /openapi.json`, () =>
      Effect.gen(function*() {
        const api = yield* start(options)
        const document = yield* Effect.promise(() => api.fetch("/openapi.json").then((r) => r.json()))
        const dir = yield* tempDir
        assert.deepStrictEqual(yield* lint(dir, document), { redocly: [], spectral: [] })
      }), 300_000)
  }

  it.scoped("the linters do find what the issue found before: no servers, no licence, no contact, operations without a description", () =>
    Effect.gen(function*() {
      const api = yield* start()
      const document = yield* Effect.promise(() => api.fetch("/openapi.json").then((r) => r.json() as Promise<any>))
      delete document.servers
      delete document.info.license
      delete document.info.contact
      for (const { operation } of operationsOf(document)) delete operation.description
      const findings = yield* lint(yield* tempDir, document)
      assert.include(findings.redocly.join("\n"), "no-empty-servers")
      assert.include(findings.redocly.join("\n"), "info-license")
      assert.include(findings.spectral.join("\n"), "info-contact")
      assert.include(findings.spectral.join("\n"), "operation-description")
    }), 300_000)

  it.scoped("the security it states is what the configuration enforces: none without a token; bearer with one, and Telegram's secret header on the webhook", () =>
    Effect.gen(function*() {
      const open = yield* start()
      const openDocument = yield* Effect.promise(() => open.fetch("/openapi.json").then((r) => r.json() as Promise<any>))
      for (const { operation, path } of operationsOf(openDocument)) assert.isUndefined(operation.security, path)
      assert.isUndefined(openDocument.components.securitySchemes)
      // And it is true: without a token, an operation answers without credentials.
      assert.strictEqual((yield* Effect.promise(() => open.fetch("/v1/inspect/thresholds"))).status, 200)

      const guarded = yield* start({ token: "s3cret", telegramSecret: "tg_secret" })
      const document = yield* Effect.promise(() => guarded.fetch("/openapi.json").then((r) => r.json() as Promise<any>))
      for (const { operation, path } of operationsOf(document)) {
        assert.deepStrictEqual(
          operation.security,
          path === "/v1/telegram/updates" ? [{ bearer: [] }, { telegramSecret: [] }] : [{ bearer: [] }],
          path
        )
      }
      assert.deepStrictEqual(Object.keys(document.components.securitySchemes).sort(), ["bearer", "telegramSecret"])
      const bare = yield* Effect.promise(() => fetch(guarded.url + "/v1/inspect/thresholds"))
      assert.strictEqual(bare.status, 401)
      const bySecret = yield* Effect.promise(() =>
        fetch(guarded.url + "/v1/telegram/updates", { method: "POST", headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": "tg_secret" }, body: "[]" }))
      assert.strictEqual(bySecret.status, 200)

      const tokenOnly = yield* start({ token: "s3cret" })
      const tokenDocument = yield* Effect.promise(() => tokenOnly.fetch("/openapi.json").then((r) => r.json() as Promise<any>))
      assert.deepStrictEqual(tokenDocument.paths["/v1/telegram/updates"].post.security, [{ bearer: [] }])
    }), 120_000)

  it.scoped("every status the pipeline answers is in the document, with its body, on every operation; 503 with Retry-After", () =>
    Effect.gen(function*() {
      const api = yield* start({ token: "s3cret" })
      const document = yield* Effect.promise(() => api.fetch("/openapi.json").then((r) => r.json() as Promise<any>))
      for (const { operation, path } of operationsOf(document)) {
        for (const status of ["400", "401", "403", "404", "413", "415", "500", "501", "503"]) {
          assert.isDefined(operation.responses[status]?.content?.["application/json"]?.schema, `${path} ${status}`)
        }
        assert.isDefined(operation.responses["503"].headers["Retry-After"], path)
        assert.isString(operation.description, path)
      }
      assert.isDefined(document.paths["/v1/chats/{chat_id}/state"].patch.responses["412"])
      assert.isDefined(document.paths["/v1/chats/{chat_id}/state"].patch.responses["422"])
      for (const tag of document.tags) assert.isString(tag.description, tag.name)
      assert.isAbove(document.servers.length, 0)
      assert.isString(document.info.license.url)
      // The answers given before a body is read are those Schemas' values, status and body.
      const refused: ReadonlyArray<readonly [RequestInit & { readonly path: string }, number, Schema.Schema<any, any>]> = [
        [{ path: "/v1/events", method: "POST", headers: { "content-type": "text/plain", authorization: "Bearer s3cret" }, body: "[]" }, 415, Api.UnsupportedMediaType],
        [{ path: "/v1/events", method: "POST", headers: { "content-type": "application/json", authorization: "Bearer s3cret" }, body: "x".repeat(2 * 1024 * 1024) }, 413, Api.PayloadTooLarge],
        [{ path: "/v1/events", method: "POST", headers: { "content-type": "application/json" }, body: "[]" }, 401, Api.Unauthorized],
        [{ path: "/v1/nothing", method: "GET", headers: { authorization: "Bearer s3cret" } }, 404, Api.NotFound],
        [{ path: "/v1/events", method: "POST", headers: { "content-type": "application/json", authorization: "Bearer s3cret" }, body: "{not json" }, 400, Api.BadRequest]
      ]
      for (const [{ path, ...init }, status, schema] of refused) {
        const response = yield* Effect.promise(() => fetch(api.url + path, init).then(async (r) => ({ status: r.status, body: await r.json() })))
        assert.strictEqual(response.status, status, path)
        assert.isTrue(Either.isRight(Schema.decodeUnknownEither(schema)(response.body)), JSON.stringify(response.body))
      }
    }), 120_000)
})

// ---------------------------------------------------------------------------------------------
// Prism's validating proxy in front of the real service.

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

/** `prism proxy` to the service, for the current scope; resolves once it answers. */
const prism = (dir: string, document: unknown, upstream: string) =>
  Effect.gen(function*() {
    writeFileSync(join(dir, "openapi.json"), JSON.stringify(document))
    const port = yield* Effect.promise(freePort)
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(bin("prism"), ["proxy", "openapi.json", upstream, "--host", "127.0.0.1", "--port", String(port), "--errors", "false"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] })),
      (child) => Effect.sync(() => child.kill("SIGKILL"))
    )
    let output = ""
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    const url = `http://127.0.0.1:${port}`
    // Bounded: about a minute for Prism to start.
    for (let i = 0; i < 600; i++) {
      if (/Prism is listening/.test(output)) return url
      if (child.exitCode !== null) break
      yield* Effect.sleep("100 millis")
    }
    throw new Error(`prism did not start: ${output.slice(-2000)}`)
  })

describe("Stoplight Prism's validating proxy", () => {
  // Live: Prism is a process of its own, waited for on the real clock.
  it.scopedLive("every answer of the service, to valid and refused requests alike, matches the document", () =>
    Effect.gen(function*() {
      const token = "s3cret"
      const api = yield* start({ token, telegramSecret: "tg_secret", maxBodyBytes: 64 * 1024 })
      const document = yield* Effect.promise(() => api.fetch("/openapi.json").then((r) => r.json()))
      const proxy = yield* prism(yield* tempDir, document, api.url)
      const auth = { authorization: `Bearer ${token}` }
      const json = { "content-type": "application/json" }
      const message = (id: number, extra: object = {}) => ({ type: "message_observed", chat_id: -1001, message_id: id, sender_user_id: 7, sent_at: "2026-11-01T10:00:00Z", ...extra })
      const scope = { chat_id: -1001, current_message_id: 3 }
      const requests: ReadonlyArray<readonly [string, string, Record<string, string>, string | undefined]> = [
        ["POST", "/v1/events", { ...auth, ...json }, JSON.stringify([message(1, { links: [{ url: "https://example.com/a" }] }), message(2, { reply_to_message_id: 1 })])],
        ["POST", "/v1/events", { ...auth, ...json }, JSON.stringify([message(1)])],
        ["POST", "/v1/events", { ...auth, ...json }, JSON.stringify([{ type: "object_activated", event_id: "e1", chat_id: -1001, reason: "x", source_message_id: 1, kind: "x.nope" }])],
        // (A body that is not JSON is left out: Prism's proxy never forwards one, and never answers.)
        ["POST", "/v1/events", { ...auth, ...json }, JSON.stringify([{ type: "nope" }])],
        // (Nor a request refused before its body is read — 413, 415, a 401 with a body: the
        // service answers and closes the connection, which Prism's client reports as a hang-up
        // of its own. Their bodies are decoded with the API's error Schemas in the test above.)
        ["POST", "/v1/tools/resolve_reference_target", { ...auth, ...json }, JSON.stringify({ ...scope, reply_to_message_id: 1 })],
        ["POST", "/v1/tools/resolve_reference_target", { ...auth, ...json }, JSON.stringify({ ...scope, include_diagnostics: true })],
        ["POST", "/v1/tools/resolve_reference_target", { ...auth, ...json }, JSON.stringify({ ...scope, normalized_reference_hints: { target_kind_hint: "nope" } })],
        ["POST", "/v1/tools/list_active_context_objects", { ...auth, ...json }, JSON.stringify(scope)],
        ["POST", "/v1/tools/list_active_context_objects", { ...auth, ...json }, JSON.stringify({ ...scope, max_results: 99 })],
        ["POST", "/v1/telegram/updates", { "x-telegram-bot-api-secret-token": "tg_secret", ...json }, JSON.stringify({ update_id: 1, message: { message_id: 9, date: 1_700_000_000, chat: { id: -1001, type: "supergroup" }, from: { id: 7, is_bot: false, first_name: "A" }, text: "hi" } })],
        ["POST", "/v1/telegram/sent", { ...auth, ...json }, JSON.stringify({ message: { message_id: 10, date: 1_700_000_001, chat: { id: -1001, type: "supergroup" }, from: { id: 999, is_bot: true, first_name: "bot" }, text: "hello", reply_to_message: { message_id: 9, date: 1_700_000_000, chat: { id: -1001, type: "supergroup" } } } })],
        ["GET", "/v1/chats/-1001/context", auth, undefined],
        ["GET", "/v1/chats/-1001/context?message_id=2", auth, undefined],
        ["GET", "/v1/chats/-1001/messages/2/context", auth, undefined],
        ["GET", "/v1/chats/-1001/messages/2/context?mode=nope", auth, undefined],
        ["GET", "/v1/chats/-1001/state", auth, undefined],
        ["PATCH", "/v1/chats/-1001/state", { ...auth, ...json }, JSON.stringify({ step: 1 })],
        ["PATCH", "/v1/chats/-1001/state", { ...auth, ...json, "if-match": "\"999\"" }, JSON.stringify({ step: 2 })],
        ["PATCH", "/v1/chats/-1001/state", { ...auth, ...json, "if-match": "nonsense" }, JSON.stringify({ step: 2 })],
        ["GET", "/v1/inspect/chats", auth, undefined],
        ["GET", "/v1/inspect/chats?limit=0", auth, undefined],
        ["GET", "/v1/inspect/thresholds", auth, undefined],
        ["GET", "/v1/inspect/thresholds", {}, undefined]
      ]
      const violations: Array<string> = []
      const statuses: Array<number> = []
      for (const [method, path, headers, body] of requests) {
        const response = yield* Effect.promise(() => fetch(proxy + path, { method, headers, ...(body === undefined ? {} : { body }) }))
        const text = yield* Effect.promise(() => response.text())
        assert.isBelow(response.status, 500, `${method} ${path}: ${text.slice(0, 500)}`)
        statuses.push(response.status)
        const header = response.headers.get("sl-violations")
        if (header === null) continue
        const found = JSON.parse(header) as ReadonlyArray<{ readonly location: ReadonlyArray<string>; readonly message: string }>
        for (const v of found) if (v.location[0] === "response") violations.push(`${method} ${path} → ${response.status}: ${v.location.join(".")}: ${v.message}`)
      }
      assert.deepStrictEqual(violations, [])
      // The requests reached the service and were answered as each case says.
      assert.deepStrictEqual(statuses, [200, 200, 400, 400, 200, 200, 400, 200, 400, 200, 200, 200, 200, 200, 400, 200, 200, 412, 400, 200, 400, 200, 401])
    }), 100_000)
})
