/**
 * Prompt assembly: what an LLM gets each turn, in one stable order, within a token budget.
 *
 * The order, from the most stable to the most changing, so a server's prompt cache keeps the
 * longest prefix from one turn to the next:
 *
 * 1. `system`: the caller's system text, then the conversation state of the topic (core's
 *    `ConversationState.render`: the centre of the conversation-memory design — the model
 *    sees the state without having to call a tool);
 * 2. the loaded context (the ContextLoader's recency window, reply target and reply window,
 *    reply chain), by position; the bot's own past replies as `assistant` turns;
 * 3. one `turn_context` user message: the caller's per-turn lines (the scope), the gap note,
 *    the compact active-object list, and what was cut to fit the budget;
 * 4. the current message, as its own `current_message` payload.
 *
 * The gap note and the active list change on every turn; they sit after the history, so
 * they do not break the cached prefix (the context-loading spec puts the gap note "in the
 * system prompt": here it is the system-like turn context, for that reason).
 *
 * **The budget** ({@link PromptBudget}): the whole prompt is at most `max_tokens` by
 * {@link estimateTokens}; the state at most `state_max_tokens`; at most `active_max_objects`
 * active objects. When over, the oldest history items go first (the reply target is kept),
 * then active objects from the least relevant, then the state is cut. The system text and the
 * current message are never cut; if they alone exceed the budget the prompt says so. Every
 * cut is stated in the turn context, with the tool that gets the rest.
 *
 * @since 0.1.0
 */
import { defaultsOf } from "@deixis/core/ConfigKeys"
import type { ActiveObject } from "@deixis/core/ActiveContext"
import * as Config from "effect/Config"
import type { HistoryItem } from "./HistoryItem.js"
import type { PromptMessage } from "./HistoryRenderer.js"
import { renderCurrentMessage, renderItemJson, renderTurns } from "./HistoryRenderer.js"

/**
 * The budget of a prompt.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromptBudget {
  /** The whole prompt, in estimated tokens. */
  readonly max_tokens: number
  /** The rendered conversation state, in estimated tokens. */
  readonly state_max_tokens: number
  /** Active objects listed, best first. */
  readonly active_max_objects: number
}

