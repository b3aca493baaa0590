/**
 * The request pipeline: every request the server receives goes through it once, in this order,
 * and every answer — a refusal here, an endpoint's, a route's outside the API — is counted by it.
 *
 * 1. The request target is made canonical (`RequestTarget.ts`), or 400.
 * 2. Without credentials (no API token), a browser's request that a page of another site sent
 *    with a body, or whose Host does not name this machine, is refused (403).
 * 3. Two `Authorization` or two `Content-Type` headers are a 400 (Node keeps the first, a proxy
 *    may have read the last); a transfer coding other than `chunked` a 501.
 * 4. During a stop: 503.
 * 5. The route is found in the one route table (`Routes.ts`), by method and path, or 404.
 * 6. Authorization: an API endpoint's security middleware (its executor's `authorize`), or for
 *    a route outside the API `Auth.allows` by its access; else 401 with the challenge header.
 * 7. A route that takes a body: a body that is not JSON (by its media type) or is content-coded
 *    is a 415 unread, a declared length over the limit a 413 unread; else the body is read once —
 *    `Expect: 100-continue` answered only now — under the limit (413 past it) and parsed once,
 *    nested at most `Json.maxDepth` levels (400 otherwise). A client that goes away mid-body is
 *    logged and counted as aborted (status label 499, nginx's "client closed request"), never
 *    answered.
 * 8. An API endpoint is answered by its executor (`Executor.ts`: decode, handle, encode); `/mcp`
 *    by the JSON-RPC edge (`McpEdge.ts`) given the parsed body; the routes outside the API
 *    without a body (`/docs`, `/openapi.json`, `/inspect`, `/healthz`, `/readyz`, `/metrics`)
 *    by the Effect router, over the Node request.
 *
 * Each answer is counted once in the request metrics, labelled by route template. An answer
 * given before the request's body has arrived ends the connection after it, and the rest of the
 * body is read and dropped for a bounded time (lingering), so that a client still sending reads
 * the answer instead of a reset. No write is interrupted when its client goes away: an accepted
 * write finishes (executors and `/mcp` run outside the request's scope).
 *
 * @since 0.2.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Json } from "@deixis/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http"
import { isIP } from "node:net"
import * as ApiErrors from "./Api.js"
import * as Auth from "./Auth.js"
import * as Executor from "./Executor.js"
import * as McpEdge from "./McpEdge.js"
import * as Metrics from "./Metrics.js"
import * as RequestTarget from "./RequestTarget.js"
import * as Routes from "./Routes.js"

/**
 * @since 0.2.0
 * @category models
 */
export interface PipelineOptions {
  /** The body limit of every route, in bytes. */
  readonly maxBodyBytes: number
  /**
   * Set when the service has no credentials (no API token): a browser's request from a page of
   * another site is then refused, and, when the service listens on a loopback address, so is a
   * Host that does not name this machine (DNS rebinding). With a token, the token decides.
   */
  readonly unauthenticated?: { readonly loopback: boolean } | undefined
}

/**
 * What the server tells the pipeline about itself (`Edge.ts`).
 *
 * @since 0.2.0
 * @category models
 */
export interface ServerState {
  readonly stopping: boolean
}

/**
 * @since 0.2.0
 * @category models
 */
export interface PipelineShape {
  readonly handle: (request: IncomingMessage, response: ServerResponse, server: ServerState) => void
  /** How many times a request's body was read and parsed, for the test that counts them. */
  readonly counts: { reads: number; parses: number }
}

/**
 * @since 0.2.0
 * @category services
 */
export class Pipeline extends Context.Tag("@deixis/http/Pipeline")<Pipeline, PipelineShape>() {}

// ---------------------------------------------------------------------------------------------
// Every answer the pipeline gives itself, each an error of the API's (`ApiErrors.ts`), so the
// OpenAPI document lists it.

interface Failure {
  readonly status: number
  readonly body: unknown
  readonly headers?: OutgoingHttpHeaders
}

