/**
 * The deixis tools, defined once with `@effect/ai`'s `Tool` / `Toolkit`: the parameters are
 * core's and chathistory's Schemas (so the JSON Schema an LLM or an MCP client sees comes from
 * them, objects closed with `additionalProperties: false`), and every tool answers with the
 * one {@link Envelope.Envelope} `{status, summary, error, data}`, cut to the tool's character
 * budget. A failed call fails with an error envelope (so MCP reports `isError`).
 *
 * - `resolve_reference_target` — core's ReferenceResolver;
 * - `list_active_context_objects` — core's ActiveContext;
 * - `get_message_thread_context` — chathistory's ContextLoader: the bounded reply-chain walk
 *   (chain, side replies, which bound cut it) and the history around a message;
 * - `get_conversation_state` / `update_conversation_state` — core's ConversationState;
 * - `record_context_action` — {@link ModelActions}: what the model did (a summary written, a
 *   URL fetched, a media item described) activates the matching object; the rules are stated
 *   once there, for the bot and for MCP agents;
 * - `read_url` — {@link UrlReader}: reads a web page safely (public addresses only, bounded in
 *   time and bytes, readable text cut to a token budget) and, when it could, activates the link
 *   by the same rules (`url_fetched`, the page's title as its label). A refusal or failure is a
 *   `ReadUrlError` envelope naming why; nothing is activated then.
 *
 * Results are sized for models: `resolve_reference_target` returns its scoring diagnostics
 * only when `include_diagnostics` is true, `list_active_context_objects` its inactive
 * objects only when `include_inactive_debug` is.
 *
 * The same toolkit serves a bot's own tool loop ({@link definitions} for an OpenAI-compatible
 * `tools` array, `toolkit` yielded for `handle`) and MCP (`McpServer.toolkit(toolkit)`).
 *
 * @since 0.1.0
 */
import { Tool, Toolkit } from "@effect/ai"
import { defaultsOf } from "@deixis/core/ConfigKeys"
import * as ActiveContext from "@deixis/core/ActiveContext"
import * as ConversationState from "@deixis/core/ConversationState"
import { InvalidRequest } from "@deixis/core/Errors"
import { ChatId, MessageId, OptionalTopicId, UserId } from "@deixis/core/Ids"
import * as ReferenceResolver from "@deixis/core/ReferenceResolver"
import * as ContextLoader from "@deixis/chathistory/ContextLoader"
import * as HistoryRenderer from "@deixis/chathistory/HistoryRenderer"
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import type * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Envelope from "./Envelope.js"
import * as ModelActions from "./ModelActions.js"
import * as UrlReader from "./UrlReader.js"
import { ContextIngest } from "@deixis/core/ContextIngest"
import { ContextStore } from "@deixis/core/ContextStore"

/**
 * The parameters of `get_message_thread_context`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ThreadContextParams = Schema.Struct({
  chat_id: ChatId,
  topic_id: OptionalTopicId,
  message_id: MessageId.annotations({ description: "The message whose thread to load (the current message, or an earlier one)" }),
  reply_to_message_id: Schema.optionalWith(Schema.NullOr(MessageId), { default: () => null }).annotations({
    description: "The message it replies to; looked up in the history when omitted"
  })
}).annotations({ identifier: "GetMessageThreadContextParams" })

/**
 * @since 0.1.0
 * @category models
 */
export type ThreadContextParams = typeof ThreadContextParams.Type

const RenderedItem = Schema.Struct({
  kind: Schema.String,
  time: Schema.String,
  sender: Schema.String,
  text: Schema.String,
  quote: Schema.optional(Schema.String),
  attachments: Schema.optional(Schema.Array(Schema.String)),
  message_id: Schema.optional(Schema.String),
  reply_to_message_id: Schema.optional(Schema.String)
}).annotations({ identifier: "ThreadMessage" })

/**
 * The `data` of `get_message_thread_context`: the message itself (when stored), the history
 * before it (oldest first; the oldest are left out first when over budget), the reply target,
 * the reply-chain report (`truncated_by` names each bound that cut the walk) and the gap note.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ThreadContext = Schema.Struct({
  message: Schema.NullOr(RenderedItem),
  messages: Schema.Array(RenderedItem),
  omitted_older: Schema.NonNegativeInt,
  reply: Schema.Struct({
    target_id: Schema.NullOr(Schema.String),
    status: Schema.Literal("none", "found", "not_found")
  }),
  chain: Schema.NullOr(Schema.Struct({
    message_ids: Schema.Array(Schema.String),
    side_reply_ids: Schema.Array(Schema.String),
    truncated_by: Schema.Array(Schema.Literal("chain_max_messages", "side_replies_per_message", "side_replies_total")),
    missing_parent_id: Schema.NullOr(Schema.String)
  })),
  gap_note: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ThreadContext" })

/**
 * @since 0.1.0
 * @category models
 */
