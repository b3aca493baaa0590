/**
 * The edge: the one Node request listener of the server, which every request passes before
 * anything else sees it.
 *
 * - It makes the request target canonical, once (`RequestTarget.ts`), rewriting `request.url`
 *   so that the fast path, the router, authentication, the body limit and the metric label all
 *   read the same string; a target with no single meaning is answered 400.
 * - It refuses a request with two `Authorization` or two `Content-Type` headers (400: Node
 *   keeps the first, a proxy may have read the last), or a transfer coding other than
 *   `chunked` (501: nothing here would decode it).
 * - Without credentials (no API token), it refuses a request with a body that a browser sent
 *   for a page of another site, and a browser's request whose Host does not name this machine
 *   (403; see `EdgeOptions.unauthenticated`).
 * - It then hands the request to the fast path (`FastPath.ts`) or to the Effect handler.
 * - A response sent before its request's body was read to the end (a 401, a 413) closes the
 *   connection, and the close lingers — the rest of the body is read and dropped for a bounded
 *   time — so that the client, still sending, reads the answer instead of a reset.
 * - `Expect: 100-continue` is answered 100 when the body is first read, after authentication,
 *   not as soon as the headers are in.
 * - Connections are bounded in number and time (headers, whole request, keep-alive).
 * - A stop closes the listening socket, closes idle connections and those whose request has not
 *   fully arrived (nothing of theirs was accepted), lets requests being handled finish and
 *   answer with `connection: close`, and after `shutdownTimeoutMs` closes whatever is left.
 *
 * @since 0.2.0
 */
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { IncomingMessage, type Server, ServerResponse } from "node:http"
import { isIP, type ListenOptions, type Socket } from "node:net"
import { FastPath } from "./FastPath.js"
import * as Gate from "./Gate.js"
import * as Metrics from "./Metrics.js"
import * as RequestTarget from "./RequestTarget.js"
import * as Routes from "./Routes.js"

/**
 * @since 0.2.0
 * @category models
 */
export interface EdgeOptions {
  /** Time to receive a request's headers (Node's `headersTimeout`). */
  readonly headersTimeoutMs: number
  /** Time to receive a whole request, body included (Node's `requestTimeout`). */
  readonly requestTimeoutMs: number
  /** How long an idle keep-alive connection stays open. */
  readonly keepAliveTimeoutMs: number
  /** Open connections at most; more are refused. */
  readonly maxConnections: number
  /** How long a stop waits for requests being handled before closing every connection. */
  readonly shutdownTimeoutMs: number
  /**
   * Set when the service has no credentials (no API token): a browser's request from a page of
   * another site is then refused, and, when the service listens on a loopback address, so is a
   * Host that does not name this machine (DNS rebinding). With a token, the token decides.
   */
  readonly unauthenticated?: { readonly loopback: boolean } | undefined
}

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
 * server): a client sends the same Host on every request, so the common request costs one
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

/**
 * Why a request of a browser is refused while the service has no credentials, or undefined.
 * A page of another site can send a POST (any method with a body: those write) without asking
 * first (a Blob body has no Content-Type), and its browser says so: `Sec-Fetch-Site`, or, in a
 * browser older than that header, an `Origin` naming another host than `Host`. A page can also rebind its own name to
 * 127.0.0.1 and then read the answers: its name is in `Host` (checked for browsers' requests
 * only: a proxy in front may pass a public Host on for the clients that are not browsers).
 */
const browserRefusal = (
  request: IncomingMessage,
  guard: { readonly loopback: boolean },
  loopbackHost: (host: string) => boolean
): { readonly path: "origin" | "host"; readonly message: string } | undefined => {
  const host = request.headers.host
  const origin = request.headers.origin
  // A browser says it is one (Sec-Fetch-Mode on every request of a current one, Origin on
  // every POST); a proxy in front that passes its own Host on (Caddy does) sends neither for
  // a client that is not a browser, such as Telegram's webhook calls.
  const browser = origin !== undefined || request.headers["sec-fetch-mode"] !== undefined
  if (guard.loopback && browser && host !== undefined && !loopbackHost(host)) {
    return {
      path: "host",
      message: "without DEIXIS_API_TOKEN the service answers only requests for this machine (Host: localhost, 127.0.0.1 or [::1])"
    }
  }
  // A page of another site cannot read what a GET answers (no CORS here), and no GET writes:
  // a link to /inspect or /docs from elsewhere still opens.
  if (!Gate.hasBody(request.method ?? "GET")) return undefined
  const site = request.headers["sec-fetch-site"]
  const crossSite = site !== undefined
    ? site !== "same-origin" && site !== "none"
    : origin !== undefined && (origin === "null" || origin.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "") !== host)
  return crossSite
    ? { path: "origin", message: "without DEIXIS_API_TOKEN the service refuses requests a page of another site sent" }
    : undefined
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

