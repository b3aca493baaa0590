/**
 * LLM mode: when `LLM_BASE_URL` is set, a message addressed to the bot (a mention, a reply to
 * the bot, an alias, a private chat) is answered by a model on any OpenAI-compatible
 * chat-completions server with tools (Ollama, vLLM, llama.cpp, OpenAI…).
 *
 * - Addressing is decided deterministically before any model call: the mapper's `addressed`
 *   (mention, reply to the bot, private chat) or an alias as a whole word. Nothing else calls
 *   the model, whatever the group mode.
 * - The prompt is chathistory's `PromptAssembler`, every turn, in one stable order (for prompt
 *   caching): the system text and the topic's conversation state (core's renderer); the
 *   context loaded by chathistory's ContextLoader (recency window, reply target and window,
 *   reply chain), the bot's own past replies as `assistant` turns; a turn context with the
 *   scope, the gap note and the compact active-object list (core's ActiveContext); the current
 *   message. Bounded by the `DEIXIS_PROMPT_*` token budget; what is cut is said in the prompt.
 * - A bounded tool loop over `@deixis/tools` (default 6 rounds): the bot names every tool call
 *   itself (`deixis_<round>_<index>`), so ids are unique across rounds whatever the server
 *   sends; the tools are pinned to the current chat, topic and sender. After the last round
 *   the model is asked once more without tools. `read_url` reads pages with a `UrlReader` over
 *   `DEIXIS_FETCH_*` (one provided in context wins: tests inject a loopback-only one), each read
 *   counted in the bot's Prometheus registry.
 * - While the model works, the bot shows "typing…" (`sendChatAction`, repeated every
 *   {@link typingInterval}: Telegram shows it for about 5 seconds).
 * - The very first model call failing (not timing out) → one plain call without tools. A
 *   timeout or a later error → a short, clear message. The inbound message and every state
 *   change already made stay recorded.
 *
 * @since 0.1.0
 */
import * as ContextLoader from "@deixis/chathistory/ContextLoader"
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import * as PromptAssembler from "@deixis/chathistory/PromptAssembler"
import * as WritePolicy from "@deixis/chathistory/WritePolicy"
import * as ActiveContext from "@deixis/core/ActiveContext"
import { ContextIngest } from "@deixis/core/ContextIngest"
import * as ConversationState from "@deixis/core/ConversationState"
import type { DeixisTelegraf, UpdateMapper } from "@deixis/telegraf"
import { DeixisToolkit, Envelope, ModelActions, UrlReader } from "@deixis/tools"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import * as Metrics from "./Metrics.js"
import { type ChatMessage, type ChatResponse, complete, type LlmError, tools } from "./LlmClient.js"
import type { LlmConfig } from "./LlmConfig.js"

export {
  /** @since 0.1.0 */
  config,
  /** @since 0.1.0 */
  defaults,
  /** @since 0.1.0 */
  type LlmConfig
} from "./LlmConfig.js"

// -----------------------------------------------------------------------------
// Addressing
// -----------------------------------------------------------------------------

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * Whether `text` calls the bot by one of its aliases, as a whole word, case-insensitive.
 *
 * @since 0.1.0
 * @category addressing
 */
export const mentionsAlias = (text: string, aliases: ReadonlyArray<string>): boolean =>
  aliases.some((alias) => new RegExp(`(^|[^\\p{L}\\p{N}_])${escape(alias)}(?=$|[^\\p{L}\\p{N}_])`, "iu").test(text))

// -----------------------------------------------------------------------------
// The conversation
// -----------------------------------------------------------------------------

/**
 * How often the typing indicator is repeated during a model turn (Telegram shows one for
 * about 5 seconds, or until the bot's next message).
 *
 * @since 0.1.0
 * @category constants
 */
export const typingInterval = Duration.seconds(4)

/**
 * What a turn does on Telegram: `send` posts and records the answer, returning its message id
 * (null when it was not sent); `typing` shows the typing indicator once. Neither fails.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnIo<R> {
  readonly send: (text: string, replyTo: number) => Effect.Effect<string | null, never, R>
  readonly typing: Effect.Effect<void, never, R>
  /**
   * Shows the answer so far as a draft (`sendMessageDraft`; an empty text shows "Thinking…"):
   * whether Telegram took it. Absent where drafts cannot be sent (Telegram takes them in
   * private chats only).
   */
  readonly draft?: ((text: string) => Effect.Effect<boolean, never, R>) | undefined
}

/**
 * How many characters an answer grows by before its draft is shown again: each draft is a Bot
 * API call, and Telegram animates the change from one to the next.
 *
 * @since 0.4.0
 * @category constants
 */
export const draftStep = 48

