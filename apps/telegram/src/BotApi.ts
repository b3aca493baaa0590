/**
 * The bot's side of Telegram, as its handlers use it: one Bot API client, every call under the
 * send policy (`TelegramSend`), who the bot is (asked once with `getMe`), and the settings its
 * answers follow (the group mode its own messages are recorded under, the default time zone).
 * A service ({@link BotApi}), provided by {@link layer}; the functions below are what the
 * commands, buttons and LLM turns share: answering in the asker's topic, recording what the
 * bot sent, admin checks.
 *
 * @since 0.3.0
 */
import type { ContextEvent } from "@deixis/core/ContextEvent"
import { ContextIngest } from "@deixis/core/ContextIngest"
import type * as DeixisServices from "@deixis/chathistory/DeixisServices"
import { DeixisTelegraf, TelegramRecorder, UpdateMapper } from "@deixis/telegraf"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import { Telegram } from "telegraf"
import type { Message, UserFromGetMe } from "telegraf/types"
import type { BotConfig, SendPolicy } from "./BotConfig.js"
import * as ChatSettings from "./ChatSettings.js"
import type * as Reminders from "./Reminders.js"
import type * as Replies from "./Replies.js"
import * as StoreOutage from "./StoreOutage.js"
import * as TelegramSend from "./TelegramSend.js"

/**
 * What the bot needs of deixis: every store and service of the composition every entrance uses
 * (`DeixisServices`), the reminder store and the update inbox among them, and the reminder
 * sender's wake-up call.
 *
 * @since 0.3.0
 * @category models
 */
export type Services = DeixisServices.Services | DeixisServices.Stores | Reminders.Wakeup

/**
 * What {@link layer} is built from: the `BOT_*` settings that concern talking to Telegram.
 *
 * @since 0.3.0
 * @category models
 */
export type Options = Pick<BotConfig, "token" | "apiRoot" | "mode" | "send" | "timeZone">

/**
 * @since 0.3.0
 * @category models
 */
export interface Service {
  /** Telegraf's Bot API client (what builds a handler's context). */
  readonly telegram: Telegram
  /**
   * One Bot API call under the send policy (timeout, retries, redacted errors): the bot's
   * (`BOT_API_*`), or `policy` for a call that needs its own (a long poll).
   */
  readonly call: <A>(
    method: string,
    payload: Record<string, unknown>,
    policy?: SendPolicy
  ) => Effect.Effect<A, TelegramSend.SendError>
  /** Asks Telegram who the bot is (`getMe`) and remembers it: a launch asks at every start. */
  readonly identify: Effect.Effect<UserFromGetMe, TelegramSend.SendError>
  /** Who the bot is: as last asked, or asked now. */
  readonly me: Effect.Effect<UserFromGetMe, TelegramSend.SendError>
  /** The identity the mapper and the recorder need: empty until the bot was first asked. */
  readonly identity: () => { readonly botId: string; readonly botUsername: string | undefined }
  /** The group mode (`BOT_GROUP_MODE`) the bot's messages are recorded under. */
  readonly mode: BotConfig["mode"]
  /** The time zone of a chat that set none (`BOT_TIME_ZONE`). */
  readonly timeZone: string
}

/**
 * @since 0.3.0
 * @category tags
 */
export class BotApi extends Context.Tag("@deixis/telegram-bot/BotApi")<BotApi, Service>() {}

type CallApiSignal = NonNullable<NonNullable<Parameters<Telegram["callApi"]>[2]>["signal"]>

/**
 * The service over one token and API root. Nothing is called until asked.
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (options: Options): Service => {
  const telegram = TelegramSend.client(Redacted.value(options.token), options.apiRoot)
  const call = <A>(method: string, payload: Record<string, unknown>, policy: SendPolicy = options.send) =>
    TelegramSend.send<A>(
      method,
      (signal) => telegram.callApi(method as never, payload as never, { signal: signal as unknown as CallApiSignal }) as Promise<A>,
      policy
    )
  // The last answer to getMe; only `identify` replaces it.
  let known: UserFromGetMe | undefined
  const identify = Effect.tap(call<UserFromGetMe>("getMe", {}), (me) => Effect.sync(() => (known = me)))
  return {
    telegram,
    call,
    identify,
    me: Effect.suspend(() => known === undefined ? identify : Effect.succeed(known)),
    identity: () => ({ botId: known === undefined ? "" : String(known.id), botUsername: known?.username }),
    mode: options.mode,
    timeZone: options.timeZone
  }
}

/**
 * @since 0.3.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<BotApi> => Layer.sync(BotApi, () => make(options))

/**
 * One Bot API call under the send policy.
 *
 * @since 0.3.0
 * @category calls
 */
