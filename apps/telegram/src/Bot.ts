/**
 * The deployable bot: a factory ({@link make}) that builds a Telegraf bot over the deixis
 * services and registers the commands, and {@link launch} / {@link layer} that connect it to
 * Telegram (long polling, or a webhook with its secret checked) for the lifetime of a scope.
 * Nothing starts on import.
 *
 * @since 0.1.0
 */
import * as BotEvents from "@deixis/core/BotEvents"
import type { ContextEvent } from "@deixis/core/ContextEvent"
import { ConversationState } from "@deixis/core/ConversationState"
import { ContextIngest } from "@deixis/core/ContextIngest"
import { isMigratedMessageId, migratedMessageId } from "@deixis/core/Ids"
import { objectIdFor } from "@deixis/core/ContextObject"
import { ContextStore, StoreError } from "@deixis/core/ContextStore"
import { TargetKindHint } from "@deixis/core/ObjectKind"
import { DeixisTelegraf, TelegramRecorder, UpdateMapper } from "@deixis/telegraf"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberMap from "effect/FiberMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as crypto from "node:crypto"
import * as http from "node:http"
import { Telegraf } from "telegraf"
import type { Types } from "telegraf"
import type { Message, Update } from "telegraf/types"
import type { BotConfig, SendPolicy, Transport } from "./BotConfig.js"
import * as Llm from "./Llm.js"
import * as Reminders from "./Reminders.js"
import * as Replies from "./Replies.js"
import * as TelegramSend from "./TelegramSend.js"

/**
 * What the bot needs: the deixis services and the reminder store.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = DeixisTelegraf.Services | Reminders.ReminderStore

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
 * A built bot.
 *
 * @since 0.1.0
 * @category models
 */
