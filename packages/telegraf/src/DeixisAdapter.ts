/**
 * The framework-neutral part of a bot-framework adapter (Telegraf's `DeixisTelegraf`,
 * grammY's `@deixis/grammy`): recording an update through `TelegramRecorder`, the Effect
 * operations on a message's scope, and the `ctx.deixis` operations built from them. It imports
 * no bot framework; an adapter adds how its context sends a reply.
 *
 * @since 0.4.0
 */
import type { ListResult } from "@deixis/core/ActiveContext"
import { ActiveContext, ListRequest } from "@deixis/core/ActiveContext"
import type * as ContextStoreModule from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import type * as Deixis from "@deixis/core/Deixis"
import type { ResolveResult } from "@deixis/core/ReferenceResolver"
import { ReferenceResolver, ResolveRequest } from "@deixis/core/ReferenceResolver"
import type * as HistoryItem from "@deixis/chathistory/HistoryItem"
import * as DeixisServices from "@deixis/chathistory/DeixisServices"
import type * as HistoryStore from "@deixis/chathistory/HistoryStore"
import * as WritePolicy from "@deixis/chathistory/WritePolicy"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Predicate from "effect/Predicate"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as TelegramRecorder from "./TelegramRecorder.js"
import type { MappedUpdate, MessageScope } from "./UpdateMapper.js"
import { mapMessage, mapUpdate } from "./UpdateMapper.js"

/**
 * Everything an adapter uses: core's services, the conversation state, the history store and
 * its write policy.
 *
 * @since 0.4.0
 * @category models
 */
export type Services =
  | Deixis.Services
  | ConversationState.ConversationState
  | ConversationState.ConversationStateStore
  | HistoryStore.HistoryStore
  | WritePolicy.WritePolicy

/**
 * Options of {@link layerWith} and {@link layerMemory}: chathistory's `DeixisServices.Options`
 * (TTL, scoring, conversation state, context loader, write policy).
 *
 * @since 0.4.0
 * @category models
 */
export type LayerOptions = DeixisServices.Options

/**
 * All {@link Services} over the given stores (chathistory's `DeixisServices.Stores`:
 * `DeixisServices.storesMemory`, `SqlStore.layerSqlite` / `layerPg` or `StoreConfig.layer` of
 * `@deixis/store-sql`): chathistory's `DeixisServices.layer`, the composition every entrance uses.
 *
 * @since 0.4.0
 * @category layers
 */
export const layerWith: <E, R>(
  stores: Layer.Layer<DeixisServices.Stores, E, R>,
  options?: LayerOptions
) => Layer.Layer<DeixisServices.Services | DeixisServices.Stores, E, R> = DeixisServices.layer

/**
 * All {@link Services} in memory (lost on restart).
 *
 * @since 0.4.0
 * @category layers
 */
export const layerMemory = (options: LayerOptions = {}): Layer.Layer<DeixisServices.Services | DeixisServices.Stores> =>
  layerWith(DeixisServices.storesMemory, options)

/**
 * Options of {@link record}.
 *
 * @since 0.4.0
 * @category models
 */
export type RecordOptions = TelegramRecorder.RecordOptions

/**
 * What recording one update did.
 *
 * @since 0.4.0
 * @category models
 */
export type RecordResult = TelegramRecorder.RecordResult

/**
 * Records one update through `TelegramRecorder` — the one recording path — never failing:
 * a skipped update is logged at Debug with its reason, a store failure at Warning (and the
 * result says nothing was recorded).
 *
 * @since 0.4.0
 * @category recording
 */
export const record = (update: unknown, options: RecordOptions = {}): Effect.Effect<RecordResult, never, Services> =>
  TelegramRecorder.record(update, options).pipe(
    Effect.catchAll((error) =>
      Effect.as(Effect.logWarning("update not recorded", error), { mapped: mapUpdate(update, options), applied: null, recorded: 0 })
    )
  )

