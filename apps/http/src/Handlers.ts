/**
 * The API's handlers: thin over the core services, each error mapped to its HTTP form. Written
 * as for `HttpApiBuilder.group` (`Executor.group` takes the same build function), run by the
 * endpoints' executors (`Executor.ts`).
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { ActiveContext, ChatInfo, ContextEvent, ContextIngest, ContextStore, ConversationState, ReferenceResolver, Scoring } from "@deixis/core"
import { ContextLoader, HistoryRenderer, HistoryStore, WritePolicy } from "@deixis/chathistory"
// The one recording path, without the Telegraf runtime.
import * as TelegramRecorder from "@deixis/telegraf/TelegramRecorder"
import * as UpdateMapper from "@deixis/telegraf/UpdateMapper"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Activity from "./Activity.js"
import * as Executor from "./Executor.js"
import { Api, BadRequest, PreconditionFailed, ResolveRequest, ServiceBusy, type TelegramSent, type TelegramUpdates } from "./Api.js"
import * as IfMatch from "./IfMatch.js"

const storeError = (error: { readonly message: string }) => new ContextStore.StoreError({ message: error.message })

/** `ETag: "<revision>"` on the response, without leaving the typed handler. */
const withEtag = (revision: number) => Executor.setHeader("etag", IfMatch.etag(revision))

const storeBusy = () =>
  new ContextStore.StoreError({ message: "conversation state: too many concurrent writers; retry the request" })

/**
 * A merge patch under `If-Match` (see `IfMatch.ts`). `*` holds for good once the state exists
 * (revisions only grow), so it is then written as an unconditional patch. A list of tags is
 * tried against the current revision; when another writer gets in between, the condition is
 * evaluated again on the newer revision — at most once per listed revision, since each retry
 * means the revision grew.
 */
const patchState = (
  state: ConversationState.ConversationStateService,
  request: Omit<ConversationState.UpdateRequest, "expected_revision">,
  header: string | undefined
) =>
  Effect.gen(function*() {
    if (header === undefined) return yield* unconditional(state, request)
    const condition = IfMatch.parse(header)
    if (condition._tag === "Invalid") return yield* new BadRequest({ path: "if-match", message: condition.message })
    const failed = (current: number) =>
      new PreconditionFailed({
        if_match: header,
        current_revision: current,
        message: condition._tag === "Any"
          ? "If-Match: * needs the state to exist, and it was never written"
          : `If-Match names no current ETag: the state is at ${IfMatch.etag(current)}`
      })
    const revisions = IfMatch.revisions(condition)
    for (let attempt = 0; attempt <= (revisions === "any" ? 0 : revisions.length); attempt++) {
      const current = (yield* Effect.mapError(state.get(request.scope), storeError)).revision
      if (!IfMatch.holds(condition, current)) return yield* failed(current)
      if (revisions === "any") return yield* unconditional(state, request)
      const result = yield* state.update({ ...request, expected_revision: current }).pipe(
        Effect.map(Option.some),
        Effect.catchTag("ConversationStateConflict", () => Effect.succeed(Option.none()))
      )
      if (Option.isSome(result)) return result.value
    }
    return yield* failed((yield* Effect.mapError(state.get(request.scope), storeError)).revision)
  }).pipe(Effect.catchTag("ConversationStateStoreError", (error) => Effect.fail(storeError(error))))

// The service retries a patch without a condition internally; a conflict that still comes
// out is a store overwhelmed by writers, never the client's stale revision.
const unconditional = (
  state: ConversationState.ConversationStateService,
  request: Omit<ConversationState.UpdateRequest, "expected_revision">
) => state.update(request).pipe(Effect.catchTag("ConversationStateConflict", () => Effect.fail(storeBusy())))

/** Who the bot is, so the mapper can tell its own messages and what addresses it. */
export interface TelegramOptions {
  readonly botId?: string | undefined
  readonly botUsername?: string | undefined
}

