/**
 * The gate every request through the Effect stack passes (the router's global middleware):
 * the body limit, bodies of any JSON media type read as JSON (any other body, or a content-coded
 * one, refused unread with a 415), JSON errors for unknown routes,
 * malformed bodies and failures, the 401 challenge header, and request metrics labelled by
 * route template. Authentication is not decided here but by each route (`Auth.ts`); the target
 * was made canonical before the request got here (`Edge.ts`).
 */
import { HttpIncomingMessage, HttpLayerRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Json } from "@deixis/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
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

/**
 * `JSON.parse`, refusing a value nested deeper than core's one bound for untrusted JSON
 * (`Json.maxDepth`) with a SyntaxError (answered 400 as any body that is not JSON). Every
 * entrance reads bodies through it.
 */
export const parseJson = (text: string): unknown => {
  const value: unknown = JSON.parse(text)
  if (Json.nestsDeeperThan(value)) throw new SyntaxError(`nested deeper than ${Json.maxDepth} levels`)
  return value
}

/** Whether a Content-Length header declares more than the limit. */
export const declaresTooMuch = (contentLength: string | undefined, maxBodyBytes: number) =>
  Number(contentLength ?? 0) > maxBodyBytes

// JSON in any of its media types (application/json, application/merge-patch+json, ...).
const isJson = (contentType: string | undefined) =>
  contentType === undefined || /^application\/([a-z0-9.+-]+\+)?json\b/i.test(contentType.trim())

/**
 * Whether a Content-Encoding header says the body is coded: the service reads bodies as they
 * are sent (`identity` alone), so a coded body is refused rather than parsed as its bytes.
 */
export const isCoded = (contentEncoding: string | undefined) =>
  contentEncoding !== undefined && !/^\s*(identity\s*)?$/i.test(contentEncoding)

/** Why a body is refused unread (415), by the header that says so. */
class Unsupported extends Error {
  constructor(readonly header: "content-type" | "content-encoding") {
    super(header === "content-type"
      ? "the body must be JSON: send it with Content-Type: application/json (or another JSON media type)"
      : "the body must not be content-coded: send it without Content-Encoding (or with identity)")
  }
}

/** The 415 body: a body the service does not read, and the header that says why. */
export const unsupportedBody = (header: "content-type" | "content-encoding") =>
  ({ _tag: "UnsupportedMediaType", header, message: new Unsupported(header).message }) as const

/**
 * The request as the routes see it: bodies read under the limit (a declared Content-Length
 * over it fails before a byte is read), and a body of any JSON media type presented as
 * `application/json`, which HttpApi decodes. A body of another media type, or content-coded,
 * is never read: every reader fails, so no parser but JSON's ever sees a request body (the
 * platform's multipart reader, past the limit, would throw outside any fiber and end the
 * process; a form or text/plain body is what a page of another site can send without asking).
 * Reading stays lazy: a route reads the body only after it has authenticated the request.
 */
const view = (request: HttpServerRequest.HttpServerRequest, maxBodyBytes: number): HttpServerRequest.HttpServerRequest => {
  const type = request.headers["content-type"]
  const body = hasBody(request.method)
  const unsupported = !body
    ? undefined
    : type !== undefined && !isJson(type)
    ? new Unsupported("content-type")
    : isCoded(request.headers["content-encoding"])
    ? new Unsupported("content-encoding")
    : undefined
  const rewrite = body && unsupported === undefined && type !== undefined && !/^application\/json\b/i.test(type)
  const overLimit = declaresTooMuch(request.headers["content-length"], maxBodyBytes)
  if (!body) return request
  if (unsupported === undefined && !overLimit) {
    // The platform's JSON reader (an empty body is null), through `parseJson` and its depth bound.
    const json = Effect.flatMap(Effect.suspend(() => request.text), (text) =>
      Effect.try({
        try: () => (text === "" ? null : parseJson(text)),
        catch: (cause) => new HttpServerError.RequestError({ request, reason: "Decode", cause })
      }))
    return Object.create(request, {
      json: { value: json },
      ...(rewrite ? { headers: { value: { ...request.headers, "content-type": "application/json" } } } : {})
    }) as HttpServerRequest.HttpServerRequest
  }
  const error = new HttpServerError.RequestError({ request, reason: "Decode", cause: unsupported ?? new Error(maxBytesExceeded) })
  const refused = Effect.fail(error)
  const readers = { value: refused }
  // Refused unread: every reader fails.
  return Object.create(request, {
    ...(rewrite ? { headers: { value: { ...request.headers, "content-type": "application/json" } } } : {}),
    text: readers,
    json: readers,
    arrayBuffer: readers,
    urlParamsBody: readers,
    multipart: readers,
    stream: { value: Stream.fail(error) },
    multipartStream: { value: Stream.fail(error) }
  }) as HttpServerRequest.HttpServerRequest
}

/** What a failed body read was, from the defect HttpApi makes of it (`Effect.orDie(request.json)`). */
const bodyFailure = (cause: Cause.Cause<unknown>): "too large" | SyntaxError | Unsupported | undefined => {
  for (const defect of Cause.defects(cause)) {
    if (defect instanceof HttpServerError.RequestError && defect.reason === "Decode") {
      const inner = defect.cause
      if (inner instanceof SyntaxError || inner instanceof Unsupported) return inner
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
      if (body instanceof Unsupported) return Effect.succeed(json(415, unsupportedBody(body.header)))
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
