/**
 * One executor per endpoint of the API, built from the API definition (`HttpApi.reflect`), as
 * `HttpApiBuilder` builds one route per endpoint: the endpoint's security middleware (the one
 * authentication check), decoders for its path, query, headers and payload (`FastDecoder.ts`,
 * compiled from its Schemas, the Schema itself for what they leave), its group's handler, its
 * success encoder (core's `Json.trustedEncoder`) and its error encoders by status. The pipeline
 * (`Pipeline.ts`) runs them on the request it read once and parsed once.
 *
 * Handlers are written as for `HttpApiBuilder.group` (`group` here takes the same build
 * function), and run on the executors' runtime, outside any request scope: a write a client
 * stops waiting for still finishes.
 *
 * @since 0.3.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiError from "@effect/platform/HttpApiError"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import type * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Json } from "@deixis/core"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import { pipeArguments } from "effect/Pipeable"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import type * as Scope from "effect/Scope"
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http"
import { Api } from "./Api.js"
import * as Auth from "./Auth.js"
import * as FastDecoder from "./FastDecoder.js"

/**
 * What the pipeline hands an executor: the request's headers, its path parameters (as the
 * router matched them), its query string and its parsed body.
 *
 * @since 0.3.0
 * @category models
 */
export interface Input {
  readonly headers: IncomingHttpHeaders
  readonly params: Readonly<Record<string, string | undefined>>
  /** The query, without its `?` ("" when there is none). */
  readonly query: string
  /** The body, parsed (undefined for an endpoint without a payload). */
  readonly payload: unknown
}

/**
 * An answer: its status, headers and JSON body; `undefined` for a failure the endpoint does not
 * declare (a defect: logged here, answered 500 by the pipeline).
 *
 * @since 0.3.0
 * @category models
 */
export type Answer = { readonly status: number; readonly headers?: OutgoingHttpHeaders; readonly body: string } | undefined

/**
 * One endpoint's executor.
 *
 * @since 0.3.0
 * @category models
 */
export interface Executor {
  /** `group.endpoint`. */
  readonly name: string
  readonly method: HttpMethod
  readonly path: string
  /** Whether the endpoint takes a body (read and parsed by the pipeline first). */
  readonly payload: boolean
  /** The endpoint's security middleware: `undefined` when it lets the request through, else its 401. */
  readonly authorize: (headers: IncomingHttpHeaders) => Answer
  /**
   * Decodes, handles, encodes; `reply` is called once. An endpoint whose handler answers with
   * the platform's response itself (`handleRaw`: the live feed's event stream) writes it over
   * the Node response, and calls `reply` only for a refusal before its handler runs.
   */
  readonly run: (input: Input, reply: (answer: Answer) => void, node: { readonly request: IncomingMessage; readonly response: ServerResponse }) => void
}

/**
 * Every endpoint's executor, by `group.endpoint`.
 *
 * @since 0.3.0
 * @category services
 */
export class Executors extends Context.Tag("@deixis/http/Executors")<Executors, ReadonlyMap<string, Executor>>() {}

// ---------------------------------------------------------------------------------------------
// Groups of handlers, written as for HttpApiBuilder.group.

/**
 * A handler as the builder records it.
 *
 * @since 0.3.0
 * @category models
 */
export interface Item {
  readonly name: string
  readonly handler: (request: any) => Effect.Effect<unknown, unknown, any>
  /** `handleRaw`: the handler gets the platform request and may answer with a platform response. */
  readonly raw: boolean
}

/**
 * A group's handlers, by endpoint name.
 *
 * @since 0.3.0
 * @category models
 */
export interface Group {
  readonly group: string
  readonly items: ReadonlyArray<Item>
}

const recorder = (items: ReadonlyArray<Item>): unknown => ({
  items,
  handle: (name: string, handler: Item["handler"]) => recorder([...items, { name, handler, raw: false }]),
  handleRaw: (name: string, handler: Item["handler"]) => recorder([...items, { name, handler, raw: true }]),
  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  }
})