const events = (telegram: TelegramOptions) =>
  Effect.gen(function*() {
    const ingest = yield* ContextIngest.ContextIngest
    return {
      ingest: ({ payload }: { readonly payload: ReadonlyArray<ContextEvent.ContextEvent> }) => applyEvents(ingest, payload),
      telegramSent: ({ payload }: { readonly payload: typeof TelegramSent.Type }) =>
        Effect.gen(function*() {
          const sender = payload.message["from"]
          const fromId = typeof sender === "object" && sender !== null && "id" in sender ? String(sender.id) : undefined
          // The sender of a message the bot sent is the bot.
          const botId = telegram.botId ?? fromId ?? ""
          const mapped = UpdateMapper.mapMessage(payload.message, { ...telegram, botId })
          const answering = payload.answering_message_id === undefined || mapped.scope === undefined
            ? undefined
            : { ...mapped.scope, message_id: payload.answering_message_id, reply_to_message_id: null, sender_user_id: null }
          const result = yield* TelegramRecorder.recordSent(payload.message, { ...telegram, botId, answering })
          const answered = result.mapped.responses?.[0]?.message_id ?? null
          yield* noteScopes("sent", [result.mapped.scope])
          return {
            skipped: result.mapped.skipped ?? null,
            events: result.applied,
            history_items: result.recorded,
            answered
          }
        })
    }
  })

// The recorder's services are the executors' runtime's (the handlers' requirements are the
// layer's, as with HttpApiBuilder): not provided again per request, which copied the context.
const webhook = (telegram: TelegramOptions) =>
  Effect.succeed({
    // The very recorder the Telegraf middleware runs: one recording path.
    telegram: ({ payload }: { readonly payload: typeof TelegramUpdates.Type }) =>
      Effect.gen(function*() {
        const updates = Array.isArray(payload) ? payload : [payload]
        const result = yield* TelegramRecorder.recordBatch(updates, telegram)
        const skipped = result.updates.flatMap((r, index) =>
          r.mapped.skipped === undefined ? [] : [{ index, reason: r.mapped.skipped }]
        )
        const migrations = result.updates.flatMap((r, index) => (r.migrated === undefined ? [] : [{ index, ...r.migrated }]))
        yield* noteScopes("telegram", result.updates.map((r) => r.mapped.scope))
        return {
          updates: updates.length,
          skipped,
          events: result.applied,
          history_items: result.recorded,
          ...(migrations.length === 0 ? {} : { migrations })
        }
      })
  })

// The spec keeps the scoring diagnostics "for logs only": an answer carries them when asked.
const withoutDiagnostics = ({ diagnostics: _, ...result }: ReferenceResolver.ResolveResult) => result

const tools = Effect.gen(function*() {
  const resolver = yield* ReferenceResolver.ReferenceResolver
  const active = yield* ActiveContext.ActiveContext
  return {
    resolve: ({ payload: { include_diagnostics, ...request } }: { readonly payload: typeof ResolveRequest.Type }) =>
      include_diagnostics ? resolver.resolve(request) : Effect.map(resolver.resolve(request), withoutDiagnostics),
    list: ({ payload }: { readonly payload: ActiveContext.ListRequest }) => active.list(payload)
  }
})

export const EventsLive = (telegram: TelegramOptions) =>
  Executor.group(Api, "events", (handlers) =>
    Effect.map(events(telegram), (h) => handlers.handle("ingest", h.ingest).handle("telegramSent", h.telegramSent)))

export const WebhookLive = (telegram: TelegramOptions) =>
  Executor.group(Api, "webhook", (handlers) => Effect.map(webhook(telegram), (h) => handlers.handle("telegram", h.telegram)))

export const ToolsLive = Executor.group(Api, "tools", (handlers) =>
  Effect.map(tools, (h) => handlers.handle("resolve", h.resolve).handle("list", h.list)))

