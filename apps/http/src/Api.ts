/**
 * The HTTP API, v1: one Schema per request and response, from which the server, the typed
 * client and the OpenAPI document all derive. JSON field names are the specs' snake_case.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { ActiveContext, ChatInfo, ContextEvent, ConversationState, ContextStore, Errors, Ids, ReferenceResolver } from "@deixis/core"
import { HistoryItem, WritePolicy } from "@deixis/chathistory"
import * as Schema from "effect/Schema"
import { Authorization, TelegramAuthorization, Unauthorized } from "./Auth.js"
import { version } from "./Version.js"
import * as Availability from "@deixis/store-sql/Availability"

export { Unauthorized }

/** A body over the configured limit. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()(
  "PayloadTooLarge",
  { message: Schema.String, max_bytes: Schema.Number },
  HttpApiSchema.annotations({ status: 413, description: "The body is over DEIXIS_HTTP_MAX_BODY_BYTES" })
) {}

/** A body that is not what the endpoint takes, named by the failing path. */
export class BadRequest extends Schema.TaggedError<BadRequest>()(
  "BadRequest",
  { path: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 400, description: "The request is not what the endpoint takes (named by path)" })
) {}

/** A request refused before its route: a browser's request from another site, or for another host, while the service has no credentials. */
export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "Forbidden",
  { path: Schema.Literal("origin", "host").annotations({ description: "What was refused: the request's origin, or its Host" }), message: Schema.String },
  HttpApiSchema.annotations({ status: 403, description: "Forbidden: without DEIXIS_API_TOKEN, a browser's cross-site request or a foreign Host" })
) {}

/** No route for the request's method and path. */
export class NotFound extends Schema.TaggedError<NotFound>()(
  "NotFound",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 404, description: "No route for this method and path" })
) {}

/** A body that is not JSON by its media type, or is content-coded. */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()(
  "UnsupportedMediaType",
  { header: Schema.Literal("content-type", "content-encoding"), message: Schema.String },
  HttpApiSchema.annotations({ status: 415, description: "The body is not JSON, or is content-coded" })
) {}

/** A transfer coding other than chunked. */
export class NotImplemented extends Schema.TaggedError<NotImplemented>()(
  "NotImplemented",
  { path: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 501, description: "A transfer coding other than chunked" })
) {}

/**
 * The service cannot take the request now (it is stopping, or its store is unavailable): retry
 * after the `Retry-After` header's seconds. Nothing of the request was applied.
 */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()(
  "ServiceUnavailable",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 503, description: "Unavailable for now (stopping, or the store is down): retry after Retry-After seconds" })
) {}

/**
 * The seconds every 503's `Retry-After` header asks a client to wait: the store's own advice
 * (`Availability.retryAfterSeconds`), whether the store is down or the service is stopping.
 *
 * @since 0.3.0
 * @category constants
 */
export const retryAfterSeconds = Availability.retryAfterSeconds

/** A failure nobody declared (logged with its cause, which is never sent). */
export class InternalError extends Schema.TaggedError<InternalError>()(
  "InternalError",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 500, description: "An unexpected failure (logged; the cause is never sent)" })
) {}

/** Too many readers of the live feed at once: try again later. */
export class ServiceBusy extends Schema.TaggedError<ServiceBusy>()(
  "ServiceBusy",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

/**
 * The `If-Match` condition is false (RFC 9110 §13.1.1): `*` on a state never written, or no
 * listed entity tag is the state's current ETag. Nothing was written.
 */
export class PreconditionFailed extends Schema.TaggedError<PreconditionFailed>()(
  "PreconditionFailed",
  { message: Schema.String, if_match: Schema.String, current_revision: ConversationState.Revision },
  HttpApiSchema.annotations({ status: 412 })
) {}

// Path and query parameters are strings on the wire; ids inside are strings too, checked by
// the one id rule every entrance shares (1-128 characters, no control characters).
const ParamId = Ids.IdString
const ChatPath = Schema.Struct({ chat_id: ParamId.annotations({ description: "The chat id" }) })
const TopicParam = Schema.optional(ParamId.annotations({ description: "The forum topic; absent for the topicless scope" }))

/** A Telegram Update; the shared mapper checks every field it reads and skips what it cannot use. */
export const TelegramUpdate = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  identifier: "TelegramUpdate",
  description: "A Telegram Bot API Update object, as Telegram sends it"
})

