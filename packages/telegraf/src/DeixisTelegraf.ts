/**
 * The Telegraf side of deixis: record every update (events into `@deixis/core`, history
 * items into `@deixis/chathistory` by the group's write policy) and put the deixis
 * operations on the context as `ctx.deixis`.
 *
 * The Effect functions ({@link record}, {@link recordSent}, {@link resolve},
 * {@link listActive}) are what the middleware runs; an Effect application uses them
 * directly.
 *
 * @since 0.1.0
 */
import type { ListResult } from "@deixis/core/ActiveContext"
import { ActiveContext, ListRequest } from "@deixis/core/ActiveContext"
import * as ContextStoreModule from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import type * as Deixis from "@deixis/core/Deixis"
import type { ResolveResult } from "@deixis/core/ReferenceResolver"
import { ReferenceResolver, ResolveRequest } from "@deixis/core/ReferenceResolver"
import * as HistoryItem from "@deixis/chathistory/HistoryItem"
import * as DeixisServices from "@deixis/chathistory/DeixisServices"
import type * as HistoryStore from "@deixis/chathistory/HistoryStore"
import * as WritePolicy from "@deixis/chathistory/WritePolicy"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type { Context, MiddlewareFn } from "telegraf"
import type { Message } from "telegraf/types"
import * as TelegramRecorder from "./TelegramRecorder.js"
import type { MappedUpdate, MessageScope } from "./UpdateMapper.js"
import { mapMessage, mapUpdate } from "./UpdateMapper.js"

/**
 * Everything the middleware uses: core's services, the conversation state, the history
 * store and its write policy.
 *
 * @since 0.1.0
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
 * @since 0.1.0
 * @category models
 */
export type LayerOptions = DeixisServices.Options

/**
 * All {@link Services} over the given stores (chathistory's `DeixisServices.Stores`, the one
 * store type: `DeixisServices.storesMemory`, `SqlStore.layerSqlite` / `layerPg` or
 * `StoreConfig.layer` of `@deixis/store-sql`): chathistory's `DeixisServices.layer`, the
 * composition every entrance uses.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith: <E, R>(
  stores: Layer.Layer<DeixisServices.Stores, E, R>,
  options?: LayerOptions
) => Layer.Layer<DeixisServices.Services | DeixisServices.Stores, E, R> = DeixisServices.layer

/**
 * All {@link Services} in memory (lost on restart).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options: LayerOptions = {}): Layer.Layer<DeixisServices.Services | DeixisServices.Stores> =>
  layerWith(DeixisServices.storesMemory, options)

/**
 * Options of {@link record} and the middleware.
 *
 * @since 0.1.0
 * @category models
 */
export type RecordOptions = TelegramRecorder.RecordOptions

/**
 * What recording one update did.
 *
 * @since 0.1.0
 * @category models
 */
export type RecordResult = TelegramRecorder.RecordResult

/**
 * Records one update through `TelegramRecorder` — the one recording path — never failing:
 * a skipped update is logged at Debug with its reason, a store failure at Warning (and the
 * result says nothing was recorded).
 *
 * @since 0.1.0
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
 * @since 0.1.0
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
 * @since 0.1.0
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
 * @since 0.1.0
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
 * @since 0.1.0
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
 * @since 0.1.0
 * @category models
 */
export type ListOptions = Partial<
  Pick<typeof ListRequest.Encoded, "allowed_kinds" | "max_results" | "include_inactive_debug" | "request_id">
>

const decodeResolve = Schema.decodeUnknown(ResolveRequest)
const decodeList = Schema.decodeUnknown(ListRequest)

/**
 * `resolve_reference_target` from one message's scope (its reply target included).
 *
 * @since 0.1.0
 * @category operations
 */
export const resolve = (scope: MessageScope, options: ResolveOptions = {}) =>
  Effect.flatMap(
    decodeResolve({
      ...options,
      chat_id: scope.chat_id,
      topic_id: scope.topic_id,
      current_message_id: scope.message_id,
      reply_to_message_id: scope.reply_to_message_id,
      sender_user_id: scope.sender_user_id
    }),
    (request) => Effect.flatMap(ReferenceResolver, (resolver) => resolver.resolve(request))
  )

/**
 * `list_active_context_objects` from one message's scope.
 *
 * @since 0.1.0
 * @category operations
 */
export const listActive = (scope: MessageScope, options: ListOptions = {}) =>
  Effect.flatMap(
    decodeList({
      ...options,
      chat_id: scope.chat_id,
      topic_id: scope.topic_id,
      current_message_id: scope.message_id,
      reply_to_message_id: scope.reply_to_message_id,
      sender_user_id: scope.sender_user_id
    }),
    (request) => Effect.flatMap(ActiveContext, (active) => active.list(request))
  )

/**
 * What the middleware puts on the context as `ctx.deixis`. Every call rejects with
 * {@link NoMessageScope} when the update carries no message.
 *
 * @since 0.1.0
 * @category models
 */