export type ThreadContext = typeof ThreadContext.Type

// The toolkit always records a resolution as a resolver touch (the model does not choose).
const { record_touch: _recordTouch, ...resolveFields } = ReferenceResolver.ResolveRequest.fields
const resolveParameters = {
  ...resolveFields,
  include_diagnostics: Schema.optionalWith(Schema.Boolean, { default: () => false }).annotations({
    description: "Also return the scoring diagnostics (for debugging; they take room)"
  })
}

/**
 * @since 0.1.0
 * @category tools
 */
export const ResolveReferenceTarget = Tool.make("resolve_reference_target", {
  description:
    "Find the object a reference like \"this\", \"the poll\", \"my reminder\" points at, from metadata (reply chain, topic, recency) and normalized hints — never from the words. data.status is resolved (one best_match), ambiguous (candidates to ask about) or not_found, with reason codes. A resolved object counts as touched (it stays active a little longer, within its kind's TTL).",
  parameters: resolveParameters,
  success: Envelope.Envelope,
  failure: Envelope.Envelope
}).annotate(Tool.Readonly, false).annotate(Tool.Idempotent, true).annotate(Tool.Destructive, false)

/**
 * @since 0.1.0
 * @category tools
 */
export const ListActiveContextObjects = Tool.make("list_active_context_objects", {
  description:
    "List the objects currently active in this reply chain, topic or chat (explicitly acted on and within their TTL), best first, with why_active codes. For awareness, not for choosing one target.",
  parameters: ActiveContext.ListRequest.fields,
  success: Envelope.Envelope,
  failure: Envelope.Envelope
}).annotate(Tool.Readonly, true)

/**
 * @since 0.1.0
 * @category tools
 */
export const GetMessageThreadContext = Tool.make("get_message_thread_context", {
  description:
    "Load the conversation around a message: recent history before it, its reply target with the messages around it, and the reply chain above (at most 8 chain messages, 3 side replies per message, 12 in all; chain.truncated_by names the bound that cut the walk). Oldest messages are left out first when the result is long.",
  parameters: ThreadContextParams.fields,
  success: Envelope.Envelope,
  failure: Envelope.Envelope
}).annotate(Tool.Readonly, true)

/**
 * @since 0.1.0
 * @category tools
 */
export const GetConversationState = Tool.make("get_conversation_state", {
  description: ConversationState.tools.get_conversation_state.description,
  parameters: ConversationState.GetConversationStateParams.fields,
  success: Envelope.Envelope,
  failure: Envelope.Envelope
}).annotate(Tool.Readonly, true)

/**
 * @since 0.1.0
 * @category tools
 */
export const UpdateConversationState = Tool.make("update_conversation_state", {
  description: ConversationState.tools.update_conversation_state.description,
  parameters: ConversationState.UpdateConversationStateParams.fields,
  success: Envelope.Envelope,
  failure: Envelope.Envelope
})

/**
 * @since 0.1.0
 * @category tools
 */
export const RecordContextAction = Tool.make("record_context_action", {
  description:
    `Record what you did so follow-ups find it: summary_written (the summary becomes an active summary object), url_fetched (the link is activated), media_inspected / media_described / media_transcribed (the media item is activated). ${ModelActions.rules}`,
  parameters: ModelActions.RecordActionParams.fields,
  success: Envelope.Envelope,
  failure: Envelope.Envelope
}).annotate(Tool.Readonly, false).annotate(Tool.Idempotent, true).annotate(Tool.Destructive, false)

/**
 * The parameters of `read_url`.
 *
 * @since 0.3.0
 * @category schemas
 */
