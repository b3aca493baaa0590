/**
 * The second baseline: a bare node:http server doing the tool's own work and nothing else —
 * the request read by the service's own fast decoder, core's resolve on the memory store (run
 * synchronously, no fiber per request), the result encoded as the service encodes it (the
 * API's result Schema, through core's `Json.trustedEncoder`; diagnostics only when asked), sent with
 * the same two headers. No Effect HTTP stack, authentication, edge checks, metrics or logs. The
 * service's distance from it is what its HTTP layer costs; the first baseline's distance from it,
 * what the work itself does. `POST /v1/events` seeds the chat.
 */
import { ContextIngest, Deixis, Json, ReferenceResolver } from "@deixis/core"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { createServer, type IncomingMessage } from "node:http"
import { ResolveResult } from "../src/Api.js"
import { ResolveRequest } from "../src/Api.js"
import * as FastDecoder from "../src/FastDecoder.js"

// At Warning, as the service runs in the benchmark's main rows.
const runtime = ManagedRuntime.make(Layer.merge(Deixis.layerMemory(), Logger.minimumLogLevel(LogLevel.Warning)))
const resolver = runtime.runSync(ReferenceResolver.ReferenceResolver)
const ingest = runtime.runSync(ContextIngest.ContextIngest)
const encode = Json.trustedEncoder(ResolveResult)
const decode = FastDecoder.make(ResolveRequest)

const bodyOf = (request: IncomingMessage, then: (text: string) => void) => {
  let text = ""
  request.setEncoding("utf8")
  request.on("data", (chunk: string) => (text += chunk))
  request.on("end", () => then(text))
}

createServer((request, response) => {
  const send = (status: number, body: string) => {
    response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    response.end(body)
  }
  if (request.url === "/healthz") return send(200, "{}")
  bodyOf(request, (text) => {
    if (request.url === "/v1/events") {
      runtime.runPromise(ingest.ingest(JSON.parse(text))).then(() => send(200, "{}"), (error) => send(500, JSON.stringify(String(error))))
      return
    }
    const decoded = decode(JSON.parse(text))
    if (decoded === FastDecoder.NO) return send(400, "{}")
    const { include_diagnostics, ...query } = decoded as typeof ResolveRequest.Type
    const { diagnostics, ...result } = runtime.runSync(resolver.resolve(query))
    send(200, JSON.stringify(encode(include_diagnostics ? { ...result, diagnostics } : result)))
  })
}).listen(Number(process.env["PORT"]), "127.0.0.1")
