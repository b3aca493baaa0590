/**
 * The bot: its intake (map an update once, record it, answer it) over two tables — the
 * commands (`Commands.all`) and the buttons (`Buttons.all`) — and two services provided by
 * Layers: the bot's side of Telegram (`BotApi`) and its LLM turns (`LlmTurns.LlmTurns`). Nothing
 * starts on import; `Runner.launch` connects a built bot to Telegram.
 *
 * Every answer is a reply to the message that asked, in its topic; every failure ends in an
 * apology with a hint, never silence. Each update is handled in a scope of its own: the
 * Effects its handlers start (an LLM turn included) are interrupted when that scope closes
 * (shutdown), so nothing outlives the update.
 *
 * @since 0.1.0
 */
import * as BotEvents from "@deixis/core/BotEvents"
import { isMigratedMessageId } from "@deixis/core/Ids"
import type { ClaimedReminder } from "@deixis/core/ReminderStore"
import { ReminderStore } from "@deixis/core/ReminderStore"
import { DeixisTelegraf, TelegramRecorder, UpdateMapper } from "@deixis/telegraf"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Runtime from "effect/Runtime"
import { Composer, Context as TelegrafContext } from "telegraf"
import type { Middleware, MiddlewareFn, Types } from "telegraf"
import type { Message, Update } from "telegraf/types"
import * as BotApi from "./BotApi.js"
import * as Buttons from "./Buttons.js"
import * as Commands from "./Commands.js"
import type * as Llm from "./LlmConfig.js"
import * as LlmTurns from "./LlmTurns.js"
import type * as Reminders from "./Reminders.js"
import * as Replies from "./Replies.js"
import * as TelegramSend from "./TelegramSend.js"

/**
 * What the bot needs: deixis over every store (`DeixisServices`, the composition every
 * entrance uses), the reminder store and the update inbox among them, and the reminder
 * sender's wake-up call.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = BotApi.Services

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
  "message_reaction",
  // Bot API 10, not yet in Telegraf's types: a guest message, answered by an LLM turn.
  "guest_message" as Types.UpdateType
]

/**
 * A built bot.
 *
 * @since 0.1.0
 * @category models
 */
export interface Bot {
  /** The bot's side of Telegram: its client, identity and send policy. */
  readonly api: BotApi.Service
  /** Maps an update (untrusted JSON) once, with the bot's identity: what intake passes on. */
  readonly map: (update: unknown) => UpdateMapper.MappedUpdate
  /**
   * Whether a handler may act on the update (a command, a button, an LLM turn): an update that
   * needs none is only recorded, with its chat's neighbours in one unit of work. Reads the
   * mapped form only when the JSON leaves it open (intake may map it later, when recording).
   */
  readonly needsAnswer: (arrival: Arrival) => boolean
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
  readonly commands: ReadonlyArray<Commands.Command>
  /**
   * Called when an update arrives, before it waits behind its chat's earlier ones: a newer
   * message addressed to the bot cancels the same person's LLM turn in progress in its topic.
   * Reads the mapped form only in LLM mode.
   */
  readonly preempt: (arrival: Arrival) => Effect.Effect<void>
}

/**
 * An update as intake holds it: its JSON, and its mapped form — which intake may compute on
 * first read (a getter), so that an update needing no answer is mapped when it is recorded.
 *
 * @since 0.3.0
 * @category models
 */
export interface Arrival {
  readonly update: Record<string, unknown>
  readonly mapped: UpdateMapper.MappedUpdate
}

/**
 * What a bot is built from besides its services: its tables, and Telegraf middleware of the
 * application's own.
 *
 * @since 0.3.0
 * @category models
 */
export interface Tables {
  /** The commands (default: `Commands.all`). */
  readonly commands?: ReadonlyArray<Commands.Command> | undefined
  /** The buttons (default: `Buttons.all`). */
  readonly buttons?: ReadonlyArray<Buttons.Button> | undefined
  /**
   * Telegraf middleware run after the commands and buttons, before an LLM turn (e.g. a handler
   * written for Telegraf). It runs in the update's scope like the rest.
   */
  readonly middleware?: ReadonlyArray<Middleware<Commands.Context>> | undefined
}

/**
 * What {@link make} takes: the Telegram settings (`BotApi.Options`), the LLM mode (off when
 * absent or None) and the tables.
 *
 * @since 0.3.0
 * @category models
 */
export type Options = BotApi.Options & Tables & {
  readonly llm?: Option.Option<Llm.LlmConfig> | undefined
}

