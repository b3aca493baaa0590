/**
 * The bot: a factory ({@link make}) that builds a Telegraf bot over the deixis services and
 * registers the commands. Nothing starts on import; `Runner.launch` connects a built bot to
 * Telegram.
 *
 * Every answer is a reply to the message that asked, in its topic; every failure ends in an
 * apology with a hint, never silence. Each update is handled in a scope of its own: the
 * Effects its handlers start (an LLM turn included) are interrupted when that scope closes
 * (shutdown), so nothing outlives the update.
 *
 * @since 0.1.0
 */
import * as BotEvents from "@deixis/core/BotEvents"
import { objectIdFor } from "@deixis/core/ContextObject"
import type { ContextEvent } from "@deixis/core/ContextEvent"
import { ContextIngest } from "@deixis/core/ContextIngest"
import { ContextStore } from "@deixis/core/ContextStore"
import { ConversationState } from "@deixis/core/ConversationState"
import { isMigratedMessageId } from "@deixis/core/Ids"
import { TargetKindHint } from "@deixis/core/ObjectKind"
import type * as DeixisServices from "@deixis/chathistory/DeixisServices"
import type { ClaimedReminder, Reminder } from "@deixis/core/ReminderStore"
import { ReminderStore } from "@deixis/core/ReminderStore"
import { DeixisTelegraf, TelegramRecorder, UpdateMapper } from "@deixis/telegraf"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { Context as TelegrafContext, Telegraf } from "telegraf"
import type { Types } from "telegraf"
import type { Message, Update, UserFromGetMe } from "telegraf/types"
import * as ChatSettings from "./ChatSettings.js"
import type { BotConfig } from "./BotConfig.js"
import * as Llm from "./Llm.js"
import * as Reminders from "./Reminders.js"
import * as Replies from "./Replies.js"
import * as TelegramSend from "./TelegramSend.js"
import * as Times from "./Times.js"

/**
 * What the bot needs: deixis over every store (`DeixisServices`, the composition every
 * entrance uses), the reminder store and the update inbox among them.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = DeixisServices.Services | DeixisServices.Stores | Reminders.Wakeup

/**
 * The update types the bot asks Telegram for (`message_reaction` must be asked for by name).
 *
 * @since 0.1.0
 * @category constants
 */
export const allowedUpdates: ReadonlyArray<Types.UpdateType> = [
  "message",
  "edited_message",
  "channel_post",
  "edited_channel_post",
  "callback_query",
  "poll",
  "poll_answer",
  "message_reaction"
]

/**
 * Where Telegram lists a command (`setMyCommands`' scope types).
 *
 * @since 0.3.0
 * @category models
 */
export type CommandScope = "all_private_chats" | "all_group_chats" | "default"

/**
 * Every scope the bot lists its commands in: private chats and groups (and the default).
 *
 * @since 0.3.0
 * @category constants
 */
export const everywhere: ReadonlyArray<CommandScope> = ["all_private_chats", "all_group_chats", "default"]

/**
 * One command of the bot: what `setMyCommands` lists (its description, in its scopes; none:
 * it works but is not listed) and what it does. The bot's commands are one table of these
 * ({@link Bot.commands}): adding a command is adding an entry.
 *
 * @since 0.3.0
 * @category models
 */
export interface Command {
  readonly name: string
  readonly description: string
  readonly scopes: ReadonlyArray<CommandScope>
  /** Runs in the update's scope; whatever it fails with, the asker gets an apology. */
  readonly handler: (ctx: CommandContext, scope: UpdateMapper.MessageScope) => Effect.Effect<void, unknown, Services>
}

/**
 * What `setMyCommands` takes for one scope: the commands listed there.
 *
 * @since 0.3.0
 * @category commands
 */
export const listedIn = (
  commands: ReadonlyArray<Command>,
  scope: CommandScope
): ReadonlyArray<{ readonly command: string; readonly description: string }> =>
  commands.filter((c) => c.scopes.includes(scope)).map((c) => ({ command: c.name, description: c.description }))

/**
 * A built bot.
 *
 * @since 0.1.0
 * @category models
 */
