/**
 * The grammY side of deixis: a middleware that records every update through
 * `TelegramRecorder` and puts the deixis operations on grammY's context as `ctx.deixis`
 * (a context flavor), and the key that keeps deixis's per-chat order under
 * `@grammyjs/runner`'s `sequentialize`. Everything but sending lives in
 * `@deixis/telegraf/DeixisAdapter`, shared with the Telegraf adapter.
 *
 * @since 0.1.0
 */
import * as DeixisAdapter from "@deixis/telegraf/DeixisAdapter"
import type { Context, MiddlewareFn } from "grammy"
import type { Message } from "grammy/types"

/**
 * Where the plugin runs its Effects: a `ManagedRuntime` of {@link layerMemory} / {@link layerWith},
 * or a `Runtime` captured inside an Effect application.
 *
 * @since 0.1.0
 * @category models
 */
export type DeixisRuntime = DeixisAdapter.DeixisRuntime

/**
 * All deixis services in memory (lost on restart).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = DeixisAdapter.layerMemory

/**
 * All deixis services over the given stores (`SqlStore.layerSqlite` / `layerPg` of `@deixis/store-sql`…).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = DeixisAdapter.layerWith

/**
 * What the middleware puts on the context as `ctx.deixis`: the operations every deixis adapter
 * has (`update`, `scope`, `resolve`, `listActive`, `history`, `state`, `recordSent`, `run`)
 * and `reply`. Every call rejects with `NoMessageScope` when the update carries no message.
 *
 * @since 0.1.0
 * @category models
 */
export interface DeixisApi extends Omit<DeixisAdapter.Operations, "recordSent"> {
  /**
   * `ctx.reply` (grammY sends it in the message's topic: a forum's, a private chat's or a
   * direct-messages topic) and records the sent message as this message's answer (`bot_response_id`).
   */
  readonly reply: (text: string, other?: Parameters<Context["reply"]>[1]) => Promise<Message.TextMessage>
  /** Records a message the bot sent by other means (`ctx.replyWithPoll(...)`'s result), as this message's answer. */
  readonly recordSent: (message: Message) => Promise<DeixisAdapter.RecordResult>
}

/**
 * The context flavor of the plugin: `Bot<Context & DeixisFlavor>`.
 *
 * @since 0.1.0
 * @category models
 */
export interface DeixisFlavor {
  deixis: DeixisApi
}

/**
 * grammY's context with `ctx.deixis`.
 *
 * @since 0.1.0
 * @category models
 */
export type DeixisContext = Context & DeixisFlavor

/**
 * Options of {@link deixis}: the write-policy `mode` and `onStoreError` (`"continue"`, the
 * default, logs a store failure and runs the next handler; `"fail"` rejects with
 * `RecordFailed`, which grammY hands to `bot.catch`).
 *
 * @since 0.1.0
 * @category models
 */
export type Options = DeixisAdapter.MiddlewareOptions

/**
 * The plugin: records the update, sets `ctx.deixis`, then calls the next handler. The bot's id
 * and username come from `ctx.me`.
 *
 * @since 0.1.0
 * @category middleware
 */
export const deixis = <C extends Context & DeixisFlavor>(
  runtime: DeixisAdapter.DeixisRuntime,
  options: Options = {}
): MiddlewareFn<C> => {
  const recordUpdate = DeixisAdapter.recorder(runtime, options)
  return async (ctx, next) => {
    const ops = await recordUpdate(ctx.update, ctx.me)
    ctx.deixis = {
      ...ops,
      reply: async (text, other) => {
        const sent = await ctx.reply(text, other)
        await ops.recordSent(sent)
        return sent
      }
    }
    await next()
  }
}

/**
 * The `sequentialize` key of `@grammyjs/runner` that keeps deixis's order: updates of one chat
 * one after another (whatever their topic: a reply or a reaction names a message of any
 * topic), a poll's updates after the message that carried it, other chats in parallel:
 * `bot.use(sequentialize(sequentializeKey))` before `bot.use(deixis(...))`.
 *
 * @since 0.1.0
 * @category ordering
 */
export const sequentializeKey = (ctx: Context): Array<string> | undefined => DeixisAdapter.orderKeys(ctx.update)