export interface Bot {
  readonly telegraf: Telegraf<DeixisTelegraf.DeixisContext>
  /** Hands one update (untrusted JSON) to the bot; never fails. Malformed updates are logged and dropped. */
  readonly handle: (update: unknown) => Effect.Effect<void>
  /** The reminders with a running timer. */
  readonly scheduled: Effect.Effect<ReadonlyArray<string>>
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isHint = Schema.is(TargetKindHint)

type CommandContext = DeixisTelegraf.DeixisContext & { readonly payload: string }

/**
 * Builds the bot: middleware, commands, buttons, and timers for every pending reminder.
 * Updates can be fed with `handle` right away; {@link launch} connects it to Telegram.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Pick<BotConfig, "token" | "apiRoot" | "mode" | "send" | "reminderRetryDelay"> & {
    /** LLM mode (off when absent or None). */
    readonly llm?: Option.Option<Llm.LlmConfig> | undefined
  }
): Effect.Effect<Bot, never, Services | Scope.Scope> =>
  Effect.gen(function*() {
    const store = yield* Reminders.ReminderStore
    const timers = yield* FiberMap.make<string>()
    const services = yield* Effect.context<Services>()
    // A group upgraded to a supergroup takes its pending reminders along (rescheduled under the new chat).
    const migrateReminders: TelegramRecorder.ChatMigrator = (from, to) =>
      Effect.gen(function*() {
        const pending = yield* store.forChat(from)
        for (const r of pending) {
          const moved: Reminders.Reminder = { ...r, chat_id: to, source_message_id: migratedMessageId(r.source_message_id) }
          yield* store.add(moved)
          yield* schedule(moved)
        }
        return pending.length
      }).pipe(Effect.mapError((e) => new StoreError({ message: e.message })), Effect.provide(services))
    const runtime = yield* Effect.runtime<Services>().pipe(
      Effect.provideService(TelegramRecorder.ChatMigrators, [migrateReminders])
    )
    const run = Runtime.runPromise(runtime)
    const telegraf = new Telegraf<DeixisTelegraf.DeixisContext>(Redacted.value(options.token), {
      telegram: { apiRoot: options.apiRoot, webhookReply: false }
    })

    // Every update is recorded first; the commands below then read ctx.deixis.
    telegraf.use(DeixisTelegraf.middleware(runtime, { mode: options.mode }))

    const call = <A>(method: string, f: () => Promise<A>) => TelegramSend.send(method, f, options.send)
    const recordOptions = () => ({ botId: String(telegraf.botInfo?.id ?? ""), mode: options.mode })
    const recordSent = (message: Message, answering?: UpdateMapper.MessageScope) =>
      DeixisTelegraf.recordSent(message, { ...recordOptions(), answering })
    const ingest = (events: ReadonlyArray<ContextEvent>) =>
      Effect.flatMap(ContextIngest, (i) => i.apply(events)).pipe(
        Effect.tapError((error) => Effect.logWarning("events not recorded", error)),
        Effect.option
      )
    const markup = (reply: Replies.Reply) =>
      reply.buttons.length === 0 ? {} : { reply_markup: { inline_keyboard: reply.buttons.map((row) => row.map((b) => ({ ...b }))) } }
    const reply = (ctx: DeixisTelegraf.DeixisContext, r: Replies.Reply) =>
      call("sendMessage", () => ctx.reply(r.text, markup(r))).pipe(
        Effect.flatMap((sent) => recordSent(sent, ctx.deixis.scope)),
        Effect.asVoid,
        Effect.catchAll((error) => Effect.logError("reply not sent", error))
      )
    const text = (ctx: DeixisTelegraf.DeixisContext, t: string) => reply(ctx, { text: t, buttons: [] })

    // Reminders: a timer per pending reminder; the send is retried, the bookkeeping after it
    // is not interrupted, and a reminder leaves the store only once its message is out.
    const fire = (r: Reminders.Reminder): Effect.Effect<void, never, Services> =>
      call("sendMessage", () => {
        const thread = UpdateMapper.threadIdFor(r.topic_id)
        return telegraf.telegram.sendMessage(Number(r.chat_id), Replies.fired(r), {
          ...(thread === undefined ? {} : { message_thread_id: thread }),
          // A reminder from before its group's upgrade cannot reply across chats.
          ...(isMigratedMessageId(r.source_message_id)
            ? {}
            : { reply_parameters: { message_id: Number(r.source_message_id), allow_sending_without_reply: true } })
        })
      }).pipe(
        Effect.flatMap((sent) =>
          Effect.uninterruptible(Effect.all([
            recordSent(sent),
            ingest([BotEvents.reminderFired({ chat_id: r.chat_id, object_id: r.object_id })]),
            store.remove(r.object_id).pipe(Effect.catchAll((error) => Effect.logError("fired reminder not removed", error)))
          ]))
        ),
        Effect.asVoid,
        Effect.catchAll((error) =>
          TelegramSend.isRetryable(error)
            ? Effect.logWarning("reminder not sent; trying again later", error).pipe(
              Effect.zipRight(Effect.sleep(options.reminderRetryDelay)),
              Effect.zipRight(Effect.suspend(() => fire(r)))
            )
            : Effect.logError("reminder cannot be delivered; dropped", error).pipe(
              Effect.zipRight(Effect.ignore(store.remove(r.object_id)))
            )
        ),
        Effect.annotateLogs({ object_id: r.object_id, chat_id: r.chat_id })
      )
    const schedule = (r: Reminders.Reminder) =>
      FiberMap.run(
        timers,
        r.object_id,
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sleep(Duration.millis(Math.max(0, r.due_at - now)))).pipe(
          Effect.zipRight(fire(r))
        )
      )

    const command = (
      name: string,
      f: (ctx: CommandContext, scope: UpdateMapper.MessageScope) => Effect.Effect<void, never, Services>
    ) =>
      telegraf.command(name, (ctx) => {
        const scope = ctx.deixis.scope
        return run(
          scope === undefined ? Effect.void : f(ctx, scope).pipe(
            Effect.annotateLogs({ command: name, chat_id: scope.chat_id, topic_id: scope.topic_id ?? "none" })
          )
        )
      })

    command("context", (ctx, scope) =>
      DeixisTelegraf.listActive(scope, { max_results: 10 }).pipe(
        Effect.flatMap((result) => reply(ctx, Replies.context(result))),
        Effect.catchAll((error) => Effect.logError("/context failed", error))
      ))

    command("what", (ctx, scope) => {
      const word = ctx.payload.trim().split(/\s+/)[0] ?? ""
      if (word !== "" && !isHint(word)) return text(ctx, "usage: /what [poll|reminder|image|file|article|link|video|voice|pdf|summary|message], or reply to a message")
      // A resolution the user asked for is a resolver touch of what it found.
      return DeixisTelegraf.resolve(scope, {
        record_touch: true,
        ...(word === "" ? {} : { normalized_reference_hints: { target_kind_hint: word } })
      }).pipe(
        Effect.flatMap((result) => reply(ctx, Replies.what(result))),
        Effect.catchAll((error) => Effect.logError("/what failed", error))
      )
    })

    command("remind", (ctx, scope) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const parsed = Reminders.parseRemind(ctx.payload, now)
        if (Either.isLeft(parsed)) return yield* text(ctx, parsed.left)
        const reminder: Reminders.Reminder = {
          object_id: objectIdFor(scope.chat_id, scope.message_id, "reminder", 0),
          chat_id: scope.chat_id,
          topic_id: scope.topic_id,
          source_message_id: scope.message_id,
          created_by_user_id: scope.sender_user_id,
          text: parsed.right.text,
          due_at: parsed.right.due_at,
          created_at: now
        }
        const saved = yield* Effect.either(store.add(reminder))
        if (Either.isLeft(saved)) {
          yield* Effect.logError("reminder not saved", saved.left)
          return yield* text(ctx, "Could not save the reminder; try again.")
        }
        yield* ingest([BotEvents.reminderCreated({
          chat_id: scope.chat_id,
          topic_id: scope.topic_id,
          source_message_id: scope.message_id,
          due_at: reminder.due_at,
          label: reminder.text,
          actor_user_id: scope.sender_user_id
        })])
        yield* schedule(reminder)
        yield* text(ctx, Replies.reminderSet(reminder))
      }))

    command("reminders", (ctx, scope) =>
      Effect.gen(function*() {
        const list = yield* store.forChat(scope.chat_id)
        if (list.length > 0) {
          yield* ingest(BotEvents.remindersListed({
            chat_id: scope.chat_id,
            object_ids: list.map((r) => r.object_id),
            listed_in: scope.message_id
          }))
        }
        yield* reply(ctx, Replies.reminders(list, scope.sender_user_id))
      }).pipe(Effect.catchAll((error) => Effect.logError("/reminders failed", error))))

    command("poll", (ctx, scope) => {
      const parsed = Replies.parsePoll(ctx.payload)
      if (typeof parsed === "string") return text(ctx, parsed)
      return call("sendPoll", () => ctx.replyWithPoll(parsed.question, [...parsed.options], { is_anonymous: false })).pipe(
        Effect.tap((sent) => recordSent(sent, scope)),
        Effect.flatMap((sent) =>
          ingest([BotEvents.pollCreated({
            chat_id: scope.chat_id,
            topic_id: scope.topic_id,
            message_id: String(sent.message_id),
            poll_id: sent.poll.id,
            question: parsed.question
          })])
        ),
        Effect.asVoid,
        Effect.catchAll((error) => Effect.logError("/poll failed", error))
      )
    })

    command("state", (ctx, scope) =>
      Effect.flatMap(ConversationState, (state) => state.render({ chat_id: scope.chat_id, topic_id: scope.topic_id })).pipe(
        Effect.flatMap((rendered) => text(ctx, rendered)),
        Effect.catchAll((error) => Effect.logError("/state failed", error))
      ))

    const answer = (ctx: DeixisTelegraf.DeixisContext, t: string) =>
      call("answerCallbackQuery", () => ctx.answerCbQuery(t)).pipe(Effect.catchAll((error) => Effect.logWarning("callback not answered", error)))

    // A candidate button of an ambiguous /what: resolve on press.
    telegraf.action(/^w:(.+)$/, (ctx) =>
      run(Effect.gen(function*() {
        const chat = ctx.callbackQuery.message?.chat.id
        const objectId = ctx.match[1] ?? ""
        if (chat === undefined) return yield* answer(ctx, "Too old.")
        const found = yield* Effect.flatMap(ContextStore, (s) => s.object(String(chat), objectId)).pipe(Effect.option, Effect.map(Option.flatten))
        if (Option.isNone(found)) return yield* answer(ctx, "That one is gone.")
        yield* ingest([BotEvents.resolverTouch({
          chat_id: String(chat),
          object_id: objectId,
          because_of: `cb:${ctx.callbackQuery.id}`,
          actor_user_id: String(ctx.from.id)
        })])
        yield* answer(ctx, "Resolved.")
        yield* call("editMessageText", () => ctx.editMessageText(`Resolved: ${Replies.describe(found.value)}`)).pipe(
          Effect.catchAll((error) => Effect.logWarning("message not edited", error))
        )
      })))

    // A cancel button of /reminders: only the reminder's creator may cancel it.
    telegraf.action(/^rc:(.+)$/, (ctx) =>
      run(Effect.gen(function*() {
        const objectId = ctx.match[1] ?? ""
        const found = yield* Effect.orElseSucceed(store.get(objectId), () => undefined)
        if (found === undefined) return yield* answer(ctx, "Already done or cancelled.")
        if (found.created_by_user_id !== null && found.created_by_user_id !== String(ctx.from.id)) {
          return yield* answer(ctx, "Only its creator can cancel it.")
        }
        yield* FiberMap.remove(timers, objectId)
        const removed = yield* Effect.either(store.remove(objectId))
        if (Either.isLeft(removed)) {
          yield* Effect.logError("reminder not cancelled", removed.left)
          return yield* answer(ctx, "Could not cancel; try again.")
        }
        yield* ingest([BotEvents.reminderCancelled({ chat_id: found.chat_id, object_id: objectId, actor_user_id: String(ctx.from.id) })])
        yield* answer(ctx, "Cancelled.")
        yield* text(ctx, `Cancelled: ${found.text}`)
      })))

    // LLM mode: after the commands (they do not fall through), any message addressing the bot.
    if (options.llm !== undefined && Option.isSome(options.llm)) {
      const assistant = yield* Llm.make(options.llm.value)
      telegraf.on("message", (ctx) =>
        run(assistant.answer(
          ctx,
          (t, replyTo) =>
            call("sendMessage", () => ctx.reply(t, { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } })).pipe(
              Effect.flatMap((sent) => recordSent(sent, ctx.deixis.scope)),
              Effect.asVoid,
              Effect.catchAll((error) => Effect.logError("reply not sent", error))
            ),
          options.mode
        )))
    }

    telegraf.catch((error, ctx) =>
      run(Effect.logError("update handler failed", error).pipe(Effect.annotateLogs({ update_id: ctx.update.update_id })))
    )

    const pending = yield* store.all.pipe(
      Effect.tapError((error) => Effect.logError("pending reminders not loaded", error)),
      Effect.orElseSucceed((): ReadonlyArray<Reminders.Reminder> => [])
    )
    yield* Effect.forEach(pending, schedule, { discard: true })
    if (pending.length > 0) yield* Effect.logInfo("pending reminders scheduled").pipe(Effect.annotateLogs({ count: pending.length }))

    const handle = (update: unknown): Effect.Effect<void> =>
      isRecord(update) && Number.isSafeInteger(update["update_id"])
        ? Effect.tryPromise(() => telegraf.handleUpdate(update as unknown as Update)).pipe(
          Effect.catchAll((error) => Effect.logWarning("update not handled", error)),
          // An update being handled is finished, even when the bot is stopping.
          Effect.uninterruptible
        )
        : Effect.logWarning("malformed update ignored")

    return {
      telegraf,
      handle,
      scheduled: Effect.sync(() => Array.from(timers, ([key]) => key))
    }
  })

