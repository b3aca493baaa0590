/**
 * What a model does becomes context — the rules, stated once, for a bot's own tool loop and
 * for MCP agents alike (the `record_context_action` tool of the toolkit):
 *
 * - the bot's answers are recorded as bot messages answering the user message (the bot's
 *   recorder does this when it sends them, `bot_response_id`);
 * - a summary the model writes → a `summary` object on the message holding it, created by
 *   the bot, activated `summary_generated` (so "make it shorter" finds it);
 * - a URL the model fetched → the `link` object of the message carrying it, activated
 *   `url_fetched` (created on that message when the URL was not one of its links); the
 *   `read_url` tool records its own successful reads so, the page's title as the label;
 * - a media item the model inspected, described or transcribed → the media object of its
 *   message, activated `media_inspected` / `media_described` / `media_transcribed`;
 * - a successful `resolve_reference_target` → a resolver touch (`resolver_touch`) of what it
 *   found; the toolkit always records it, the model does not choose.
 *
 * Events are idempotent: the same action for the same cause activates once.
 *
 * @since 0.1.0
 */
import * as BotEvents from "@deixis/core/BotEvents"
import type { ActivationReason, ContextObject } from "@deixis/core/ContextObject"
import { objectIdFor } from "@deixis/core/ContextObject"
import type { ObjectActivated } from "@deixis/core/ContextEvent"
import { ContextIngest } from "@deixis/core/ContextIngest"
import { ContextStore, type ContextStoreShape, type StoreError } from "@deixis/core/ContextStore"
import { InvalidRequest } from "@deixis/core/Errors"
import { ChatId, MessageId, OptionalTopicId, UserId } from "@deixis/core/Ids"
import type { ObjectKind } from "@deixis/core/ObjectKind"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * The actions a model reports.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Action = Schema.Literal("summary_written", "url_fetched", "media_inspected", "media_described", "media_transcribed")
  .annotations({ identifier: "ModelAction" })

/**
 * @since 0.1.0
 * @category models
 */
export type Action = typeof Action.Type

/**
 * The activation reason of each action.
 *
 * @since 0.1.0
 * @category rules
 */
export const reasonOf: { readonly [A in Action]: ActivationReason } = {
  summary_written: "summary_generated",
  url_fetched: "url_fetched",
  media_inspected: "media_inspected",
  media_described: "media_described",
  media_transcribed: "media_transcribed"
}

/**
 * The rules as a model reads them (the bot's system prompt; the tool's description on MCP).
 *
 * @since 0.1.0
 * @category rules
 */
export const rules =
  "What you do becomes context for follow-ups: after you write a summary, fetch a URL, or inspect, describe or transcribe a media item, call record_context_action once (summary_written, url_fetched with the url, media_*), naming the message that carries it; successful resolve_reference_target calls and read_url reads are recorded for you."

/**
 * The parameters of `record_context_action`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RecordActionParams = Schema.Struct({
  chat_id: ChatId,
  topic_id: OptionalTopicId,
  action: Action.annotations({ description: "What you did" }),
  message_id: Schema.optional(MessageId).annotations({
    description:
      "The message carrying the URL or media item; for summary_written, the message holding the summary (in a bot's own turn, omit it: the answer you send is the summary)"
  }),
  url: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048))).annotations({
    description: "url_fetched: the URL fetched"
  }),
  label: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))).annotations({
    description: "A short label: what the summary, page or media item is about"
  }),
  current_message_id: Schema.optional(MessageId).annotations({
    description: "The message you are answering: the same action for the same message is recorded once"
  }),
  actor_user_id: Schema.optional(Schema.NullOr(UserId)).annotations({ description: "Whose request it was" })
}).annotations({ identifier: "RecordContextActionParams" })

/**
 * @since 0.1.0
 * @category models
 */
export type RecordActionParams = typeof RecordActionParams.Type

/**
 * What was activated.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RecordActionResult = Schema.Struct({
  action: Action,
  reason: Schema.String,
  object_id: Schema.NullOr(Schema.String),
  kind: Schema.String,
  message_id: Schema.NullOr(Schema.String),
  /** True when the object is the answer still to be sent (a bot's own summary). */
  pending: Schema.Boolean
}).annotations({ identifier: "RecordContextActionResult" })

/**
 * @since 0.1.0
 * @category models
 */
export type RecordActionResult = typeof RecordActionResult.Type

/**
 * Whether the call reports a summary that is the answer still to be sent: a bot records it
 * with {@link answerSummaryEvent} once the answer has a message id.
 *
 * @since 0.1.0
 * @category rules
 */
export const isAnswerSummary = (params: { readonly action?: unknown; readonly message_id?: unknown }): boolean =>
  params.action === "summary_written" && (params.message_id === undefined || params.message_id === null)

/**
 * The result of a summary that is the answer still to be sent.
 *
 * @since 0.1.0
 * @category rules
 */
export const pendingSummary: RecordActionResult = {
  action: "summary_written",
  reason: reasonOf.summary_written,
  object_id: null,
  kind: "summary",
  message_id: null,
  pending: true
}

/**
 * The activation of the bot's answer `message_id` as the summary the model wrote.
 *
 * @since 0.1.0
 * @category rules
 */