export const ReadUrlParams = Schema.Struct({
  chat_id: ChatId,
  topic_id: OptionalTopicId,
  url: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048)).annotations({ description: "The http or https URL to read" }),
  message_id: Schema.optional(MessageId).annotations({
    description:
      "The message carrying the URL (as resolve_reference_target reports it); when omitted, the replied message if it carries the URL, else the current message"
  }),
  current_message_id: Schema.optional(MessageId).annotations({
    description: "The message you are answering: the same read for the same message activates once"
  }),
  reply_to_message_id: Schema.optional(Schema.NullOr(MessageId)).annotations({ description: "The message the current message replies to" }),
  actor_user_id: Schema.optional(Schema.NullOr(UserId)).annotations({ description: "Whose request it was" })
}).annotations({ identifier: "ReadUrlParams" })

/**
 * @since 0.3.0
 * @category models
 */
export type ReadUrlParams = typeof ReadUrlParams.Type

/**
 * The `data` of a successful `read_url`: the page and the link it activated.
 *
 * @since 0.3.0
 * @category schemas
 */
export const ReadUrlResult = Schema.Struct({
  page: UrlReader.Page,
  activated: ModelActions.RecordActionResult
}).annotations({ identifier: "ReadUrlResult" })

/**
 * @since 0.3.0
 * @category models
 */
export type ReadUrlResult = typeof ReadUrlResult.Type

/**
 * @since 0.3.0
 * @category tools
 */
export const ReadUrl = Tool.make("read_url", {
  description:
    "Read a web page (http or https, public addresses only, at most 1 MiB and 10 s, text/html or text/plain): its title and readable text, cut to a token budget (data.page.cut says what was cut). The link becomes active (url_fetched) so follow-ups find it. A refusal or failure is an error naming why (error.code ReadUrlError, data.reason: forbidden_address, timeout, http_status…); nothing is activated then.",
  parameters: ReadUrlParams.fields,
  success: Envelope.Envelope,
  failure: Envelope.Envelope
}).annotate(Tool.Readonly, false).annotate(Tool.Idempotent, true).annotate(Tool.Destructive, false).annotate(Tool.OpenWorld, true)

/**
 * The seven tools.
 *
 * @since 0.1.0
 * @category tools
 */
export const toolkit = Toolkit.make(
  ResolveReferenceTarget,
  ListActiveContextObjects,
  GetMessageThreadContext,
  GetConversationState,
  UpdateConversationState,
  RecordContextAction,
  ReadUrl
)

/**
 * @since 0.1.0
 * @category models
 */
export type Tools = Toolkit.Tools<typeof toolkit>

/**
 * A tool's name.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolName = keyof Tools

/**
 * The tool names, in the toolkit's order.
 *
 * @since 0.1.0
 * @category constants
 */
export const toolNames: ReadonlyArray<ToolName> = Object.keys(toolkit.tools) as Array<ToolName>

/**
 * A function definition as OpenAI-compatible chat-completions servers take it (the
 * `function` of a `{type: "function"}` entry of `tools`).
 *
 * @since 0.1.0
 * @category models
 */
export interface FunctionDefinition {
  readonly name: ToolName
  readonly description: string
  readonly parameters: JSONSchema.JsonSchema7
}

/**
 * Every tool's name, description and parameters' JSON Schema (from the Schemas).
 *
 * @since 0.1.0
 * @category tools
 */
export const definitions: ReadonlyArray<FunctionDefinition> = toolNames.map((name) => {
  const tool = toolkit.tools[name] as Tool.Any
  return { name, description: tool.description ?? "", parameters: Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast) }
})

/**
 * The character budget of each tool's result (its envelope's JSON).
 *
 * @since 0.1.0
 * @category models
 */
export type Budgets = { readonly [K in ToolName]: number }

/**
 * Per-tool budgets, each read from `DEIXIS_TOOLS_BUDGET_<TOOL NAME IN UPPER CASE>`:
 * `resolve_reference_target` 4000, `list_active_context_objects` 4000,
 * `get_message_thread_context` 8000, `get_conversation_state` 4000,
 * `update_conversation_state` 2000, `record_context_action` 1000, `read_url` 12000 (at least
 * {@link Envelope.MIN_BUDGET}; the page's text is cut to `DEIXIS_FETCH_MAX_TOKENS` first).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Budgets> = Config.all({
  resolve_reference_target: budget("resolve_reference_target", 4000),
  list_active_context_objects: budget("list_active_context_objects", 4000),
  get_message_thread_context: budget("get_message_thread_context", 8000),
  get_conversation_state: budget("get_conversation_state", 4000),
  update_conversation_state: budget("update_conversation_state", 2000),
  record_context_action: budget("record_context_action", 1000),
  read_url: budget("read_url", 12000)
})

function budget(name: ToolName, fallback: number): Config.Config<number> {
  const key = `DEIXIS_TOOLS_BUDGET_${name.toUpperCase()}`
  return Config.integer(key).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${key} must be at least ${Envelope.MIN_BUDGET}`, validation: (n) => n >= Envelope.MIN_BUDGET })
  )
}

/**
 * The default budgets: {@link config} read with no keys set.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBudgets: Budgets = defaultsOf(config)

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly budgets?: Partial<Budgets>
  /**
   * The reader `read_url` uses. Without one: a `UrlReader` service in context, else one over
   * {@link UrlReader.defaults} (`layerConfig`: over `DEIXIS_FETCH_*`).
   */
  readonly reader?: UrlReader.UrlReaderShape
}