/** One update, or a batch of them (at most 1,000, counted before any is decoded). */
export const TelegramUpdates = Schema.Union(TelegramUpdate, ContextEvent.lengthCheckedFirst(Schema.Array(TelegramUpdate).pipe(Schema.maxItems(1000))))

export const TelegramResult = Schema.Struct({
  updates: Schema.Number,
  skipped: Schema.Array(Schema.Struct({ index: Schema.Number, reason: Schema.String })),
  events: ContextEvent.ApplyResult,
  history_items: Schema.Number,
  migrations: Schema.optional(Schema.Array(Schema.Struct({
    index: Schema.Number,
    from_chat_id: Ids.ChatId,
    to_chat_id: Ids.ChatId,
    migrated: Schema.Boolean
  })))
}).annotations({ identifier: "TelegramIngestResult" })

/**
 * `resolve_reference_target` over HTTP: the tool's request, plus whether to return the scoring
 * diagnostics — which the spec keeps "for logs only", so an answer carries them only when asked.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ResolveRequest = Schema.Struct({
  ...ReferenceResolver.ResolveRequest.fields,
  include_diagnostics: Schema.optionalWith(Schema.Boolean, { default: () => false }).annotations({
    description: "Also return the scoring diagnostics (for debugging: the answer is several times larger)"
  })
}).annotations({ identifier: "ResolveReferenceTargetRequest" })

/**
 * The tool's result, its `diagnostics` there when the request asked for them.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ResolveResult = Schema.Struct({
  ...ReferenceResolver.ResolveResult.fields,
  diagnostics: Schema.optional(ReferenceResolver.Diagnostics)
}).annotations({ identifier: "ResolveReferenceTargetResult" })

export const Gap = Schema.Struct({
  ms: Schema.Number,
  previous_message_id: Schema.NullOr(Schema.String),
  previous_sent_at: Ids.Timestamp,
  exceeds_threshold: Schema.Boolean
}).annotations({ identifier: "ConversationGap" })

/** A message the bot sent, as the Bot API returned it, and the user message it answers. */
export const TelegramSent = Schema.Struct({
  // The same open JSON object as an Update (one schema component): the shared mapper checks every field it reads.
  message: TelegramUpdate,
  answering_message_id: Schema.optional(Ids.MessageId.annotations({
    description: "The user message this one answers (its bot_response_id is set); the message it replies to when absent"
  }))
}).annotations({
  identifier: "TelegramSentMessage",
  description: "message: the Telegram Bot API Message object a send method returned"
})

export const TelegramSentResult = Schema.Struct({
  skipped: Schema.NullOr(Schema.String),
  events: Schema.NullOr(ContextEvent.ApplyResult),
  history_items: Schema.Number,
  answered: Schema.NullOr(Ids.MessageId)
}).annotations({ identifier: "TelegramSentResult" })

const LoadSource = Schema.Literal("recent", "reply_target", "reply_context", "reply_chain", "side_reply")

export const MessageContextResult = Schema.Struct({
  chat_id: Ids.ChatId,
  topic_id: Schema.NullOr(Ids.TopicId),
  message_id: Ids.MessageId,
  message: Schema.NullOr(HistoryItem.HistoryItem),
  messages: Schema.Array(HistoryItem.HistoryItem),
  sources: Schema.Array(Schema.Array(LoadSource)),
  reply: Schema.Struct({ target_id: Schema.NullOr(Ids.MessageId), status: Schema.Literal("none", "found", "not_found") }),
  chain: Schema.NullOr(Schema.Struct({
    message_ids: Schema.Array(Schema.String),
    side_reply_ids: Schema.Array(Schema.String),
    truncated_by: Schema.Array(Schema.Literal("chain_max_messages", "side_replies_per_message", "side_replies_total")),
    missing_parent_id: Schema.NullOr(Schema.String)
  })),
  gap: Schema.NullOr(Gap),
  gap_note: Schema.NullOr(Schema.String),
  history: Schema.Array(HistoryItem.HistoryItem),
  chat_history_context: Schema.String,
  current_message: Schema.NullOr(Schema.String)
}).annotations({
  identifier: "MessageContext",
  description: "What the bot loads for a message: the context-loading spec's recency window, reply target with the messages around it and its chain (each message's sources), the gap and its note; the write policy's history window before it; both rendered for an LLM."
})