/** How long a closing connection keeps reading (and dropping) a body its answer refused. */
const lingerMs = 2_000

const send = (response: ServerResponse, status: number, body: Record<string, unknown>, close = false) => {
  const text = JSON.stringify(body)
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...(close ? { connection: "close" } : {})
  })
  response.end(text)
}

/**
 * Whether some of the request's body has not arrived yet. (`complete` alone is not enough: a
 * request without a body is not marked complete until someone reads its empty stream.)
 */
const bodyPending = (request: IncomingMessage) =>
  !request.complete &&
  (request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0)

// Fields a request may carry once (RFC 9110 §5.3): Node keeps the first of each and drops the
// rest, where a proxy in front may have read the last, so two are refused rather than chosen.
const singletons = ["authorization", "content-type"] as const

/**
 * A request the edge refuses by its headers, before any route sees it: a credential or media
 * type given twice (400), a transfer coding other than `chunked`, whose bytes nothing here
 * decodes (501, RFC 9112 §6.1).
 */
const refusedHeaders = (request: IncomingMessage): { readonly status: number; readonly body: Record<string, unknown> } | undefined => {
  const coding = request.headers["transfer-encoding"]
  if (coding !== undefined && !/^\s*chunked\s*$/i.test(coding)) {
    return { status: 501, body: { _tag: "NotImplemented", path: "transfer-encoding", message: "the only transfer coding accepted is chunked" } }
  }
  const raw = request.rawHeaders
  let seen = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    // Lengths first: most fields are neither, and are passed without lower-casing them.
    if (name.length !== 13 && name.length !== 12) continue
    const lower = name.toLowerCase()
    const which = singletons.indexOf(lower as (typeof singletons)[number])
    if (which === -1) continue
    if ((seen & (1 << which)) !== 0) {
      return { status: 400, body: { _tag: "BadRequest", path: lower, message: `more than one ${lower} header` } }
    }
    seen |= 1 << which
  }
  return undefined
}

/** The exchange a connection is in, if any. */
interface Exchange {
  readonly request: IncomingMessage
  readonly response: ServerResponse
}

