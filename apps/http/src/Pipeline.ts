/**
 * The request pipeline: every request the server receives goes through it once, in this order,
 * and every answer — a refusal here, a fast route's, the Effect stack's — is written by it.
 *
 * 1. The request target is made canonical (`RequestTarget.ts`), or 400.
 * 2. Without credentials (no API token), a browser's request that a page of another site sent
 *    with a body, or whose Host does not name this machine, is refused (403).
 * 3. Two `Authorization` or two `Content-Type` headers are a 400 (Node keeps the first, a proxy
 *    may have read the last); a transfer coding other than `chunked` a 501.
 * 4. During a stop: 503.
 * 5. The route is found in the one route table (`Routes.ts`), or 404.
 * 6. Authorization (`Auth.allows`, by the route's access), or 401 with the challenge header.
 * 7. A route that takes a body: a body that is not JSON (by its media type) or is content-coded
 *    is a 415 unread, a declared length over the limit a 413 unread; else the body is read —
 *    `Expect: 100-continue` answered only now — under the limit (413 past it) and, for a JSON
 *    route, parsed, nested at most `Json.maxDepth` levels (400 otherwise).
 * 8. A fast route is answered by its endpoint (`FastPath.ts`); any other by the Effect app
 *    (HttpApi and the routes outside it): over the Node request for a route without a body,
 *    as the platform's web handler (`HttpApp.toWebHandlerRuntime`) given the body already read
 *    for a route with one.
 *
 * Each answer is counted once in the request metrics, labelled by route template, and written
 * here (but the bodiless routes' answers, which the platform writes over the Node request). An answer
 * given before the request's body has arrived ends the connection after it, and the rest of the
 * body is read and dropped for a bounded time (lingering), so that a client still sending reads
 * the answer instead of a reset. The Effect app is interrupted when its client goes away only
 * where it writes nothing: an accepted write finishes.
 *
 * @since 0.2.0
 */
import { HttpLayerRouter, HttpServerError, HttpServerResponse } from "@effect/platform"
import { Json } from "@deixis/core"
import * as Availability from "@deixis/store-sql/Availability"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http"
import { isIP } from "node:net"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import type { ReadableStream as WebReadableStream } from "node:stream/web"
import * as Auth from "./Auth.js"
import { FastPath } from "./FastPath.js"
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
 * The Effect app (HttpApi and the routes outside it) as the platform serves it: over the Node
 * request (`NodeHttpServer.makeHandler`), for a route without a body, and as its web handler
 * (`HttpApp.toWebHandlerRuntime`), given the body the pipeline read, for a route with one.
 *
 * @since 0.2.0
 * @category models
 */
export interface App {
  readonly node: (request: IncomingMessage, response: ServerResponse) => void
  readonly web: (request: Request) => Promise<Response>
}

/**
 * What the server tells the pipeline about itself (`Edge.ts`).
 *
 * @since 0.2.0
 * @category models
 */
export interface ServerState {
  readonly stopping: boolean
  /** Undefined until the Effect app is served, and again once it is not. */
  readonly app: App | undefined
}

/**
 * @since 0.2.0
 * @category models
 */
export interface PipelineShape {
  readonly handle: (request: IncomingMessage, response: ServerResponse, server: ServerState) => void
}

/**
 * @since 0.2.0
 * @category services
 */
export class Pipeline extends Context.Tag("@deixis/http/Pipeline")<Pipeline, PipelineShape>() {}

// ---------------------------------------------------------------------------------------------
// Every answer the pipeline gives itself. (A route's own answers are its endpoint's Schemas'.)

interface Failure {
  readonly status: number
  readonly body: Record<string, unknown>
  readonly headers?: OutgoingHttpHeaders
}

const unauthorized: Failure = {
  status: 401,
  body: Schema.encodeSync(Auth.Unauthorized)(new Auth.Unauthorized({ message: "a valid Authorization: Bearer token is required" })),
  // RFC 6750 §3.
  headers: { "www-authenticate": "Bearer realm=\"deixis\"" }
}

const mediaTypeMessages = {
  "content-type": "the body must be JSON: send it with Content-Type: application/json (or another JSON media type)",
  "content-encoding": "the body must not be content-coded: send it without Content-Encoding (or with identity)"
} as const

