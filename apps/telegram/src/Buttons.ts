/**
 * The bot's buttons as one table ({@link all}): the callback data a button carries (a pattern)
 * and what pressing it does. `Bot.make` registers every entry.
 *
 * A handler runs in its update's scope; whatever it fails with, the person who pressed gets an
 * answer (`answerCallbackQuery`).
 *
 * @since 0.3.0
 */
import * as BotEvents from "@deixis/core/BotEvents"
import { ContextStore } from "@deixis/core/ContextStore"
import { ReminderStore } from "@deixis/core/ReminderStore"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as BotApi from "./BotApi.js"
import * as Commands from "./Commands.js"
import * as Replies from "./Replies.js"

/**
 * One kind of button: its callback data matches `pattern`.
 *
 * @since 0.3.0
 * @category models
 */
export interface Button {
  /** What the logs call it. */
  readonly name: string
  readonly pattern: RegExp
  readonly handler: (ctx: Commands.Context, match: RegExpExecArray) => Effect.Effect<void, unknown, Commands.Services>
}

/**
 * Answers a press (the notice Telegram shows the person who pressed); a failure is logged.
 *
 * @since 0.3.0
 * @category answering
 */
export const answerCallback = (ctx: Commands.Context, t: string) =>
  BotApi.call("answerCallbackQuery", { callback_query_id: ctx.callbackQuery?.id, text: t }).pipe(
    Effect.catchAll((error) => Effect.logWarning("callback not answered", error))
  )

/**
 * The bot's buttons.
 *
 * @since 0.3.0
 * @category buttons
 */
export const all: ReadonlyArray<Button> = [
  // A candidate button of an ambiguous /what: resolve on press.
  {
    name: "what",
    pattern: /^w:(.+)$/,
    handler: (ctx, match) =>
      Effect.gen(function*() {
        const message = ctx.callbackQuery?.message
        const objectId = match[1] ?? ""
        if (message === undefined) return yield* answerCallback(ctx, "That message is too old.")
        const chat = String(message.chat.id)
        const found = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, objectId))
        if (Option.isNone(found)) return yield* answerCallback(ctx, "That one is no longer around.")
        yield* BotApi.ingest([BotEvents.resolverTouch({
          chat_id: chat,
          object_id: objectId,
          because_of: `cb:${ctx.callbackQuery!.id}`,
          actor_user_id: ctx.from === undefined ? null : String(ctx.from.id)
        })])
        yield* answerCallback(ctx, "Got it.")
        yield* BotApi.call("editMessageText", { chat_id: message.chat.id, message_id: message.message_id, text: `You mean ${Replies.describe(found.value)}.` })
          .pipe(Effect.catchAll((error) => Effect.logWarning("message not edited", error)))
      })
  },
  // A cancel button of /reminders: its creator or an admin cancels; the list is edited in place.
  {
    name: "cancel reminder",
    pattern: /^rc:(.+)$/,
    handler: (ctx, match) =>
      Effect.gen(function*() {
        const message = ctx.callbackQuery?.message
        const from = ctx.from?.id
        if (message === undefined || from === undefined) return yield* answerCallback(ctx, "That message is too old.")
        const chat = String(message.chat.id)
        const objectId = match[1] ?? ""
        const store = yield* ReminderStore
        const found = yield* store.get(chat, objectId)
        if (Option.isNone(found)) {
          yield* answerCallback(ctx, "That reminder already went off or was cancelled.")
        } else {
          const r = found.value
          if (r.created_by_user_id !== null && r.created_by_user_id !== String(from) && !(yield* BotApi.isAdmin(chat, from))) {
            return yield* answerCallback(ctx, "Only the reminder's creator or an admin can cancel it.")
          }
          yield* store.remove(chat, objectId)
          yield* BotApi.ingest([BotEvents.reminderCancelled({ chat_id: chat, object_id: objectId, actor_user_id: String(from) })])
          yield* answerCallback(ctx, `Cancelled: ${Replies.short(r.text, 100)}`)
        }
        const topic = "is_topic_message" in message && message.is_topic_message === true && message.message_thread_id !== undefined
          ? String(message.message_thread_id)
          : null
        const { reply } = yield* Commands.listReminders(chat, topic, String(from))
        yield* BotApi.call("editMessageText", {
          chat_id: message.chat.id,
          message_id: message.message_id,
          text: reply.text,
          ...BotApi.markup(reply.buttons)
        }).pipe(Effect.catchAll((error) => Effect.logWarning("reminder list not updated", error)))
      })
  },
  // The close button under a poll the bot sent: `pc:<creator user id>`.
  {
    name: "close poll",
    pattern: /^pc:(\d+)$/,
    handler: (ctx, match) =>
      Effect.gen(function*() {
        const message = ctx.callbackQuery?.message
        const from = ctx.from?.id
        if (message === undefined || from === undefined) return yield* answerCallback(ctx, "That poll is too old.")
        yield* answerCallback(ctx, yield* Commands.closePoll(message.chat.id, message.message_id, from, match[1] ?? null))
      })
  }
]