export const ChatsLive = Executor.group(Api, "chats", (handlers) =>
  Effect.gen(function*() {
    const state = yield* ConversationState.ConversationState
    const history = yield* HistoryStore.HistoryStore
    const loader = yield* ContextLoader.ContextLoader
    const store = yield* ContextStore.ContextStore
    const policy = yield* WritePolicy.WritePolicy
    // A request without a topic is the topicless chat, or in a forum its General topic.
    const scopeOf = (chatId: string, topicId: string | undefined) =>
      topicId !== undefined
        ? Effect.succeed({ chat_id: chatId, topic_id: topicId })
        : Effect.map(store.chat(chatId), (info) => ({ chat_id: chatId, topic_id: ChatInfo.effectiveTopic(null, info.is_forum) }))
    return handlers
      .handle("messageContext", ({ path, urlParams }) =>
        Effect.gen(function*() {
          // Core knows every message it saw (the history keeps what the write policy chose): where it is, what it replies to.
          const meta = yield* store.message(path.chat_id, path.message_id)
          const scope = urlParams.topic_id === undefined && Option.isSome(meta)
            ? { chat_id: path.chat_id, topic_id: meta.value.topic_id }
            : yield* scopeOf(path.chat_id, urlParams.topic_id)
          const found = yield* history.lookup(scope, path.message_id)
          const item = Option.filter(Option.map(found, (e) => e.item), (i) => i.message_id === path.message_id)
          const replyTo = Option.isSome(item) ? item.value.reply_to_message_id : Option.match(meta, { onNone: () => null, onSome: (m) => m.reply_to_message_id })
          const sentAt = Option.isSome(item) ? item.value.sent_at : Option.match(meta, { onNone: () => undefined, onSome: (m) => m.sent_at })
          const loaded = yield* loader.load({
            ...scope,
            message_id: path.message_id,
            reply_to_message_id: replyTo,
            ...(sentAt === undefined ? {} : { sent_at: sentAt })
          })
          const window = yield* WritePolicy.history(scope, { mode: urlParams.mode, before: path.message_id }).pipe(
            Effect.provideService(WritePolicy.WritePolicy, policy),
            Effect.provideService(HistoryStore.HistoryStore, history)
          )
          return {
            ...scope,
            message_id: path.message_id,
            message: Option.getOrNull(item),
            messages: loaded.messages,
            sources: loaded.entries.map((e) => e.sources),
            reply: loaded.reply,
            chain: loaded.chain,
            gap: loaded.gap,
            gap_note: loaded.gap_note,
            history: window,
            chat_history_context: HistoryRenderer.renderHistoryContext(loaded.messages),
            current_message: Option.match(item, { onNone: () => null, onSome: HistoryRenderer.renderCurrentMessage })
          }
        }))
      .handle("context", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const scope = yield* scopeOf(path.chat_id, urlParams.topic_id)
          const anchor = urlParams.message_id === undefined
            ? Option.fromNullable((yield* history.recent(scope, 1))[0])
            : yield* history.lookup(scope, urlParams.message_id)
          if (Option.isNone(anchor)) {
            return {
              ...scope,
              message_id: urlParams.message_id ?? null,
              messages: [],
              gap: null,
              gap_note: null,
              chat_history_context: HistoryRenderer.renderHistoryContext([])
            }
          }
          const item = anchor.value.item
          const loaded = yield* loader.load({
            ...scope,
            message_id: item.message_id ?? anchor.value.anchor,
            reply_to_message_id: item.reply_to_message_id,
            sent_at: item.sent_at
          })
          // A message's context is what came before it; without one, the conversation so far.
          const messages = urlParams.message_id === undefined ? [...loaded.messages, item] : loaded.messages
          return {
            ...scope,
            message_id: loaded.message_id,
            messages,
            gap: loaded.gap,
            gap_note: loaded.gap_note,
            chat_history_context: HistoryRenderer.renderHistoryContext(messages)
          }
        }))
      .handle("getState", ({ path, urlParams }) =>
        Effect.flatMap(scopeOf(path.chat_id, urlParams.topic_id), (scope) => state.get(scope)).pipe(
          Effect.mapError(storeError),
          Effect.tap((snapshot) => withEtag(snapshot.revision))
        ))
      .handle("patchState", ({ headers, path, payload, urlParams }) =>
        Effect.gen(function*() {
          const result = yield* patchState(
            state,
            { scope: yield* scopeOf(path.chat_id, urlParams.topic_id), patch: payload },
            headers["if-match"]
          )
          yield* withEtag(result.revision)
          return result
        }))
  }))

const encoder = new TextEncoder()
const sse = (text: string) => encoder.encode(text)

