/**
 * The API's handlers: thin over the core services, each error mapped to its HTTP form.
 */
import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { ActiveContext, ContextIngest, ContextStore, ConversationState, ReferenceResolver } from "@deixis/core"
import { ContextLoader, HistoryItem, HistoryRenderer, HistoryStore, WritePolicy } from "@deixis/chathistory"
// The mapper alone: the Telegraf runtime is not needed here.
import * as UpdateMapper from "@deixis/telegraf/UpdateMapper"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api, BadRequest, PreconditionFailed } from "./Api.js"
import * as IfMatch from "./IfMatch.js"

const storeError = (error: { readonly message: string }) => new ContextStore.StoreError({ message: error.message })

/** `ETag: "<revision>"` on the response, without leaving the typed handler. */
const withEtag = (revision: number) =>
  HttpApp.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, "etag", IfMatch.etag(revision)))
  )

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

export const EventsLive = (telegram: TelegramOptions) =>
  HttpApiBuilder.group(Api, "events", (handlers) =>
    Effect.gen(function*() {
      const ingest = yield* ContextIngest.ContextIngest
      const history = yield* HistoryStore.HistoryStore
      const policy = yield* WritePolicy.WritePolicy
      return handlers
        .handle("ingest", ({ payload }) => ingest.apply(payload))
        .handle("telegram", ({ payload }) =>
          Effect.gen(function*() {
            const updates = Array.isArray(payload) ? payload : [payload]
            const mapped = updates.map((update) => UpdateMapper.mapUpdate(update, telegram))
            const skipped = mapped.flatMap((m, index) => (m.skipped === undefined ? [] : [{ index, reason: m.skipped }]))
            // The mapper only emits events the core accepts: a rejection here is a bug, not bad input.
            const events = yield* ingest.ingest(mapped.flatMap((m) => m.events)).pipe(
              Effect.catchTag("InvalidEvent", (error) => Effect.die(error))
            )
            let recorded = 0
            for (const m of mapped) {
              for (const encoded of m.history) {
                const item = yield* Effect.orDie(HistoryItem.decode(encoded))
                const kept = yield* WritePolicy.record(item, { triggered_run: m.addressed }).pipe(
                  Effect.provideService(WritePolicy.WritePolicy, policy),
                  Effect.provideService(HistoryStore.HistoryStore, history)
                )
                if (kept) recorded++
              }
            }
            return { updates: updates.length, skipped, events, history_items: recorded }
          }))
    }))

export const ToolsLive = HttpApiBuilder.group(Api, "tools", (handlers) =>
  Effect.gen(function*() {
    const resolver = yield* ReferenceResolver.ReferenceResolver
    const active = yield* ActiveContext.ActiveContext
    return handlers
      .handle("resolve", ({ payload }) => resolver.resolve(payload))
      .handle("list", ({ payload }) => active.list(payload))
  }))

export const ChatsLive = HttpApiBuilder.group(Api, "chats", (handlers) =>
  Effect.gen(function*() {
    const state = yield* ConversationState.ConversationState
    const history = yield* HistoryStore.HistoryStore
    const loader = yield* ContextLoader.ContextLoader
    return handlers
      .handle("context", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const scope = { chat_id: path.chat_id, topic_id: urlParams.topic_id ?? null }
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
        state.get({ chat_id: path.chat_id, topic_id: urlParams.topic_id ?? null }).pipe(
          Effect.mapError(storeError),
          Effect.tap((snapshot) => withEtag(snapshot.revision))
        ))
      .handle("patchState", ({ headers, path, payload, urlParams }) =>
        Effect.gen(function*() {
          const result = yield* patchState(
            state,
            { scope: { chat_id: path.chat_id, topic_id: urlParams.topic_id ?? null }, patch: payload },
            headers["if-match"]
          )
          yield* withEtag(result.revision)
          return result
        }))
  }))

export const ApiLive = (telegram: TelegramOptions = {}) => Layer.mergeAll(EventsLive(telegram), ToolsLive, ChatsLive)
