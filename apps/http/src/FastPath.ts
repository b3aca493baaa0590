/**
 * The fast path: the routes the route table flags `fast` (`Routes.fast`: both tools,
 * `POST /v1/events`, `POST /v1/telegram/updates`) answered from the Node request listener by the
 * pipeline (`Pipeline.ts`), instead of through the Effect HTTP stack (a fiber per request, the
 * router, HttpApi's decoding pipeline), which costs about 1 ms of CPU per request against tens
 * of µs for the work itself.
 *
 * Nothing here is declared a second time: each route is derived from its HttpApi endpoint
 * (`HttpApi.reflect`) — its payload Schema decodes, its success Schema encodes (core's
 * `Json.trustedEncoder`: the same JSON without validating again), its error Schemas, with the
 * statuses the API gives them, encode its failures (a payload the Schema refuses is HttpApi's
 * `HttpApiDecodeError`) — and answered by the endpoint's own handler (`Handlers.ts`), called
 * through the layer's Runtime. The common request shapes of the two tools are decoded by
 * `RequestDecoder.ts` to exactly the Schema's value, everything else by the Schema.
 * `test/fastpath.test.ts` sends one corpus to the service with and without the fast path and
 * compares status, content type and body.
 *
 * A write answered here is never interrupted: its fiber belongs to no scope, and a stop drains
 * it as it drains the Effect stack's writes (see `Edge.ts`).
 *
 * @since 0.1.0
 */
import { HttpApi, HttpApiError } from "@effect/platform"
import { Json } from "@deixis/core"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import { Api } from "./Api.js"
import * as Handlers from "./Handlers.js"
import * as RequestDecoder from "./RequestDecoder.js"
import * as Routes from "./Routes.js"

/**
 * What an endpoint answered: a status and its JSON body, or `undefined` for a failure the
 * endpoint does not declare (a defect: logged here, answered 500 by the pipeline).
 *
 * @since 0.2.0
 * @category models
 */
export type Answer = { readonly status: number; readonly body: string } | undefined

/**
 * One fast route: answers a parsed JSON body, calling `reply` once (at once for a payload the
 * Schema refuses, after the handler otherwise).
 *
 * @since 0.2.0
 * @category models
 */
export type Route = (json: unknown, reply: (answer: Answer) => void) => void

/**
 * The fast routes by path template (`Routes.Route["path"]`).
 *
 * @since 0.1.0
 * @category services
 */
export class FastPath extends Context.Tag("@deixis/http/FastPath")<FastPath, ReadonlyMap<string, Route>>() {}

/** An endpoint's failures: each status with the Schema of what it answers under it. */
const errorEncoders = (errors: ReadonlyMap<number, { readonly ast: Option.Option<AST.AST> }>) =>
  Array.from(errors).flatMap(([status, { ast }]) => {
    if (Option.isNone(ast)) return []
    const schema = Schema.make<unknown, unknown, never>(ast.value)
    return [{ status, is: Schema.is(schema), encode: Schema.encodeSync(schema) }]
  })

// The success Schema's encoder: without validating again where core's compiler knows the
// Schema, else Schema.encodeSync.
const successEncoder = (schema: Schema.Schema<unknown, unknown>): (value: unknown) => unknown => {
  try {
    return Json.trustedEncoder(schema)
  } catch {
    return Schema.encodeSync(schema)
  }
}

/**
 * The fast routes, each derived from its endpoint, over the handlers and the services.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  telegram: Handlers.TelegramOptions
): Layer.Layer<FastPath, never, Effect.Effect.Context<ReturnType<typeof Handlers.payloadHandlers>>> =>
  Layer.effect(
    FastPath,
    Effect.gen(function*() {
      const handlers = yield* Handlers.payloadHandlers(telegram)
      const run = Runtime.runCallback(yield* Effect.runtime<never>())
      const routes = new Map<string, Route>()
      HttpApi.reflect(Api, {
        predicate: ({ endpoint, group }) => Routes.fast.has(`${group.identifier}.${endpoint.name}`),
        onGroup: () => {},
        onEndpoint: ({ endpoint, errors, group, successes }) => {
          const name = `${group.identifier}.${endpoint.name}`
          const handler = handlers.get(name)
          const payload = Option.getOrUndefined(endpoint.payloadSchema) as Schema.Schema<unknown, unknown> | undefined
          const success = endpoint.successSchema as Schema.Schema<unknown, unknown>
          const [status, ...others] = successes.keys()
          if (handler === undefined || payload === undefined || status === undefined || others.length > 0) {
            throw new Error(`${name} cannot be answered on the fast path: it needs a payload, one success status and a handler of its payload alone`)
          }
          const fast = RequestDecoder.forSchema(payload)
          const decode = Schema.decodeUnknownEither(payload)
          const encode = successEncoder(success)
          const failures = errorEncoders(errors)
          const failure = (error: unknown): Answer => {
            const declared = failures.find((f) => f.is(error))
            return declared === undefined ? undefined : { status: declared.status, body: JSON.stringify(declared.encode(error)) }
          }
          routes.set(Routes.endpoint(name).path, (json, reply) => {
            // The common shapes without the Schema interpreter; anything else (every error among
            // them) through the Schema, which words the error body as HttpApi does.
            let decoded = fast?.(json)
            if (decoded === undefined) {
              const result = decode(json)
              if (Either.isLeft(result)) return reply(failure(Effect.runSync(HttpApiError.HttpApiDecodeError.fromParseError(result.left))))
              decoded = result.right
            }
            // Started at once rather than on the scheduler's next turn: a handler that needs no
            // I/O (the memory store, a warm cache) answers within this call.
            run(handler({ payload: decoded as never }), {
              immediate: true,
              onExit: (exit) => {
                if (Exit.isSuccess(exit)) {
                  let body: string
                  try {
                    body = JSON.stringify(encode(exit.value))
                  } catch (error) {
                    // A result the handler should never build (say, an instant past year 275760).
                    run(Effect.logError("request failed: the result does not encode", error))
                    return reply(undefined)
                  }
                  return reply({ status, body })
                }
                const declared = Option.map(Cause.failureOption(exit.cause), failure)
                if (Option.isSome(declared) && declared.value !== undefined) return reply(declared.value)
                run(Effect.logError("request failed", exit.cause))
                reply(undefined)
              }
            })
          })
        }
      })
      return routes
    })
  )