export const ContextResult = Schema.Struct({
  chat_id: Ids.ChatId,
  topic_id: Schema.NullOr(Ids.TopicId),
  message_id: Schema.NullOr(Ids.MessageId),
  messages: Schema.Array(HistoryItem.HistoryItem),
  gap: Schema.NullOr(Gap),
  gap_note: Schema.NullOr(Schema.String),
  chat_history_context: Schema.String
}).annotations({
  identifier: "ConversationContext",
  description: "With message_id: that message's context — what came before it, by position — and the gap before it. Without: the conversation so far, up to and including the newest message. Plus the rendered chat_history_context."
})

// Every group declares its authentication once, for all of its endpoints (an endpoint added
// later cannot be left open): the bearer token, or for the webhook also Telegram's secret.
export class Events extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.post("ingest", "/v1/events")
      .setPayload(ContextEvent.ContextEventBatch)
      .addSuccess(ContextEvent.ApplyResult)
      .annotate(OpenApi.Summary, "Apply a batch of events (at most 1,000), idempotently")
      .annotate(OpenApi.Description, "Applies context events (messages observed or edited, objects activated, polls closed, reminders) in one transaction. Each event's id makes it idempotent: a repeated event is counted as a duplicate and changes nothing.")
  )
  .add(
    HttpApiEndpoint.post("telegramSent", "/v1/telegram/sent")
      .setPayload(TelegramSent)
      .addSuccess(TelegramSentResult)
      .annotate(OpenApi.Summary, "Record a message the bot sent, as the answer to a user message (its bot_response_id)")
      .annotate(OpenApi.Description, "Records a Bot API Message the bot sent (what sendMessage and the other send methods returned) into the history and the context store; answering_message_id links it to the user message it answers.")
  )
  .middleware(Authorization)
  .addError(ContextStore.StoreError, { status: Errors.statusOf(ContextStore.StoreError) })
  // A batch naming a kind the KindRegistry does not know.
  .addError(Errors.InvalidEvent, { status: Errors.statusOf(Errors.InvalidEvent) })
  .annotate(OpenApi.Description, "Writing context: event batches from any bot framework, and the messages the bot sent.")
{}

export class Webhook extends HttpApiGroup.make("webhook")
  .add(
    HttpApiEndpoint.post("telegram", "/v1/telegram/updates")
      .setPayload(TelegramUpdates)
      .addSuccess(TelegramResult)
      .annotate(OpenApi.Summary, "Record raw Telegram Bot API updates (one or an array), mapped as the Telegraf adapter maps them")
      .annotate(
        OpenApi.Description,
        "Telegram's setWebhook can point here: with DEIXIS_TELEGRAM_SECRET set, the X-Telegram-Bot-Api-Secret-Token header is accepted in place of the bearer token."
      )
  )
  .middleware(TelegramAuthorization)
  .addError(ContextStore.StoreError, { status: Errors.statusOf(ContextStore.StoreError) })
  .annotate(OpenApi.Description, "Raw Telegram Bot API updates, recorded as the Telegraf adapter records them; Telegram's setWebhook can point here.")
{}