const encode = <A, I>(schema: Schema.Schema<A, I>, value: A, status: number, headers?: OutgoingHttpHeaders): Failure => ({
  status,
  body: Schema.encodeSync(schema)(value),
  ...(headers === undefined ? {} : { headers })
})

const unauthorized: Failure = encode(
  Auth.Unauthorized,
  new Auth.Unauthorized({ message: "a valid Authorization: Bearer token is required" }),
  401,
  // RFC 6750 §3.
  { "www-authenticate": "Bearer realm=\"deixis\"" }
)

const mediaTypeMessages = {
  "content-type": "the body must be JSON: send it with Content-Type: application/json (or another JSON media type)",
  "content-encoding": "the body must not be content-coded: send it without Content-Encoding (or with identity)"
} as const

const failures = {
  target: (reason: string) =>
    encode(ApiErrors.BadRequest, new ApiErrors.BadRequest({ path: "request-target", message: `the request target is not canonical: ${reason}` }), 400),
  repeated: (header: string) => encode(ApiErrors.BadRequest, new ApiErrors.BadRequest({ path: header, message: `more than one ${header} header` }), 400),
  coding: encode(
    ApiErrors.NotImplemented,
    new ApiErrors.NotImplemented({ path: "transfer-encoding", message: "the only transfer coding accepted is chunked" }),
    501
  ),
  browser: (path: "origin" | "host", message: string) => encode(ApiErrors.Forbidden, new ApiErrors.Forbidden({ path, message }), 403),
  unavailable: (message: string) =>
    encode(ApiErrors.ServiceUnavailable, new ApiErrors.ServiceUnavailable({ message }), 503, { "retry-after": String(ApiErrors.retryAfterSeconds) }),
  notFound: (method: string, path: string) => encode(ApiErrors.NotFound, new ApiErrors.NotFound({ message: `no route for ${method} ${path}` }), 404),
  unauthorized,
  unsupported: (header: keyof typeof mediaTypeMessages) =>
    encode(ApiErrors.UnsupportedMediaType, new ApiErrors.UnsupportedMediaType({ header, message: mediaTypeMessages[header] }), 415),
  tooLarge: (maxBodyBytes: number) =>
    encode(ApiErrors.PayloadTooLarge, new ApiErrors.PayloadTooLarge({ message: `the body is larger than ${maxBodyBytes} bytes`, max_bytes: maxBodyBytes }), 413),
  invalidJson: (error: unknown) =>
    encode(ApiErrors.BadRequest, new ApiErrors.BadRequest({ path: "$", message: `the body is not valid JSON: ${(error as Error).message}` }), 400),
  // The cause is logged, never sent.
  internal: encode(ApiErrors.InternalError, new ApiErrors.InternalError({ message: "the request failed unexpectedly" }), 500)
}

// ---------------------------------------------------------------------------------------------
// Checks on the request's head.

/**
 * Whether an address or host name is reachable from this machine only.
 *
 * @since 0.2.0
 * @category checks
 */
export const isLoopback = (host: string): boolean => {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase()
  if (h === "localhost" || h === "::1" || h === "0:0:0:0:0:0:0:1") return true
  if (isIP(h) === 4) return h.startsWith("127.")
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h)
  return mapped !== null && mapped[1]!.startsWith("127.")
}

/** The name in a Host header, without its port (`[::1]:8080` → `[::1]`, `localhost.` → `localhost`). */
const hostName = (host: string): string => {
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.replace(/:\d*$/, "")
  return name.endsWith(".") ? name.slice(0, -1) : name
}

/**
 * Whether a Host header names this machine, remembered for the last value seen (one memo per
 * pipeline): a client sends the same Host on every request, so the common request costs one
 * string comparison.
 */
const makeLoopbackHost = () => {
  let lastHost = ""
  let lastHostIsLoopback = false
  return (host: string): boolean => {
    if (host !== lastHost) {
      lastHostIsLoopback = isLoopback(hostName(host))
      lastHost = host
    }
    return lastHostIsLoopback
  }
}

/** Whether the method carries a body. */
const hasBody = (method: string) => method !== "GET" && method !== "HEAD" && method !== "OPTIONS"

