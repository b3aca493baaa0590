/**
 * The JSON-RPC 2.0 edge in front of `@effect/ai`'s McpServer at /mcp. The library speaks MCP
 * revision 2025-06-18 (its latest; it also accepts 2025-03-26, 2024-11-05 and 2024-10-07 at
 * `initialize`), but its HTTP protocol trusts what it is sent: a batch is applied partly and
 * answered once, a body that is not JSON-RPC is a 500 or a 200 with an internal TypeError, an
 * unknown method a -32603 defect, string ids are lost, and bad tool arguments come back as
 * internal dumps. This edge checks every message first and hands the library only well-formed
 * single requests it knows, each as a request of its own; what comes back is answered under
 * the caller's own id, with the library's internal detail dropped.
 *
 * - Not JSON: `-32700 Parse error`, HTTP 400.
 * - JSON but not a JSON-RPC 2.0 message (`{"hello":"world"}`, `42`, `null`, `[]`, no
 *   `jsonrpc: "2.0"`, a method that is not a string, an id that is not a string or an integer —
 *   MCP forbids null ids): `-32600 Invalid Request`, HTTP 400.
 * - A method MCP does not define for clients: `-32601 Method not found`, with the request's id.
 * - Params that do not fit the method: `-32602 Invalid params` naming the failing path.
 * - `tools/call` of an unknown tool: `-32602`; arguments that do not fit the tool's parameters:
 *   a tool error (`isError: true`) whose envelope (`InvalidParameters`) names the failing path.
 * - A notification (no id) or a response: HTTP 202, no body. The client notifications MCP
 *   defines (`initialized`, `cancelled`, `progress`, `roots/list_changed`) have no effect on a
 *   server that keeps no session between requests.
 * - A batch: refused as a whole (HTTP 400, `-32600`, nothing applied) under
 *   `MCP-Protocol-Version: 2025-06-18`, which removed batches; under the earlier revisions
 *   (or without the header, which the transport says means 2025-03-26) each member is checked
 *   and answered in order, up to {@link maxBatch} members (more: refused whole).
 * - An `MCP-Protocol-Version` the server does not speak: HTTP 400.
 * - `GET` and `DELETE` /mcp: 405 — there is no server-sent event stream and no session.
 *
 * The pipeline reads and parses the body once and hands the value here (`McpEdge.handle`). A
 * request is run to its end even when its client goes away: two tools write, and an accepted
 * write finishes, as on the HTTP routes.
 */
import * as McpSchema from "@effect/ai/McpSchema"
import type * as RpcMessage from "@effect/rpc/RpcMessage"
import * as RpcServer from "@effect/rpc/RpcServer"
import { DeixisToolkit, Envelope } from "@deixis/tools"
import type * as Tool from "@effect/ai/Tool"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { IncomingHttpHeaders } from "node:http"

/** The revision the library answers `initialize` with when the client's is not one it knows. */
export const LATEST_PROTOCOL_VERSION = "2025-06-18"

/** The revisions the library accepts at `initialize` (`@effect/ai` 0.37's list). */
export const PROTOCOL_VERSIONS: ReadonlyArray<string> = [LATEST_PROTOCOL_VERSION, "2025-03-26", "2024-11-05", "2024-10-07"]

// 2025-06-18 removed JSON-RPC batching; the earlier revisions have it.
const batchingRevisions = new Set(["2025-03-26", "2024-11-05", "2024-10-07"])

/** The most members a batch may have; a longer one is refused whole, nothing applied. */
export const maxBatch = 256

/** JSON-RPC 2.0 error codes. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603
} as const

type Id = string | number

interface JsonRpcError {
  readonly jsonrpc: "2.0"
  readonly id: Id | null
  readonly error: { readonly code: number; readonly message: string; readonly data?: unknown }
}

interface JsonRpcResult {
  readonly jsonrpc: "2.0"
  readonly id: Id
  readonly result: unknown
}

type JsonRpcResponse = JsonRpcError | JsonRpcResult

/** One message of a body, checked. */
export type Checked =
  | { readonly _tag: "Request"; readonly id: Id; readonly method: string; readonly params: unknown }
  | { readonly _tag: "Notification"; readonly method: string }
  | { readonly _tag: "Response" }
  | { readonly _tag: "Invalid"; readonly id: Id | null; readonly message: string }


const isId = (u: unknown): u is Id => typeof u === "string" || (typeof u === "number" && Number.isSafeInteger(u))