/**
 * A group's handlers, built with the same function `HttpApiBuilder.group` takes (so each
 * handler is checked against its endpoint's Schemas), for the executors to run.
 *
 * @since 0.3.0
 * @category constructors
 */
export const group = <
  ApiId extends string,
  Groups extends HttpApiGroup.HttpApiGroup.Any,
  ApiError,
  ApiR,
  const Name extends HttpApiGroup.HttpApiGroup.Name<Groups>,
  Return
>(
  _api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  groupName: Name,
  build: (
    handlers: HttpApiBuilder.Handlers.FromGroup<ApiError, ApiR, HttpApiGroup.HttpApiGroup.WithName<Groups, Name>>
  ) => HttpApiBuilder.Handlers.ValidateReturn<Return>
): Effect.Effect<Group, HttpApiBuilder.Handlers.Error<Return>, HttpApiBuilder.Handlers.Context<Return>> =>
  Effect.suspend(() => {
    const result = build(recorder([]) as never) as unknown
    const handlers = Effect.isEffect(result) ? result : Effect.succeed(result)
    return Effect.map(handlers, (h) => ({ group: groupName, items: (h as { readonly items: ReadonlyArray<Item> }).items }))
  }) as never

// ---------------------------------------------------------------------------------------------
// Response headers a handler sets (the ETag of the conversation state).

const responseHeaders = globalValue(
  Symbol.for("@deixis/http/Executor/responseHeaders"),
  () => FiberRef.unsafeMake<OutgoingHttpHeaders | undefined>(undefined)
)

/**
 * Sets a header on the answer of the handler that runs this (an `ETag`).
 *
 * @since 0.3.0
 * @category handlers
 */
export const setHeader = (name: string, value: string): Effect.Effect<void> =>
  FiberRef.update(responseHeaders, (headers) => ({ ...headers, [name]: value }))

// ---------------------------------------------------------------------------------------------
// Decoding.

interface Part {
  readonly fast: FastDecoder.FastDecoder
  readonly slow: (input: unknown) => Either.Either<unknown, ParseResult.ParseError>
}

const part = (schema: Option.Option<unknown>): Part | undefined => {
  if (Option.isNone(schema)) return undefined
  const s = schema.value as Schema.Schema<unknown, unknown>
  return { fast: FastDecoder.make(s), slow: Schema.decodeUnknownEither(s) }
}

