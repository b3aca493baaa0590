/**
 * The HTTP API, v1: one Schema per request and response, from which the server, the typed
 * client and the OpenAPI document all derive. JSON field names are the specs' snake_case.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { ActiveContext, ContextEvent, ConversationState, ContextStore, Ids, ReferenceResolver } from "@deixis/core"
import { HistoryItem } from "@deixis/chathistory"
import * as Schema from "effect/Schema"
import { Authorization, TelegramAuthorization, Unauthorized } from "./Auth.js"

export { Unauthorized }

/** A body over the configured limit. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()(
  "PayloadTooLarge",
  { message: Schema.String, max_bytes: Schema.Number },
  HttpApiSchema.annotations({ status: 413 })
) {}

/** A body that is not what the endpoint takes, named by the failing path. */
export class BadRequest extends Schema.TaggedError<BadRequest>()(
  "BadRequest",
  { path: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
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

export const TelegramResult = Schema.Struct({
  updates: Schema.Number,
  skipped: Schema.Array(Schema.Struct({ index: Schema.Number, reason: Schema.String })),
  events: ContextEvent.ApplyResult,
  history_items: Schema.Number
}).annotations({ identifier: "TelegramIngestResult" })

export const Gap = Schema.Struct({
  ms: Schema.Number,
  previous_message_id: Schema.NullOr(Schema.String),
  previous_sent_at: Ids.Timestamp,
  exceeds_threshold: Schema.Boolean
}).annotations({ identifier: "ConversationGap" })

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

// Authentication is declared per endpoint here: the Telegram route also takes Telegram's
// webhook secret, and a group-level middleware would demand the bearer token of it too.
export class Events extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.post("ingest", "/v1/events")
      .setPayload(ContextEvent.ContextEventBatch)
      .addSuccess(ContextEvent.ApplyResult)
      .middleware(Authorization)
      .annotate(OpenApi.Summary, "Apply a batch of events (at most 1,000), idempotently")
  )
  .add(
    HttpApiEndpoint.post("telegram", "/v1/telegram/updates")
      .setPayload(Schema.Union(TelegramUpdate, Schema.Array(TelegramUpdate).pipe(Schema.maxItems(1000))))
      .addSuccess(TelegramResult)
      .middleware(TelegramAuthorization)
      .annotate(OpenApi.Summary, "Record raw Telegram Bot API updates (one or an array), mapped as the Telegraf adapter maps them")
      .annotate(
        OpenApi.Description,
        "Telegram's setWebhook can point here: with DEIXIS_TELEGRAM_SECRET set, the X-Telegram-Bot-Api-Secret-Token header is accepted in place of the bearer token."
      )
  )
  .addError(ContextStore.StoreError)
{}

export class Tools extends HttpApiGroup.make("tools")
  .add(
    HttpApiEndpoint.post("resolve", "/v1/tools/resolve_reference_target")
      .setPayload(ReferenceResolver.ResolveRequest)
      .addSuccess(ReferenceResolver.ResolveResult)
      .annotate(OpenApi.Summary, "Which object does \"this\" refer to: resolved, ambiguous or not_found")
  )
  .add(
    HttpApiEndpoint.post("list", "/v1/tools/list_active_context_objects")
      .setPayload(ActiveContext.ListRequest)
      .addSuccess(ActiveContext.ListResult)
      .annotate(OpenApi.Summary, "The objects active in this reply chain, topic or chat")
  )
  .middleware(Authorization)
  .addError(ContextStore.StoreError)
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
  )
  .add(
    HttpApiEndpoint.get("getState", "/v1/chats/:chat_id/state")
      .setPath(ChatPath)
      .setUrlParams(Schema.Struct({ topic_id: TopicParam }))
      .addSuccess(ConversationState.ConversationStateSnapshot)
      .annotate(OpenApi.Summary, "The conversation state; its revision is the ETag")
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
      .addError(ConversationState.ConversationStateRejected)
      .addError(ConversationState.ConversationStateTooLarge)
      .addError(ConversationState.InvalidMergePatch)
      .addError(BadRequest)
      .annotate(OpenApi.Summary, "Patch the conversation state; If-Match: \"<revision>\" (or a list of them) or * (the state exists), else 412")
  )
  .middleware(Authorization)
  .addError(ContextStore.StoreError)
{}

export class Api extends HttpApi.make("deixis")
  .add(Events)
  .add(Tools)
  .add(Chats)
  .addError(PayloadTooLarge)
  .annotate(OpenApi.Title, "deixis")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(OpenApi.Description, "Conversational context for chat bots: what \"this\" refers to, what is active, the loaded context and the conversation state.")
{}