// An update the mapper refused (a field of the wrong type, an impossible date) was recorded as
// nothing; the handlers would meet the same fields (Telegraf's own matchers throw on them): it
// is logged with the mapper's reason and goes no further.
const refused = (mapped: UpdateMapper.MappedUpdate) =>
  mapped.skipped !== undefined && (mapped.skipped.startsWith("malformed") || mapped.skipped.startsWith("unmappable"))

// Handler failures other than an interruption (shutdown) end in `apologize`.
const orApologize = <R>(label: string, apologize: Effect.Effect<void, never, R>) =>
<E, R2>(effect: Effect.Effect<void, E, R2>) =>
  effect.pipe(Effect.catchAllCause((cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.failCause(cause)
      : Effect.logError(`${label} failed`, cause).pipe(Effect.zipRight(apologize))
  ))

/**
 * The middleware of the tables, in the order they are tried: commands (they do not fall
 * through), buttons, the application's own middleware, then an LLM turn for any other
 * message (when LLM mode is on).
 *
 * @since 0.3.0
 * @category constructors
 */
export const middleware = (
  tables: { readonly [K in keyof Tables]-?: NonNullable<Tables[K]> },
  turns: LlmTurns.Turns
): MiddlewareFn<Commands.Context> => {
  const composer = new Composer<Commands.Context>()
  for (const { handler, name } of tables.commands) {
    composer.command(name, (ctx) => {
      const scope = ctx.deixis.scope
      return ctx.effects(
        scope === undefined ? Effect.void : handler(ctx, scope).pipe(
          // Whatever failed, the person who asked gets an answer.
          orApologize(`/${name}`, BotApi.text(ctx, Replies.sorry(name))),
          Effect.annotateLogs({ command: name, chat_id: scope.chat_id, topic_id: scope.topic_id ?? "none" })
        )
      )
    })
  }
  for (const { handler, name, pattern } of tables.buttons) {
    composer.action(pattern, (ctx) =>
      ctx.effects(handler(ctx, ctx.match).pipe(
        orApologize("button", Buttons.answerCallback(ctx, "Sorry — that did not work. Please try again.")),
        Effect.annotateLogs({ button: name })
      )))
  }
  composer.use(...tables.middleware)
  if (turns.enabled) {
    composer.on("message", (ctx) => ctx.effects(turns.answer(ctx)))
    // Telegraf does not know guest messages: the turn answers them with answerGuestQuery.
    composer.use((ctx, next) => ("guest_message" in ctx.update ? ctx.effects(turns.answer(ctx)) : next()))
  }
  return composer.middleware()
}

/**
 * Sends one claimed reminder as a reply to the message that set it (when it can), records it
 * and the `reminder_fired` event, and says what came of it.
 *
 * @since 0.3.0
 * @category reminders
 */
export const sendReminder = (r: ClaimedReminder): Effect.Effect<Reminders.Outcome, never, BotApi.BotApi | Services> =>
  BotApi.call<Message>("sendMessage", {
    ...BotApi.where(r.chat_id, r.topic_id),
    text: Replies.fired(r),
    // A reminder from before its group's upgrade cannot reply across chats.
    ...(isMigratedMessageId(r.source_message_id)
      ? {}
      : { reply_parameters: { message_id: Number(r.source_message_id), allow_sending_without_reply: true } })
  }).pipe(
    Effect.flatMap((sent) =>
      Effect.uninterruptible(Effect.all([
        BotApi.recordSent(sent),
        BotApi.ingest([BotEvents.reminderFired({ chat_id: r.chat_id, object_id: r.object_id })])
      ]))
    ),
    Effect.as<Reminders.Outcome>({ _tag: "sent" }),
    Effect.catchAll((error): Effect.Effect<Reminders.Outcome> =>
      error.migrate_to_chat_id !== undefined && error.migrate_to_chat_id !== null
        ? Effect.succeed({ _tag: "migrated", to: String(error.migrate_to_chat_id) })
        : TelegramSend.isRetryable(error) || error.timed_out === true
        ? Effect.as(Effect.logWarning("reminder not sent; trying again later", error), { _tag: "retry" })
        : Effect.succeed({ _tag: "drop", reason: error.message })
    )
  )

/**
 * Builds the bot over its services: `BotApi` and `LlmTurns.LlmTurns` from the context (see
 * {@link layer}), the tables given (the defaults when not). Updates can be fed with `handle`
 * right away.
 *
 * @since 0.3.0
 * @category constructors
 */
export const build = (tables: Tables = {}): Effect.Effect<Bot, never, Services | BotApi.BotApi | LlmTurns.LlmTurns> =>
  Effect.gen(function*() {
    const api = yield* BotApi.BotApi
    const turns = yield* LlmTurns.LlmTurns
    const store = yield* ReminderStore
    // A group upgraded to a supergroup: the recorder moves every store's data, the reminders too.
    const runtime = yield* Effect.runtime<Commands.Services>().pipe(
      Effect.provideService(TelegramRecorder.ChatMigrators, [store.migrateChat])
    )
    const commands = tables.commands ?? Commands.all
    const handlers = middleware({ commands, buttons: tables.buttons ?? Buttons.all, middleware: tables.middleware ?? [] }, turns)

    const map = (update: unknown) => UpdateMapper.mapUpdate(update, api.identity())

    // `arrival.mapped` may be a getter that maps: read only when needed.
    const needsAnswer = (arrival: Arrival): boolean => {
      const update = arrival.update
      let candidate = update["callback_query"] !== undefined
      if (!candidate) {
        const message = update["message"] ?? update["channel_post"] ?? update["edited_message"] ?? update["edited_channel_post"]
        // A command (Telegraf matches `/name` at the start of a text or a caption).
        const text = Predicate.isRecord(message) ? message["text"] ?? message["caption"] : undefined
        candidate = typeof text === "string" && text.startsWith("/")
      }
      // Anything else is answered only by an LLM turn: with LLM mode off, no mapping is needed.
      if (!candidate && !turns.enabled) return false
      const mapped = arrival.mapped
      return !refused(mapped) && (candidate || turns.addresses(mapped))
    }

    const record = (mapped: ReadonlyArray<UpdateMapper.MappedUpdate>): Effect.Effect<void, DeixisTelegraf.RecordFailed> =>
      Effect.suspend(() => {
        const warnings = mapped.filter(refused).map((m) =>
          Effect.logWarning("malformed update ignored").pipe(Effect.annotateLogs({ update_id: m.update_id ?? "none", reason: m.skipped! }))
        )
        const recorded = TelegramRecorder.recordMapped(mapped, BotApi.recordOptions(api)).pipe(
          Effect.asVoid,
          Effect.mapError((cause) => new DeixisTelegraf.RecordFailed({ update_id: mapped[0]?.update_id ?? null, cause })),
          Effect.provide(runtime.context)
        )
        return warnings.length === 0 ? recorded : Effect.zipRight(Effect.all(warnings, { discard: true }), recorded)
      })

    const noop = () => Promise.resolve()
    const answer = (update: Record<string, unknown>, mapped: UpdateMapper.MappedUpdate): Effect.Effect<void> =>
      refused(mapped) ? Effect.void : Effect.scoped(Effect.gen(function*() {
        const me = yield* api.me
        const fibers = yield* FiberSet.make<unknown, unknown>()
        const effects = yield* FiberSet.runtimePromise(fibers)<Commands.Services>()
        const ctx = new TelegrafContext(update as unknown as Update, api.telegram, me) as Commands.Context
        ctx.deixis = DeixisTelegraf.contextApi(ctx, mapped, { run: effects, record: BotApi.recordOptions(api) })
        ctx.effects = effects
        yield* Effect.tryPromise({ try: () => Promise.resolve(handlers(ctx, noop)), catch: (error) => error })
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
          yield* Effect.orDie(api.me)
          const mapped = map(update)
          yield* record([mapped])
          yield* answer(update, mapped)
        })
        : Effect.logWarning("malformed update ignored")

    return {
      api,
      map,
      needsAnswer,
      record,
      answer,
      handle,
      preempt: turns.enabled ? (arrival) => turns.preempt(arrival.mapped) : () => Effect.void,
      fireReminder: (r) => Effect.provide(sendReminder(r), runtime.context),
      commands
    }
  })

/**
 * The bot's two services: `BotApi` over the Telegram settings, and the LLM turns of the LLM
 * mode (`LlmTurns.layerTurns`: off when absent or None).
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = (options: Pick<Options, keyof BotApi.Options | "llm">) =>
  Layer.provideMerge(LlmTurns.layerTurns(options.llm), BotApi.layer(options))

/**
 * Builds the bot ({@link build}) with its services from {@link layer}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): Effect.Effect<Bot, never, Services> => Effect.provide(build(options), layer(options))