/** The query as HttpServerRequest reads it: one string per key, an array for a repeated key. */
const parseQuery = (query: string): Record<string, string | Array<string>> => {
  const out: Record<string, string | Array<string>> = {}
  if (query === "") return out
  for (const [key, value] of new URLSearchParams(query)) {
    if (key === "__proto__") continue
    const seen = out[key]
    out[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return out
}

/**
 * One issue of a refused request, as `HttpApiDecodeError` carries it.
 *
 * @since 0.3.0
 * @category models
 */
export type Issue = { -readonly [K in keyof ParseResult.ArrayFormatterIssue]: ParseResult.ArrayFormatterIssue[K] }

const quoted = /^Expected ("(?:[^"\\]|\\.)*"|-?\d[\d.e+-]*|true|false|null), actual (.*)$/s

/**
 * The issues of a refused request, one per field: a value outside a set of literals (an enum)
 * is one line naming the field and every allowed value, not one line per literal.
 */
export const issuesOf = (error: ParseResult.ParseError): Array<Issue> => {
  const all = ParseResult.ArrayFormatter.formatErrorSync(error)
  // An optional field's `undefined` member says nothing when the field is there and wrong.
  const within = (outer: ReadonlyArray<PropertyKey>, inner: ReadonlyArray<PropertyKey>) =>
    inner.length >= outer.length && outer.every((key, i) => inner[i] === key)
  const issues = all.filter((issue) =>
    !issue.message.startsWith("Expected undefined, actual") ||
    !all.some((other) => other !== issue && !other.message.startsWith("Expected undefined, actual") && within(issue.path, other.path))
  )
  const out: Array<Issue> = []
  const enums = new Map<string, { issue: Issue; allowed: Array<string>; actual: string; others: Array<string> }>()
  for (const issue of issues) {
    const key = JSON.stringify(issue.path)
    const literal = issue._tag === "Type" ? quoted.exec(issue.message) : null
    const seen = enums.get(key)
    if (literal !== null) {
      if (seen === undefined) {
        const entry = { issue: { ...issue }, allowed: [literal[1]!], actual: literal[2]!, others: [] }
        enums.set(key, entry)
        out.push(entry.issue)
      } else {
        seen.allowed.push(literal[1]!)
      }
      continue
    }
    if (seen !== undefined) {
      if (!issue.message.startsWith("Expected undefined, actual")) seen.others.push(issue.message.replace(/\s+/g, " "))
      continue
    }
    out.push(issue)
  }
  for (const [, entry] of enums) {
    const allowed = entry.allowed.length === 1 ? entry.allowed[0]! : `one of ${entry.allowed.join(", ")}`
    const also = entry.others.length === 0 ? "" : ` (or: ${entry.others.join("; ")})`
    entry.issue.message = `must be ${allowed}${also}; got ${entry.actual}`
  }
  return out
}

const decodeError = (error: ParseResult.ParseError): HttpApiError.HttpApiDecodeError => {
  const issues = issuesOf(error)
  return new HttpApiError.HttpApiDecodeError({
    issues,
    message: issues.map((i) => (i.path.length === 0 ? i.message : `${i.path.map(String).join(".")}: ${i.message}`)).join("\n")
  })
}

const encodeDecodeError = Schema.encodeSync(HttpApiError.HttpApiDecodeError)

// ---------------------------------------------------------------------------------------------
// Security: the endpoint's HttpApi middlewares, their credentials read from the headers.

const bearerScheme = /^bearer /i

const credentialOf = (security: HttpApiSecurity.HttpApiSecurity, headers: IncomingHttpHeaders): unknown => {
  switch (security._tag) {
    case "Bearer": {
      const header = headers["authorization"]
      // What follows `Bearer ` (the scheme in any case, RFC 9110 §11.1), or nothing.
      return Redacted.make(header !== undefined && bearerScheme.test(header) ? header.slice("Bearer ".length) : "")
    }
    case "ApiKey": {
      const value = security.in === "header" ? headers[security.key.toLowerCase()] : undefined
      return Redacted.make(typeof value === "string" ? value : "")
    }
    case "Basic":
      return undefined
  }
}

/**
 * The middlewares' check, as `HttpApiBuilder` applies it: each scheme in turn until one passes.
 * A check that answers with an `Exit` (the usual synchronous one: `Effect.void`, `Effect.fail`)
 * is read as it is; any other effect runs to its end on the executors' runtime.
 */
const securityOf = (
  middleware: ReadonlySet<HttpApiMiddleware.TagClassAny>,
  context: Context.Context<never>,
  runSync: <A, E>(effect: Effect.Effect<A, E>) => Exit.Exit<A, E>
): ((headers: IncomingHttpHeaders) => Exit.Exit<unknown, unknown>) | undefined => {
  const checks: Array<(headers: IncomingHttpHeaders) => Exit.Exit<unknown, unknown>> = []
  for (const tag of middleware) {
    if (!HttpApiMiddleware.isSecurity(tag)) {
      throw new Error(`middleware ${tag.key} is not a security middleware: the executors apply security middlewares only`)
    }
    const implementation = Context.unsafeGet(context, tag as never) as Record<string, (credential: unknown) => Effect.Effect<unknown, unknown>>
    const schemes = Object.entries(tag.security).map(([key, security]) => ({ check: implementation[key]!, security }))
    checks.push((headers) => {
      let last: Exit.Exit<unknown, unknown> = Exit.void
      for (const { check, security } of schemes) {
        const result = check(credentialOf(security, headers))
        last = Exit.isExit(result) ? result : runSync(result)
        if (Exit.isSuccess(last)) return last
      }
      return last
    })
  }
  if (checks.length === 0) return undefined
  return (headers) => {
    for (const check of checks) {
      const exit = check(headers)
      if (Exit.isFailure(exit)) return exit
    }
    return Exit.void
  }
}

// ---------------------------------------------------------------------------------------------
// Encoding.

const json = "application/json"

/** The success Schema's encoder: without validating again where core's compiler knows the Schema. */
const successEncoder = (schema: Schema.Schema<unknown, unknown>): (value: unknown) => unknown => {
  try {
    return Json.trustedEncoder(schema)
  } catch {
    return Schema.encodeSync(schema)
  }
}

const errorEncoders = (errors: ReadonlyMap<number, { readonly ast: Option.Option<AST.AST> }>) =>
  Array.from(errors).flatMap(([status, { ast }]) => {
    if (Option.isNone(ast)) return []
    const schema = Schema.make<unknown, unknown, never>(ast.value)
    return [{ status, is: Schema.is(schema), encode: Schema.encodeSync(schema) }]
  })

/** The raw endpoints' decoded requests, keyed by their Node request, for the platform handler to read. */
const rawInputs = new WeakMap<IncomingMessage, Record<string, unknown>>()

/**
 * Every endpoint's executor, over the groups' handlers, the security middlewares and the
 * services the handlers use.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = <E, R>(groups: Effect.Effect<ReadonlyArray<Group>, E, R>): Layer.Layer<Executors, E, Exclude<R, Scope.Scope>> =>
  Layer.scoped(
    Executors,
    Effect.gen(function*() {
      const built = yield* groups
      const runtime = yield* Effect.runtime<never>()
      const run = Runtime.runCallback(runtime)
      const runSync = Runtime.runSyncExit(runtime)
      const handlers = new Map<string, Item>(built.flatMap((g) => g.items.map((item) => [`${g.group}.${item.name}`, item] as const)))
      const executors = new Map<string, Executor>()
      const raws: Array<{ readonly name: string; readonly build: () => Effect.Effect<void, never, never> }> = []

      HttpApi.reflect(Api, {
        onGroup: () => {},
        onEndpoint: ({ endpoint, errors, group, middleware, successes }) => {
          const name = `${group.identifier}.${endpoint.name}`
          const item = handlers.get(name as never)
          if (item === undefined) throw new Error(`no handler for the endpoint ${name}`)
          const path = part(endpoint.pathSchema)
          const query = part(endpoint.urlParamsSchema)
          const headersPart = part(endpoint.headersSchema)
          const payload = part(endpoint.payloadSchema)
          const [status = 200] = successes.keys()
          const encode = successEncoder(endpoint.successSchema as Schema.Schema<unknown, unknown>)
          const failures = errorEncoders(errors)
          const security = securityOf(middleware, runtime.context, runSync)
          const failure = (error: unknown): Answer => {
            const declared = failures.find((f) => f.is(error))
            return declared === undefined ? undefined : { status: declared.status, body: JSON.stringify(declared.encode(error)) }
          }
          const unauthorized = (cause: Cause.Cause<unknown>): Answer => {
            const error = Cause.failureOption(cause)
            if (Option.isNone(error)) return undefined
            const answer = failure(error.value) ??
              { status: 401, body: JSON.stringify(Schema.encodeSync(Auth.Unauthorized)(new Auth.Unauthorized({ message: "a valid Authorization: Bearer token is required" }))) }
            // RFC 6750 §3.
            return { ...answer, headers: { ...answer.headers, "www-authenticate": "Bearer realm=\"deixis\"" } }
          }
          const authorize = security === undefined
            ? () => undefined
            : (headers: IncomingHttpHeaders): Answer => {
              const exit = security(headers)
              return Exit.isSuccess(exit) ? undefined : unauthorized(exit.cause) ?? { status: 401, body: "{}" }
            }
          // What an executor says of its endpoint, whichever way it runs the handler.
          const described = { name, method: endpoint.method, path: endpoint.path, payload: payload !== undefined, authorize }

          /** The request's parts decoded, or the 400 that says why not. */
          // The parts this endpoint decodes, chosen once, in HttpApiBuilder's order.
          const parts = ([
            ["path", path, (input: Input): unknown => input.params],
            ["payload", payload, (input: Input): unknown => input.payload],
            ["headers", headersPart, (input: Input): unknown => input.headers],
            ["urlParams", query, (input: Input): unknown => parseQuery(input.query)]
          ] as const).flatMap(([key, decoder, value]) => (decoder === undefined ? [] : [{ key, decoder, value }]))
          /** The request's parts decoded, or the 400 that says why not. */
          const decode = (input: Input): { readonly refused: NonNullable<Answer> } | { readonly refused?: undefined; readonly request: Record<string, unknown> } => {
            const request: Record<string, unknown> = {}
            for (const { decoder, key, value } of parts) {
              const raw = value(input)
              const quick = decoder.fast(raw)
              if (quick !== FastDecoder.NO) {
                request[key] = quick
                continue
              }
              const slow = decoder.slow(raw)
              if (Either.isLeft(slow)) return { refused: { status: 400, body: JSON.stringify(encodeDecodeError(decodeError(slow.left))) } }
              request[key] = slow.right
            }
            return { request }
          }

          if (item.raw) {
            // The handler gets the platform's request and answers with a platform response,
            // written by the platform over the Node response.
            let handle: ((request: IncomingMessage, response: ServerResponse) => void) | undefined
            raws.push({
              name,
              build: () =>
                Effect.map(
                  NodeHttpServer.makeHandler(
                    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
                      const decoded = rawInputs.get(NodeHttpServerRequest.toIncomingMessage(request)) ?? {}
                      return (item.handler({ ...decoded, request }) as Effect.Effect<unknown, unknown>).pipe(
                        Effect.flatMap((value) =>
                          HttpServerResponse.isServerResponse(value)
                            ? Effect.succeed(value)
                            : Effect.succeed(HttpServerResponse.text(JSON.stringify(encode(value)), { status, contentType: json }))
                        ),
                        Effect.catchAll((error) => {
                          const answer = failure(error)
                          return answer === undefined
                            ? Effect.die(error)
                            : Effect.succeed(HttpServerResponse.text(answer.body, { status: answer.status, contentType: json }))
                        })
                      )
                    })
                  ) as Effect.Effect<(request: IncomingMessage, response: ServerResponse) => void>,
                  (h) => void (handle = h)
                )
            })
            executors.set(name, {
              ...described,
              run: (input, reply, node) => {
                const decoded = decode(input)
                if (decoded.refused !== undefined) return reply(decoded.refused)
                rawInputs.set(node.request, decoded.request)
                handle!(node.request, node.response)
              }
            })
            return
          }

          const handler = item.handler
          // The handler, then the headers it set (each run is a fiber of its own: they start empty).
          const withHeaders = (request: Record<string, unknown>) =>
            Effect.flatMap(handler(request) as Effect.Effect<unknown, unknown>, (value) =>
              Effect.map(FiberRef.get(responseHeaders), (headers) => [value, headers] as const))
          executors.set(name, {
            ...described,
            run: (input, reply) => {
              const decoded = decode(input)
              if (decoded.refused !== undefined) return reply(decoded.refused)
              // Started at once rather than on the scheduler's next turn: a handler that needs no
              // I/O (the memory store, a warm cache) answers within this call.
              run(withHeaders(decoded.request), {
                immediate: true,
                onExit: (exit) => {
                  if (Exit.isSuccess(exit)) {
                    const [value, headers] = exit.value
                    let body: string
                    try {
                      body = JSON.stringify(encode(value))
                    } catch (error) {
                      // A result the handler should never build (say, an instant past year 275760).
                      run(Effect.logError("request failed: the result does not encode", error))
                      return reply(undefined)
                    }
                    return reply(headers === undefined ? { status, body } : { status, headers, body })
                  }
                  const declared = Option.map(Cause.failureOption(exit.cause), failure)
                  if (Option.isSome(declared) && declared.value !== undefined) return reply(declared.value)
                  run(Effect.logError("request failed", exit.cause))
                  reply(undefined)
                }
              })
            }
          })
        }
      })
      for (const raw of raws) yield* raw.build()
      return executors
    })
  ) as never
