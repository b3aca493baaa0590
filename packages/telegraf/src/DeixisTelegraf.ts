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
import type * as Effect from "effect/Effect"
import type { Context, MiddlewareFn } from "telegraf"
import type { Message } from "telegraf/types"
import * as DeixisAdapter from "./DeixisAdapter.js"
import type { MappedUpdate } from "./UpdateMapper.js"

/**
 * Everything the middleware uses: core's services, the conversation state, the history
 * store and its write policy.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = DeixisAdapter.Services

/**
 * Options of {@link layerWith} and {@link layerMemory}.
 *
 * @since 0.1.0
 * @category models
 */
export type LayerOptions = DeixisAdapter.LayerOptions

/**
 * All {@link Services} over the given stores (`DeixisAdapter.layerWith`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = DeixisAdapter.layerWith

/**
 * All {@link Services} in memory (lost on restart).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = DeixisAdapter.layerMemory

/**
 * Options of {@link record} and the middleware.
 *
 * @since 0.1.0
 * @category models
 */
export type RecordOptions = DeixisAdapter.RecordOptions

/**
 * What recording one update did.
 *
 * @since 0.1.0
 * @category models
 */
export type RecordResult = DeixisAdapter.RecordResult

/**
 * Records one update through `TelegramRecorder`, never failing (`DeixisAdapter.record`).
 *
 * @since 0.1.0
 * @category recording
 */
export const record = DeixisAdapter.record

/**
 * The middleware's recording of an update failed in a store (with `onStoreError: "fail"`).
 *
 * @since 0.1.0
 * @category errors
 */
export const RecordFailed = DeixisAdapter.RecordFailed

/**
 * @since 0.1.0
 * @category errors
 */
export type RecordFailed = DeixisAdapter.RecordFailed

/**
 * Records a message the bot sent as outbound (`DeixisAdapter.recordSent`).
 *
 * @since 0.1.0
 * @category recording
 */
export const recordSent = DeixisAdapter.recordSent

/**
 * The call has no message to anchor it.
 *
 * @since 0.1.0
 * @category errors
 */
export const NoMessageScope = DeixisAdapter.NoMessageScope

/**
 * @since 0.1.0
 * @category errors
 */
export type NoMessageScope = DeixisAdapter.NoMessageScope

/**
 * Hints and options of {@link resolve}.
 *
 * @since 0.1.0
 * @category models
 */
export type ResolveOptions = DeixisAdapter.ResolveOptions

/**
 * Options of {@link listActive}.
 *
 * @since 0.1.0
 * @category models
 */
export type ListOptions = DeixisAdapter.ListOptions

/**
 * `resolve_reference_target` from one message's scope.
 *
 * @since 0.1.0
 * @category operations
 */
export const resolve = DeixisAdapter.resolve

/**
 * `list_active_context_objects` from one message's scope.
 *
 * @since 0.1.0
 * @category operations
 */
export const listActive = DeixisAdapter.listActive

/**
 * What the middleware puts on the context as `ctx.deixis`. Every call rejects with
 * {@link NoMessageScope} when the update carries no message.
 *
 * @since 0.1.0
 * @category models
 */
export interface DeixisApi extends Omit<DeixisAdapter.Operations, "recordSent"> {
  /**
   * Replies in the message's topic (a forum's, a private chat's, a direct-messages topic) and
   * records the sent message as this message's answer (`bot_response_id`).
   */
  readonly reply: (text: string, extra?: Parameters<Context["reply"]>[1]) => Promise<Message.TextMessage>
  /** Records a message the bot sent by other means (`ctx.replyWithPoll(...)`'s result), as this message's answer. */
  readonly recordSent: (message: Message) => Promise<RecordResult>
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
export type DeixisRuntime = DeixisAdapter.DeixisRuntime

/**
 * Options of {@link middleware} (`DeixisAdapter.MiddlewareOptions`). With `onStoreError:
 * "fail"`, Telegraf hands {@link RecordFailed} to `bot.catch` (its default handler rethrows it, so
 * `handleUpdate` rejects and `webhookCallback` answers 500, so Telegram delivers the update
 * again). Not for Telegraf's own long polling: a rejected `handleUpdate` stops it.
 *
 * @since 0.1.0
 * @category models
 */
export type MiddlewareOptions = DeixisAdapter.MiddlewareOptions

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
): DeixisApi => withReply(ctx, DeixisAdapter.operations(mapped, options))

const withReply = (ctx: Context, ops: DeixisAdapter.Operations): DeixisApi => ({
  ...ops,
  reply: async (text, extra) => {
    // Telegraf sends in the message's thread itself; a direct-messages topic (Bot API 9.2,
    // newer than Telegraf's types) needs its id said.
    const dm = ops.scope?.destination.direct_messages_topic_id
    const sent = await ctx.reply(text, dm === undefined ? extra : ({ direct_messages_topic_id: dm, ...extra } as typeof extra))
    await ops.recordSent(sent)
    return sent
  }
})

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
  const recordUpdate = DeixisAdapter.recorder(runtime, options)
  return async (ctx, next) => {
    ctx.deixis = withReply(ctx, await recordUpdate(ctx.update, ctx.botInfo))
    return next()
  }
}