/**
 * Why a request of a browser is refused while the service has no credentials, or undefined.
 * A page of another site can send a POST (any method with a body: those write) without asking
 * first (a Blob body has no Content-Type), and its browser says so: `Sec-Fetch-Site`, or, in a
 * browser older than that header, an `Origin` naming another host than `Host`. A page can also
 * rebind its own name to 127.0.0.1 and then read the answers: its name is in `Host` (checked
 * for browsers' requests only: a proxy in front may pass a public Host on for the clients that
 * are not browsers).
 */
const browserRefusal = (
  request: IncomingMessage,
  guard: { readonly loopback: boolean },
  loopbackHost: (host: string) => boolean
): Failure | undefined => {
  const host = request.headers.host
  const origin = request.headers.origin
  // A browser says it is one (Sec-Fetch-Mode on every request of a current one, Origin on
  // every POST); a proxy in front that passes its own Host on (Caddy does) sends neither for
  // a client that is not a browser, such as Telegram's webhook calls.
  const browser = origin !== undefined || request.headers["sec-fetch-mode"] !== undefined
  if (guard.loopback && browser && host !== undefined && !loopbackHost(host)) {
    return failures.browser(
      "host",
      "without DEIXIS_API_TOKEN the service answers only requests for this machine (Host: localhost, 127.0.0.1 or [::1])"
    )
  }
  // A page of another site cannot read what a GET answers (no CORS here), and no GET writes:
  // a link to /inspect or /docs from elsewhere still opens.
  if (!hasBody(request.method ?? "GET")) return undefined
  const site = request.headers["sec-fetch-site"]
  const crossSite = site !== undefined
    ? site !== "same-origin" && site !== "none"
    : origin !== undefined && (origin === "null" || origin.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "") !== host)
  return crossSite ? failures.browser("origin", "without DEIXIS_API_TOKEN the service refuses requests a page of another site sent") : undefined
}

// Fields a request may carry once (RFC 9110 §5.3): Node keeps the first of each and drops the
// rest, where a proxy in front may have read the last, so two are refused rather than chosen.
const singletons = ["authorization", "content-type"] as const

/**
 * A request refused by its framing headers: a credential or media type given twice (400), a
 * transfer coding other than `chunked`, whose bytes nothing here decodes (501, RFC 9112 §6.1).
 */
const framingRefusal = (request: IncomingMessage): Failure | undefined => {
  const coding = request.headers["transfer-encoding"]
  if (coding !== undefined && !/^\s*chunked\s*$/i.test(coding)) return failures.coding
  const raw = request.rawHeaders
  let seen = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    // Lengths first: most fields are neither, and are passed without lower-casing them.
    if (name.length !== 13 && name.length !== 12) continue
    const lower = name.toLowerCase()
    const which = singletons.indexOf(lower as (typeof singletons)[number])
    if (which === -1) continue
    if ((seen & (1 << which)) !== 0) return failures.repeated(lower)
    seen |= 1 << which
  }
  return undefined
}

// JSON in any of its media types (application/json, application/merge-patch+json, ...).
const isJson = (contentType: string | undefined) =>
  contentType === undefined || /^application\/([a-z0-9.+-]+\+)?json\b/i.test(contentType.trim())

/** A body the service does not read (415), by the header that says why, or a declared length over the limit (413). */
const bodyRefusal = (request: IncomingMessage, maxBodyBytes: number): Failure | undefined => {
  if (!isJson(request.headers["content-type"])) return failures.unsupported("content-type")
  const coding = request.headers["content-encoding"]
  // Bodies are read as they are sent (`identity` alone): a coded one is refused, not parsed as its bytes.
  if (coding !== undefined && !/^\s*(identity\s*)?$/i.test(coding)) return failures.unsupported("content-encoding")
  if (Number(request.headers["content-length"] ?? 0) > maxBodyBytes) return failures.tooLarge(maxBodyBytes)
  return undefined
}