export const answerSummaryEvent = (summary: {
  readonly chat_id: string
  readonly topic_id: string | null
  readonly message_id: string
  readonly label?: string | undefined
  readonly actor_user_id?: string | null | undefined
}): ObjectActivated => BotEvents.summaryGenerated(summary)

// Links and media items a message carries, at most (core's event schema caps each at 50): the store's deterministic ids are probed in order.
const MAX_PER_MESSAGE = 50
const mediaKinds: ReadonlyArray<ObjectKind> = ["media.image", "media.video", "media.voice", "media.document", "media.pdf"]

/** The objects of `kinds` a message carries, in their deterministic order. */
const carriedBy = (store: ContextStoreShape, chat: string, messageId: string, kinds: ReadonlyArray<ObjectKind>) =>
  Effect.gen(function*() {
    const found: Array<ContextObject> = []
    for (const kind of kinds) {
      for (let i = 0; i < MAX_PER_MESSAGE; i++) {
        const object = yield* store.object(chat, objectIdFor(chat, messageId, kind, i))
        if (Option.isNone(object)) break
        found.push(object.value)
      }
    }
    return found
  })

/**
 * Whether a message carries `url` as one of its links.
 *
 * @since 0.3.0
 * @category rules
 */
export const carriesLink = (
  chat: string,
  messageId: string,
  url: string
): Effect.Effect<boolean, StoreError, ContextStore> =>
  Effect.flatMap(ContextStore, (store) => Effect.map(carriedBy(store, chat, messageId, ["link"]), (links) => links.some((l) => l.ref === url)))

/**
 * Records an action: checks its target exists (a typed `InvalidRequest` naming the field
 * otherwise, nothing changed) and applies the activation.
 *
 * @since 0.1.0
 * @category operations
 */
export const record = (
  params: RecordActionParams
): Effect.Effect<RecordActionResult, InvalidRequest | StoreError, ContextStore | ContextIngest> =>
  Effect.gen(function*() {
    const store = yield* ContextStore
    const chat = params.chat_id
    const reason = reasonOf[params.action]
    if (params.message_id === undefined) {
      return yield* new InvalidRequest({
        path: "message_id",
        message: params.action === "summary_written"
          ? "summary_written needs the message holding the summary"
          : `${params.action} needs the message carrying the ${params.action === "url_fetched" ? "URL" : "media item"}`
      })
    }
    const messageId = params.message_id
    if (Option.isNone(yield* store.message(chat, messageId))) {
      return yield* new InvalidRequest({ path: "message_id", message: `no message ${messageId} in chat ${chat}` })
    }
    const because = params.current_message_id ?? messageId
    const actor = { chat_id: chat, actor_user_id: params.actor_user_id ?? null }
    const done = (event: ObjectActivated, objectId: string | null, kind: string) =>
      Effect.flatMap(ContextIngest, (ingest) => ingest.apply([event])).pipe(
        // Refused by ingest's own checks: the tool's error, naming what was refused.
        Effect.catchTag("InvalidEvent", (refused) => Effect.fail(new InvalidRequest({ path: refused.path, message: refused.message }))),
        Effect.flatMap((applied) =>
          applied.skipped.length > 0
            ? Effect.fail(new InvalidRequest({ path: applied.skipped[0]!.path, message: applied.skipped[0]!.message }))
            : Effect.succeed({ action: params.action, reason, object_id: objectId, kind, message_id: messageId, pending: false } satisfies RecordActionResult)
        )
      )
    const carried = (kinds: ReadonlyArray<ObjectKind>) => carriedBy(store, chat, messageId, kinds)

    switch (params.action) {
      case "summary_written": {
        const event = BotEvents.summaryGenerated({ ...actor, message_id: messageId, topic_id: params.topic_id, label: params.label })
        return yield* done(event, objectIdFor(chat, messageId, "summary", 0), "summary")
      }
      case "url_fetched": {
        if (params.url === undefined) return yield* new InvalidRequest({ path: "url", message: "url_fetched needs the url fetched" })
        const links = yield* carried(["link"])
        const link = links.find((l) => l.ref === params.url)
        if (link !== undefined) {
          // A label (a fetched page's title) names a link known only by its URL.
          const event = BotEvents.activated(reason, { ...actor, object_id: link.object_id, because_of: because })
          return yield* done(params.label === undefined ? event : { ...event, title_or_label: params.label }, link.object_id, "link")
        }
        if (links.length >= MAX_PER_MESSAGE) {
          return yield* new InvalidRequest({ path: "url", message: `message ${messageId} carries too many links to add ${params.url}` })
        }
        // A URL the message does not carry as a link entity (written out in a code block, say): a link of its own.
        const objectId = objectIdFor(chat, messageId, "link", links.length)
        return yield* done({
          ...BotEvents.activated(reason, { ...actor, object_id: objectId, because_of: because }),
          source_message_id: messageId,
          kind: "link",
          ref: params.url,
          title_or_label: params.label ?? (params.url.length <= 80 ? params.url : `${params.url.slice(0, 79)}…`)
        }, objectId, "link")
      }
      default: {
        const media = yield* carried(mediaKinds)
        const item = media[0]
        if (item === undefined) return yield* new InvalidRequest({ path: "message_id", message: `message ${messageId} carries no media item` })
        return yield* done(BotEvents.activated(reason, { ...actor, object_id: item.object_id, because_of: because }), item.object_id, item.kind)
      }
    }
  })