export class Tools extends HttpApiGroup.make("tools")
  .add(
    HttpApiEndpoint.post("resolve", "/v1/tools/resolve_reference_target")
      .setPayload(ResolveRequest)
      .addSuccess(ResolveResult)
      .annotate(OpenApi.Summary, "Which object does \"this\" refer to: resolved, ambiguous or not_found")
      .annotate(OpenApi.Description, "The resolve_reference_target tool: scores the objects active around the current message (reply target, recency, kind and ownership hints, a quoted span) and answers resolved with the target, ambiguous with the candidates, or not_found.")
  )
  .add(
    HttpApiEndpoint.post("list", "/v1/tools/list_active_context_objects")
      .setPayload(ActiveContext.ListRequest)
      .addSuccess(ActiveContext.ListResult)
      .annotate(OpenApi.Summary, "The objects active in this reply chain, topic or chat")
      .annotate(OpenApi.Description, "The list_active_context_objects tool: the objects active in the reply chain, topic or chat of the current message, best first, at most max_results.")
  )
  .middleware(Authorization)
  .addError(ContextStore.StoreError, { status: Errors.statusOf(ContextStore.StoreError) })
  // A kind or kind hint the KindRegistry does not know.
  .addError(Errors.InvalidRequest, { status: Errors.statusOf(Errors.InvalidRequest) })
  .annotate(OpenApi.Description, "The two tools an LLM calls to find what a message refers to, over HTTP (the same tools are served over MCP at /mcp).")
{}

export class Chats extends HttpApiGroup.make("chats")
  .add(
    HttpApiEndpoint.get("context", "/v1/chats/:chat_id/context")
      .setPath(ChatPath)
      .setUrlParams(Schema.Struct({
        topic_id: TopicParam,
        message_id: Schema.optional(ParamId.annotations({ description: "The message whose context to load; the newest when absent" }))
      }))
      .addSuccess(ContextResult)
      .annotate(OpenApi.Summary, "The loaded conversation context and the rendered chat_history_context")
      .annotate(OpenApi.Description, "The conversation context as the context loader builds it: with message_id, what came before that message and the gap before it; without, the conversation so far. chat_history_context is the rendering an LLM reads.")
  )
  .add(
    HttpApiEndpoint.get("messageContext", "/v1/chats/:chat_id/messages/:message_id/context")
      .setPath(Schema.Struct({ chat_id: ParamId.annotations({ description: "The chat id" }), message_id: ParamId }))
      .setUrlParams(Schema.Struct({
        topic_id: TopicParam,
        mode: Schema.optional(WritePolicy.GroupMode.annotations({ description: "The group mode of the history window; the configured default when absent" }))
      }))
      .addSuccess(MessageContextResult)
      .annotate(OpenApi.Summary, "The context the bot loads for a message: recency window, reply window, chain, gap note, history window")
      .annotate(OpenApi.Description, "Everything the bot loads for one message: the recency window, the reply target and the messages around it, the reply chain with each message's sources, the gap and its note, and the write policy's history window, with both renderings.")
  )
  .add(
    HttpApiEndpoint.get("getState", "/v1/chats/:chat_id/state")
      .setPath(ChatPath)
      .setUrlParams(Schema.Struct({ topic_id: TopicParam }))
      .addSuccess(ConversationState.ConversationStateSnapshot)
      .annotate(OpenApi.Summary, "The conversation state; its revision is the ETag")
      .annotate(OpenApi.Description, "The conversation state of a chat or forum topic: a JSON object the bot keeps between messages. Its revision is sent as the ETag, for a later PATCH's If-Match.")
  )
  .add(
    HttpApiEndpoint.patch("patchState", "/v1/chats/:chat_id/state")
      .setPath(ChatPath)
      .setUrlParams(Schema.Struct({ topic_id: TopicParam }))
      .setHeaders(Schema.Struct({ "if-match": Schema.optional(Schema.String) }))
      .setPayload(ConversationState.JsonObject.annotations({
        description: "An RFC 7386 JSON Merge Patch: objects merge, null deletes a key, arrays replace"
      }))
      .addSuccess(ConversationState.UpdateConversationStateResult)
      .addError(PreconditionFailed)
      .addError(ConversationState.ConversationStateRejected, { status: Errors.statusOf(ConversationState.ConversationStateRejected) })
      .addError(ConversationState.ConversationStateTooLarge, { status: Errors.statusOf(ConversationState.ConversationStateTooLarge) })
      .addError(ConversationState.InvalidMergePatch, { status: Errors.statusOf(ConversationState.InvalidMergePatch) })
      .addError(BadRequest)
      .annotate(OpenApi.Summary, "Patch the conversation state; If-Match: \"<revision>\" (or a list of them) or * (the state exists), else 412")
      .annotate(OpenApi.Description, "Applies an RFC 7386 JSON Merge Patch to the conversation state. With If-Match (one or more ETags, or *), the patch is applied only when the condition holds, else 412 with the current revision.")
  )
  .middleware(Authorization)
  .addError(ContextStore.StoreError, { status: Errors.statusOf(ContextStore.StoreError) })
  .annotate(OpenApi.Description, "Reading a chat: its loaded context, a message's full context, and the conversation state.")
{}