/** Checks one JSON value against JSON-RPC 2.0 as MCP narrows it (ids are strings or integers). */
export const check = (message: unknown): Checked => {
  if (!Predicate.isRecord(message)) return { _tag: "Invalid", id: null, message: "a JSON-RPC message must be a JSON object" }
  const id = Object.hasOwn(message, "id") && isId(message["id"]) ? message["id"] : null
  const invalid = (why: string): Checked => ({ _tag: "Invalid", id, message: why })
  if (message["jsonrpc"] !== "2.0") return invalid("\"jsonrpc\" must be \"2.0\"")
  if (!Object.hasOwn(message, "method")) {
    // A response to a request of the server's: accepted, though this server sends none.
    const answered = Object.hasOwn(message, "result") !== Object.hasOwn(message, "error")
    return answered && Object.hasOwn(message, "id") ? { _tag: "Response" } : invalid("a request needs a \"method\"")
  }
  const method = message["method"]
  if (typeof method !== "string" || method.length === 0) return invalid("\"method\" must be a non-empty string")
  const params = message["params"]
  if (params !== undefined && (typeof params !== "object" || params === null)) {
    return invalid("\"params\" must be an object")
  }
  if (!Object.hasOwn(message, "id")) return { _tag: "Notification", method }
  if (!isId(message["id"])) return invalid("\"id\" must be a string or an integer (MCP forbids null)")
  return { _tag: "Request", id: message["id"], method, params }
}

const failure = (id: Id | null, code: number, message: string, data?: unknown): JsonRpcError => ({
  jsonrpc: "2.0",
  id,
  error: data === undefined ? { code, message } : { code, message, data }
})

/**
 * What the edge answers: a status and a JSON body (none for 202).
 *
 * @since 0.3.0
 * @category models
 */
