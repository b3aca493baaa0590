/**
 * The two tool routes — `POST /v1/tools/resolve_reference_target` and
 * `POST /v1/tools/list_active_context_objects` — and a bot's most frequent call,
 * `POST /v1/events`, answered straight from the Node request listener, in the same server and
 * port, instead of through the Effect HTTP stack (a fiber per request, the router, the gate
 * middleware, HttpApi's decoding pipeline), which costs ~1 ms of CPU per request against
 * ~10 µs for the tool itself. A write answered here is never interrupted: its fiber belongs to
 * no scope, and a stop drains it as it drains the Effect stack's writes (see `Edge.ts`).
 *
 * Same behaviour as the HttpApi route, checked by `test/fastpath.test.ts` on a corpus of
 * requests: the same bearer check (`Auth.ts`), body limit, error bodies and status codes (from
 * the gate's shared bodies and the API's own error Schemas), the same payload Schemas and result
 * encodings (the ones `Api.ts` declares for these endpoints; the common request shapes decoded by
 * `RequestDecoder.ts` to exactly the Schema's value, everything else by the Schema), the same
 * services (called through the layer's Runtime), the same request metrics. The routes are the
 * route table's (`Routes.ts`), matched on the canonical target the edge has already made
 * (`Edge.ts`).
 * Anything unusual — another method, a query string, a body that is not `application/json` or
 * is content-coded — goes to the Effect stack.
 */
import { HttpApiError, HttpApiSchema } from "@effect/platform"
import { ActiveContext, ContextEvent, ContextIngest, ContextStore, Errors, ReferenceResolver } from "@deixis/core"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Auth from "./Auth.js"
import * as Gate from "./Gate.js"
import * as Handlers from "./Handlers.js"
import * as Metrics from "./Metrics.js"
import * as RequestDecoder from "./RequestDecoder.js"
import * as Routes from "./Routes.js"

/**
 * A Node request listener that answers what it can and returns `false` for the rest.
 *
 * @since 0.1.0
 * @category models
 */
export type Listener = (request: IncomingMessage, response: ServerResponse) => boolean

/**
 * The fast path's listener, built from the services.
 *
 * @since 0.1.0
 * @category services
 */
export class FastPath extends Context.Tag("@deixis/http/FastPath")<FastPath, Listener>() {}

/**
 * The gate's settings, which the fast path applies alike.
 *
 * @since 0.1.0
 * @category models
 */
export interface FastPathOptions {
  readonly maxBodyBytes: number
}

/** One route: its Schemas, as `Api.ts` declares them, and its service call. */
interface Route {
  readonly path: string
  readonly record: Metrics.Recorder
  /** The Schema's decoded value for the common shapes, or undefined (`RequestDecoder.ts`). */
  readonly fast: (input: unknown) => unknown
  readonly decode: (input: unknown) => Either.Either<unknown, ParseResult.ParseError>
  readonly encode: (output: unknown) => unknown
  readonly call: (payload: unknown) => Effect.Effect<unknown, ContextStore.StoreError | Errors.InvalidRequest>
}

// The result is encoded by core's `encodeResult`: Schema.encode's output, byte for byte (core
// tests it), without re-validating what the tool built — the largest cost left on this path.
const route = <A, I, B>(
  { path }: Routes.Route,
  payload: Schema.Schema<A, I>,
  fast: RequestDecoder.FastDecoder<A>,
  encode: (result: B) => unknown,
  call: (payload: A) => Effect.Effect<B, ContextStore.StoreError | Errors.InvalidRequest>
): Route => ({
  path,
  record: Metrics.recorder("POST", path),
  fast,
  decode: Schema.decodeUnknownEither(payload),
  encode: encode as Route["encode"],
  call: call as Route["call"]
})

// A route whose every payload goes through its Schema.
const noFastDecoder = () => undefined
const encodeApplyResult = Schema.encodeSync(ContextEvent.ApplyResult)

// Both HttpApi and the gate answer with JSON bodies of this media type.
const contentType = "application/json"
const send = (response: ServerResponse, status: number, body: string) => {
  response.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(body) })
  response.end(body)
}

// What HttpApi answers for a payload the Schema rejects.
const decodeErrorStatus = HttpApiSchema.getStatusError(HttpApiError.HttpApiDecodeError)
const encodeDecodeError = Schema.encodeSync(HttpApiError.HttpApiDecodeError)
const decodeErrorBody = (error: ParseResult.ParseError) =>
  JSON.stringify(encodeDecodeError(Effect.runSync(HttpApiError.HttpApiDecodeError.fromParseError(error))))

// The tools' typed failures, with the status Api.ts hands HttpApi (`addError(E, { status })`).
const storeErrorStatus = Errors.statusOf(ContextStore.StoreError) ?? 500
const encodeStoreError = Schema.encodeSync(ContextStore.StoreError)
const invalidRequestStatus = Errors.statusOf(Errors.InvalidRequest) ?? 500
const encodeInvalidRequest = Schema.encodeSync(Errors.InvalidRequest)

// The media types both the gate and HttpApi read as JSON without rewriting the request.
const plainJson = /^application\/json\b/i