export interface Bot {
  readonly telegraf: Telegraf<Context>
  /** Maps an update (untrusted JSON) once, with the bot's identity: what intake passes on. */
  readonly map: (update: unknown) => UpdateMapper.MappedUpdate
  /**
   * Whether a handler may act on the update (a command, a button, an LLM turn): an update that
   * needs none is only recorded, with its chat's neighbours in one unit of work.
   */
  readonly needsAnswer: (update: Record<string, unknown>, mapped: UpdateMapper.MappedUpdate) => boolean
  /**
   * Records mapped updates of one chat, in order, as one unit of work. Fails only when a store
   * failed: then none of them is recorded, and they are to be handled again later.
   */
  readonly record: (mapped: ReadonlyArray<UpdateMapper.MappedUpdate>) => Effect.Effect<void, DeixisTelegraf.RecordFailed>
  /**
   * Runs the handlers of an update already recorded. Malformed updates are logged and dropped;
   * a handler's failure is logged: it never fails.
   */
  readonly answer: (update: Record<string, unknown>, mapped: UpdateMapper.MappedUpdate) => Effect.Effect<void>
  /**
   * Records an update and runs its handlers (`record`, then `answer`). Fails only when
   * recording failed in a store: then no handler ran.
   */
  readonly handle: (update: unknown) => Effect.Effect<void, DeixisTelegraf.RecordFailed>
  /** Sends one claimed reminder (the reminder sender's `send`). */
  readonly fireReminder: (reminder: ClaimedReminder) => Effect.Effect<Reminders.Outcome>
  /** The commands: what `setMyCommands` lists and what the handlers do. */
  readonly commands: ReadonlyArray<Command>
  /**
   * Called when an update arrives, before it waits behind its chat's earlier ones: a newer
   * message from the same person in the same topic, addressed to the bot, cancels their LLM
   * turn in progress (no answer is sent for it; the newer message is answered with the
   * earlier one in its history).
   */
  readonly preempt: (mapped: UpdateMapper.MappedUpdate) => Effect.Effect<void>
  /** One Bot API call with the send policy (timeout, retries). */
  readonly call: <A>(method: string, payload: Record<string, unknown>) => Effect.Effect<A, TelegramSend.SendError>
}

const isHint = Schema.is(TargetKindHint)

/** The LLM mode as the intake sees it: which messages start a turn, and preemption of turns. */
interface LlmTurns {
  readonly addresses: (mapped: UpdateMapper.MappedUpdate) => boolean
  readonly preempt: (mapped: UpdateMapper.MappedUpdate) => Effect.Effect<void>
}

const noLlm: LlmTurns = { addresses: () => false, preempt: () => Effect.void }

/**
 * The context of the bot's handlers: Telegraf's, with `ctx.deixis` over the update as mapped
 * and recorded at intake, and `effects`, which runs an Effect in the update's own scope.
 *
 * @since 0.3.0
 * @category models
 */
export interface Context extends DeixisTelegraf.DeixisContext {
  effects: <A, E>(effect: Effect.Effect<A, E, Services>) => Promise<A>
}

/**
 * A command's context: `payload` is the text after the command.
 *
 * @since 0.3.0
 * @category models
 */
export type CommandContext = Context & { readonly payload: string }

type CallApiSignal = NonNullable<NonNullable<Parameters<Telegraf["telegram"]["callApi"]>[2]>["signal"]>

const hintWords: Record<string, string> = { photo: "image", picture: "image", document: "file" }