const failures = {
  target: (reason: string): Failure => ({
    status: 400,
    body: { _tag: "BadRequest", path: "request-target", message: `the request target is not canonical: ${reason}` }
  }),
  repeated: (header: string): Failure => ({ status: 400, body: { _tag: "BadRequest", path: header, message: `more than one ${header} header` } }),
  coding: {
    status: 501,
    body: { _tag: "NotImplemented", path: "transfer-encoding", message: "the only transfer coding accepted is chunked" }
  } satisfies Failure,
  browser: (path: "origin" | "host", message: string): Failure => ({ status: 403, body: { _tag: "Forbidden", path, message } }),
  unavailable: (message: string): Failure => ({ status: 503, body: { _tag: "ShuttingDown", message } }),
  notFound: (method: string, path: string): Failure => ({ status: 404, body: { _tag: "NotFound", message: `no route for ${method} ${path}` } }),
  unauthorized,
  unsupported: (header: keyof typeof mediaTypeMessages): Failure => ({
    status: 415,
    body: { _tag: "UnsupportedMediaType", header, message: mediaTypeMessages[header] }
  }),
  tooLarge: (maxBodyBytes: number): Failure => ({
    status: 413,
    body: { _tag: "PayloadTooLarge", message: `the body is larger than ${maxBodyBytes} bytes`, max_bytes: maxBodyBytes }
  }),
  invalidJson: (error: unknown): Failure => ({
    status: 400,
    body: { _tag: "BadRequest", path: "$", message: `the body is not valid JSON: ${(error as Error).message}` }
  }),
  // The cause is logged, never sent.
  internal: { status: 500, body: { _tag: "InternalError", message: "the request failed unexpectedly" } } satisfies Failure
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
  status === 503 && headers["retry-after"] === undefined ? { ...headers, "retry-after": String(Availability.retryAfterSeconds) } : headers

/** The one writer: every answer of every route, with its metric record. */
const write = (exchange: Exchange, status: number, headers: OutgoingHttpHeaders, body: string | Uint8Array) => {
  exchange.response.writeHead(status, headersFor(exchange, retryAfter(status, { ...headers, "content-length": Buffer.byteLength(body) })))
  exchange.response.end(body)
  record(exchange, status)
}

const json = "application/json"

const fail = (exchange: Exchange, failure: Failure) =>
  write(exchange, failure.status, { "content-type": json, ...failure.headers }, JSON.stringify(failure.body))

/** An answer of the Effect app: buffered, or streamed (server-sent events) as it comes. */
const fromApp = async (exchange: Exchange, answer: Response): Promise<void> => {
  const headers: OutgoingHttpHeaders = {}
  answer.headers.forEach((value, key) => {
    headers[key] = value
  })
  if (answer.body !== null && headers["content-type"] === "text/event-stream") {
    exchange.response.writeHead(answer.status, headersFor(exchange, headers))
    exchange.response.once("close", () => record(exchange, answer.status))
    // A stream that fails or a client that goes away ends the other side too.
    return pipeline(Readable.fromWeb(answer.body as WebReadableStream), exchange.response).catch(() => {})
  }
  write(exchange, answer.status, headers, new Uint8Array(await answer.arrayBuffer()))
}

// The hop-by-hop and framing fields of the Node request, which the web request does not carry.
const notForwarded = new Set(["host", "connection", "keep-alive", "transfer-encoding", "content-length", "expect", "upgrade"])

/**
 * The Effect app's request: the canonical target, the headers, the body as read (a JSON body
 * of any JSON media type presented as `application/json`, the type HttpApi decodes).
 */
const toWeb = (exchange: Exchange, url: string, route: Routes.Route, body: string | undefined, signal: AbortSignal | undefined) => {
  const headers = new Headers()
  const source = exchange.request.headers
  for (const key in source) {
    const value = source[key]
    if (value === undefined || notForwarded.has(key)) continue
    headers.set(key, Array.isArray(value) ? value.join(", ") : value)
  }
  if (route.body === "json") headers.set("content-type", json)
  return new Request(`http://deixis${url}`, {
    method: exchange.request.method!,
    headers,
    // An empty JSON body reads as null (as the platform reads one from Node); the web request's
    // reader would refuse it.
    ...(body === undefined ? {} : { body: body === "" && route.body === "json" ? "null" : body }),
    ...(signal === undefined ? {} : { signal })
  })
}

/**
 * The pipeline over the credentials and, when the fast path is on, its routes.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: PipelineOptions): Layer.Layer<Pipeline, never, Auth.Credentials> =>
  Layer.effect(
    Pipeline,
    Effect.gen(function*() {
      const credentials = yield* Auth.Credentials
      const fast = Option.getOrUndefined(yield* Effect.serviceOption(FastPath))
      const run = Runtime.runFork(yield* Effect.runtime<never>())
      const { maxBodyBytes, unauthenticated } = options
      const loopbackHost = makeLoopbackHost()

      // The route answers, its body read and parsed.
      const dispatch = (exchange: Exchange, url: string, route: Routes.Route, text: string | undefined, payload: unknown) => {
        const answer = fast?.get(route.path)
        if (answer !== undefined) {
          return answer(payload, (answered) => {
            if (answered === undefined) fail(exchange, failures.internal)
            else write(exchange, answered.status, { "content-type": json }, answered.body)
          })
        }
        const app = exchange.server.app
        if (app === undefined) return fail(exchange, failures.unavailable("the service is starting"))
        if (text === undefined) {
          // No body to hand over: the platform answers over the Node request itself, routing on
          // the canonical target the pipeline decided on (and interrupting when the client goes).
          exchange.request.url = url
          exchange.response.once("finish", () => record(exchange, exchange.response.statusCode))
          return app.node(exchange.request, exchange.response)
        }
        // Interrupted when the client goes away, unless it writes: an accepted write finishes.
        const writes = route !== Routes.service.mcp
        const abort = writes ? undefined : new AbortController()
        if (abort !== undefined) {
          exchange.response.once("close", () => {
            if (!exchange.response.writableFinished) abort.abort()
          })
        }
        app.web(toWeb(exchange, url, route, text, abort?.signal)).then((answered) => fromApp(exchange, answered)).catch((error: unknown) => {
          run(Effect.logError("request failed", error))
          if (!exchange.response.headersSent) fail(exchange, failures.internal)
        })
      }

      // The body, read under the limit; past it the rest is dropped, not buffered (see `headersFor`).
      const readBody = (exchange: Exchange, url: string, route: Routes.Route) => {
        const { request, response } = exchange
        if (/^\s*100-continue\s*$/i.test(request.headers.expect ?? "")) response.writeContinue()
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
        // A read that breaks (the client went away mid-body) is a body not accepted.
        request.once("error", () => {
          if (done) return
          done = true
          fail(exchange, failures.tooLarge(maxBodyBytes))
        })
        request.once("end", () => {
          if (done) return
          done = true
          const text = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")
          let value: unknown
          try {
            // An empty body is null, as the platform reads it; /mcp's JSON-RPC edge parses its own text.
            value = route.body === "text" || text === "" ? null : parseJson(text)
          } catch (error) {
            return fail(exchange, failures.invalidJson(error))
          }
          // A throw here would escape the listener and end the process: a bug answers 500.
          try {
            dispatch(exchange, url, route, text, value)
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
        const route = Routes.find(method, path)
        if (route !== undefined) exchange.route = route.path
        const refused = (unauthenticated === undefined ? undefined : browserRefusal(request, unauthenticated, loopbackHost)) ??
          framingRefusal(request)
        if (refused !== undefined) return fail(exchange, refused)
        if (server.stopping) return fail(exchange, failures.unavailable("the service is stopping"))
        if (route === undefined) return fail(exchange, failures.notFound(method, path))
        if (!Auth.allows(credentials, route.access, request.headers)) return fail(exchange, failures.unauthorized)
        if (route.body === undefined) return dispatch(exchange, url, route, undefined, undefined)
        const unread = bodyRefusal(request, maxBodyBytes)
        if (unread !== undefined) return fail(exchange, unread)
        readBody(exchange, url, route)
      }
      return { handle }
    })
  )

/**
 * The Effect app's failures that no route answered (a defect, an unexpected error): logged,
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
            ? HttpServerResponse.setHeader(response, "retry-after", String(Availability.retryAfterSeconds))
            : response
        )
      ),
  { global: true }
)