/**
 * The listener, over the services: the two tool routes, with their Schemas from `Api.ts`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: FastPathOptions
): Layer.Layer<
  FastPath,
  never,
  ReferenceResolver.ReferenceResolver | ActiveContext.ActiveContext | ContextIngest.ContextIngest | Auth.Credentials
> =>
  Layer.effect(
    FastPath,
    Effect.gen(function*() {
      const credentials = yield* Auth.Credentials
      const resolver = yield* ReferenceResolver.ReferenceResolver
      const active = yield* ActiveContext.ActiveContext
      const ingest = yield* ContextIngest.ContextIngest
      const runtime = yield* Effect.runtime<never>()
      const run = Runtime.runCallback(runtime)
      const routes = new Map<string, Route>(
        [
          route(Routes.endpoint("tools.resolve"), ReferenceResolver.ResolveRequest, RequestDecoder.resolveRequest, ReferenceResolver.encodeResult, resolver.resolve),
          route(Routes.endpoint("tools.list"), ActiveContext.ListRequest, RequestDecoder.listRequest, ActiveContext.encodeResult, active.list),
          // A bot's most frequent call: the batch through its Schema, as HttpApi decodes it.
          route(Routes.endpoint("events.ingest"), ContextEvent.ContextEventBatch, noFastDecoder, encodeApplyResult, (batch) =>
            Handlers.applyEvents(ingest, batch))
        ].map((r) => [r.path, r])
      )
      const { maxBodyBytes } = options
      const tooLarge = JSON.stringify(Gate.tooLargeBody(maxBodyBytes))
      const unauthorized = JSON.stringify(Auth.unauthorizedBody)
      const internalError = JSON.stringify(Gate.internalErrorBody)

      return (request, response) => {
        if (request.method !== "POST") return false
        const r = routes.get(request.url ?? "")
        if (r === undefined) return false
        const type = request.headers["content-type"]
        if (type !== undefined && !plainJson.test(type)) return false
        if (Gate.isCoded(request.headers["content-encoding"])) return false

        const started = performance.now()
        const answer = (status: number, body: string) => {
          r.record(status, (performance.now() - started) / 1000)
          send(response, status, body)
        }
        // The Effect stack's checks, in its order: the route's authentication, then the body.
        if (!Auth.bearerAllowed(credentials, Auth.presentedToken(request.headers["authorization"]))) {
          response.setHeader("www-authenticate", Auth.challenge)
          answer(401, unauthorized)
          return true
        }
        if (Gate.declaresTooMuch(request.headers["content-length"], maxBodyBytes)) {
          answer(413, tooLarge)
          return true
        }

        const respond = (text: string) => {
          let json: unknown = null
          if (text !== "") {
            try {
              json = Gate.parseJson(text)
            } catch (error) {
              return answer(400, JSON.stringify(Gate.invalidJsonBody(error)))
            }
          }
          // The common shapes without the Schema interpreter; anything else (every error among
          // them) through the Schema, which words the error body.
          let decoded = r.fast(json)
          if (decoded === undefined) {
            const payload = r.decode(json)
            if (Either.isLeft(payload)) return answer(decodeErrorStatus, decodeErrorBody(payload.left))
            decoded = payload.right
          }
          run(r.call(decoded), {
            onExit: (exit) => {
              if (Exit.isSuccess(exit)) {
                let body: string
                try {
                  body = JSON.stringify(r.encode(exit.value))
                } catch (error) {
                  // A result the tool should never build (say, an instant past year 275760).
                  run(Effect.logError("request failed: the result does not encode", error))
                  return answer(500, internalError)
                }
                return answer(200, body)
              }
              const failure = Cause.failureOption(exit.cause)
              if (Option.isSome(failure) && failure.value instanceof ContextStore.StoreError) {
                return answer(storeErrorStatus, JSON.stringify(encodeStoreError(failure.value)))
              }
              if (Option.isSome(failure) && failure.value instanceof Errors.InvalidRequest) {
                return answer(invalidRequestStatus, JSON.stringify(encodeInvalidRequest(failure.value)))
              }
              run(Effect.logError("request failed", exit.cause))
              answer(500, internalError)
            }
          })
        }

        // Read under the limit, as the gate does; a failed read is a 413 there too. Past the
        // limit the rest is discarded, not buffered: the edge closes the connection after the
        // answer, lingering so that the client reads it (see `Edge.ts`).
        const chunks: Array<Buffer> = []
        let bytes = 0
        let done = false
        request.on("data", (chunk: Buffer) => {
          if (done) return
          bytes += chunk.length
          if (bytes > maxBodyBytes) {
            done = true
            chunks.length = 0
            answer(413, tooLarge)
          } else {
            chunks.push(chunk)
          }
        })
        request.once("end", () => {
          if (done) return
          done = true
          // A throw here would escape the listener and end the process: a bug answers 500.
          try {
            respond(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"))
          } catch (error) {
            run(Effect.logError("request failed", error))
            if (!response.headersSent) answer(500, internalError)
          }
        })
        request.once("error", () => {
          if (done) return
          done = true
          answer(413, tooLarge)
        })
        return true
      }
    })
  )