export const InspectLive = Executor.group(Api, "inspect", (handlers) =>
  Effect.gen(function*() {
    const activity = yield* Activity.Activity
    const store = yield* ContextStore.ContextStore
    const { settings } = yield* Scoring.Scoring
    return handlers
      .handle("chats", ({ urlParams }) =>
        store.chats({ search: urlParams.search, limit: urlParams.limit ?? 50, after: urlParams.after }))
      .handle("thresholds", () =>
        Effect.succeed({
          min_score: settings.min_score,
          ambiguity_margin: settings.ambiguity_margin,
          confidence_scale: settings.confidence_scale,
          near_expiry_fraction: settings.near_expiry_fraction,
          weights: settings.weights
        }))
      // A stream of server-sent events, open for `seconds` (the reader reconnects), with a
      // comment every 15 s so proxies keep it open.
      .handleRaw("live", ({ request, urlParams }) =>
        Effect.gen(function*() {
          // An event stream to a client that asked for one (EventSource and the inspector do):
          // any other request is answered at once rather than held open.
          if (!/\btext\/event-stream\b/.test(request.headers["accept"] ?? "")) {
            return HttpServerResponse.unsafeJson(
              { _tag: "NotAcceptable", message: "this is a server-sent event stream: send Accept: text/event-stream" },
              { status: 406 }
            )
          }
          if (!(yield* activity.available)) {
            return yield* new ServiceBusy({ message: `at most ${Activity.limits.readers} live readers at once` })
          }
          const seconds = urlParams.seconds ?? 60
          const events = Stream.unwrapScoped(Effect.map(activity.subscribe, (queue) =>
            // Taken since the check above by another reader: the stream says so and ends.
            queue === undefined
              ? Stream.make(sse("event: busy\ndata: {}\n\n"))
              : Stream.fromQueue(queue).pipe(Stream.map((e) => sse(`event: message\ndata: ${JSON.stringify(e)}\n\n`)))))
          const body = Stream.make(sse(": connected\n\n")).pipe(
            Stream.concat(Stream.merge(events, Stream.tick(Duration.seconds(15)).pipe(Stream.drop(1), Stream.as(sse(": keep-alive\n\n"))))),
            Stream.interruptWhen(Effect.sleep(Duration.seconds(seconds)))
          )
          return HttpServerResponse.stream(body, {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache, no-store", "x-accel-buffering": "no" }
          })
        }))
  }))

/** Notes each message of recorded updates for the inspector. */
const noteScopes = (
  source: Activity.LiveEvent["source"],
  scopes: ReadonlyArray<Pick<UpdateMapper.MessageScope, "chat_id" | "topic_id" | "message_id"> | undefined>
) =>
  Effect.flatMap(Effect.serviceOption(Activity.Activity), (activity) =>
    activity._tag === "None" ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (at) =>
      activity.value.note(scopes.flatMap((s) =>
        s === undefined ? [] : [{ chat_id: s.chat_id, topic_id: s.topic_id, message_id: s.message_id, source, at }]
      ))))

/**
 * `POST /v1/events`: the batch applied, then its messages noted for the inspector's live feed
 * (the route's handler and the fast path both answer with it).
 */
export const applyEvents = (ingest: ContextIngest.ContextIngestShape, payload: ReadonlyArray<ContextEvent.ContextEvent>) =>
  Effect.tap(ingest.apply(payload), () =>
    noteScopes(
      "events",
      payload.flatMap((e) =>
        e.type === "message_observed" || e.type === "message_edited"
          ? [{ chat_id: e.chat_id, topic_id: e.topic_id, message_id: e.message_id }]
          : []
      )
    ))

/**
 * Every group's handlers, for the executors (`Executor.layer`).
 *
 * @since 0.3.0
 * @category handlers
 */
export const handlers = (telegram: TelegramOptions = {}) =>
  Effect.all([EventsLive(telegram), WebhookLive(telegram), ToolsLive, ChatsLive, InspectLive])

/**
 * The executors of every endpoint, over these handlers.
 *
 * @since 0.3.0
 * @category layers
 */
export const ApiLive = (telegram: TelegramOptions = {}) => Executor.layer(handlers(telegram))
