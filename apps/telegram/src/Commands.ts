/**
 * The bot's commands as one table ({@link all}): each entry is what `setMyCommands` lists
 * (name, description, scopes) and what the command does. `Bot.make` registers every entry and
 * the launch lists them; nothing else names a command.
 *
 * A handler runs in its update's scope, with the deixis services, the bot's `BotApi` and its
 * LLM turns; whatever it fails with, the asker gets an apology.
 *
 * @since 0.3.0
 */
import * as BotEvents from "@deixis/core/BotEvents"
import { objectIdFor } from "@deixis/core/ContextObject"
import { ContextStore } from "@deixis/core/ContextStore"
import { ConversationState } from "@deixis/core/ConversationState"
import { TargetKindHint } from "@deixis/core/ObjectKind"
import type { Reminder } from "@deixis/core/ReminderStore"
import { ReminderStore } from "@deixis/core/ReminderStore"
import * as UnitOfWork from "@deixis/core/UnitOfWork"
import { DeixisTelegraf } from "@deixis/telegraf"
import type { UpdateMapper } from "@deixis/telegraf"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Message } from "telegraf/types"
import * as BotApi from "./BotApi.js"
import * as ChatSettings from "./ChatSettings.js"
import * as LlmTurns from "./LlmTurns.js"
import * as Reminders from "./Reminders.js"
import * as Replies from "./Replies.js"
import * as Times from "./Times.js"

/**
 * What a handler (a command's, a button's, an LLM turn) may use: deixis over every store, the
 * bot's side of Telegram and its LLM turns.
 *
 * @since 0.3.0
 * @category models
 */
export type Services = BotApi.Services | BotApi.BotApi | LlmTurns.LlmTurns

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
 * One command: what `setMyCommands` lists (its description, in its scopes; none: it works but
 * is not listed) and what it does.
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

const isHint = Schema.is(TargetKindHint)

// The words people say for a kind.
const hintWords: Record<string, string> = { photo: "image", picture: "image", document: "file" }

/**
 * The first ten pending reminders of a topic, and the reply that lists them (with cancel
 * buttons for those `senderId` may cancel).
 *
 * @since 0.3.0
 * @category reminders
 */
export const listReminders = (chatId: string, topicId: string | null, senderId: string | null) =>
  Effect.gen(function*() {
    const list = yield* Effect.flatMap(ReminderStore, (store) => store.list(chatId, { topic_id: topicId, limit: 11 }))
    const now = yield* Clock.currentTimeMillis
    const zone = yield* BotApi.zoneOf(chatId)
    return { list: list.slice(0, 10), reply: Replies.reminders(list.slice(0, 10), { senderId, topicId, now, zone, more: list.length > 10 }) }
  })

/**
 * Closes a poll the bot sent, when `userId` created it (per the button) or is an admin: what
 * to tell them.
 *
 * @since 0.3.0
 * @category polls
 */