type CallApiSignal = NonNullable<NonNullable<Parameters<Telegraf["telegram"]["callApi"]>[2]>["signal"]>

const pollingPolicy = (policy: SendPolicy): SendPolicy => ({ ...policy, maxAttempts: Number.MAX_SAFE_INTEGER })

const longPoll = (bot: Bot, policy: SendPolicy) =>
  Effect.gen(function*() {
    let offset = 0
    while (true) {
      const updates = yield* TelegramSend.send(
        "getUpdates",
        (signal) =>
          bot.telegraf.telegram.callApi("getUpdates", { timeout: 30, offset, allowed_updates: [...allowedUpdates] }, {
            // Telegraf types the signal with its abort-controller polyfill; node-fetch takes the standard one.
            signal: signal as unknown as CallApiSignal
          }),
        pollingPolicy(policy)
      )
      for (const update of updates as ReadonlyArray<unknown>) {
        const id = isRecord(update) ? update["update_id"] : undefined
        if (typeof id === "number" && Number.isSafeInteger(id) && id >= offset) offset = id + 1
        yield* bot.handle(update)
      }
    }
  })

const secretHeader = "x-telegram-bot-api-secret-token"
const maxBody = 1024 * 1024

const sameSecret = (given: string | Array<string> | undefined, secret: string) => {
  if (typeof given !== "string") return false
  const a = Buffer.from(given)
  const b = Buffer.from(secret)
  return a.length === b.length && crypto.timingSafeEqual(a, b)
}