/**
 * The replies the bot sends when the model gives none.
 *
 * @since 0.1.0
 * @category constants
 */
export const messages = {
  timeout: "Sorry — the model did not answer in time. Your message is saved; please ask again in a moment.",
  error: "Sorry — I could not reach the model just now. Your message is saved; please try again later.",
  rounds: (n: number) => `Sorry — I could not finish that within ${n} tool steps. Please ask more specifically.`,
  empty: "Sorry — the model gave an empty answer."
} as const

/**
 * The system text: identity, how to read the prompt, the tool rules. The same on every turn
 * of a bot (the cached prefix); what changes per turn is in the turn context.
 *
 * @since 0.1.0
 * @category prompts
 */
export const systemPrompt = (botName: string, instructions: string) =>
  [
    `You are ${botName}, an assistant in a Telegram chat.`,
    "User messages of type chat_history_context are earlier messages, for context only; your own earlier replies are the assistant turns. The user message starting \"Turn context\" holds notes for this turn (scope, gap, active objects, what was left out). The last user message, of type current_message, is the request to answer.",
    "The conversation state below is this topic's saved state. Use the tools to find what \"this\" or \"that\" refers to, the thread of a message, and to keep the state current when plans change. Tool results are JSON envelopes {status, summary, error, data}.",
    ModelActions.rules,
    "Answer briefly, in plain text, in the language of the current message.",
    ...(instructions === "" ? [] : [instructions])
  ].join("\n")

/**
 * The per-turn scope line: the chat, topic, message and sender the tools are pinned to.
 *
 * @since 0.1.0
 * @category prompts
 */
export const scopeLine = (scope: UpdateMapper.MessageScope) =>
  `Current scope (the tools always use it): chat_id=${scope.chat_id}, topic_id=${scope.topic_id ?? "null"}, current_message_id=${scope.message_id}, reply_to_message_id=${
    scope.reply_to_message_id ?? "null"
  }, sender_user_id=${scope.sender_user_id ?? "null"}.`


/**
 * A model's tool arguments pinned to the current scope: the chat, topic and sender are always
 * the current ones (a model cannot reach another chat); the current message is the default.
 *
 * @since 0.1.0
 * @category tools
 */
export const pinArguments = (name: string, args: Record<string, unknown>, scope: UpdateMapper.MessageScope) => {
  const pinned: Record<string, unknown> = { ...args, chat_id: scope.chat_id, topic_id: scope.topic_id }
  switch (name) {
    case "resolve_reference_target":
    case "list_active_context_objects":
      pinned["current_message_id"] ??= scope.message_id
      if (pinned["current_message_id"] === scope.message_id) {
        pinned["reply_to_message_id"] ??= scope.reply_to_message_id
      }
      pinned["sender_user_id"] = scope.sender_user_id
      break
    case "get_message_thread_context":
      pinned["message_id"] ??= scope.message_id
      break
    case "update_conversation_state":
      pinned["updated_by"] = scope.sender_user_id
      break
    case "record_context_action":
      pinned["current_message_id"] = scope.message_id
      pinned["actor_user_id"] = scope.sender_user_id
      break
    case "read_url":
      // The page read is this turn's: its link is looked for on the message replied to, then this one.
      pinned["current_message_id"] = scope.message_id
      pinned["reply_to_message_id"] = scope.reply_to_message_id
      pinned["actor_user_id"] = scope.sender_user_id
      break
  }
  return pinned
}

// What one turn's answer becomes once sent.
interface Turn {
  summary: { readonly label: string | undefined } | null
}

/**
 * What {@link make} builds: the handler of an addressed message.
 *
 * @since 0.1.0
 * @category models
 */
export interface Assistant {
  /** Answers the message of `ctx` when it addresses the bot; does nothing otherwise. Never fails. */
  readonly answer: <R>(
    ctx: DeixisTelegraf.DeixisContext,
    io: TurnIo<R>,
    mode: WritePolicy.GroupMode
  ) => Effect.Effect<void, never, R | WritePolicy.WritePolicy | HistoryStore.HistoryStore>
}