/**
 * `JSON.parse`, refusing a value nested deeper than core's one bound for untrusted JSON
 * (`Json.maxDepth`) with a SyntaxError. Every body is parsed through it.
 *
 * @since 0.2.0
 * @category body
 */
export const parseJson = (text: string): unknown => {
  const value: unknown = JSON.parse(text)
  if (Json.nestsDeeperThan(value)) throw new SyntaxError(`nested deeper than ${Json.maxDepth} levels`)
  return value
}

/**
 * Targets that are canonical as they come: the static routes' paths (the ones `canonical` gives
 * back unchanged, checked here once), so the common request skips the scan.
 */
const alreadyCanonical = new Set(
  Routes.table.map((route) => route.path).filter((path) => {
    const target = RequestTarget.canonical(path)
    return Either.isRight(target) && target.right === path
  })
)

// ---------------------------------------------------------------------------------------------
// Answering.

/** How long a closing connection keeps reading (and dropping) a body its answer refused. */
const lingerMs = 2_000

/**
 * Whether some of the request's body has not arrived yet. (`complete` alone is not enough: a
 * request without a body is not marked complete until someone reads its empty stream.)
 *
 * @since 0.2.0
 * @category body
 */
export const bodyPending = (request: IncomingMessage): boolean =>
  !request.complete &&
  (request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0)

/** One exchange, as the pipeline answers it. */
interface Exchange {
  readonly request: IncomingMessage
  readonly response: ServerResponse
  readonly server: ServerState
  readonly started: number
  readonly method: string
  /** The metric label: the route's template, or `unmatched`. */
  route: string
}

/**
 * An answer's headers, for how its connection goes on. An answer given while the body is still
 * arriving keeps Node from closing the connection at once (which would reset it under a client
 * still sending): the connection is half-closed after the answer, the rest of the body is read
 * and dropped, and it is closed for good after `lingerMs`. During a stop, every answer ends its
 * connection.
 */
const headersFor = (exchange: Exchange, headers: OutgoingHttpHeaders): OutgoingHttpHeaders => {
  if (bodyPending(exchange.request)) {
    const { request, response } = exchange
    response.once("finish", () => {
      const socket = request.socket
      request.resume()
      socket.end()
      const timer = setTimeout(() => socket.destroy(), lingerMs)
      timer.unref()
      socket.once("close", () => clearTimeout(timer))
    })
    return { ...headers, connection: "keep-alive" }
  }
  return exchange.server.stopping ? { ...headers, connection: "close" } : headers
}

const record = (exchange: Exchange, status: number) =>
  Metrics.recordNow(exchange.method, exchange.route, status, (performance.now() - exchange.started) / 1000)

/**
 * Every 503 says when to come back (RFC 9110 §10.2.3): the store's outage (`StoreError`, or a
 * `ServiceUnavailable`), a stop, a busy feed. An answer that set its own keeps it.
 */
const retryAfter = (status: number, headers: OutgoingHttpHeaders): OutgoingHttpHeaders =>
  status === 503 && headers["retry-after"] === undefined ? { ...headers, "retry-after": String(ApiErrors.retryAfterSeconds) } : headers

/** The one writer: every answer of every route, with its metric record. */
const write = (exchange: Exchange, status: number, headers: OutgoingHttpHeaders, body: string | Uint8Array) => {
  exchange.response.writeHead(status, headersFor(exchange, retryAfter(status, { ...headers, "content-length": Buffer.byteLength(body) })))
  exchange.response.end(body)
  record(exchange, status)
}

const json = "application/json"

const fail = (exchange: Exchange, failure: Failure) =>
  write(exchange, failure.status, { "content-type": json, ...failure.headers }, JSON.stringify(failure.body))

/**
 * A client that went away before its whole body arrived: nothing of it was accepted, and there
 * is no one to answer. Counted under status 499 (nginx's "client closed request").
 */
const aborted = 499