export interface Answer {
  readonly status: number
  readonly body?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

const json = (body: unknown, status = 200): Answer => ({ status, body: JSON.stringify(body) })

const accepted: Answer = { status: 202 }

/**
 * The body as the pipeline read it: its parsed JSON value, or not JSON at all.
 *
 * @since 0.3.0
 * @category models
 */
export type Body = { readonly _tag: "Json"; readonly value: unknown } | { readonly _tag: "NotJson" }

/**
 * @since 0.3.0
 * @category models
 */
export interface McpEdgeShape {
  /** A POST's answer, from its parsed body and its headers. */
  readonly handle: (body: Body, headers: IncomingHttpHeaders) => Effect.Effect<Answer>
}

/**
 * The JSON-RPC edge, for the pipeline to call.
 *
 * @since 0.3.0
 * @category services
 */
export class McpEdge extends Context.Tag("@deixis/http/McpEdge")<McpEdge, McpEdgeShape>() {}

/** A method name as it may appear in a message: short, and safe in a log line. */
const shown = (method: string): string => JSON.stringify(method.length > 64 ? `${method.slice(0, 64)}…` : method)

const firstIssue = (error: ParseResult.ParseError): { readonly path: string; readonly message: string } => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  const path = (issue?.path ?? []).map((key, i) => (typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join("")
  return { path: path === "" ? "$" : path, message: issue?.message ?? "invalid" }
}

const requests = McpSchema.ClientRequestRpcs.requests as ReadonlyMap<string, { readonly payloadSchema: Schema.Schema.Any }>
const decoders = new Map(
  Array.from(requests, ([method, rpc]) => [method, Schema.decodeUnknownEither(rpc.payloadSchema as Schema.Schema<unknown, unknown>)] as const)
)
const notifications = new Set(McpSchema.ClientNotificationRpcs.requests.keys())

const tools = DeixisToolkit.toolkit.tools as Record<string, Tool.Any>
const toolDecoders = new Map(
  // Closed objects, as the tools' JSON Schemas say (`additionalProperties: false`): a misspelt
  // argument is an error to correct, not a value silently dropped.
  Object.entries(tools).map((
    [name, tool]
  ) => [name, Schema.decodeUnknownEither(tool.parametersSchema as Schema.Schema<unknown, unknown>, { onExcessProperty: "error" })] as const)
)

/** The tool result of arguments that do not fit a tool: the envelope every deixis tool fails with. */
const invalidArguments = (tool: string, issue: { readonly path: string; readonly message: string }) => {
  const envelope = Envelope.fit(
    Envelope.failure("InvalidParameters", `${tool}: ${issue.path}: ${issue.message}`, {
      _tag: "InvalidParameters",
      tool,
      path: issue.path
    }),
    DeixisToolkit.defaultBudgets[tool as DeixisToolkit.ToolName] ?? Envelope.MIN_BUDGET
  )
  return { isError: true, structuredContent: envelope, content: [{ type: "text", text: JSON.stringify(envelope) }] }
}

// The library's own error codes are the standard ones; anything else (its defects, code 0) is
// an internal error whose detail stays inside.
const standardCodes: ReadonlySet<number> = new Set(Object.values(ErrorCode))

/**
 * The edge over the library's HTTP app: each request answered under its own id.
 */
/**
 * The library's RPC protocol, fed directly with decoded messages: no HTTP request, no text, no
 * second parse. One call is one client, as the library's own HTTP protocol makes one per POST:
 * its request, its end of input, and the responses the server sends until it ends the client.
 */
const makeDirectProtocol = Effect.gen(function*() {
  const disconnects = yield* Mailbox.make<number>()
  let writeRequest!: (clientId: number, message: RpcMessage.FromClientEncoded) => Effect.Effect<void>
  let nextClient = 0
  const clients = new Map<number, Mailbox.Mailbox<RpcMessage.FromServerEncoded>>()

  const protocol = yield* RpcServer.Protocol.make((write) => {
    writeRequest = write
    return Effect.succeed({
      disconnects,
      send: (clientId, response) => {
        const mailbox = clients.get(clientId)
        return mailbox === undefined ? Effect.void : Effect.asVoid(mailbox.offer(response))
      },
      end: (clientId) => {
        const mailbox = clients.get(clientId)
        return mailbox === undefined ? Effect.void : Effect.asVoid(mailbox.end)
      },
      clientIds: Effect.sync(() => new Set(clients.keys())),
      initialMessage: Effect.succeedNone,
      supportsAck: false,
      supportsTransferables: false,
      supportsSpanPropagation: false
    })
  })

  /** One request to the server, and every response it sent for it. */
  const call = (method: string, params: unknown): Effect.Effect<ReadonlyArray<RpcMessage.FromServerEncoded>> =>
    Effect.acquireUseRelease(
      Effect.map(Mailbox.make<RpcMessage.FromServerEncoded>(), (mailbox) => {
        const id = nextClient++
        clients.set(id, mailbox)
        return { id, mailbox }
      }),
      ({ id, mailbox }) =>
        Effect.gen(function*() {
          yield* writeRequest(id, { _tag: "Request", id: "1", tag: method, payload: params, headers: [] } as RpcMessage.FromClientEncoded)
          yield* writeRequest(id, { _tag: "Eof" })
          const responses: Array<RpcMessage.FromServerEncoded> = []
          while (true) {
            const [items, done] = yield* mailbox.takeAll
            for (const item of items) responses.push(item)
            if (done) return responses
          }
        }),
      ({ id }) =>
        Effect.sync(() => {
          clients.delete(id)
          disconnects.unsafeOffer(id)
        })
    )
  return { protocol, call } as const
})

const makeEdge = (call: (method: string, params: unknown) => Effect.Effect<ReadonlyArray<RpcMessage.FromServerEncoded>>) => {
  // One request to the library, answered under the caller's id: its result, or its error's
  // standard code and message (anything else is an internal error whose detail stays inside).
  const forward = (request: { readonly id: Id; readonly method: string; readonly params: unknown }) =>
    Effect.gen(function*() {
      const responses = yield* call(request.method, request.params)
      const exit = responses.find((r): r is Extract<RpcMessage.FromServerEncoded, { readonly _tag: "Exit" }> => r._tag === "Exit")
      if (exit === undefined) return failure(request.id, ErrorCode.InternalError, "Internal error")
      if (exit.exit._tag === "Success") {
        const result: JsonRpcResult = { jsonrpc: "2.0", id: request.id, result: exit.exit.value }
        return result
      }
      const cause = exit.exit.cause
      const error = cause._tag === "Fail" && Predicate.isRecord(cause.error) ? cause.error : undefined
      const code = error !== undefined && typeof error["code"] === "number" && standardCodes.has(error["code"]) ? error["code"] : ErrorCode.InternalError
      const message = code !== ErrorCode.InternalError && typeof error?.["message"] === "string" ? error["message"] : "Internal error"
      return failure(request.id, code, message)
    }).pipe(
      Effect.catchAllDefect(() => Effect.succeed(failure(request.id, ErrorCode.InternalError, "Internal error")))
    )

  const execute = (request: { readonly id: Id; readonly method: string; readonly params: unknown }): Effect.Effect<JsonRpcResponse> => {
    const decode = decoders.get(request.method)
    if (decode === undefined) {
      return Effect.succeed(failure(request.id, ErrorCode.MethodNotFound, `Method not found: ${shown(request.method)}`))
    }
    // MCP makes `arguments` of tools/call optional; the library's Schema wants it.
    const params = request.method === "tools/call" && Predicate.isRecord(request.params) && request.params["arguments"] === undefined
      ? { ...request.params, arguments: {} }
      : request.params ?? {}
    const decoded = decode(params)
    if (decoded._tag === "Left") {
      const issue = firstIssue(decoded.left)
      return Effect.succeed(
        failure(request.id, ErrorCode.InvalidParams, `Invalid params: ${issue.path}: ${issue.message}`, issue)
      )
    }
    if (request.method === "tools/call" && Predicate.isRecord(params)) {
      const name = String(params["name"])
      const decodeArguments = toolDecoders.get(name)
      if (decodeArguments === undefined) {
        return Effect.succeed(failure(request.id, ErrorCode.InvalidParams, `Unknown tool: ${shown(name)}`, { name }))
      }
      const args = decodeArguments(params["arguments"])
      if (args._tag === "Left") {
        return Effect.succeed({ jsonrpc: "2.0", id: request.id, result: invalidArguments(name, firstIssue(args.left)) })
      }
    }
    return forward({ ...request, params })
  }

  return (parsed: Body, headers: IncomingHttpHeaders): Effect.Effect<Answer> => Effect.gen(function*() {
    const header = headers["mcp-protocol-version"]
    const version = Array.isArray(header) ? header.join(", ") : header
    if (version !== undefined && !PROTOCOL_VERSIONS.includes(version)) {
      return json(
        failure(null, ErrorCode.InvalidRequest, `Unsupported MCP-Protocol-Version ${shown(version)}; supported: ${PROTOCOL_VERSIONS.join(", ")}`),
        400
      )
    }
    // The pipeline has read the body under its limit (a 413 past it) and parsed it, as for every route.
    if (parsed._tag === "NotJson") return json(failure(null, ErrorCode.ParseError, "Parse error: the body is not JSON"), 400)
    const body = parsed.value

    if (!Array.isArray(body)) {
      const checked = check(body)
      switch (checked._tag) {
        case "Invalid":
          return json(failure(checked.id, ErrorCode.InvalidRequest, `Invalid Request: ${checked.message}`), 400)
        case "Notification":
          return notifications.has(checked.method)
            ? accepted
            : requests.has(checked.method)
            ? json(failure(null, ErrorCode.InvalidRequest, `Invalid Request: ${shown(checked.method)} is a request and needs an "id"`), 400)
            : json(failure(null, ErrorCode.MethodNotFound, `Method not found: ${shown(checked.method)}`), 400)
        case "Response":
          return accepted
        case "Request":
          return json(yield* execute(checked))
      }
    }

    // A batch.
    if (body.length === 0) return json(failure(null, ErrorCode.InvalidRequest, "Invalid Request: an empty batch"), 400)
    const revision = version ?? "2025-03-26"
    if (!batchingRevisions.has(revision)) {
      return json(
        failure(null, ErrorCode.InvalidRequest, `Invalid Request: MCP ${revision} has no JSON-RPC batches; send one message per request`),
        400
      )
    }
    if (body.length > maxBatch) {
      return json(failure(null, ErrorCode.InvalidRequest, `Invalid Request: a batch holds at most ${maxBatch} messages`), 400)
    }
    const answers: Array<JsonRpcResponse> = []
    for (const member of body) {
      const checked = check(member)
      if (checked._tag === "Invalid") {
        answers.push(failure(checked.id, ErrorCode.InvalidRequest, `Invalid Request: ${checked.message}`))
      } else if (checked._tag === "Request") {
        answers.push(
          checked.method === "initialize"
            ? failure(checked.id, ErrorCode.InvalidRequest, "Invalid Request: initialize must not be part of a batch")
            : yield* execute(checked)
        )
      }
    }
    // Only notifications and responses: nothing to answer.
    return answers.length === 0 ? accepted : json(answers)
  })
}

/**
 * `GET` and `DELETE` /mcp: no event stream, no session.
 *
 * @since 0.3.0
 * @category answers
 */
export const methodNotAllowed: Answer = {
  status: 405,
  body: JSON.stringify(failure(null, ErrorCode.InvalidRequest, "Invalid Request: /mcp takes POST (no event stream, no session)")),
  headers: { allow: "POST" }
}

/**
 * The library's RPC protocol, fed only by the edge, and the edge itself.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer: Layer.Layer<RpcServer.Protocol | McpEdge> = Layer.scopedContext(
  Effect.map(makeDirectProtocol, ({ call, protocol }) =>
    Context.make(RpcServer.Protocol, protocol).pipe(Context.add(McpEdge, { handle: makeEdge(call) })))
)