/**
 * What the handlers use.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements =
  | ReferenceResolver.ReferenceResolver
  | ActiveContext.ActiveContext
  | ConversationState.ConversationState
  | ContextLoader.ContextLoader
  | HistoryStore.HistoryStore
  | ContextStore
  | ContextIngest

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/**
 * The one-line summaries of the envelopes.
 *
 * @since 0.1.0
 * @category summaries
 */
export const summarize = {
  resolve_reference_target: (r: ReferenceResolver.ResolveResult): string =>
    r.status === "resolved" && r.best_match !== null
      ? `resolved: ${r.best_match.kind} ${r.best_match.object_id}${
        r.best_match.title_or_label === undefined ? "" : ` "${r.best_match.title_or_label}"`
      } (confidence ${r.confidence}, ${r.scope_used})`
      : r.status === "ambiguous"
      ? `ambiguous: ${plural(r.candidates.length, "candidate")} (${r.candidates.map((c) => c.object_id).join(", ")})`
      : `not_found (${r.reasons.join(", ")})`,
  list_active_context_objects: (r: ActiveContext.ListResult): string =>
    `${plural(r.objects.length, "active object")} in ${r.scope_used}${r.truncated ? " (more not shown)" : ""}`,
  get_message_thread_context: (t: ThreadContext): string =>
    [
      `${plural(t.messages.length, "earlier message")}${t.omitted_older > 0 ? ` (${t.omitted_older} older left out)` : ""}`,
      `reply target ${t.reply.status}`,
      t.chain === null
        ? "no reply chain"
        : `reply chain of ${plural(t.chain.message_ids.length, "message")}, ${plural(t.chain.side_reply_ids.length, "side reply")}${
          t.chain.truncated_by.length > 0 ? `, cut by ${t.chain.truncated_by.join(", ")}` : ""
        }`
    ].join("; "),
  get_conversation_state: (s: ConversationState.ConversationStateSnapshot): string =>
    `revision ${s.revision}; ${plural(Object.keys(s.state).length, "top-level key")}`,
  update_conversation_state: (r: ConversationState.UpdateConversationStateResult): string =>
    r.changed ? `updated to revision ${r.revision}` : `unchanged at revision ${r.revision}`,
  record_context_action: (r: ModelActions.RecordActionResult): string =>
    r.pending
      ? "recorded: the answer you send will be the active summary"
      : `recorded: ${r.kind} ${r.object_id} activated (${r.reason})`,
  read_url: (r: ReadUrlResult): string =>
    `read${r.page.title === null ? "" : ` "${r.page.title}"`} from ${new URL(r.page.final_url).host} (${plural(r.page.tokens, "token")}${
      r.page.cut === null && !r.page.truncated_bytes ? "" : ", cut"
    }); ${r.activated.kind} ${r.activated.object_id} activated (${r.activated.reason})`
} as const

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null
const isEnvelope = Schema.is(Envelope.Envelope)

// @effect/ai reports arguments that fail the parameters Schema as a `MalformedOutput` of
// `<tool>.handle`; to a model (or an MCP client) that is a call to correct, so it gets its own code.
const invalidParametersOf = (error: Record<string, unknown>): string | undefined => {
  const method = error["method"]
  return error["_tag"] === "MalformedOutput" && typeof method === "string" && method.endsWith(".handle") &&
      String(error["description"]).startsWith("Failed to decode tool call parameters")
    ? method.slice(0, -".handle".length)
    : undefined
}

