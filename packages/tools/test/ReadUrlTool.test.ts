/**
 * The `read_url` tool over the real services and a real page on loopback: a read activates the
 * link (url_fetched, the page's title as its label) by the model-actions rules; a refusal is a
 * typed error envelope and activates nothing. The reader is injected with a connector that opens
 * loopback sockets only (asserted after each case).
 */
import { ContextIngest } from "@deixis/core/ContextIngest"
import * as ConversationState from "@deixis/core/ConversationState"
import * as Deixis from "@deixis/core/Deixis"
import * as ContextLoader from "@deixis/chathistory/ContextLoader"
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as http from "node:http"
import type * as net from "node:net"
import * as DeixisToolkit from "../src/DeixisToolkit.js"
import type * as Envelope from "../src/Envelope.js"
import * as UrlReader from "../src/UrlReader.js"
import * as UrlReaderTesting from "../src/UrlReaderTesting.js"

let guard = UrlReaderTesting.loopbackOnly()
afterEach(() => {
  assert.deepStrictEqual(guard.violations, [])
  guard = UrlReaderTesting.loopbackOnly()
})

const page = `<html><head><title>Fair report</title></head><body><main><p>Rides and cakes.</p></main></body></html>`

const server = Effect.acquireRelease(
  Effect.async<{ readonly server: http.Server; readonly port: number }>((resume) => {
    const s = http.createServer((request, response) => {
      if (request.url === "/fair") response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page)
      else response.writeHead(404, { "content-type": "text/plain" }).end("no")
    })
    s.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server: s, port: (s.address() as net.AddressInfo).port })))
  }),
  ({ server: s }) => Effect.async<void>((resume) => {
    s.closeAllConnections()
    s.close(() => resume(Effect.void))
  })
)

const services = Layer.mergeAll(
  Deixis.layerMemory(),
  ConversationState.layer().pipe(Layer.provide(ConversationState.layerMemory)),
  ContextLoader.layer().pipe(Layer.provideMerge(HistoryStore.layerMemory()))
)

/** The toolkit with a reader that reads news.example on loopback, through the guarded connector. */
const withToolkit = <A, E, R>(effect: Effect.Effect<A, E, R>) => {
  const dns = UrlReaderTesting.tableResolver({ "news.example": ["127.0.0.1"], "intranet.example": ["10.0.0.5"] })
  const reader = UrlReader.make({ allow_hosts: ["news.example"] }, { resolver: dns.resolver, connector: guard.connector })
  return effect.pipe(Effect.provide(DeixisToolkit.layer({ reader }).pipe(Layer.provideMerge(services))))
}

const call = (name: DeixisToolkit.ToolName, params: unknown) =>
  Effect.flatMap(DeixisToolkit.toolkit, (built) =>
    built.handle(name, params as never).pipe(
      Effect.map((r) => r.encodedResult as Envelope.Envelope),
      Effect.catchAll((error) => Effect.succeed(error as Envelope.Envelope))
    ))

const active = Effect.map(call("list_active_context_objects", { chat_id: 5, current_message_id: 9, max_results: 10 }), (listed) =>
  (listed.data as { objects: ReadonlyArray<{ object_id: string; title_or_label?: string; why_active: ReadonlyArray<string> }> }).objects)

describe("read_url", () => {
  it.scoped("a read returns the page's text and activates the link, its title the label (url_fetched)", () =>
    withToolkit(Effect.gen(function*() {
      const { port } = yield* server
      const url = `http://news.example:${port}/fair`
      yield* Effect.flatMap(ContextIngest, (i) => i.ingest([{ type: "message_observed", chat_id: 5, message_id: 1, links: [{ url }] }]))
      const read = yield* call("read_url", { chat_id: 5, url, message_id: 1, current_message_id: 2 })
      assert.strictEqual(read.status, "ok", JSON.stringify(read))
      assert.strictEqual(read.summary, `read "Fair report" from news.example:${port} (4 tokens); link 5/1/link activated (url_fetched)`)
      const data = read.data as DeixisToolkit.ReadUrlResult
      assert.strictEqual(data.page.text, "Rides and cakes.")
      const [link, ...others] = yield* active
      assert.deepStrictEqual([link?.object_id, link?.title_or_label, others.length], ["5/1/link", "Fair report", 0])
      assert.include(link!.why_active, "activated_by_url_fetch")
    })))

  it.scoped("without message_id, the replied message carrying the URL is the link's message", () =>
    withToolkit(Effect.gen(function*() {
      const { port } = yield* server
      const url = `http://news.example:${port}/fair`
      yield* Effect.flatMap(ContextIngest, (i) =>
        i.ingest([
          { type: "message_observed", chat_id: 5, message_id: 1, links: [{ url }] },
          { type: "message_observed", chat_id: 5, message_id: 2, reply_to_message_id: 1 }
        ]))
      const read = yield* call("read_url", { chat_id: 5, url, current_message_id: 2, reply_to_message_id: 1 })
      assert.strictEqual((read.data as DeixisToolkit.ReadUrlResult).activated.object_id, "5/1/link")
    })))

  it.scoped("a refused read is a ReadUrlError envelope naming why, and nothing is activated", () =>
    withToolkit(Effect.gen(function*() {
      yield* Effect.flatMap(ContextIngest, (i) => i.ingest([{ type: "message_observed", chat_id: 5, message_id: 1, links: [{ url: "http://intranet.example/wiki" }] }]))
      for (const url of ["http://intranet.example/wiki", "http://169.254.169.254/latest/meta-data/", "http://127.0.0.1/"]) {
        const refused = yield* call("read_url", { chat_id: 5, url, message_id: 1 })
        assert.deepStrictEqual([refused.status, refused.error?.code], ["error", "ReadUrlError"])
        assert.strictEqual((refused.data as { reason: string }).reason, "forbidden_address")
      }
      assert.deepStrictEqual(yield* active, [])
      assert.deepStrictEqual(guard.asked, [])
    })))

  it.scoped("a failed read (HTTP 404) activates nothing either", () =>
    withToolkit(Effect.gen(function*() {
      const { port } = yield* server
      yield* Effect.flatMap(ContextIngest, (i) => i.ingest([{ type: "message_observed", chat_id: 5, message_id: 1 }]))
      const failed = yield* call("read_url", { chat_id: 5, url: `http://news.example:${port}/gone`, message_id: 1 })
      assert.deepStrictEqual([failed.status, (failed.data as { reason: string; status: number }).reason, (failed.data as { status: number }).status], ["error", "http_status", 404])
      assert.deepStrictEqual(yield* active, [])
    })))

  it.scoped("a message that is not known fails before anything is fetched", () =>
    withToolkit(Effect.gen(function*() {
      const failed = yield* call("read_url", { chat_id: 5, url: "http://news.example/fair", message_id: 99 })
      assert.deepStrictEqual([failed.error?.code, (failed.data as { path: string }).path], ["InvalidRequest", "message_id"])
      assert.deepStrictEqual(guard.asked, [])
    })))

  it("the test connector refuses any address outside loopback and records it", async () => {
    const probe = UrlReaderTesting.loopbackOnly()
    let refused = false
    await probe.connector({ address: "93.184.215.14", family: 4, port: 80 }).catch(() => (refused = true))
    assert.isTrue(refused)
    assert.deepStrictEqual(probe.violations, ["93.184.215.14"])
  })
})