const positive = (name: string, fallback: number, min: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be an integer of at least ${min}`, validation: (n) => n >= min })
  )

/**
 * The budget, read from `DEIXIS_PROMPT_*` keys.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<PromptBudget> = Config.all({
  max_tokens: positive("PROMPT_MAX_TOKENS", 6000, 256),
  state_max_tokens: positive("PROMPT_STATE_MAX_TOKENS", 1000, 16),
  active_max_objects: positive("PROMPT_ACTIVE_MAX_OBJECTS", 8, 0)
}).pipe(Config.nested("DEIXIS"))

/**
 * The defaults: the configuration read with no keys set.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: PromptBudget = defaultsOf(config)

/**
 * What each message costs besides its content (role and framing), in estimated tokens.
 *
 * @since 0.1.0
 * @category estimating
 */
export const MESSAGE_OVERHEAD_TOKENS = 4

// The estimator's unit cost of one UTF-16 code unit: ASCII a quarter token, anything else half.
const cost = (text: string): number => {
  let ascii = 0
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 128) ascii++
  return ascii / 4 + (text.length - ascii) / 2
}

/**
 * The estimated tokens of a text: a quarter token per ASCII character and half a token per
 * other UTF-16 code unit, rounded up. BPE tokenizers (OpenAI's, Llama's, Qwen's) spend about
 * four characters of English per token and one to three characters of Cyrillic, Greek or
 * accented text; the estimate errs high for those and may err low for CJK text (about one
 * token per character). No tokenizer runs: assembling stays in the microseconds.
 *
 * @since 0.1.0
 * @category estimating
 */
export const estimateTokens = (text: string): number => Math.ceil(cost(text))

/**
 * The estimated tokens of a list of messages: each one's content plus
 * {@link MESSAGE_OVERHEAD_TOKENS}.
 *
 * @since 0.1.0
 * @category estimating
 */
export const estimateMessages = (messages: ReadonlyArray<PromptMessage>): number =>
  messages.reduce((n, m) => n + estimateTokens(m.content) + MESSAGE_OVERHEAD_TOKENS, 0)

/**
 * What a turn's prompt is made of.
 *
 * @since 0.1.0
 * @category models
 */
export interface AssembleInput {
  /** The system text: identity and rules, the same on every turn (the cached prefix). */
  readonly system: string
  /** The topic's conversation state as core's `ConversationState.render` writes it; null when unknown. */
  readonly state: string | null
  /** The loaded context, by position (the ContextLoader's `messages`), without the current message. */
  readonly history: ReadonlyArray<HistoryItem>
  /** The message the current one replies to: never cut from the history. */
  readonly reply_target_id?: string | null | undefined
  /** The ContextLoader's gap note. */
  readonly gap_note?: string | null | undefined
  /** The active objects, best first (core's `ActiveContext` list). */
  readonly active: ReadonlyArray<ActiveObject>
  /** Lines of this turn only (the scope the tools are pinned to), first in the turn context. */
  readonly turn_lines?: ReadonlyArray<string> | undefined
  readonly current: HistoryItem
  readonly budget: PromptBudget
}

/**
 * What was cut to fit the budget.
 *
 * @since 0.1.0
 * @category models
 */
export interface Cuts {
  /** History items left out, oldest first. */
  readonly history_omitted: number
  /** Active objects left out (past `active_max_objects` or for the total). */
  readonly active_omitted: number
  /** Whether the state was cut. */
  readonly state_cut: boolean
  /** Whether the prompt is over `max_tokens` even so (the system text and current message alone exceed it). */
  readonly over_budget: boolean
}

/**
 * An assembled prompt.
 *
 * @since 0.1.0
 * @category models
 */
export interface AssembledPrompt {
  readonly messages: ReadonlyArray<PromptMessage>
  /** The estimated tokens of `messages` ({@link estimateMessages}). */
  readonly tokens: number
  readonly cuts: Cuts
}

/**
 * The heading of the state section of the system message.
 *
 * @since 0.1.0
 * @category constants
 */
export const STATE_HEADING = "Conversation state of this topic (keep it current with update_conversation_state):"

/**
 * The first line of the turn context.
 *
 * @since 0.1.0
 * @category constants
 */
export const TURN_CONTEXT_HEADING = "Turn context (notes for the current message, not a request):"

const STATE_CUT_NOTE = " … [state cut to fit the prompt budget; get_conversation_state returns all of it]"

const cutToTokens = (text: string, tokens: number): string => {
  let spent = 0
  let end = 0
  while (end < text.length) {
    const step = text.charCodeAt(end) < 128 ? 0.25 : 0.5
    if (spent + step > tokens) break
    spent += step
    end++
  }
  // Never between the halves of a surrogate pair.
  const last = text.charCodeAt(end - 1)
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--
  return text.slice(0, end)
}

const stateSection = (state: string | null, maxTokens: number): { readonly text: string; readonly cut: boolean } => {
  if (state === null) return { text: "", cut: false }
  if (estimateTokens(state) <= maxTokens) return { text: `\n\n${STATE_HEADING}\n${state}`, cut: false }
  const room = Math.max(0, maxTokens - estimateTokens(STATE_CUT_NOTE))
  return { text: `\n\n${STATE_HEADING}\n${cutToTokens(state, room)}${STATE_CUT_NOTE}`, cut: true }
}

const quote = (s: string) => JSON.stringify(s)

/**
 * One active object as its compact line: id, kind, label, message, why active, and whether
 * the bot made it.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderActiveObject = (o: ActiveObject): string =>
  `{"object_id":${quote(o.object_id)},"kind":"${o.kind}"${o.title_or_label === undefined ? "" : `,"label":${quote(o.title_or_label)}`},"message_id":${
    quote(o.source_message_id)
  },"why_active":[${o.why_active.map((w) => `"${w}"`).join(",")}]${o.created_by_bot ? `,"by_bot":true` : ""}}`

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/**
 * The sentence stating the cuts, or null when nothing was cut.
 *
 * @since 0.1.0
 * @category rendering
 */
export const cutNote = (cuts: Cuts, budget: PromptBudget): string | null => {
  const parts = [
    ...(cuts.history_omitted > 0 ? [`${plural(cuts.history_omitted, "older message")} (get_message_thread_context loads them)`] : []),
    ...(cuts.active_omitted > 0 ? [`${plural(cuts.active_omitted, "less relevant active object")} (list_active_context_objects lists them)`] : []),
    ...(cuts.state_cut ? ["the end of the conversation state (get_conversation_state returns it)"] : [])
  ]
  const over = cuts.over_budget ? ` The prompt is still over its budget of ${budget.max_tokens} tokens.` : ""
  return parts.length === 0 && over === ""
    ? null
    : `${parts.length === 0 ? "" : `Left out to fit the prompt budget of ${budget.max_tokens} tokens: ${parts.join("; ")}.`}${over}`.trim()
}

const turnContext = (input: AssembleInput, active: ReadonlyArray<ActiveObject>, cuts: Cuts): string => {
  const lines = [TURN_CONTEXT_HEADING, ...(input.turn_lines ?? []).map((l) => `- ${l}`)]
  if (input.gap_note !== undefined && input.gap_note !== null) lines.push(`- ${input.gap_note}`)
  if (active.length === 0) {
    lines.push("- Active objects: none.")
  } else {
    lines.push("- Active objects here, best first (what \"this\" or \"that\" may mean; resolve_reference_target picks one):")
    for (const o of active) lines.push(`  ${renderActiveObject(o)}`)
  }
  const note = cutNote(cuts, input.budget)
  if (note !== null) lines.push(`- ${note}`)
  return lines.join("\n")
}

/**
 * Assembles a turn's prompt (see the module's description for the order and the cuts).
 * Pure and synchronous.
 *
 * @since 0.1.0
 * @category assembling
 */
export const assemble = (input: AssembleInput): AssembledPrompt => {
  const { budget } = input
  const state = stateSection(input.state, budget.state_max_tokens)
  const system: PromptMessage = { role: "system", content: input.system + state.text }
  const current: PromptMessage = { role: "user", content: renderCurrentMessage(input.current) }
  const listed = input.active.slice(0, budget.active_max_objects)
  let stateCut = state.cut

  const items = input.history
  const keep = (omitted: number) => {
    if (omitted === 0) return items
    const kept: Array<HistoryItem> = []
    for (let i = 0; i < items.length; i++) {
      if (i >= omitted || (items[i]!.message_id !== null && items[i]!.message_id === input.reply_target_id)) kept.push(items[i]!)
    }
    return kept
  }
  const build = (omitted: number, active: ReadonlyArray<ActiveObject>, systemMessage: PromptMessage, overBudget = false) => {
    const kept = keep(omitted)
    const cuts: Cuts = {
      history_omitted: items.length - kept.length,
      active_omitted: input.active.length - active.length,
      state_cut: stateCut,
      over_budget: overBudget
    }
    const messages = [systemMessage, ...renderTurns(kept, { role_split: true }), { role: "user" as const, content: turnContext(input, active, cuts) }, current]
    return { messages, cuts, tokens: estimateMessages(messages) }
  }

  let result = build(0, listed, system)
  if (result.tokens <= budget.max_tokens) return result
  // Drop the oldest items: first a guess from what each adds (its JSON line, or its assistant
  // turn), then one more at a time.
  let omitted = 0
  let excess = result.tokens - budget.max_tokens + estimateTokens(cutNote({ history_omitted: items.length, active_omitted: 0, state_cut: false, over_budget: false }, budget) ?? "")
  while (omitted < items.length && excess > 0) {
    const item = items[omitted++]!
    excess -= item.kind === "outbound_agent" ? cost(item.text) + MESSAGE_OVERHEAD_TOKENS : cost(renderItemJson(item)) + 0.5
  }
  for (;;) {
    result = build(omitted, listed, system)
    if (result.tokens <= budget.max_tokens || omitted >= items.length) break
    omitted++
  }
  // Then the least relevant active objects.
  let active = listed
  while (result.tokens > budget.max_tokens && active.length > 0) {
    active = active.slice(0, -1)
    result = build(items.length, active, system)
  }
  // Then the state, down to its heading.
  let systemMessage = system
  if (result.tokens > budget.max_tokens && input.state !== null && input.state !== "") {
    const over = result.tokens - budget.max_tokens
    const cut = stateSection(input.state, Math.max(0, estimateTokens(input.state) - over - estimateTokens(STATE_CUT_NOTE)))
    stateCut = stateCut || cut.cut
    systemMessage = { role: "system", content: input.system + cut.text }
    result = build(items.length, active, systemMessage)
  }
  // The system text and the current message alone are over: say so.
  return result.tokens <= budget.max_tokens ? result : build(items.length, active, systemMessage, true)
}