const webhookServer = (bot: Bot, path: string, secret: string, port: number, host: string) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const server = http.createServer((req, res) => {
      if (req.method !== "POST" || (req.url ?? "").split("?")[0] !== path) return void res.writeHead(404).end()
      if (!sameSecret(req.headers[secretHeader], secret)) return void res.writeHead(401).end()
      const chunks: Array<Buffer> = []
      let size = 0
      req.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size > maxBody) req.destroy()
        else chunks.push(chunk)
      })
      req.on("end", () => {
        let update: unknown
        try {
          update = JSON.parse(Buffer.concat(chunks).toString("utf8"))
        } catch {
          return void res.writeHead(400).end()
        }
        void Runtime.runPromise(runtime)(bot.handle(update)).then(() => res.writeHead(200).end())
      })
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => void server.listen(port, host, () => resume(Effect.void))),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeIdleConnections()
        })
    )
    const address = server.address()
    return typeof address === "object" && address !== null ? address.port : port
  })

/**
 * Connects a built bot to Telegram for the lifetime of the scope: `getMe`, then long polling
 * (after `deleteWebhook`), or a webhook server plus `setWebhook` with a secret token (the
 * configured one, or a random one). Closing the scope stops polling (an update being handled
 * is finished) or closes the server.
 *
 * @since 0.1.0
 * @category launching
 */