/**
 * Builds the bot: middleware, commands and buttons. Updates can be fed with `handle` right away.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Pick<BotConfig, "token" | "apiRoot" | "mode" | "send" | "timeZone"> & {
    /** LLM mode (off when absent or None). */
    readonly llm?: Option.Option<Llm.LlmConfig> | undefined
  }
): Effect.Effect<Bot, never, Services> =>
  Effect.gen(function*() {
    const store = yield* ReminderStore
    // A group upgraded to a supergroup: the recorder moves every store's data, the reminders too.
    const runtime = yield* Effect.runtime<Services>().pipe(
      Effect.provideService(TelegramRecorder.ChatMigrators, [store.migrateChat])
    )
    const llmOn = options.llm !== undefined && Option.isSome(options.llm)
    const telegraf = new Telegraf<Context>(Redacted.value(options.token), {
      telegram: { apiRoot: options.apiRoot, webhookReply: false },
      // Bounded by the per-call timeouts and by shutdown, not by a timer that leaves the handler running.
      handlerTimeout: Number.POSITIVE_INFINITY
    })

    // The Effects of one update run in that update's FiberSet (see `answer`).
    const run = (ctx: Context) => ctx.effects

    const call = <A>(method: string, payload: Record<string, unknown>) =>
      TelegramSend.send<A>(
        method,
        (signal) => telegraf.telegram.callApi(method as never, payload as never, { signal: signal as unknown as CallApiSignal }) as Promise<A>,
        options.send
      )
    const recordOptions = () => ({ botId: String(telegraf.botInfo?.id ?? ""), botUsername: telegraf.botInfo?.username, mode: options.mode })
    // The bot's own message, recorded as the answer to the user message it replies to.
    const recordSent = (message: Message, answering?: UpdateMapper.MessageScope) =>
      DeixisTelegraf.recordSent(message, { ...recordOptions(), answering })
    const ingest = (events: ReadonlyArray<ContextEvent>) =>
      Effect.flatMap(ContextIngest, (i) => i.apply(events)).pipe(
        Effect.tapError((error) => Effect.logWarning("events not recorded", error)),
        Effect.option
      )
    const markup = (buttons: Replies.Reply["buttons"]) =>
      buttons.length === 0 ? {} : { reply_markup: { inline_keyboard: buttons.map((row) => row.map((b) => ({ ...b }))) } }

    const where = (chatId: number | string, topicId: string | null) => {
      const thread = UpdateMapper.threadIdFor(topicId)
      return { chat_id: chatId, ...(thread === undefined ? {} : { message_thread_id: thread }) }
    }

    /** Sends `reply` as a reply to the update's message, in its topic, and records it. */
    const answer = (ctx: Context, reply: Replies.Reply) =>
      Effect.gen(function*() {
        const scope = ctx.deixis.scope
        const chat = ctx.chat?.id
        if (chat === undefined) return
        const messageId = scope === undefined ? ctx.msgId : Number(scope.message_id)
        const sent = yield* call<Message>("sendMessage", {
          ...where(chat, scope?.topic_id ?? null),
          text: reply.text,
          ...(messageId === undefined ? {} : { reply_parameters: { message_id: messageId, allow_sending_without_reply: true } }),
          ...markup(reply.buttons)
        })
        yield* recordSent(sent, scope)
      }).pipe(Effect.catchAll((error) => Effect.logError("reply not sent", error)))
    const text = (ctx: Context, t: string) => answer(ctx, { text: t, buttons: [] })

    const zoneOf = (chatId: string) => ChatSettings.timeZone(chatId, options.timeZone)

    // An anonymous admin's message comes from @GroupAnonymousBot with the group itself as
    // sender_chat: only an admin can speak as the group, and getChatMember cannot name them.
    const speaksAsChat = (ctx: Context) => {
      const message = ctx.message
      return message !== undefined && ctx.chat !== undefined && "sender_chat" in message && message.sender_chat?.id === ctx.chat.id
    }

    const isAdmin = (chatId: number | string, userId: number) =>
      call<{ readonly status: string }>("getChatMember", { chat_id: chatId, user_id: userId }).pipe(
        Effect.map((member) => member.status === "creator" || member.status === "administrator"),
        Effect.catchAll((error) => Effect.as(Effect.logWarning("chat member not read", error), false))
      )

    const register = ({ handler: f, name }: Command) =>
      telegraf.command(name, (ctx) => {
        const scope = ctx.deixis.scope
        return run(ctx)(
          scope === undefined ? Effect.void : f(ctx, scope).pipe(
            // Whatever failed, the person who asked gets an answer.
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.failCause(cause)
                : Effect.logError(`/${name} failed`, cause).pipe(Effect.zipRight(text(ctx, Replies.sorry(name))))
            ),
            Effect.annotateLogs({ command: name, chat_id: scope.chat_id, topic_id: scope.topic_id ?? "none" })
          )
        )
      })





    const listReminders = (chatId: string, topicId: string | null, senderId: string | null) =>
      Effect.gen(function*() {
        const list = yield* store.list(chatId, { topic_id: topicId, limit: 11 })
        const now = yield* Clock.currentTimeMillis
        const zone = yield* zoneOf(chatId)
        return { list: list.slice(0, 10), reply: Replies.reminders(list.slice(0, 10), { senderId, topicId, now, zone, more: list.length > 10 }) }
      })



    /** Closes a poll the bot sent, when `userId` created it (per the button) or is an admin. */
    const closePoll = (chatId: number, pollMessageId: number, userId: number, creatorId: string | null, anonymousAdmin = false) =>
      Effect.gen(function*() {
        const allowed = anonymousAdmin || creatorId === String(userId) || (yield* isAdmin(chatId, userId))
        if (!allowed) return "Only the poll's creator or an admin can close it."
        const poll = yield* call<{ readonly id: string }>("stopPoll", {
          chat_id: chatId,
          message_id: pollMessageId,
          reply_markup: { inline_keyboard: [] }
        }).pipe(Effect.either)
        if (Either.isLeft(poll)) {
          if (poll.left.code !== 400) return yield* Effect.fail(poll.left)
          // Only Telegram's own words tell a closed poll from one it no longer has (deleted).
          const why = poll.left.description.replace(/^Bad Request: /, "")
          return /already been closed/i.test(why)
            ? "That poll is already closed."
            : `I can no longer close that poll (Telegram says: ${Replies.short(why, 100)}).`
        }
        yield* ingest([{ type: "poll_closed", event_id: `telegram:poll_closed:${poll.right.id}`, poll_id: poll.right.id }])
        return "Poll closed."
      })




    // The commands, in the order Telegram lists them; `/start` (what Telegram sends first) is
    // answered but not listed.
    const help: Command["handler"] = (ctx) =>
      text(ctx, Replies.help(ctx.botInfo?.username, ctx.botInfo?.can_read_all_group_messages !== true, llmOn))
    const commands: ReadonlyArray<Command> = [
      {
        name: "start",
        description: "Start",
        scopes: [],
        handler: help
      },
      {
        name: "help",
        description: "What I can do",
        scopes: everywhere,
        handler: help
      },
      {
        name: "context",
        description: "What is in focus in this topic",
        scopes: everywhere,
        handler: (ctx, scope) =>
          Effect.gen(function*() {
            const result = yield* DeixisTelegraf.listActive(scope, { max_results: 10, include_inactive_debug: true })
            yield* answer(ctx, Replies.context(result, yield* Clock.currentTimeMillis, yield* zoneOf(scope.chat_id)))
          })
      },
      {
        name: "what",
        description: "Reply to a message: what does it refer to?",
        scopes: everywhere,
        handler: (ctx, scope) =>
          Effect.gen(function*() {
            const raw = (ctx.payload.trim().split(/\s+/)[0] ?? "").toLowerCase()
            const word = hintWords[raw] ?? raw
            if (word !== "" && !isHint(word)) {
              return yield* text(ctx, "I know these kinds: poll, reminder, image, file, article, link, video, voice, pdf, summary, message. Or reply to a message with /what.")
            }
            // A resolution the user asked for is a resolver touch of what it found.
            const result = yield* DeixisTelegraf.resolve(scope, {
              record_touch: true,
              ...(word === "" ? {} : { normalized_reference_hints: { target_kind_hint: word } })
            })
            yield* answer(ctx, Replies.what(result))
          })
      },
      {
        name: "remind",
        description: "Remind: /remind in 10 minutes check the oven",
        scopes: everywhere,
        handler: (ctx, scope) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const zone = yield* zoneOf(scope.chat_id)
            const parsed = Times.parseWhen(ctx.payload, now, zone)
            if (Either.isLeft(parsed)) return yield* text(ctx, Replies.remindProblem(parsed.left, zone))
            const reminder: Reminder = {
              object_id: objectIdFor(scope.chat_id, scope.message_id, "reminder", 0),
              chat_id: scope.chat_id,
              topic_id: scope.topic_id,
              source_message_id: scope.message_id,
              created_by_user_id: scope.sender_user_id,
              text: Replies.short(parsed.right.text, 1000),
              due_at: parsed.right.due_at,
              created_at: now
            }
            yield* store.add(reminder)
            yield* ingest([BotEvents.reminderCreated({
              chat_id: scope.chat_id,
              topic_id: scope.topic_id,
              source_message_id: scope.message_id,
              due_at: reminder.due_at,
              label: Replies.short(reminder.text, 200),
              created_by_user_id: scope.sender_user_id,
              actor_user_id: scope.sender_user_id
            })])
            yield* Reminders.wake
            yield* text(ctx, Replies.reminderSet(reminder, now, zone))
          })
      },
      {
        name: "reminders",
        description: "Pending reminders, with cancel buttons",
        scopes: everywhere,
        handler: (ctx, scope) =>
          Effect.gen(function*() {
            const { list, reply } = yield* listReminders(scope.chat_id, scope.topic_id, scope.sender_user_id)
            if (list.length > 0) {
              yield* ingest(BotEvents.remindersListed({
                chat_id: scope.chat_id,
                object_ids: list.map((r) => r.object_id),
                listed_in: scope.message_id
              }))
            }
            yield* answer(ctx, reply)
          })
      },
      {
        name: "poll",
        description: "A poll: /poll question | option | option",
        scopes: everywhere,
        handler: (ctx, scope) =>
          Effect.gen(function*() {
            const parsed = Replies.parsePoll(ctx.payload)
            if (typeof parsed === "string") return yield* text(ctx, parsed)
            const creator = ctx.from?.id
            const sent = yield* call<Message.PollMessage>("sendPoll", {
              ...where(scope.chat_id, scope.topic_id),
              question: parsed.question,
              options: parsed.options.map((o) => ({ text: o })),
              is_anonymous: false,
              reply_parameters: { message_id: Number(scope.message_id), allow_sending_without_reply: true },
              ...(creator === undefined ? {} : markup([[{ text: "Close poll", callback_data: `pc:${creator}` }]]))
            })
            yield* recordSent(sent, scope)
            yield* ingest([BotEvents.pollCreated({
              chat_id: scope.chat_id,
              topic_id: scope.topic_id,
              message_id: String(sent.message_id),
              poll_id: sent.poll.id,
              question: parsed.question,
              actor_user_id: scope.sender_user_id
            })])
          })
      },
      {
        name: "closepoll",
        description: "Reply to a poll: close it (its creator or an admin)",
        scopes: everywhere,
        handler: (ctx, scope) =>
          Effect.gen(function*() {
            const target = (ctx.message as Message.TextMessage | undefined)?.reply_to_message
            const from = ctx.from?.id
            if (target === undefined || !("poll" in target) || target.from?.id !== telegraf.botInfo?.id || from === undefined) {
              return yield* text(ctx, "Reply to one of my polls with /closepoll to close it.")
            }
            const object = yield* Effect.flatMap(ContextStore, (s) => s.object(scope.chat_id, objectIdFor(scope.chat_id, String(target.message_id), "poll", 0)))
              .pipe(Effect.orElseSucceed(() => Option.none()))
            const creator = Option.match(object, { onNone: () => null, onSome: (o) => o.created_by_user_id ?? null })
            yield* text(ctx, yield* closePoll(Number(scope.chat_id), target.message_id, from, creator, speaksAsChat(ctx)))
          })
      },
      {
        name: "timezone",
        description: "This chat's time zone: /timezone Europe/Berlin",
        scopes: everywhere,
        handler: (ctx, scope) =>
          Effect.gen(function*() {
            const wanted = ctx.payload.trim()
            const now = yield* Clock.currentTimeMillis
            const current = yield* zoneOf(scope.chat_id)
            if (wanted === "") {
              return yield* text(ctx, `This chat's time zone is ${current} (${Times.formatLocal(now, now, current)} now). Change it with /timezone Europe/Berlin`)
            }
            if (!Times.isTimeZone(wanted)) {
              return yield* text(ctx, `I don't know the time zone “${Replies.short(wanted, 40)}”. Use a name like Europe/Berlin, America/New_York or Asia/Tokyo.`)
            }
            const from = ctx.from?.id
            if (ctx.chat?.type !== "private" && !speaksAsChat(ctx) && (from === undefined || !(yield* isAdmin(scope.chat_id, from)))) {
              return yield* text(ctx, "Only an admin can change this chat's time zone.")
            }
            const zone = Times.canonicalZone(wanted)
            yield* ChatSettings.setTimeZone(scope.chat_id, zone, scope.sender_user_id)
            yield* text(ctx, `Time zone set: ${zone}. It is ${Times.formatLocal(now, now, zone)} now.`)
          })
      },
      {
        name: "state",
        description: "This topic's saved conversation state",
        scopes: everywhere,
        handler: (ctx, scope) =>
          Effect.flatMap(ConversationState, (state) => state.render({ chat_id: scope.chat_id, topic_id: scope.topic_id })).pipe(
            Effect.flatMap((rendered) => text(ctx, rendered))
          )
      }
    ]
    for (const c of commands) register(c)

    const answerCallback = (ctx: Context, t: string) =>
      call("answerCallbackQuery", { callback_query_id: ctx.callbackQuery?.id, text: t }).pipe(
        Effect.catchAll((error) => Effect.logWarning("callback not answered", error))
      )
    const action = (pattern: RegExp, f: (ctx: Context, match: RegExpExecArray) => Effect.Effect<void, unknown, Services>) =>
      telegraf.action(pattern, (ctx) =>
        run(ctx)(f(ctx, ctx.match).pipe(
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause)
              : Effect.logError("button failed", cause).pipe(Effect.zipRight(answerCallback(ctx, "Sorry — that did not work. Please try again.")))
          )
        )))

    // A candidate button of an ambiguous /what: resolve on press.
    action(/^w:(.+)$/, (ctx, match) =>
      Effect.gen(function*() {
        const message = ctx.callbackQuery?.message
        const objectId = match[1] ?? ""
        if (message === undefined) return yield* answerCallback(ctx, "That message is too old.")
        const chat = String(message.chat.id)
        const found = yield* Effect.flatMap(ContextStore, (s) => s.object(chat, objectId))
        if (Option.isNone(found)) return yield* answerCallback(ctx, "That one is no longer around.")
        yield* ingest([BotEvents.resolverTouch({
          chat_id: chat,
          object_id: objectId,
          because_of: `cb:${ctx.callbackQuery!.id}`,
          actor_user_id: ctx.from === undefined ? null : String(ctx.from.id)
        })])
        yield* answerCallback(ctx, "Got it.")
        yield* call("editMessageText", { chat_id: message.chat.id, message_id: message.message_id, text: `You mean ${Replies.describe(found.value)}.` })
          .pipe(Effect.catchAll((error) => Effect.logWarning("message not edited", error)))
      }))

    // A cancel button of /reminders: its creator or an admin cancels; the list is edited in place.
    action(/^rc:(.+)$/, (ctx, match) =>
      Effect.gen(function*() {
        const message = ctx.callbackQuery?.message
        const from = ctx.from?.id
        if (message === undefined || from === undefined) return yield* answerCallback(ctx, "That message is too old.")
        const chat = String(message.chat.id)
        const objectId = match[1] ?? ""
        const found = yield* store.get(chat, objectId)
        if (Option.isNone(found)) {
          yield* answerCallback(ctx, "That reminder already went off or was cancelled.")
        } else {
          const r = found.value
          if (r.created_by_user_id !== null && r.created_by_user_id !== String(from) && !(yield* isAdmin(chat, from))) {
            return yield* answerCallback(ctx, "Only the reminder's creator or an admin can cancel it.")
          }
          yield* store.remove(chat, objectId)
          yield* ingest([BotEvents.reminderCancelled({ chat_id: chat, object_id: objectId, actor_user_id: String(from) })])
          yield* answerCallback(ctx, `Cancelled: ${Replies.short(r.text, 100)}`)
        }
        const topic = "is_topic_message" in message && message.is_topic_message === true && message.message_thread_id !== undefined
          ? String(message.message_thread_id)
          : null
        const { reply } = yield* listReminders(chat, topic, String(from))
        yield* call("editMessageText", {
          chat_id: message.chat.id,
          message_id: message.message_id,
          text: reply.text,
          ...markup(reply.buttons)
        }).pipe(Effect.catchAll((error) => Effect.logWarning("reminder list not updated", error)))
      }))

    // The close button under a poll the bot sent: `pc:<creator user id>`.
    action(/^pc:(\d+)$/, (ctx, match) =>
      Effect.gen(function*() {
        const message = ctx.callbackQuery?.message
        const from = ctx.from?.id
        if (message === undefined || from === undefined) return yield* answerCallback(ctx, "That poll is too old.")
        yield* answerCallback(ctx, yield* closePoll(message.chat.id, message.message_id, from, match[1] ?? null))
      }))

    // LLM turns in progress, by chat, topic and sender: a newer addressed message from the same
    // person in the same topic cancels theirs (see `preempt`).
    const llmTurns = (settings: Llm.LlmConfig): Effect.Effect<LlmTurns, never, Services> =>
      Effect.gen(function*() {
        const turns = new Map<string, Deferred.Deferred<void>>()
        const turnKey = (scope: UpdateMapper.MessageScope) => `${scope.chat_id}/${scope.topic_id ?? ""}/${scope.sender_user_id ?? ""}`
        const assistant = yield* Llm.make(settings)
        telegraf.on("message", (ctx) => {
          const scope = ctx.deixis.scope
          const io: Llm.TurnIo<Services> = {
            send: (t, replyTo) =>
              Effect.gen(function*() {
                const sent = yield* call<Message>("sendMessage", {
                  ...where(ctx.chat.id, scope?.topic_id ?? null),
                  text: t,
                  reply_parameters: { message_id: replyTo, allow_sending_without_reply: true }
                })
                yield* recordSent(sent, scope)
                return String(sent.message_id)
              }).pipe(Effect.catchAll((error) => Effect.as(Effect.logError("reply not sent", error), null))),
            typing: call("sendChatAction", { ...where(ctx.chat.id, scope?.topic_id ?? null), action: "typing" }).pipe(
              Effect.asVoid,
              Effect.catchAll((error) => Effect.logDebug("typing indicator not sent", error))
            )
          }
          if (scope === undefined) return run(ctx)(assistant.answer(ctx, io, options.mode))
          return run(ctx)(Effect.gen(function*() {
            const key = turnKey(scope)
            const superseded = yield* Deferred.make<void>()
            turns.set(key, superseded)
            yield* assistant.answer(ctx, io, options.mode).pipe(
              Effect.raceFirst(Effect.zipRight(
                Deferred.await(superseded),
                Effect.logInfo("LLM turn cancelled: a newer message from the same person in this topic")
              )),
              Effect.ensuring(Effect.sync(() => {
                if (turns.get(key) === superseded) turns.delete(key)
              }))
            )
          }))
        })
        // A message the bot will answer: a remark in passing is only recorded.
        const addresses = (mapped: UpdateMapper.MappedUpdate) => {
          const scope = mapped.scope
          if (scope === undefined || mapped.skipped !== undefined || mapped.update_type !== "message") return false
          const text = mapped.history.find((i) => i.message_id === scope.message_id)?.text ?? ""
          return mapped.addressed || Llm.mentionsAlias(text, settings.aliases)
        }
        return {
          addresses,
          preempt: (mapped) =>
            Effect.suspend(() => {
              const scope = mapped.scope
              const superseded = turns.size === 0 || scope === undefined ? undefined : turns.get(turnKey(scope))
              return superseded !== undefined && addresses(mapped) ? Deferred.succeed(superseded, undefined) : Effect.void
            })
        }
      })
    // LLM mode: after the commands (they do not fall through), any message addressing the bot.
    const llm: LlmTurns = options.llm !== undefined && Option.isSome(options.llm) ? yield* llmTurns(options.llm.value) : noLlm

    const mapOptions = () => ({ botId: String(telegraf.botInfo?.id ?? ""), botUsername: telegraf.botInfo?.username })
    const map = (update: unknown) => UpdateMapper.mapUpdate(update, mapOptions())
    // An update the mapper refused (a field of the wrong type, an impossible date) was recorded
    // as nothing; the handlers would meet the same fields (Telegraf's own matchers throw on
    // them): it is logged with the mapper's reason and goes no further.
    const refused = (mapped: UpdateMapper.MappedUpdate) =>
      mapped.skipped !== undefined && (mapped.skipped.startsWith("malformed") || mapped.skipped.startsWith("unmappable"))

    const needsAnswer = (update: Record<string, unknown>, mapped: UpdateMapper.MappedUpdate): boolean => {
      if (refused(mapped)) return false
      if (update["callback_query"] !== undefined) return true
      const message = update["message"] ?? update["channel_post"] ?? update["edited_message"] ?? update["edited_channel_post"]
      if (Predicate.isRecord(message)) {
        // A command (Telegraf matches `/name` at the start of a text or a caption).
        const text = message["text"] ?? message["caption"]
        if (typeof text === "string" && text.startsWith("/")) return true
      }
      return llm.addresses(mapped)
    }

    const record = (mapped: ReadonlyArray<UpdateMapper.MappedUpdate>): Effect.Effect<void, DeixisTelegraf.RecordFailed> =>
      Effect.suspend(() => {
        const warnings = mapped.filter(refused).map((m) =>
          Effect.logWarning("malformed update ignored").pipe(Effect.annotateLogs({ update_id: m.update_id ?? "none", reason: m.skipped! }))
        )
        const recorded = TelegramRecorder.recordMapped(mapped, { ...mapOptions(), mode: options.mode }).pipe(
          Effect.asVoid,
          Effect.mapError((cause) => new DeixisTelegraf.RecordFailed({ update_id: mapped[0]?.update_id ?? null, cause })),
          Effect.provide(runtime.context)
        )
        return warnings.length === 0 ? recorded : Effect.zipRight(Effect.all(warnings, { discard: true }), recorded)
      })

    const noop = () => Promise.resolve()
    const answerUpdate = (update: Record<string, unknown>, mapped: UpdateMapper.MappedUpdate): Effect.Effect<void> =>
      refused(mapped) ? Effect.void : Effect.scoped(Effect.gen(function*() {
        const fibers = yield* FiberSet.make<unknown, unknown>()
        const effects = yield* FiberSet.runtimePromise(fibers)<Services>()
        const ctx = new TelegrafContext(update as unknown as Update, telegraf.telegram, telegraf.botInfo!) as Context
        Object.assign(ctx, telegraf.context)
        ctx.deixis = DeixisTelegraf.contextApi(ctx, mapped, { run: effects, record: { ...mapOptions(), mode: options.mode } })
        ctx.effects = effects
        yield* Effect.tryPromise({ try: () => Promise.resolve(telegraf.middleware()(ctx, noop)), catch: (error) => error })
      })).pipe(
        Effect.catchAll((error) =>
          // Shutdown interrupting an update is not a failure: the update is handled after the next start.
          Cause.isInterruptedException(error) || (Runtime.isFiberFailure(error) && Cause.isInterruptedOnly(error[Runtime.FiberFailureCauseId]))
            ? Effect.logInfo("update interrupted by shutdown; it is handled again after the next start")
            : Effect.logError("update handler failed", error)
        ),
        Effect.annotateLogs({ update_id: mapped.update_id ?? "none" }),
        Effect.provide(runtime.context)
      )

    const handle = (update: unknown): Effect.Effect<void, DeixisTelegraf.RecordFailed> =>
      Predicate.isRecord(update) && Number.isSafeInteger(update["update_id"])
        ? Effect.gen(function*() {
          // Fed before a launch (which asks first): who the bot is, as Telegraf's handleUpdate asks.
          if (telegraf.botInfo === undefined) {
            telegraf.botInfo = yield* call<UserFromGetMe>("getMe", {}).pipe(Effect.orDie)
          }
          const mapped = map(update)
          yield* record([mapped])
          yield* answerUpdate(update, mapped)
        })
        : Effect.logWarning("malformed update ignored")

    const fireReminder = (r: ClaimedReminder): Effect.Effect<Reminders.Outcome> =>
      call<Message>("sendMessage", {
        ...where(r.chat_id, r.topic_id),
        text: Replies.fired(r),
        // A reminder from before its group's upgrade cannot reply across chats.
        ...(isMigratedMessageId(r.source_message_id)
          ? {}
          : { reply_parameters: { message_id: Number(r.source_message_id), allow_sending_without_reply: true } })
      }).pipe(
        Effect.flatMap((sent) =>
          Effect.uninterruptible(Effect.all([
            recordSent(sent),
            ingest([BotEvents.reminderFired({ chat_id: r.chat_id, object_id: r.object_id })])
          ]))
        ),
        Effect.as<Reminders.Outcome>({ _tag: "sent" }),
        Effect.catchAll((error): Effect.Effect<Reminders.Outcome> =>
          error.migrate_to_chat_id !== undefined && error.migrate_to_chat_id !== null
            ? Effect.succeed({ _tag: "migrated", to: String(error.migrate_to_chat_id) })
            : TelegramSend.isRetryable(error) || error.timed_out === true
            ? Effect.as(Effect.logWarning("reminder not sent; trying again later", error), { _tag: "retry" })
            : Effect.succeed({ _tag: "drop", reason: error.message })
        ),
        Effect.provide(runtime.context)
      )

    return {
      telegraf,
      map,
      needsAnswer,
      record,
      answer: answerUpdate,
      handle,
      preempt: llm.preempt,
      fireReminder,
      commands,
      call: (method, payload) => call(method, payload)
    }
  })