export const call = <A>(method: string, payload: Record<string, unknown>): Effect.Effect<A, TelegramSend.SendError, BotApi> =>
  Effect.flatMap(BotApi, (api) => api.call<A>(method, payload))

/**
 * What the recorder needs to know of the bot: who it is and its group mode.
 *
 * @since 0.3.0
 * @category recording
 */
export const recordOptions = (api: Service) => ({ ...api.identity(), mode: api.mode })

// The store's outage: the message sent is recorded once the store is back (retried for up to
// this long), so an answer sent as the database stopped is no gap in the chat's history.
const sentRetry = Schedule.spaced(Duration.millis(250)).pipe(Schedule.upTo(Duration.seconds(30)))

/**
 * Records the bot's own message; with `answering`, as the answer to that user message. Through
 * a store outage it is retried (up to 30 s); a record still failing then is logged, not failed.
 *
 * @since 0.3.0
 * @category recording
 */
export const recordSent = (message: Message, answering?: UpdateMapper.MessageScope) =>
  Effect.flatMap(BotApi, (api) => {
    const options = { ...recordOptions(api), answering }
    return TelegramRecorder.recordSent(message, options).pipe(
      StoreOutage.retryOutage(sentRetry),
      // One last try, logged if it fails too (DeixisTelegraf.recordSent never fails).
      Effect.orElse(() => DeixisTelegraf.recordSent(message, options))
    )
  })

/**
 * Applies events (a command's, a button's), best effort: a store failing is logged.
 *
 * @since 0.3.0
 * @category recording
 */
export const ingest = (events: ReadonlyArray<ContextEvent>) =>
  Effect.flatMap(ContextIngest, (i) => i.apply(events)).pipe(
    Effect.tapError((error) => Effect.logWarning("events not recorded", error)),
    Effect.option
  )

/**
 * The send parameters of a destination: Telegram's chat id (a number when it is one) and the
 * topic's parameter (`message_thread_id`, or `direct_messages_topic_id` in a channel's
 * direct-messages chat).
 *
 * @since 0.4.0
 * @category answering
 */
export const target = (d: UpdateMapper.Destination) => {
  const id = Number(d.chat_id)
  return {
    chat_id: Number.isSafeInteger(id) ? id : d.chat_id,
    ...(d.message_thread_id === undefined ? {} : { message_thread_id: d.message_thread_id }),
    ...(d.direct_messages_topic_id === undefined ? {} : { direct_messages_topic_id: d.direct_messages_topic_id })
  }
}

/**
 * Where to send in a deixis chat and topic (a reminder's, a command's): its topic's thread, or
 * its direct-messages topic (`UpdateMapper.destinationFor`). `chatId` may be Telegram's own.
 *
 * @since 0.3.0
 * @category answering
 */
export const where = (chatId: number | string, topicId: string | null) => {
  const destination = UpdateMapper.destinationFor(String(chatId), topicId)
  if (destination === undefined) return { chat_id: chatId }
  const to = target(destination)
  // Telegram's own id stays as given (a number stays a number).
  return destination.chat_id === String(chatId) ? { ...to, chat_id: chatId } : to
}

/**
 * Where the answer to a message goes: its scope's destination (the topic it was asked in:
 * a forum's, a private chat's or a direct-messages topic), or the update's chat.
 *
 * @since 0.4.0
 * @category answering
 */
export const whereFor = (ctx: DeixisTelegraf.DeixisContext) => {
  const scope = ctx.deixis.scope
  if (scope !== undefined) return target(scope.destination)
  const chat = ctx.chat?.id
  return chat === undefined ? undefined : { chat_id: chat }
}