export const launch = (
  bot: Bot,
  transport: Transport,
  policy: SendPolicy
): Effect.Effect<{ readonly port: number | null }, TelegramSend.SendError, Scope.Scope> =>
  Effect.gen(function*() {
    const me = yield* TelegramSend.send("getMe", () => bot.telegraf.telegram.getMe(), policy)
    bot.telegraf.botInfo = me
    yield* Effect.addFinalizer(() => Effect.logInfo("bot stopped"))
    if (transport._tag === "polling") {
      yield* TelegramSend.send("deleteWebhook", () => bot.telegraf.telegram.deleteWebhook({ drop_pending_updates: false }), policy)
      yield* Effect.forkScoped(
        longPoll(bot, policy).pipe(Effect.tapErrorCause((cause) => Effect.logError("long polling stopped", cause)))
      )
      yield* Effect.logInfo("bot started with long polling").pipe(Effect.annotateLogs({ username: me.username }))
      return { port: null }
    }
    const secret = Option.match(transport.secret, {
      onNone: () => crypto.randomBytes(32).toString("hex"),
      onSome: Redacted.value
    })
    const path = new URL(transport.url).pathname
    const port = yield* webhookServer(bot, path, secret, transport.port, transport.host)
    yield* TelegramSend.send(
      "setWebhook",
      () => bot.telegraf.telegram.setWebhook(transport.url, { secret_token: secret, allowed_updates: [...allowedUpdates] }),
      policy
    )
    yield* Effect.logInfo("bot started with a webhook").pipe(Effect.annotateLogs({ username: me.username, port }))
    return { port }
  })

/**
 * The bot as a layer: built and launched when the layer is, stopped when it is released.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (config: BotConfig): Layer.Layer<never, TelegramSend.SendError, Services> =>
  Layer.scopedDiscard(Effect.flatMap(make(config), (bot) => launch(bot, config.transport, config.send)))