export const closePoll = (chatId: number, pollMessageId: number, userId: number, creatorId: string | null, anonymousAdmin = false) =>
  Effect.gen(function*() {
    const allowed = anonymousAdmin || creatorId === String(userId) || (yield* BotApi.isAdmin(chatId, userId))
    if (!allowed) return "Only the poll's creator or an admin can close it."
    const poll = yield* BotApi.call<{ readonly id: string }>("stopPoll", {
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
    yield* BotApi.ingest([{ type: "poll_closed", event_id: `telegram:poll_closed:${poll.right.id}`, poll_id: poll.right.id }])
    return "Poll closed."
  })

const help: Command["handler"] = (ctx) =>
  Effect.flatMap(LlmTurns.LlmTurns, (llm) =>
    BotApi.text(ctx, Replies.help(ctx.botInfo?.username, ctx.botInfo?.can_read_all_group_messages !== true, llm.enabled)))

/**
 * The bot's commands, in the order Telegram lists them; `/start` (what Telegram sends first)
 * is answered but not listed. Adding a command is adding an entry here.
 *
 * @since 0.3.0
 * @category commands
 */
export const all: ReadonlyArray<Command> = [
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
        // The chat's time zone is read beside the context, not after it, where the stores say so
        // (`UnitOfWork.both`: one round trip's wait on PostgreSQL).
        const [result, zone] = yield* UnitOfWork.both(
          DeixisTelegraf.listActive(scope, { max_results: 10, include_inactive_debug: true }),
          BotApi.zoneOf(scope.chat_id)
        )
        yield* BotApi.reply(ctx, Replies.context(result, yield* Clock.currentTimeMillis, zone))
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
          return yield* BotApi.text(ctx, "I know these kinds: poll, reminder, image, file, article, link, video, voice, pdf, summary, message. Or reply to a message with /what.")
        }
        // A resolution the user asked for is a resolver touch of what it found.
        const result = yield* DeixisTelegraf.resolve(scope, {
          record_touch: true,
          ...(word === "" ? {} : { normalized_reference_hints: { target_kind_hint: word } })
        })
        yield* BotApi.reply(ctx, Replies.what(result))
      })
  },
  {
    name: "remind",
    description: "Remind: /remind in 10 minutes check the oven",
    scopes: everywhere,
    handler: (ctx, scope) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const zone = yield* BotApi.zoneOf(scope.chat_id)
        const parsed = Times.parseWhen(ctx.payload, now, zone)
        if (Either.isLeft(parsed)) return yield* BotApi.text(ctx, Replies.remindProblem(parsed.left, zone))
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
        yield* Effect.flatMap(ReminderStore, (store) => store.add(reminder))
        yield* BotApi.ingest([BotEvents.reminderCreated({
          chat_id: scope.chat_id,
          topic_id: scope.topic_id,
          source_message_id: scope.message_id,
          due_at: reminder.due_at,
          label: Replies.short(reminder.text, 200),
          created_by_user_id: scope.sender_user_id,
          actor_user_id: scope.sender_user_id
        })])
        yield* Reminders.wake
        yield* BotApi.text(ctx, Replies.reminderSet(reminder, now, zone))
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
          yield* BotApi.ingest(BotEvents.remindersListed({
            chat_id: scope.chat_id,
            object_ids: list.map((r) => r.object_id),
            listed_in: scope.message_id
          }))
        }
        yield* BotApi.reply(ctx, reply)
      })
  },
  {
    name: "poll",
    description: "A poll: /poll question | option | option",
    scopes: everywhere,
    handler: (ctx, scope) =>
      Effect.gen(function*() {
        const parsed = Replies.parsePoll(ctx.payload)
        if (typeof parsed === "string") return yield* BotApi.text(ctx, parsed)
        const creator = ctx.from?.id
        const sent = yield* BotApi.call<Message.PollMessage>("sendPoll", {
          ...BotApi.where(scope.chat_id, scope.topic_id),
          question: parsed.question,
          options: parsed.options.map((o) => ({ text: o })),
          is_anonymous: false,
          reply_parameters: { message_id: Number(scope.message_id), allow_sending_without_reply: true },
          ...(creator === undefined ? {} : BotApi.markup([[{ text: "Close poll", callback_data: `pc:${creator}` }]]))
        })
        yield* BotApi.recordSent(sent, scope)
        yield* BotApi.ingest([BotEvents.pollCreated({
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
        if (target === undefined || !("poll" in target) || target.from?.id !== ctx.botInfo.id || from === undefined) {
          return yield* BotApi.text(ctx, "Reply to one of my polls with /closepoll to close it.")
        }
        const object = yield* Effect.flatMap(ContextStore, (s) => s.object(scope.chat_id, objectIdFor(scope.chat_id, String(target.message_id), "poll", 0)))
          .pipe(Effect.orElseSucceed(() => Option.none()))
        const creator = Option.match(object, { onNone: () => null, onSome: (o) => o.created_by_user_id ?? null })
        yield* BotApi.text(ctx, yield* closePoll(Number(scope.destination.chat_id), target.message_id, from, creator, BotApi.speaksAsChat(ctx)))
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
        const current = yield* BotApi.zoneOf(scope.chat_id)
        if (wanted === "") {
          return yield* BotApi.text(ctx, `This chat's time zone is ${current} (${Times.formatLocal(now, now, current)} now). Change it with /timezone Europe/Berlin`)
        }
        if (!Times.isTimeZone(wanted)) {
          return yield* BotApi.text(ctx, `I don't know the time zone “${Replies.short(wanted, 40)}”. Use a name like Europe/Berlin, America/New_York or Asia/Tokyo.`)
        }
        const from = ctx.from?.id
        if (ctx.chat?.type !== "private" && !BotApi.speaksAsChat(ctx) && (from === undefined || !(yield* BotApi.isAdmin(scope.destination.chat_id, from)))) {
          return yield* BotApi.text(ctx, "Only an admin can change this chat's time zone.")
        }
        const zone = Times.canonicalZone(wanted)
        yield* ChatSettings.setTimeZone(scope.chat_id, zone, scope.sender_user_id)
        yield* BotApi.text(ctx, `Time zone set: ${zone}. It is ${Times.formatLocal(now, now, zone)} now.`)
      })
  },
  {
    name: "state",
    description: "This topic's saved conversation state",
    scopes: everywhere,
    handler: (ctx, scope) =>
      Effect.flatMap(ConversationState, (state) => state.render({ chat_id: scope.chat_id, topic_id: scope.topic_id })).pipe(
        Effect.flatMap((rendered) => BotApi.text(ctx, rendered))
      )
  }
]