/**
 * The Node HTTP server (as `NodeHttpServer.layer`) with the edge as its only request listener:
 * canonical targets, then the fast path, then the Effect handler while one is attached.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerServer = (server: Server, listen: ListenOptions, options: EdgeOptions): Layer.Layer<
  Layer.Layer.Success<ReturnType<typeof NodeHttpServer.layer>>,
  Layer.Layer.Error<ReturnType<typeof NodeHttpServer.layer>>,
  FastPath
> =>
  Layer.merge(
    Layer.scoped(
      HttpServer.HttpServer,
      Effect.gen(function*() {
        const fast = yield* FastPath
        server.headersTimeout = options.headersTimeoutMs
        server.requestTimeout = options.requestTimeoutMs
        server.keepAliveTimeout = options.keepAliveTimeoutMs
        server.maxConnections = options.maxConnections

        const sockets = new Set<Socket>()
        const exchanges = new Map<Socket, Exchange>()
        let handler: ((request: IncomingMessage, response: ServerResponse) => void) | undefined
        let stopping = false

        server.on("connection", (socket: Socket) => {
          sockets.add(socket)
          socket.once("close", () => {
            sockets.delete(socket)
            exchanges.delete(socket)
          })
          // Node ends a `connection: close` exchange with destroySoon(), which resets the
          // connection if the client is still sending a body nobody read: linger instead.
          const destroySoon = socket.destroySoon.bind(socket)
          socket.destroySoon = () => {
            const exchange = exchanges.get(socket)
            if (exchange === undefined || !bodyPending(exchange.request)) return destroySoon()
            exchange.request.resume()
            socket.end()
            const timer = setTimeout(() => socket.destroy(), lingerMs)
            timer.unref()
            socket.once("close", () => clearTimeout(timer))
          }
        })

        // Installed on each exchange (plain functions, no allocation per request):
        // an answer given before the body has arrived ends the connection (see destroySoon)...
        function writeHead(this: ServerResponse) {
          if (stopping || bodyPending(this.req)) this.shouldKeepAlive = false
          // eslint-disable-next-line prefer-rest-params
          return ServerResponse.prototype.writeHead.apply(this, arguments as unknown as Parameters<ServerResponse["writeHead"]>)
        }
        // ...and a reader that gives up on an oversized body destroys the request, which would
        // reset the connection before the 413 is sent: the rest of the body is dropped instead.
        function destroy(this: IncomingMessage, error?: Error) {
          if (error !== undefined || exchanges.get(this.socket)?.response.headersSent !== false) {
            return IncomingMessage.prototype.destroy.call(this, error)
          }
          this.removeAllListeners("data")
          this.resume()
          return this
        }

        const loopbackHost = makeLoopbackHost()
        const listener = (request: IncomingMessage, response: ServerResponse) => {
          const started = performance.now()
          const socket = request.socket
          exchanges.set(socket, { request, response })
          response.writeHead = writeHead as ServerResponse["writeHead"]
          request.destroy = destroy

          const raw = request.url ?? ""
          if (!alreadyCanonical.has(raw)) {
            const target = RequestTarget.canonical(raw)
            if (Either.isLeft(target)) {
              Metrics.recordNow(Routes.methodLabel(request.method ?? ""), "unmatched", 400, (performance.now() - started) / 1000)
              return send(response, 400, { _tag: "BadRequest", path: "request-target", message: `the request target is not canonical: ${target.left.reason}` })
            }
            request.url = target.right
          }
          if (options.unauthenticated !== undefined) {
            const refusal = browserRefusal(request, options.unauthenticated, loopbackHost)
            if (refusal !== undefined) {
              Metrics.recordNow(Routes.methodLabel(request.method ?? ""), Routes.label(request.method ?? "", request.url ?? ""), 403, (performance.now() - started) / 1000)
              return send(response, 403, { _tag: "Forbidden", ...refusal })
            }
          }
          const framing = refusedHeaders(request)
          if (framing !== undefined) {
            Metrics.recordNow(Routes.methodLabel(request.method ?? ""), Routes.label(request.method ?? "", request.url ?? ""), framing.status, (performance.now() - started) / 1000)
            return send(response, framing.status, framing.body)
          }
          if (handler === undefined || stopping) {
            const message = stopping ? "the service is stopping" : "the service is starting"
            return send(response, 503, { _tag: "ShuttingDown", message }, true)
          }
          if (!fast(request, response)) handler(request, response)
        }
        server.on("request", listener)
        // Expect: 100-continue. Node would answer 100 as soon as the headers are in, before any
        // check, inviting a body that is then refused: 100 goes out when something first reads
        // the body instead — after authentication, on every path — and an answer given before
        // that (a 401) goes out alone.
        function readAfterContinue(this: IncomingMessage, size: number) {
          this._read = IncomingMessage.prototype._read
          const exchange = exchanges.get(this.socket)
          if (exchange !== undefined && exchange.request === this && !exchange.response.headersSent) {
            exchange.response.writeContinue()
          }
          return IncomingMessage.prototype._read.call(this, size)
        }
        server.on("checkContinue", (request: IncomingMessage, response: ServerResponse) => {
          request._read = readAfterContinue
          listener(request, response)
        })

        const node = yield* NodeHttpServer.make(() => server, listen)

        // Released before the server itself (acquired after it): drain, then close.
        yield* Effect.addFinalizer(() =>
          Effect.async<void>((resume) => {
            stopping = true
            let done = false
            const finish = () => {
              if (done) return
              done = true
              clearTimeout(timer)
              resume(Effect.void)
            }
            const timer = setTimeout(() => {
              server.closeAllConnections()
              for (const socket of sockets) socket.destroy()
              finish()
            }, options.shutdownTimeoutMs)
            timer.unref()
            if (server.listening) server.close(finish)
            for (const socket of sockets) {
              const exchange = exchanges.get(socket)
              if (exchange === undefined || exchange.response.writableFinished || bodyPending(exchange.request)) {
                // Idle, mid-headers, or a body still arriving: nothing of it was accepted.
                socket.destroy()
              } else {
                // Being handled: it finishes, and then its connection ends (its headers may be
                // out already, keep-alive and all).
                exchange.response.once("finish", () => socket.end())
              }
            }
            if (sockets.size === 0 && !server.listening) finish()
          })
        )

        return HttpServer.make({
          address: node.address,
          serve: (app, middleware) =>
            Effect.gen(function*() {
              handler = yield* (middleware === undefined
                ? NodeHttpServer.makeHandler(app)
                : NodeHttpServer.makeHandler(app, middleware as never))
              yield* Effect.addFinalizer(() => Effect.sync(() => (handler = undefined)))
            })
        })
      })
    ),
    NodeHttpServer.layerContext
  )