/**
 * Builds the assistant over the deixis services: the toolkit's handlers and the context loader.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (settings: LlmConfig) =>
  Effect.gen(function*() {
    const stateService = yield* ConversationState.ConversationState
    const activeContext = yield* ActiveContext.ActiveContext
    const ingest = yield* ContextIngest
    // The loader of the deixis composition (`DeixisServices`), as the HTTP service's.
    const loader = yield* ContextLoader.ContextLoader
    const reader = Option.getOrElse(
      yield* Effect.serviceOption(UrlReader.UrlReader),
      () => UrlReader.make(settings.fetch, { onRead: Metrics.recordRead })
    )
    const toolkit = yield* DeixisToolkit.toolkit.pipe(
      Effect.provide(DeixisToolkit.layer({ budgets: settings.budgets, reader }).pipe(
        Layer.provide(Layer.succeed(ContextLoader.ContextLoader, loader))
      ))
    )
    const client = yield* HttpClient.HttpClient.pipe(Effect.provide(FetchHttpClient.layer))

    // `turn` collects what the answer itself becomes once sent (the model's own summary).
    const runTool = (name: string, rawArguments: unknown, scope: UpdateMapper.MessageScope, turn: Turn): Effect.Effect<string> => {
      let args: unknown = rawArguments ?? {}
      if (typeof args === "string") {
        try {
          args = args.trim() === "" ? {} : JSON.parse(args)
        } catch {
          return Effect.succeed(Envelope.render(Envelope.failure("InvalidArguments", "the arguments are not valid JSON"), 512))
        }
      }
      if (!Predicate.isRecord(args)) return Effect.succeed(Envelope.render(Envelope.failure("InvalidArguments", "the arguments must be a JSON object"), 512))
      if (name === "record_context_action" && ModelActions.isAnswerSummary(args)) {
        turn.summary = { label: typeof args["label"] === "string" ? args["label"].slice(0, 200) : undefined }
        const pending = ModelActions.pendingSummary
        return Effect.succeed(Envelope.render(Envelope.ok(DeixisToolkit.summarize.record_context_action(pending), pending), settings.budgets.record_context_action))
      }
      return toolkit.handle(name as DeixisToolkit.ToolName, pinArguments(name, args, scope) as never).pipe(
        Effect.map((result) => JSON.stringify(result.encodedResult)),
        Effect.catchAll((error) => Effect.succeed(Envelope.render(DeixisToolkit.errorEnvelope(error), 2000))),
        Effect.annotateLogs({ tool: name })
      )
    }

    // The tool loop: returns the answer text, or fails with the first model error.
    const converse = <R>(
      messages: Array<ChatMessage>,
      first: ChatResponse,
      scope: UpdateMapper.MessageScope,
      turn: Turn,
      onText?: (text: string) => Effect.Effect<void, never, R>
    ): Effect.Effect<string, LlmError, R> =>
      Effect.gen(function*() {
        let response = first
        for (let round = 1;; round++) {
          const message = response.choices[0].message
          const calls = message.tool_calls ?? []
          if (calls.length === 0) return message.content?.trim() || messages_.empty
          if (round > settings.maxRounds) return message.content?.trim() || messages_.rounds(settings.maxRounds)
          const named = calls.map((call, index) => ({ call, id: `deixis_${round}_${index}` }))
          messages.push({
            role: "assistant",
            content: message.content ?? null,
            tool_calls: named.map(({ call, id }) => ({
              id,
              type: "function",
              function: {
                name: call.function.name,
                arguments: typeof call.function.arguments === "string" ? call.function.arguments : JSON.stringify(call.function.arguments ?? {})
              }
            }))
          })
          for (const { call, id } of named) {
            messages.push({ role: "tool", tool_call_id: id, content: yield* runTool(call.function.name, call.function.arguments, scope, turn) })
          }
          yield* Effect.logDebug("tool round done").pipe(Effect.annotateLogs({ round, calls: calls.length }))
          response = yield* complete(client, settings, round < settings.maxRounds ? { messages, tools } : { messages }, false, onText)
        }
      })
    const messages_ = messages
    const fallbacks = new Set([messages.timeout, messages.error, messages.empty, messages.rounds(settings.maxRounds)])

    const answer: Assistant["answer"] = <R>(
      ctx: DeixisTelegraf.DeixisContext,
      io: TurnIo<R>,
      mode: WritePolicy.GroupMode
    ) =>
      Effect.gen(function*() {
        const mapped = ctx.deixis.update
        const scope = ctx.deixis.scope
        if (scope === undefined || mapped.skipped !== undefined) return
        // The message itself, not the replied-to copy the mapper puts before it.
        const current = mapped.history.find((item) => item.kind === "inbound_user" && item.message_id === scope.message_id)
        if (current === undefined || current.text.trim() === "") return
        const byAlias = !mapped.addressed && mentionsAlias(current.text, settings.aliases)
        if (!mapped.addressed && !byAlias) return
        if (byAlias) {
          // The mapper knows mentions and replies, not aliases: record the run it triggered.
          yield* WritePolicy.record(current, { triggered_run: true, mode }).pipe(
            Effect.catchAll((error) => Effect.logWarning("history item not recorded", error))
          )
        }
        const conversation = { chat_id: scope.chat_id, topic_id: scope.topic_id }
        // Each part is best effort: a store failing leaves that part out, never the answer.
        const [loaded, state, active] = yield* Effect.all([
          loader.load({
            ...conversation,
            message_id: scope.message_id,
            reply_to_message_id: scope.reply_to_message_id,
            sent_at: current.sent_at
          }).pipe(Effect.tapError((error) => Effect.logWarning("context not loaded", error)), Effect.orElseSucceed(() => null)),
          stateService.render(conversation).pipe(Effect.tapError((error) => Effect.logWarning("state not loaded", error)), Effect.orElseSucceed(() => null)),
          settings.prompt.active_max_objects === 0
            ? Effect.succeed([])
            : activeContext.list({
              ...conversation,
              current_message_id: scope.message_id,
              reply_to_message_id: scope.reply_to_message_id,
              sender_user_id: scope.sender_user_id,
              max_results: Math.min(50, settings.prompt.active_max_objects),
              include_inactive_debug: false
            }).pipe(
              Effect.map((result) => result.objects),
              Effect.tapError((error) => Effect.logWarning("active objects not listed", error)),
              Effect.orElseSucceed(() => [])
            )
        ], { concurrency: "unbounded" })
        const botName = ctx.botInfo?.username === undefined ? "the bot" : `@${ctx.botInfo.username}`
        const prompt = PromptAssembler.assemble({
          system: systemPrompt(botName, settings.instructions),
          state,
          history: loaded?.messages ?? [],
          reply_target_id: loaded?.reply.status === "found" ? loaded.reply.target_id : null,
          gap_note: loaded?.gap_note ?? null,
          active,
          turn_lines: [scopeLine(scope)],
          current,
          budget: settings.prompt
        })
        const messages: Array<ChatMessage> = [...prompt.messages]
        const replyTo = Number(scope.message_id)
        const turn: Turn = { summary: null }
        // The answer streamed as a draft while the model writes it; where drafts are not taken
        // (not a private chat, or refused), "typing…" from the first call until it is ready.
        const typing = Effect.asVoid(Effect.forkScoped(Effect.repeat(io.typing, Schedule.spaced(typingInterval))))
        const draft = io.draft
        let drafting = draft !== undefined
        let shown = 0
        const refused = Effect.suspend(() => {
          drafting = false
          return Effect.zipRight(Effect.logInfo("message draft refused; showing typing instead"), typing)
        })
        const showDraft = (text: string) =>
          draft === undefined ? Effect.void : Effect.flatMap(draft(text.length > 4096 ? text.slice(0, 4096) : text), (ok) => (ok ? Effect.void : refused))
        const start = drafting ? showDraft("") : typing
        const onText = draft === undefined ? undefined : (text: string) =>
          Effect.suspend(() => {
            // A new round's text starts over.
            if (text.length < shown) shown = 0
            if (!drafting || text.length - shown < draftStep) return Effect.void
            shown = text.length
            return showDraft(text)
          })
        const text = yield* Effect.zipRight(start, complete(client, settings, settings.maxRounds > 0 ? { messages, tools } : { messages }, true, onText)).pipe(
          Effect.flatMap((first) => converse(messages, first, scope, turn, onText)),
          Effect.catchIf(
            (error) => error.first && error.reason !== "timeout",
            (error) =>
              // The server may not do tools (Ollama answers 400 for such models): answer plainly.
              Effect.logWarning("first model call failed; answering without tools", error).pipe(
                Effect.zipRight(complete(client, settings, { messages })),
                Effect.map((plain) => plain.choices[0].message.content?.trim() || messages_.empty)
              )
          ),
          Effect.catchAll((error) =>
            Effect.as(Effect.logError("model call failed", error), error.reason === "timeout" ? messages_.timeout : messages_.error)
          ),
          Effect.scoped
        )
        // Once sending starts, a cancellation waits for it: the answer is posted and recorded whole.
        yield* Effect.uninterruptible(Effect.gen(function*() {
          const sentId = yield* io.send(text.length > 4096 ? `${text.slice(0, 4095)}…` : text, replyTo)
          // An apology is never the summary, whatever the model said before failing.
          if (sentId !== null && turn.summary !== null && !fallbacks.has(text)) {
            // The model said its answer is a summary: the sent message is the active summary.
            yield* ingest.apply([ModelActions.answerSummaryEvent({
              chat_id: scope.chat_id,
              topic_id: scope.topic_id,
              message_id: sentId,
              label: turn.summary.label,
              actor_user_id: scope.sender_user_id
            })]).pipe(Effect.catchAll((error) => Effect.logWarning("summary not recorded", error)))
          }
        }))
      }).pipe(
        Effect.annotateLogs({ llm: settings.model }),
        Effect.catchAllCause((cause) => Effect.logError("LLM answer failed", cause))
      )

    return { answer } satisfies Assistant
  })