/**
 * The error envelope of a failure (a tool's failure, already an envelope, as it is): the error's
 * tag as `code`, its message, and its other fields as `data` (a conflict's `current_revision`, a rejection's `path`). Arguments that do
 * not decode are `InvalidParameters`, naming the tool and the failing path.
 *
 * @since 0.1.0
 * @category envelopes
 */
export const errorEnvelope = (error: unknown): Envelope.Envelope => {
  // A tool's own failure is already its envelope: a second wrapping would hide it as `[object Object]`.
  if (isEnvelope(error)) return error
  if (ParseResult.isParseError(error)) return Envelope.failure("InvalidResult", ParseResult.TreeFormatter.formatErrorSync(error))
  if (isRecord(error)) {
    const tool = invalidParametersOf(error)
    if (tool !== undefined) {
      const detail = ParseResult.isParseError(error["cause"])
        ? ParseResult.TreeFormatter.formatErrorSync(error["cause"])
        : String(error["description"])
      return Envelope.failure("InvalidParameters", `${tool}: the arguments do not match the tool's parameters\n${detail}`, {
        _tag: "InvalidParameters",
        tool
      })
    }
    const code = typeof error["_tag"] === "string" ? error["_tag"] : "Error"
    const message = typeof error["message"] === "string" ? error["message"] : String(error)
    const data: Record<string, unknown> = { _tag: code }
    for (const [key, value] of Object.entries(error)) {
      if (key !== "message" && key !== "stack" && key !== "cause" && key !== "_tag") data[key] = value
    }
    return Envelope.failure(code, message, data)
  }
  return Envelope.failure("Error", String(error))
}

const encodeResolve = Schema.encode(ReferenceResolver.ResolveResult)
const encodeList = Schema.encode(ActiveContext.ListResult)
const encodeSnapshot = Schema.encode(ConversationState.ConversationStateSnapshot)
const encodeUpdate = Schema.encode(ConversationState.UpdateConversationStateResult)