/**
 * The middleware's recording of an update failed in a store (with `onStoreError: "fail"`):
 * nothing of the update was kept, and no later handler ran for it.
 *
 * @since 0.4.0
 * @category errors
 */
export class RecordFailed extends Data.TaggedError("RecordFailed")<{
  readonly update_id: number | null
  readonly cause: ContextStoreModule.StoreError
}> {
  override get message() {
    return `update ${this.update_id ?? "without an id"} not recorded: ${this.cause.message}`
  }
}

/**
 * Records a message the bot sent (the `Message` a send method returned) through
 * `TelegramRecorder.recordSent`: outbound, its poll mapped to the chat, and — given
 * `answering`, or when it replies to a message — that message's `bot_response_id`. Never
 * fails (a store failure is logged).
 *
 * @since 0.4.0
 * @category recording
 */
export const recordSent = (
  message: unknown,
  options: RecordOptions & { readonly botId: string; readonly answering?: MessageScope | undefined }
): Effect.Effect<RecordResult, never, Services> =>
  TelegramRecorder.recordSent(message, options).pipe(
    Effect.catchAll((error) =>
      Effect.as(Effect.logWarning("sent message not recorded", error), { mapped: mapMessage(message, options), applied: null, recorded: 0 })
    )
  )

/**
 * The call has no message to anchor it (a callback query without its message, an update
 * without a chat).
 *
 * @since 0.4.0
 * @category errors
 */
export class NoMessageScope extends Data.TaggedError("NoMessageScope")<{ readonly update_type: string | null }> {
  override get message() {
    return `this ${this.update_type ?? "update"} has no message to resolve from`
  }
}

/**
 * Hints and options of {@link resolve}: the wire form of `resolve_reference_target`'s
 * optional fields.
 *
 * @since 0.4.0
 * @category models
 */
export type ResolveOptions = Partial<
  Pick<
    typeof ResolveRequest.Encoded,
    "normalized_reference_hints" | "allowed_kinds" | "max_candidates" | "raw_user_text" | "request_id" | "record_touch"
  >
>

/**
 * Options of {@link listActive}.
 *
 * @since 0.4.0
 * @category models
 */
export type ListOptions = Partial<
  Pick<typeof ListRequest.Encoded, "allowed_kinds" | "max_results" | "include_inactive_debug" | "request_id">
>

const decodeResolve = Schema.decodeUnknown(ResolveRequest)
const decodeList = Schema.decodeUnknown(ListRequest)

// What both tools' requests take from one message's scope.
const requestScope = (scope: MessageScope) => ({
  chat_id: scope.chat_id,
  topic_id: scope.topic_id,
  current_message_id: scope.message_id,
  reply_to_message_id: scope.reply_to_message_id,
  sender_user_id: scope.sender_user_id
})

/**
 * `resolve_reference_target` from one message's scope (its reply target included).
 *
 * @since 0.4.0
 * @category operations
 */
export const resolve = (scope: MessageScope, options: ResolveOptions = {}) =>
  Effect.flatMap(
    decodeResolve({
      ...options,
      ...requestScope(scope)
    }),
    (request) => Effect.flatMap(ReferenceResolver, (resolver) => resolver.resolve(request))
  )

/**
 * `list_active_context_objects` from one message's scope.
 *
 * @since 0.4.0
 * @category operations
 */
export const listActive = (scope: MessageScope, options: ListOptions = {}) =>
  Effect.flatMap(
    decodeList({
      ...options,
      ...requestScope(scope)
    }),
    (request) => Effect.flatMap(ActiveContext, (active) => active.list(request))
  )

/**
 * The `ctx.deixis` operations every adapter puts on its context; an adapter adds `reply`
 * (its own way to send) and types `recordSent` with its framework's `Message`.
 *
 * @since 0.4.0
 * @category models
 */