/**
 * An inline keyboard of a reply's buttons (nothing for none).
 *
 * @since 0.3.0
 * @category answering
 */
export const markup = (buttons: Replies.Reply["buttons"]) =>
  buttons.length === 0 ? {} : { reply_markup: { inline_keyboard: buttons.map((row) => row.map((b) => ({ ...b }))) } }

/**
 * Sends `reply` as a reply to the update's message (or to `replyTo`), in its topic, and
 * records it: the message sent, or undefined for an update without a chat. Fails when
 * Telegram did not take it.
 *
 * @since 0.3.0
 * @category answering
 */
export const send = (ctx: DeixisTelegraf.DeixisContext, reply: Replies.Reply, replyTo?: number) =>
  Effect.gen(function*() {
    const scope = ctx.deixis.scope
    // A guest message is answered once, by its query id: no message of the bot's own to record.
    const guest = scope?.destination.guest_query_id
    if (guest !== undefined) return yield* answerGuest(guest, reply.text)
    const to = whereFor(ctx)
    if (to === undefined) return undefined
    const messageId = replyTo ?? (scope === undefined ? ctx.msgId : Number(scope.message_id))
    const sent = yield* call<Message>("sendMessage", {
      ...to,
      text: reply.text,
      ...(messageId === undefined ? {} : { reply_parameters: { message_id: messageId, allow_sending_without_reply: true } }),
      ...markup(reply.buttons)
    })
    yield* recordSent(sent, scope)
    return sent
  })

/**
 * Answers a guest message (`answerGuestQuery`) with an article of `text`: the message the
 * guest bot sends where it was summoned. Nothing is recorded (Telegram returns only the
 * inline message's id).
 *
 * @since 0.4.0
 * @category answering
 */
export const answerGuest = (guestQueryId: string, text: string) =>
  call<{ readonly inline_message_id: string }>("answerGuestQuery", {
    guest_query_id: guestQueryId,
    result: {
      type: "article",
      id: "answer",
      title: text.slice(0, 64),
      input_message_content: { message_text: text.length > 4096 ? `${text.slice(0, 4095)}…` : text }
    }
  }).pipe(Effect.as(undefined))

/**
 * {@link send}, a failure logged: the handler goes on.
 *
 * @since 0.3.0
 * @category answering
 */
export const reply = (ctx: DeixisTelegraf.DeixisContext, r: Replies.Reply) =>
  send(ctx, r).pipe(Effect.asVoid, Effect.catchAll((error) => Effect.logError("reply not sent", error)))

/**
 * {@link reply} with text only.
 *
 * @since 0.3.0
 * @category answering
 */
export const text = (ctx: DeixisTelegraf.DeixisContext, t: string) => reply(ctx, { text: t, buttons: [] })

/**
 * Whether the message speaks as its group: an anonymous admin's message comes from
 * `@GroupAnonymousBot` with the group itself as `sender_chat`. Only an admin can speak as the
 * group, and `getChatMember` cannot name them.
 *
 * @since 0.3.0
 * @category permissions
 */
export const speaksAsChat = (ctx: DeixisTelegraf.DeixisContext): boolean => {
  const message = ctx.message
  return message !== undefined && ctx.chat !== undefined && "sender_chat" in message && message.sender_chat?.id === ctx.chat.id
}

/**
 * Whether the user is the chat's creator or an administrator (`getChatMember`); false when
 * Telegram cannot say (logged).
 *
 * @since 0.3.0
 * @category permissions
 */
export const isAdmin = (chatId: number | string, userId: number) =>
  call<{ readonly status: string }>("getChatMember", { chat_id: chatId, user_id: userId }).pipe(
    Effect.map((member) => member.status === "creator" || member.status === "administrator"),
    Effect.catchAll((error) => Effect.as(Effect.logWarning("chat member not read", error), false))
  )

/**
 * A chat's time zone: the one `/timezone` set, or the bot's default.
 *
 * @since 0.3.0
 * @category settings
 */
export const zoneOf = (chatId: string) => Effect.flatMap(BotApi, (api) => ChatSettings.timeZone(chatId, api.timeZone))