/**
 * The handlers over the real services, each result cut to its budget.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeHandlers = (options: Options = {}) =>
  Effect.gen(function*() {
    const budgets: Budgets = { ...defaultBudgets, ...options.budgets }
    const resolver = yield* ReferenceResolver.ReferenceResolver
    const active = yield* ActiveContext.ActiveContext
    const state = yield* ConversationState.ConversationState
    const loader = yield* ContextLoader.ContextLoader
    const history = yield* HistoryStore.HistoryStore
    const contextStore = yield* ContextStore
    const contextIngest = yield* ContextIngest
    const reader = options.reader ?? Option.getOrElse(yield* Effect.serviceOption(UrlReader.UrlReader), () => UrlReader.make())

    const respond = (name: ToolName) => <E, R>(effect: Effect.Effect<Envelope.Envelope, E, R>) =>
      effect.pipe(
        Effect.mapError((error) => Envelope.fit(errorEnvelope(error), budgets[name])),
        Effect.map((envelope) => Envelope.fit(envelope, budgets[name]))
      )

    const threadContext = (params: ThreadContextParams) =>
      Effect.gen(function*() {
        const scope = { chat_id: params.chat_id, topic_id: params.topic_id }
        const found = yield* history.lookup(scope, params.message_id)
        const item = Option.map(found, (entry) => entry.item)
        const replyTo = params.reply_to_message_id ??
          Option.getOrNull(Option.flatMapNullable(item, (i) => i.reply_to_message_id))
        const loaded = yield* loader.load({
          chat_id: params.chat_id,
          topic_id: params.topic_id,
          message_id: params.message_id,
          reply_to_message_id: replyTo,
          ...Option.match(item, { onNone: () => ({}), onSome: (i) => ({ sent_at: i.sent_at }) })
        })
        const all = loaded.messages.map(HistoryRenderer.renderItem)
        const build = (omitted: number): Envelope.Envelope => {
          const data: ThreadContext = {
            message: Option.match(item, { onNone: () => null, onSome: HistoryRenderer.renderItem }),
            messages: all.slice(omitted),
            omitted_older: omitted,
            reply: loaded.reply,
            chain: loaded.chain,
            gap_note: loaded.gap_note
          }
          return Envelope.ok(summarize.get_message_thread_context(data), data)
        }
        // The newest history matters most: leave out the oldest until the result fits.
        let omitted = 0
        while (omitted < all.length && JSON.stringify(build(omitted)).length > budgets.get_message_thread_context) omitted++
        return build(omitted)
      })

    // read_url: the carrier is checked before anything is fetched, the link activated only after a read.
    const readUrl = (params: ReadUrlParams) =>
      Effect.gen(function*() {
        const chat = params.chat_id
        const replyTo = params.reply_to_message_id ?? null
        const fromReply = params.message_id === undefined && replyTo !== null && (yield* ModelActions.carriesLink(chat, replyTo, params.url))
        const carrier = params.message_id ?? (fromReply ? replyTo! : params.current_message_id)
        if (carrier === undefined) {
          return yield* new InvalidRequest({ path: "message_id", message: "read_url needs the message carrying the URL (message_id) or the current message" })
        }
        if (Option.isNone(yield* contextStore.message(chat, carrier))) {
          return yield* new InvalidRequest({ path: "message_id", message: `no message ${carrier} in chat ${chat}` })
        }
        const page = yield* reader.read(params.url)
        const activated = yield* ModelActions.record({
          chat_id: chat,
          topic_id: params.topic_id,
          action: "url_fetched",
          message_id: carrier,
          url: params.url,
          ...(page.title === null ? {} : { label: page.title.slice(0, 200) }),
          ...(params.current_message_id === undefined ? {} : { current_message_id: params.current_message_id }),
          ...(params.actor_user_id === undefined ? {} : { actor_user_id: params.actor_user_id })
        })
        const result: ReadUrlResult = { page, activated }
        return Envelope.ok(summarize.read_url(result), result)
      }).pipe(Effect.provideService(ContextStore, contextStore), Effect.provideService(ContextIngest, contextIngest))

    return toolkit.of({
      resolve_reference_target: ({ include_diagnostics, ...params }) =>
        resolver.resolve({ ...params, record_touch: true }).pipe(
          Effect.flatMap((result) =>
            Effect.map(encodeResolve(result), (data) => {
              // Diagnostics only when asked for: they spend a model's context on debugging data.
              const { diagnostics: _diagnostics, ...compact } = data
              return Envelope.ok(summarize.resolve_reference_target(result), include_diagnostics ? data : compact)
            })
          ),
          respond("resolve_reference_target")
        ),
      list_active_context_objects: (params) =>
        active.list(params).pipe(
          Effect.flatMap((result) => Effect.map(encodeList(result), (data) => Envelope.ok(summarize.list_active_context_objects(result), data))),
          respond("list_active_context_objects")
        ),
      get_message_thread_context: (params) => threadContext(params).pipe(respond("get_message_thread_context")),
      get_conversation_state: (params) =>
        state.get(params).pipe(
          Effect.flatMap((result) => Effect.map(encodeSnapshot(result), (data) => Envelope.ok(summarize.get_conversation_state(result), data))),
          respond("get_conversation_state")
        ),
      update_conversation_state: (params) =>
        state.update({
          scope: { chat_id: params.chat_id, topic_id: params.topic_id },
          patch: params.patch,
          expected_revision: params.expected_revision,
          updated_by: params.updated_by
        }).pipe(
          Effect.flatMap((result) => Effect.map(encodeUpdate(result), (data) => Envelope.ok(summarize.update_conversation_state(result), data))),
          respond("update_conversation_state")
        ),
      record_context_action: (params) =>
        ModelActions.record(params).pipe(
          Effect.map((result) => Envelope.ok(summarize.record_context_action(result), result)),
          Effect.provideService(ContextStore, contextStore),
          Effect.provideService(ContextIngest, contextIngest),
          respond("record_context_action")
        ),
      read_url: (params) => readUrl(params).pipe(respond("read_url"))
    })
  })

/**
 * The handlers as a layer, budgets given (over the defaults).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Tool.HandlersFor<Tools>, never, Requirements> =>
  toolkit.toLayer(makeHandlers(options))

/**
 * The handlers as a layer, budgets read from {@link config} (explicit ones win).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  options: Options = {}
): Layer.Layer<Tool.HandlersFor<Tools>, ConfigError.ConfigError, Requirements> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const budgets = yield* config
    // A reader given, or one in context, wins over the one `DEIXIS_FETCH_*` configures.
    const reader = options.reader ?? Option.getOrUndefined(yield* Effect.serviceOption(UrlReader.UrlReader)) ??
      UrlReader.make(yield* UrlReader.config)
    return layer({ ...options, budgets: { ...budgets, ...options.budgets }, reader })
  }))