export interface DeixisApi {
  /** The mapped update (events, history items, scope, whether it addresses the bot). */
  readonly update: MappedUpdate
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
  /** Replies in the same forum topic and records the sent message as this message's answer (`bot_response_id`). */
  readonly reply: (text: string, extra?: Parameters<Context["reply"]>[1]) => Promise<Message.TextMessage>
  /** Records a message the bot sent by other means (`ctx.replyWithPoll(...)`'s result), as this message's answer. */
  readonly recordSent: (message: Message) => Promise<RecordResult>
  /** Runs any Effect against the deixis services. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, Services>) => Promise<A>
}

/**
 * A Telegraf context with `ctx.deixis`: use as `new Telegraf<DeixisContext>(token)`.
 *
 * @since 0.1.0
 * @category models
 */
export interface DeixisContext extends Context {
  deixis: DeixisApi
}

/**
 * Where the middleware runs its Effects: a `ManagedRuntime` built from {@link layerMemory} /
 * {@link layerWith}, or a `Runtime` captured inside an Effect application.
 *
 * @since 0.1.0
 * @category models
 */
export type DeixisRuntime = Runtime.Runtime<Services> | ManagedRuntime.ManagedRuntime<Services, unknown>

const updateIdOf = (update: unknown): number | null => {
  const id = typeof update === "object" && update !== null ? (update as { readonly update_id?: unknown }).update_id : undefined
  return typeof id === "number" && Number.isSafeInteger(id) ? id : null
}

const runnerOf = (runtime: DeixisRuntime) => <A, E>(effect: Effect.Effect<A, E, Services>): Promise<A> =>
  isManaged(runtime) ? runtime.runPromise(effect) : Runtime.runPromise(runtime)(effect)

const isManaged = (runtime: DeixisRuntime): runtime is ManagedRuntime.ManagedRuntime<Services, unknown> =>
  ManagedRuntime.isManagedRuntime(runtime)

/**
 * Options of {@link middleware}.
 *
 * @since 0.1.0
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
   *   run. Telegraf hands the error to `bot.catch` (its default handler rethrows it, so
   *   `handleUpdate` rejects, and `webhookCallback` answers 500, so Telegram delivers the
   *   update again). For a bot that can have the update delivered again — a webhook, an inbox
   *   of updates — and would rather answer late than answer what it has not recorded. Not for
   *   Telegraf's own long polling: a rejected `handleUpdate` stops it.
   */
  readonly onStoreError?: "continue" | "fail" | undefined
}

/**
 * The `ctx.deixis` of an update already mapped (and recorded): what {@link middleware} sets, for
 * an entrance that maps and records updates itself and runs Telegraf's handlers after.
 *
 * @since 0.3.0
 * @category middleware
 */
export const contextApi = (
  ctx: Context,
  mapped: MappedUpdate,
  options: {
    /** Where the calls run (a `DeixisRuntime`'s `runPromise`, or a runner of the update's own). */
    readonly run: <A, E>(effect: Effect.Effect<A, E, Services>) => Promise<A>
    readonly record: RecordOptions & { readonly botId: string }
  }
): DeixisApi => {
  const { record: recordOptions, run } = options
  const scope = mapped.scope
  const scoped = <A, E>(f: (scope: MessageScope) => Effect.Effect<A, E, Services>) =>
    run<A, E | NoMessageScope>(
      scope === undefined ? Effect.fail(new NoMessageScope({ update_type: mapped.update_type })) : f(scope)
    )
  const conversation = (s: MessageScope) => ({ chat_id: s.chat_id, topic_id: s.topic_id })
  // What the bot sends while handling a message answers it (its bot_response_id).
  const recordSentMessage = (message: Message) => run(recordSent(message, { ...recordOptions, answering: scope }))
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
    reply: async (text, extra) => {
      const sent = await ctx.reply(text, extra)
      await recordSentMessage(sent)
      return sent
    },
    recordSent: recordSentMessage,
    run
  }
}

/**
 * The middleware: records the update, sets `ctx.deixis`, then calls the next handler. A store
 * failure while recording is logged and the chain goes on, or with `onStoreError: "fail"` ends
 * it with {@link RecordFailed}. The bot's id and username come from `ctx.botInfo`.
 *
 * @since 0.1.0
 * @category middleware
 */
export const middleware = (
  runtime: DeixisRuntime,
  options: MiddlewareOptions = {}
): MiddlewareFn<DeixisContext> => {
  const run = runnerOf(runtime)
  const failOnStoreError = options.onStoreError === "fail"
  // The error itself, not the FiberFailure a failed runPromise rejects with: what `bot.catch` sees.
  const recordOrThrow = async (update: unknown, recordOptions: RecordOptions): Promise<RecordResult> => {
    const recorded = await run(Effect.either(TelegramRecorder.record(update, recordOptions)))
    if (Either.isLeft(recorded)) throw new RecordFailed({ update_id: updateIdOf(update), cause: recorded.left })
    return recorded.right
  }
  return async (ctx, next) => {
    const recordOptions: RecordOptions & { readonly botId: string } = {
      botId: String(ctx.botInfo.id),
      botUsername: ctx.botInfo.username,
      mode: options.mode
    }
    const result = failOnStoreError ? await recordOrThrow(ctx.update, recordOptions) : await run(record(ctx.update, recordOptions))
    ctx.deixis = contextApi(ctx, result.mapped, { run, record: recordOptions })
    return next()
  }
}
