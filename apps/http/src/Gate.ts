/**
 * The gate every request through the Effect stack passes (the router's global middleware):
 * the body limit, bodies of any JSON media type read as JSON, JSON errors for unknown routes,
 * malformed bodies and failures, the 401 challenge header, and request metrics labelled by
 * route template. Authentication is not decided here but by each route (`Auth.ts`); the target
 * was made canonical before the request got here (`Edge.ts`).
 */
import { HttpIncomingMessage, HttpLayerRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Auth from "./Auth.js"
import * as Metrics from "./Metrics.js"
import * as Routes from "./Routes.js"

export interface GateOptions {
  readonly maxBodyBytes: number
}

const json = (status: number, body: Record<string, unknown>) => HttpServerResponse.unsafeJson(body, { status })

// The gate's own error bodies, shared with the fast path and the edge so all answer alike.
/** The 413 body. */
export const tooLargeBody = (maxBodyBytes: number) =>
  ({ _tag: "PayloadTooLarge", message: `the body is larger than ${maxBodyBytes} bytes`, max_bytes: maxBodyBytes }) as const
/** The 400 body for a body that is not JSON. */
export const invalidJsonBody = (error: unknown) =>
  ({ _tag: "BadRequest", path: "$", message: `the body is not valid JSON: ${(error as Error).message}` }) as const
/** The 500 body: the cause is logged, never sent. */
export const internalErrorBody = { _tag: "InternalError", message: "the request failed unexpectedly" } as const

/** Whether the method carries a body. */
export const hasBody = (method: string) => method !== "GET" && method !== "HEAD" && method !== "OPTIONS"

// The message the platform's body readers fail with past the limit.
const maxBytesExceeded = "maxBytes exceeded"

/** Whether a Content-Length header declares more than the limit. */
export const declaresTooMuch = (contentLength: string | undefined, maxBodyBytes: number) =>
  Number(contentLength ?? 0) > maxBodyBytes

// JSON in any of its media types (application/json, application/merge-patch+json, ...).
const isJson = (contentType: string | undefined) =>
  contentType === undefined || /^application\/([a-z0-9.+-]+\+)?json\b/i.test(contentType.trim())

/**
 * The request as the routes see it: bodies read under the limit (a declared Content-Length
 * over it fails before a byte is read), and a body of any JSON media type presented as
 * `application/json`, which HttpApi decodes. Reading stays lazy: a route reads the body only
 * after it has authenticated the request.
 */
const view = (request: HttpServerRequest.HttpServerRequest, maxBodyBytes: number): HttpServerRequest.HttpServerRequest => {
  const type = request.headers["content-type"]
  const rewrite = hasBody(request.method) && type !== undefined && isJson(type) && !/^application\/json\b/i.test(type)
  const overLimit = declaresTooMuch(request.headers["content-length"], maxBodyBytes)
  if (!rewrite && !overLimit) return request
  const refused = Effect.fail(
    new HttpServerError.RequestError({ request, reason: "Decode", cause: new Error(maxBytesExceeded) })
  )
  return Object.create(request, {
    ...(rewrite ? { headers: { value: { ...request.headers, "content-type": "application/json" } } } : {}),
    ...(overLimit ? { text: { value: refused }, arrayBuffer: { value: refused } } : {})
  }) as HttpServerRequest.HttpServerRequest
}

/** What a failed body read was, from the defect HttpApi makes of it (`Effect.orDie(request.json)`). */
const bodyFailure = (cause: Cause.Cause<unknown>): "too large" | SyntaxError | undefined => {
  for (const defect of Cause.defects(cause)) {
    if (defect instanceof HttpServerError.RequestError && defect.reason === "Decode") {
      const inner = defect.cause
      if (inner instanceof SyntaxError) return inner
      if (inner instanceof Error && inner.message === maxBytesExceeded) return "too large"
    }
  }
  return undefined
}

const answer = (
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, HttpLayerRouter.unhandled>,
  request: HttpServerRequest.HttpServerRequest,
  maxBodyBytes: number
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest> =>
  app.pipe(
    Effect.provideService(HttpServerRequest.HttpServerRequest, view(request, maxBodyBytes)),
    HttpIncomingMessage.withMaxBodySize(Option.some(maxBodyBytes)),
    Effect.catchAllCause((cause) => {
      const body = bodyFailure(cause)
      if (body === "too large") return Effect.succeed(json(413, tooLargeBody(maxBodyBytes)))
      if (body !== undefined) return Effect.succeed(json(400, invalidJsonBody(body)))
      return Effect.flatMap(HttpServerError.causeResponse(cause), ([response, rest]) =>
        response.status === 404 && Cause.isFailType(cause) &&
          (cause.error as unknown as { readonly _tag?: unknown })._tag === "RouteNotFound"
          ? Effect.succeed(json(404, { _tag: "NotFound", message: `no route for ${request.method} ${request.url.split("?")[0]}` }))
          : response.status >= 500
          ? Effect.as(Effect.logError("request failed", rest), json(500, internalErrorBody))
          : Effect.succeed(response))
    }),
    Effect.map((response) =>
      response.status === 401 ? HttpServerResponse.setHeader(response, "www-authenticate", Auth.challenge) : response
    )
  )

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
        const response = yield* answer(app, request, options.maxBodyBytes)
        Metrics.recordNow(
          Routes.methodLabel(request.method),
          Routes.label(request.method, request.url),
          response.status,
          (performance.now() - started) / 1000
        )
        return response
      }),
    { global: true }
  )

/**
 * Around the whole exchange, response sending included: a stop lets a write already accepted
 * finish and its answer reach the client, so no acknowledged event is lost. (MCP's streams
 * stay interruptible, or a stop would wait on them.)
 */
export const finishWrites = <E, R>(
  exchange: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    hasBody(request.method) && Routes.find(request.method, request.url)?.path !== Routes.service.mcp.path
      ? Effect.uninterruptible(exchange)
      : exchange)