export interface Operations {
  /** The mapped update (events, history items, scope, whether it addresses the bot). */
  readonly update: MappedUpdate
  /** The message's scope; its `destination` says where an answer goes on Telegram. */
  readonly scope: MessageScope | undefined
  /** `resolve_reference_target` for this message (hints such as `{ target_kind_hint: "poll" }`). */
  readonly resolve: (options?: ResolveOptions) => Promise<ResolveResult>
  /** `list_active_context_objects` for this message's topic and reply chain. */
  readonly listActive: (options?: ListOptions) => Promise<ListResult>
  /** The topic's history window (mode-driven length), oldest first. */
  readonly history: (options?: { readonly mode?: WritePolicy.GroupMode }) => Promise<ReadonlyArray<HistoryItem.HistoryItem>>
  /** The conversation state of this topic. */
  readonly state: {
    readonly get: () => Promise<ConversationState.ConversationStateSnapshot>
    readonly update: (
      patch: ConversationState.JsonValue,
      options?: { readonly expected_revision?: number }
    ) => Promise<ConversationState.UpdateConversationStateResult>
    readonly render: () => Promise<string>
  }
  /** Records a message the bot sent by other means (a send method's result), as this message's answer. */
  readonly recordSent: (message: unknown) => Promise<RecordResult>
  /** Runs any Effect against the deixis services. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, Services>) => Promise<A>
}

/**
 * The operations of an update already mapped (and recorded).
 *
 * @since 0.4.0
 * @category operations
 */
export const operations = (
  mapped: MappedUpdate,
  options: {
    /** Where the calls run (a `DeixisRuntime`'s `runPromise`, or a runner of the update's own). */
    readonly run: <A, E>(effect: Effect.Effect<A, E, Services>) => Promise<A>
    readonly record: RecordOptions & { readonly botId: string }
  }
): Operations => {
  const { record: recordOptions, run } = options
  const scope = mapped.scope
  const scoped = <A, E>(f: (scope: MessageScope) => Effect.Effect<A, E, Services>) =>
    run<A, E | NoMessageScope>(
      scope === undefined ? Effect.fail(new NoMessageScope({ update_type: mapped.update_type })) : f(scope)
    )
  const conversation = (s: MessageScope) => ({ chat_id: s.chat_id, topic_id: s.topic_id })
  return {
    update: mapped,
    scope,
    resolve: (o) => scoped((s) => resolve(s, o)),
    listActive: (o) => scoped((s) => listActive(s, o)),
    history: (o) =>
      scoped((s) => WritePolicy.history({ chat_id: s.chat_id, topic_id: s.topic_id }, { mode: o?.mode ?? recordOptions.mode })),
    state: {
      get: () => scoped((s) => Effect.flatMap(ConversationState.ConversationState, (st) => st.get(conversation(s)))),
      update: (patch, o) =>
        scoped((s) =>
          Effect.flatMap(ConversationState.ConversationState, (st) =>
            st.update({
              scope: conversation(s),
              patch,
              expected_revision: o?.expected_revision,
              updated_by: s.sender_user_id
            }))
        ),
      render: () => scoped((s) => Effect.flatMap(ConversationState.ConversationState, (st) => st.render(conversation(s))))
    },
    // What the bot sends while handling a message answers it (its bot_response_id).
    recordSent: (message) => run(recordSent(message, { ...recordOptions, answering: scope })),
    run
  }
}

/**
 * Where an adapter runs its Effects: a `ManagedRuntime` built from {@link layerMemory} /
 * {@link layerWith}, or a `Runtime` captured inside an Effect application.
 *
 * @since 0.4.0
 * @category models
 */
export type DeixisRuntime = Runtime.Runtime<Services> | ManagedRuntime.ManagedRuntime<Services, unknown>

/**
 * A runner of Effects as promises on a {@link DeixisRuntime}.
 *
 * @since 0.4.0
 * @category running
 */
export const runnerOf = (runtime: DeixisRuntime) => <A, E>(effect: Effect.Effect<A, E, Services>): Promise<A> =>
  ManagedRuntime.isManagedRuntime(runtime)
    ? (runtime as ManagedRuntime.ManagedRuntime<Services, unknown>).runPromise(effect)
    : Runtime.runPromise(runtime as Runtime.Runtime<Services>)(effect)

/**
 * Options of an adapter's middleware.
 *
 * @since 0.4.0
 * @category models
 */
export interface MiddlewareOptions {
  /** The write-policy mode; the `WritePolicy` default (`DEIXIS_HISTORY_MODE`) when absent. */
  readonly mode?: WritePolicy.GroupMode | undefined
  /**
   * What a store failure while recording the update does:
   *
   * - `"continue"` (the default): it is logged at Warning ("update not recorded") and the next
   *   handler runs — on an update deixis does not hold.
   * - `"fail"`: the middleware rejects with {@link RecordFailed} and the next handler does not
   *   run; the framework's error handler gets it. For a bot that can have the update delivered
   *   again (a webhook, an inbox of updates) and would rather answer late than answer what it
   *   has not recorded.
   */
  readonly onStoreError?: "continue" | "fail" | undefined
}

const updateIdOf = (update: unknown): number | null => {
  const id = Predicate.isRecord(update) ? update["update_id"] : undefined
  return typeof id === "number" && Number.isSafeInteger(id) ? id : null
}

/**
 * What an adapter's middleware does before its next handler: records the update (a store
 * failure logged, or with `onStoreError: "fail"` rejected as {@link RecordFailed}) and returns
 * its operations.
 *
 * @since 0.4.0
 * @category middleware
 */
export const recorder = (runtime: DeixisRuntime, options: MiddlewareOptions = {}) => {
  const run = runnerOf(runtime)
  const failOnStoreError = options.onStoreError === "fail"
  return async (update: unknown, bot: { readonly id: number; readonly username?: string | undefined }): Promise<Operations> => {
    const recordOptions: RecordOptions & { readonly botId: string } = {
      botId: String(bot.id),
      botUsername: bot.username,
      mode: options.mode
    }
    let result: RecordResult
    if (failOnStoreError) {
      // The error itself, not the FiberFailure a failed runPromise rejects with: what the framework's error handler sees.
      const recorded = await run(Effect.either(TelegramRecorder.record(update, recordOptions)))
      if (Either.isLeft(recorded)) throw new RecordFailed({ update_id: updateIdOf(update), cause: recorded.left })
      result = recorded.right
    } else {
      result = await run(record(update, recordOptions))
    }
    return operations(result.mapped, { run, record: recordOptions })
  }
}

/**
 * The keys that keep deixis's order for an update, in the form grammY runner's `sequentialize`
 * takes: its Telegram chat (every update of a chat after the chat's earlier ones, whatever its
 * topic: a reaction or a reply names a message of any topic), and a poll's id for a poll's
 * updates (they carry no chat) and for a message carrying a poll (so its closing waits for it).
 * Undefined for an update that needs no order.
 *
 * @since 0.4.0
 * @category ordering
 */
export const orderKeys = (update: unknown): Array<string> | undefined => {
  if (!Predicate.isRecord(update)) return undefined
  const keys: Array<string> = []
  for (const [field, value] of Object.entries(update)) {
    if (field === "update_id" || !Predicate.isRecord(value)) continue
    const message = field === "callback_query" && Predicate.isRecord(value["message"]) ? value["message"] : value
    const chat = message["chat"]
    if (Predicate.isRecord(chat) && (typeof chat["id"] === "number" || typeof chat["id"] === "string")) keys.push(String(chat["id"]))
    const poll = field === "poll" ? value : field === "poll_answer" ? { id: value["poll_id"] } : message["poll"]
    if (Predicate.isRecord(poll) && typeof poll["id"] === "string") keys.push(`poll:${poll["id"]}`)
  }
  return keys.length === 0 ? undefined : keys
}
