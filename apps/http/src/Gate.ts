/**
 * The gate every request passes: bearer auth on /v1 and /mcp, the body limit, JSON for
 * unknown routes, metrics, and in-flight writes finishing during a graceful stop.
 */
import { HttpIncomingMessage, HttpLayerRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { createHash, timingSafeEqual } from "node:crypto"
import * as Metrics from "./Metrics.js"

export interface GateOptions {
  readonly apiToken: Option.Option<Redacted.Redacted<string>>
  readonly maxBodyBytes: number
}

const digest = (s: string) => createHash("sha256").update(s).digest()

/** Compares in constant time: both sides are hashed to equal lengths first. */
export const tokenMatches = (expected: Redacted.Redacted<string>, header: string | undefined): boolean => {
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header)
  const given = match?.[1] ?? ""
  const ok = timingSafeEqual(digest(Redacted.value(expected)), digest(given))
  return ok && match !== null
}

const json = (status: number, body: Record<string, unknown>) => HttpServerResponse.unsafeJson(body, { status })

/** Whether a path needs the bearer token (when one is configured). */
export const guarded = (path: string) => path.startsWith("/v1/") || path === "/mcp" || path.startsWith("/mcp/") || path.startsWith("/mcp?")

// The gate's own error bodies, shared with the fast path so both answer alike.
/** The 401 body. */
export const unauthorizedBody = { _tag: "Unauthorized", message: "a valid Authorization: Bearer token is required" } as const
/** The 413 body. */
export const tooLargeBody = (maxBodyBytes: number) =>
  ({ _tag: "PayloadTooLarge", message: `the body is larger than ${maxBodyBytes} bytes`, max_bytes: maxBodyBytes }) as const
/** The 400 body for a body that is not JSON. */
export const invalidJsonBody = (error: unknown) =>
  ({ _tag: "BadRequest", path: "$", message: `the body is not valid JSON: ${(error as Error).message}` }) as const
/** The 500 body: the cause is logged, never sent. */
export const internalErrorBody = { _tag: "InternalError", message: "the request failed unexpectedly" } as const

export const layer = (options: GateOptions) =>
  HttpLayerRouter.middleware(
    (
      app: Effect.Effect<HttpServerResponse.HttpServerResponse, HttpLayerRouter.unhandled>
    ): Effect.Effect<
      HttpServerResponse.HttpServerResponse,
      HttpLayerRouter.unhandled,
      HttpServerRequest.HttpServerRequest
    > =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const started = performance.now()
        const route = Metrics.routeLabel(request.url)
        let response: HttpServerResponse.HttpServerResponse
        if (
          Option.isSome(options.apiToken) && guarded(request.url) &&
          !tokenMatches(options.apiToken.value, request.headers["authorization"])
        ) {
          response = json(401, unauthorizedBody)
        } else if (Number(request.headers["content-length"] ?? 0) > options.maxBodyBytes) {
          response = tooLargeResponse(options.maxBodyBytes)
        } else {
          response = yield* handle(app, request, options.maxBodyBytes)
        }
        const seconds = (performance.now() - started) / 1000
        yield* Metrics.record(request.method, route, response.status, seconds)
        return response
      }),
    { global: true }
  )

const tooLargeResponse = (maxBodyBytes: number) => json(413, tooLargeBody(maxBodyBytes))

/** Whether the method carries a body the gate reads. */
export const hasBody = (method: string) => method !== "GET" && method !== "HEAD" && method !== "OPTIONS"

// JSON in any of its media types (application/json, application/merge-patch+json, ...).
const isJson = (contentType: string | undefined) =>
  contentType === undefined || /^application\/([a-z0-9.+-]+\+)?json\b/i.test(contentType.trim())

/**
 * The request seen as `application/json` (for `application/merge-patch+json` and the like),
 * carrying the body already read: `modify` would lose the platform's cached body.
 */
const asJsonRequest = (request: HttpServerRequest.HttpServerRequest, text: string): HttpServerRequest.HttpServerRequest =>
  Object.create(request, {
    headers: { value: { ...request.headers, "content-type": "application/json" } },
    text: { value: Effect.succeed(text) }
  }) as HttpServerRequest.HttpServerRequest

const handle = (
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, HttpLayerRouter.unhandled>,
  request: HttpServerRequest.HttpServerRequest,
  maxBodyBytes: number
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    let forwarded = request
    if (hasBody(request.method) && isJson(request.headers["content-type"])) {
      // Read the body once, under the limit; the platform caches it for the handler.
      const text = yield* Effect.either(HttpIncomingMessage.withMaxBodySize(request.text, Option.some(maxBodyBytes)))
      if (text._tag === "Left") return tooLargeResponse(maxBodyBytes)
      if (text.right !== "") {
        try {
          JSON.parse(text.right)
        } catch (error) {
          return json(400, invalidJsonBody(error))
        }
      }
      if (!/^application\/json\b/i.test(request.headers["content-type"] ?? "application/json")) {
        forwarded = asJsonRequest(request, text.right)
      }
    }
    return yield* app.pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, forwarded),
      HttpIncomingMessage.withMaxBodySize(Option.some(maxBodyBytes)),
      Effect.catchAllCause((cause) =>
        Effect.flatMap(HttpServerError.causeResponse(cause), ([response, rest]) =>
          response.status === 404 && Cause.isFailType(cause) &&
            (cause.error as unknown as { readonly _tag?: unknown })._tag === "RouteNotFound"
            ? Effect.succeed(json(404, { _tag: "NotFound", message: `no route for ${request.method} ${request.url.split("?")[0]}` }))
            : response.status >= 500
            ? Effect.as(Effect.logError("request failed", rest), json(500, internalErrorBody))
            : Effect.succeed(response))
      )
    )
  })

/**
 * Around the whole exchange, response sending included: a stop lets a write already accepted
 * finish and its answer reach the client, so no acknowledged event is lost. (MCP's streams
 * stay interruptible, or a stop would wait on them.)
 */
export const finishWrites = <E, R>(
  exchange: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    hasBody(request.method) && !request.url.startsWith("/mcp") ? Effect.uninterruptible(exchange) : exchange)