/**
 * One page of the store's chats (the inspector's list): newest message first; `next` is the
 * cursor of the following page (`after`), null on the last.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ChatList = Schema.Struct({
  chats: Schema.Array(ChatInfo.ChatSummary),
  next: Schema.NullOr(ChatInfo.ChatCursorFromString)
}).annotations({ identifier: "ChatList" })

// The inspector's data: authenticated like every group (the page itself is a public static shell).
export class Inspect extends HttpApiGroup.make("inspect")
  .add(
    HttpApiEndpoint.get("chats", "/v1/inspect/chats")
      .setUrlParams(Schema.Struct({
        search: Schema.optional(Schema.String.pipe(Schema.maxLength(ChatInfo.maxTitleLength)).annotations({
          description: "A part of a chat's title (any case) or id"
        })),
        limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, ChatInfo.maxChatPage)).annotations({
          description: "Chats per page (default 50)"
        })),
        after: Schema.optional(ChatInfo.ChatCursorFromString)
      }))
      .addSuccess(ChatList)
      .addError(ContextStore.StoreError, { status: Errors.statusOf(ContextStore.StoreError) })
      .annotate(OpenApi.Summary, "The chats the store holds (title, newest message, counts), newest first, a page at a time; searchable")
      .annotate(OpenApi.Description, "The inspector's chat list: one page of the chats the store holds, newest message first, with titles and counts; search matches a part of a title (any case) or an id.")
  )
  .add(
    HttpApiEndpoint.get("thresholds", "/v1/inspect/thresholds")
      .addSuccess(Schema.Struct({
        min_score: Schema.Number,
        ambiguity_margin: Schema.Number,
        confidence_scale: Schema.Number,
        near_expiry_fraction: Schema.Number,
        weights: Schema.Record({ key: Schema.String, value: Schema.Number })
      }))
      .annotate(OpenApi.Summary, "The resolver's thresholds and feature weights in force (DEIXIS_RESOLVE_*, DEIXIS_SCORE_*)")
      .annotate(OpenApi.Description, "The resolver's thresholds and feature weights in force, as configured by DEIXIS_RESOLVE_* and DEIXIS_SCORE_*.")
  )
  .add(
    HttpApiEndpoint.get("live", "/v1/inspect/live")
      .setUrlParams(Schema.Struct({
        seconds: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(0, 300)).annotations({
          description: "How long the stream stays open (default 60): the reader reconnects"
        }))
      }))
      .addSuccess(Schema.String.annotations({ description: "text/event-stream: one `message` event per message recorded, its JSON {chat_id, topic_id, message_id, source, at}" }))
      .addError(ServiceBusy)
      .annotate(OpenApi.Summary, "Server-sent events: each message this process records, as it is recorded")
      .annotate(OpenApi.Description, "A server-sent event stream of the messages this process records, one message event each, for the inspector's live view. Send Accept: text/event-stream; the stream ends after seconds, and the reader reconnects.")
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "The inspector's data: the chats the store holds, the resolver's settings, and a live feed of recorded messages.")
{}

export class Api extends HttpApi.make("deixis")
  .add(Events)
  .add(Webhook)
  .add(Tools)
  .add(Chats)
  .add(Inspect)
  .addError(PayloadTooLarge)
  .addError(BadRequest)
  .addError(Forbidden)
  .addError(NotFound)
  .addError(UnsupportedMediaType)
  .addError(NotImplemented)
  .addError(ServiceUnavailable)
  .addError(InternalError)
  .annotate(OpenApi.Title, "deixis")
  .annotate(OpenApi.License, { name: "MIT", url: "https://opensource.org/license/mit" })
  .annotate(OpenApi.Version, version)
  .annotate(OpenApi.Description, "Conversational context for chat bots: what \"this\" refers to, what is active, the loaded context and the conversation state.")
{}
