/**
 * LLM turns on Telegram: which messages start one, the turn through the bot's `BotApi` (typing
 * indicator or streamed drafts, then the answer), and preemption by a newer message.
 *
 * @since 0.4.0
 */
import type { DeixisTelegraf, UpdateMapper } from "@deixis/telegraf"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as BotApi from "./BotApi.js"
import { make, mentionsAlias, type TurnIo } from "./Llm.js"
import type { LlmConfig } from "./LlmConfig.js"

/**
 * LLM turns as the bot sees them: which messages start a turn (decided before any model call),
 * the turn itself, and preemption. A newer message from the same person in the same topic,
 * addressed to the bot, cancels their turn in progress: no answer is sent for it, and the newer
 * message is answered with the earlier one in its history.
 *
 * @since 0.3.0
 * @category models
 */
export interface Turns {
  /** Whether LLM mode is on (`LLM_BASE_URL` set). */
  readonly enabled: boolean
  /** Whether the bot answers this message: addressed to it, or naming an alias. */
  readonly addresses: (mapped: UpdateMapper.MappedUpdate) => boolean
  /** Called when an update arrives, before it waits behind its chat's earlier ones. */
  readonly preempt: (mapped: UpdateMapper.MappedUpdate) => Effect.Effect<void>
  /** Answers the message of `ctx` (when it addresses the bot) in a turn a newer one may cancel. Never fails. */
  readonly answer: (ctx: DeixisTelegraf.DeixisContext) => Effect.Effect<void, never, BotApi.BotApi | BotApi.Services>
}

/**
 * The bot's LLM turns: provided by {@link layerTurns}.
 *
 * @since 0.3.0
 * @category tags
 */
export class LlmTurns extends Context.Tag("@deixis/telegram-bot/LlmTurns")<LlmTurns, Turns>() {}

/**
 * LLM mode off: no message starts a turn.
 *
 * @since 0.3.0
 * @category constructors
 */
export const turnsOff: Turns = { enabled: false, addresses: () => false, preempt: () => Effect.void, answer: () => Effect.void }

/**
 * LLM turns over the deixis services (as {@link make}), answering on Telegram through the
 * bot's `BotApi`. Turns in progress are kept by chat, topic and sender.
 *
 * @since 0.3.0
 * @category constructors
 */
export const makeTurns = (settings: LlmConfig) =>
  Effect.gen(function*() {
    const assistant = yield* make(settings)
    const turns = new Map<string, Deferred.Deferred<void>>()
    const turnKey = (scope: UpdateMapper.MessageScope) => `${scope.chat_id}/${scope.topic_id ?? ""}/${scope.sender_user_id ?? ""}`
    const addresses = (mapped: UpdateMapper.MappedUpdate) => {
      const scope = mapped.scope
      if (scope === undefined || mapped.skipped !== undefined || (mapped.update_type !== "message" && mapped.update_type !== "guest_message")) {
        return false
      }
      const text = mapped.history.find((i) => i.message_id === scope.message_id)?.text ?? ""
      return mapped.addressed || mentionsAlias(text, settings.aliases)
    }
    const answer = (ctx: DeixisTelegraf.DeixisContext) =>
      Effect.gen(function*() {
        const api = yield* BotApi.BotApi
        const scope = ctx.deixis.scope
        const where = BotApi.whereFor(ctx)
        if (where === undefined) return
        // Drafts go to private chats (a private-chat topic included), never for a guest's query.
        const drafts = ctx.chat?.type === "private" && scope !== undefined && scope.destination.guest_query_id === undefined
        const draftId = scope === undefined ? 1 : Math.max(1, Number(scope.message_id) || 1)
        const io: TurnIo<BotApi.BotApi | BotApi.Services> = {
          send: (t, replyTo) =>
            BotApi.send(ctx, { text: t, buttons: [] }, replyTo).pipe(
              Effect.map((sent) => (sent === undefined ? null : String(sent.message_id))),
              Effect.catchAll((error) => Effect.as(Effect.logError("reply not sent", error), null))
            ),
          typing: api.call("sendChatAction", { ...where, action: "typing" }).pipe(
            Effect.asVoid,
            Effect.catchAll((error) => Effect.logDebug("typing indicator not sent", error))
          ),
          draft: drafts
            ? (text) =>
              api.call("sendMessageDraft", { ...where, draft_id: draftId, text }).pipe(
                Effect.as(true),
                Effect.catchAll((error) => Effect.as(Effect.logDebug("message draft not sent", error), false))
              )
            : undefined
        }
        const turn = assistant.answer(ctx, io, api.mode)
        if (scope === undefined) return yield* turn
        const key = turnKey(scope)
        const superseded = yield* Deferred.make<void>()
        turns.set(key, superseded)
        yield* turn.pipe(
          Effect.raceFirst(Effect.zipRight(
            Deferred.await(superseded),
            Effect.logInfo("LLM turn cancelled: a newer message from the same person in this topic")
          )),
          Effect.ensuring(Effect.sync(() => {
            if (turns.get(key) === superseded) turns.delete(key)
          }))
        )
      })
    return {
      enabled: true,
      addresses,
      preempt: (mapped) =>
        Effect.suspend(() => {
          const scope = mapped.scope
          const superseded = turns.size === 0 || scope === undefined ? undefined : turns.get(turnKey(scope))
          return superseded !== undefined && addresses(mapped) ? Deferred.succeed(superseded, undefined) : Effect.void
        }),
      answer
    } satisfies Turns
  })

/**
 * The bot's LLM turns: {@link makeTurns} when LLM mode is configured, {@link turnsOff} when it
 * is not (absent or None).
 *
 * @since 0.3.0
 * @category layers
 */
export const layerTurns = (settings: Option.Option<LlmConfig> | undefined) =>
  settings !== undefined && Option.isSome(settings)
    ? Layer.effect(LlmTurns, makeTurns(settings.value))
    : Layer.succeed(LlmTurns, turnsOff)