/**
 * The pipeline over the credentials, the endpoints' executors, the MCP edge and the routes
 * outside the API (`routes`, served by the Effect router over the Node request).
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = <E, R>(
  options: PipelineOptions,
  routes: Layer.Layer<never, E, R>
): Layer.Layer<
  Pipeline,
  HttpLayerRouter.Request.Without<E>,
  | Auth.Credentials
  | Executor.Executors
  | McpEdge.McpEdge
  | Exclude<HttpLayerRouter.Request.Without<R>, HttpLayerRouter.HttpRouter>
  | HttpLayerRouter.Request.Only<"Requires", R>
> =>
  Layer.scoped(
    Pipeline,
    Effect.gen(function*() {
      const credentials = yield* Auth.Credentials
      const executors = yield* Executor.Executors
      const mcp = yield* McpEdge.McpEdge
      const runtime = yield* Effect.runtime<never>()
      const run = Runtime.runFork(runtime)
      const runCallback = Runtime.runCallback(runtime)
      const app = yield* HttpLayerRouter.toHttpEffect(routes)
      const serveNode = (yield* NodeHttpServer.makeHandler(app as never)) as (request: IncomingMessage, response: ServerResponse) => void
      const { maxBodyBytes, unauthenticated } = options
      const loopbackHost = makeLoopbackHost()
      const counts = { reads: 0, parses: 0 }

      const reply = (exchange: Exchange) => (answer: Executor.Answer) => {
        if (answer === undefined) return fail(exchange, failures.internal)
        write(exchange, answer.status, answer.headers === undefined ? { "content-type": json } : { "content-type": json, ...answer.headers }, answer.body)
      }

      // The route answers, its body read and parsed (`undefined` without one; `NotJson` for /mcp's).
      const dispatch = (exchange: Exchange, url: string, found: Routes.Found, payload: unknown) => {
        const { route } = found
        const executor = route.endpoint === undefined ? undefined : executors.get(route.endpoint)
        if (executor !== undefined) {
          const q = url.indexOf("?")
          return executor.run(
            { headers: exchange.request.headers, params: found.params, query: q === -1 ? "" : url.slice(q + 1), payload },
            reply(exchange),
            exchange
          )
        }
        if (route === Routes.service.mcp) {
          // Run to its end even if the client goes away: two tools write.
          return runCallback(mcp.handle(payload as McpEdge.Body, exchange.request.headers), {
            onExit: (exit) => {
              if (exit._tag === "Failure") {
                run(Effect.logError("request failed", exit.cause))
                return fail(exchange, failures.internal)
              }
              const answer = exit.value
              write(exchange, answer.status, answer.body === undefined ? { ...answer.headers } : { "content-type": json, ...answer.headers }, answer.body ?? "")
            }
          })
        }
        if (route === Routes.service.mcpStream || route === Routes.service.mcpSession) {
          const answer = McpEdge.methodNotAllowed
          return write(exchange, answer.status, { "content-type": json, ...answer.headers }, answer.body ?? "")
        }
        // A route outside the API: the platform answers over the Node request itself, routing on
        // the canonical target the pipeline decided on.
        exchange.request.url = url
        exchange.response.once("finish", () => record(exchange, exchange.response.statusCode))
        serveNode(exchange.request, exchange.response)
      }

      // The body, read once under the limit; past it the rest is dropped, not buffered (see `headersFor`).
      const readBody = (exchange: Exchange, url: string, found: Routes.Found) => {
        const { request, response } = exchange
        if (/^\s*100-continue\s*$/i.test(request.headers.expect ?? "")) response.writeContinue()
        counts.reads++
        const chunks: Array<Buffer> = []
        let bytes = 0
        let done = false
        request.on("data", (chunk: Buffer) => {
          if (done) return
          bytes += chunk.length
          if (bytes > maxBodyBytes) {
            done = true
            chunks.length = 0
            fail(exchange, failures.tooLarge(maxBodyBytes))
          } else {
            chunks.push(chunk)
          }
        })
        // The client went away mid-body: nothing was accepted and no one is left to answer.
        const abort = () => {
          if (done) return
          done = true
          chunks.length = 0
          record(exchange, aborted)
          run(Effect.logInfo("request aborted: the client went away before its body arrived").pipe(
            Effect.annotateLogs({ method: exchange.method, route: exchange.route, received_bytes: bytes })
          ))
        }
        request.once("error", abort)
        request.once("aborted", abort)
        request.once("close", () => {
          if (!request.complete) abort()
        })
        request.once("end", () => {
          if (done) return
          done = true
          const text = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")
          let value: unknown
          counts.parses++
          try {
            // An empty body is null, as the platform reads it.
            if (found.route.body === "json-rpc") value = { _tag: "Json", value: parseJson(text) } satisfies McpEdge.Body
            else value = text === "" ? null : parseJson(text)
          } catch (error) {
            // /mcp's edge answers with JSON-RPC's own parse error.
            if (found.route.body !== "json-rpc") return fail(exchange, failures.invalidJson(error))
            value = { _tag: "NotJson" } satisfies McpEdge.Body
          }
          // A throw here would escape the listener and end the process: a bug answers 500.
          try {
            dispatch(exchange, url, found, value)
          } catch (error) {
            run(Effect.logError("request failed", error))
            if (!response.headersSent) fail(exchange, failures.internal)
          }
        })
      }

      const handle = (request: IncomingMessage, response: ServerResponse, server: ServerState) => {
        const method = request.method ?? ""
        const exchange: Exchange = {
          request,
          response,
          server,
          started: performance.now(),
          method: Routes.methodLabel(method),
          route: "unmatched"
        }
        let url = request.url ?? ""
        if (!alreadyCanonical.has(url)) {
          const target = RequestTarget.canonical(url)
          if (Either.isLeft(target)) return fail(exchange, failures.target(target.left.reason))
          url = target.right
        }
        const q = url.indexOf("?")
        const path = q === -1 ? url : url.slice(0, q)
        const found = Routes.find(method, path)
        if (found !== undefined) exchange.route = found.route.path
        const refused = (unauthenticated === undefined ? undefined : browserRefusal(request, unauthenticated, loopbackHost)) ??
          framingRefusal(request)
        if (refused !== undefined) return fail(exchange, refused)
        if (server.stopping) return fail(exchange, failures.unavailable("the service is stopping"))
        if (found === undefined) return fail(exchange, failures.notFound(method, path))
        const { route } = found
        const executor = route.endpoint === undefined ? undefined : executors.get(route.endpoint)
        if (executor !== undefined) {
          const denied = executor.authorize(request.headers)
          if (denied !== undefined) return write(exchange, denied.status, { "content-type": json, ...denied.headers }, denied.body)
        } else if (!Auth.allows(credentials, route.access ?? "token", request.headers)) {
          return fail(exchange, failures.unauthorized)
        }
        if (route.body === undefined) return dispatch(exchange, url, found, undefined)
        const unread = bodyRefusal(request, maxBodyBytes)
        if (unread !== undefined) return fail(exchange, unread)
        readBody(exchange, url, found)
      }
      return { handle, counts }
    })
  ) as never

/**
 * The Effect router's failures that no route answered (a defect, an unexpected error): logged,
 * and answered with the pipeline's 500 body, never the cause.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerDefects = HttpLayerRouter.middleware(
  (
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, HttpLayerRouter.unhandled>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, HttpLayerRouter.unhandled> =>
    Effect.catchAllCause(app, (cause) =>
      Effect.flatMap(HttpServerError.causeResponse(cause), ([response, rest]) =>
        response.status < 500 || response.status === 503
          ? Effect.succeed(response)
          : Effect.as(
            Effect.logError("request failed", rest),
            HttpServerResponse.unsafeJson(failures.internal.body, { status: failures.internal.status })
          ))).pipe(
        // The bodiless routes' answers are written by the platform, not by `write`: their 503s get Retry-After here.
        Effect.map((response) =>
          response.status === 503 && response.headers["retry-after"] === undefined
            ? HttpServerResponse.setHeader(response, "retry-after", String(ApiErrors.retryAfterSeconds))
            : response
        )
      ),
  { global: true }
)
