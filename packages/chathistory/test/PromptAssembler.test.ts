import type { ActiveObject } from "@deixis/core/ActiveContext"
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as PromptAssembler from "../src/PromptAssembler.js"
import { testItem } from "../src/HistoryStoreTesting.js"

const t0 = Date.UTC(2026, 10, 20, 9, 0, 0)
const bot = { user_id: "900", username: "deixis_bot", nickname: "Deixis", is_bot: true, display_ref: "[Deixis](tg:@deixis_bot)" }

const history = Array.from({ length: 30 }, (_, i) =>
  testItem("-100", String(i + 1), {
    sent_at: t0 + i * 1000,
    text: `message number ${i + 1} about the lunch plans, with some more words to take room`,
    ...(i === 20 ? { kind: "outbound_agent" as const, sender: bot, text: "Summary: lunch at noon, pizza." } : {})
  }))
const current = testItem("-100", "31", { sent_at: t0 + 60_000, text: "make it shorter", reply_to_message_id: "21" })
const state = "Conversation state, revision 2 (updated 2026-11-20T09:00:00.000Z by \"1001\"):\n{\"plan\":\"pizza\",\"time\":\"12:00\"}"

const active = (n: number): ReadonlyArray<ActiveObject> =>
  Array.from({ length: n }, (_, i) => ({
    object_id: `obj${i}`,
    kind: "summary" as const,
    source_message_id: String(21 - i),
    topic_id: null,
    title_or_label: `summary ${i}`,
    confidence: 0.9,
    why_active: ["activated_by_summary" as const],
    created_at: t0,
    last_touched_at: t0,
    active_until: t0 + 3_600_000,
    created_by_bot: true
  }))

const input = (overrides: Partial<PromptAssembler.AssembleInput> = {}): PromptAssembler.AssembleInput => ({
  system: "You are Deixis.",
  state,
  history,
  reply_target_id: "21",
  gap_note: "Conversation gap: 20 minutes since the previous message in this conversation.",
  active: active(3),
  turn_lines: ["Current scope: chat_id=-100"],
  current,
  budget: PromptAssembler.defaults,
  ...overrides
})

describe("PromptAssembler", () => {
  it("stable order: system text, conversation state, loaded context, then the gap note and compact active-object list, then the current message", () => {
    const prompt = PromptAssembler.assemble(input())
    const [system, ...rest] = prompt.messages
    assert.strictEqual(system!.role, "system")
    assert.isTrue(system!.content.startsWith("You are Deixis."))
    assert.include(system!.content, `${PromptAssembler.STATE_HEADING}\n${state}`)
    const turn = rest.at(-2)!
    assert.isTrue(turn.content.startsWith(PromptAssembler.TURN_CONTEXT_HEADING))
    const scopeAt = turn.content.indexOf("Current scope")
    const gapAt = turn.content.indexOf("Conversation gap")
    const activeAt = turn.content.indexOf("\"object_id\":\"obj0\"")
    assert.isTrue(scopeAt > 0 && scopeAt < gapAt && gapAt < activeAt)
    assert.match(rest.at(-1)!.content, /^\{"type":"current_message".*"text":"make it shorter"/)
    // The history in between: all 30 items, the bot's reply an assistant turn.
    const between = rest.slice(0, -2)
    assert.deepStrictEqual(between.map((m) => m.role), ["user", "assistant", "user"])
    assert.include(between[0]!.content, "message number 1 about")
    assert.strictEqual(between[1]!.content, "Summary: lunch at noon, pizza.")
    assert.deepStrictEqual(prompt.cuts, { history_omitted: 0, active_omitted: 0, state_cut: false, over_budget: false })
    assert.strictEqual(prompt.tokens, PromptAssembler.estimateMessages(prompt.messages))
    assert.notInclude(turn.content, "Left out")
  })

  it("the prefix stays byte-identical when a message is appended (prompt caching)", () => {
    const before = PromptAssembler.assemble(input({ history: history.slice(0, 20), reply_target_id: null }))
    const after = PromptAssembler.assemble(input({ history: history.slice(0, 21), reply_target_id: null }))
    assert.strictEqual(after.messages[0]!.content, before.messages[0]!.content)
    assert.isTrue(after.messages[1]!.content.startsWith(before.messages[1]!.content.slice(0, -3)))
  })

  it("token budget cuts are stated: the oldest messages go first, the reply target stays", () => {
    const full = PromptAssembler.assemble(input())
    const budget = { ...PromptAssembler.defaults, max_tokens: full.tokens - 200 }
    const prompt = PromptAssembler.assemble(input({ budget }))
    assert.isAtMost(prompt.tokens, budget.max_tokens)
    assert.isAbove(prompt.cuts.history_omitted, 0)
    assert.isFalse(prompt.cuts.over_budget)
    const text = prompt.messages.map((m) => m.content).join("\n")
    assert.notInclude(text, "message number 1 about")
    assert.include(text, "message number 30 about")
    assert.include(text, "Summary: lunch at noon, pizza.")
    const turn = prompt.messages.at(-2)!.content
    assert.include(
      turn,
      `Left out to fit the prompt budget of ${budget.max_tokens} tokens: ${prompt.cuts.history_omitted} older messages (get_message_thread_context loads them).`
    )
  })

  it("a reply target older than every kept message is kept", () => {
    const old = input({ reply_target_id: "2", current: { ...current, reply_to_message_id: "2" } })
    const full = PromptAssembler.assemble(old)
    const prompt = PromptAssembler.assemble({ ...old, budget: { ...PromptAssembler.defaults, max_tokens: full.tokens - 300 } })
    const text = prompt.messages.map((m) => m.content).join("\n")
    assert.include(text, "message number 2 about")
    assert.notInclude(text, "message number 1 about")
    assert.notInclude(text, "message number 3 about")
  })

  it("past the history, the least relevant active objects go, then the state is cut; each cut is stated", () => {
    const bigState = `Conversation state, revision 9:\n{"notes":"${"x".repeat(3000)}"}`
    const base = input({ history: [], reply_target_id: null, active: active(8), state: bigState })
    const full = PromptAssembler.assemble(base)
    assert.isFalse(full.cuts.state_cut)
    const budget = { ...PromptAssembler.defaults, max_tokens: full.tokens - 500 }
    const prompt = PromptAssembler.assemble({ ...base, budget })
    assert.isAtMost(prompt.tokens, budget.max_tokens)
    assert.strictEqual(prompt.cuts.active_omitted, 8)
    assert.isTrue(prompt.cuts.state_cut)
    const turn = prompt.messages.at(-2)!.content
    assert.include(turn, "8 less relevant active objects (list_active_context_objects lists them)")
    assert.include(turn, "the end of the conversation state (get_conversation_state returns it)")
    assert.include(prompt.messages[0]!.content, "get_conversation_state returns all of it]")
  })

  it("the state over its own cap is cut to it, and the active list to its count", () => {
    const prompt = PromptAssembler.assemble(input({
      state: `{"notes":"${"y".repeat(10_000)}"}`,
      active: active(12),
      budget: { max_tokens: 100_000, state_max_tokens: 100, active_max_objects: 5 }
    }))
    assert.isTrue(prompt.cuts.state_cut)
    assert.strictEqual(prompt.cuts.active_omitted, 7)
    const stateText = prompt.messages[0]!.content.split(`${PromptAssembler.STATE_HEADING}\n`)[1]!
    assert.isAtMost(PromptAssembler.estimateTokens(stateText), 100)
    assert.include(prompt.messages.at(-2)!.content, "\"object_id\":\"obj4\"")
    assert.notInclude(prompt.messages.at(-2)!.content, "\"object_id\":\"obj5\"")
  })

  it("a current message over the whole budget is kept and the prompt says it is over", () => {
    const prompt = PromptAssembler.assemble(input({
      current: { ...current, text: "z".repeat(8000) },
      budget: { ...PromptAssembler.defaults, max_tokens: 1000 }
    }))
    assert.isTrue(prompt.cuts.over_budget)
    assert.include(prompt.messages.at(-1)!.content, "z".repeat(8000))
    assert.include(prompt.messages.at(-2)!.content, "The prompt is still over its budget of 1000 tokens.")
  })

  it("the estimator: a quarter token per ASCII character, half per other code unit, rounded up", () => {
    assert.strictEqual(PromptAssembler.estimateTokens(""), 0)
    assert.strictEqual(PromptAssembler.estimateTokens("abcd"), 1)
    assert.strictEqual(PromptAssembler.estimateTokens("abcde"), 2)
    assert.strictEqual(PromptAssembler.estimateTokens("привет"), 3)
    assert.strictEqual(PromptAssembler.estimateMessages([{ role: "user", content: "abcd" }]), 1 + PromptAssembler.MESSAGE_OVERHEAD_TOKENS)
  })

  it("whatever the budget, the prompt fits it unless it says it is over, and keeps the current message", () => {
    fc.assert(fc.property(fc.integer({ min: 256, max: 4000 }), fc.integer({ min: 0, max: 30 }), (max, n) => {
      const prompt = PromptAssembler.assemble(input({ history: history.slice(0, n), budget: { ...PromptAssembler.defaults, max_tokens: max } }))
      assert.isTrue(prompt.cuts.over_budget || prompt.tokens <= max)
      assert.strictEqual(prompt.tokens, PromptAssembler.estimateMessages(prompt.messages))
      assert.include(prompt.messages.at(-1)!.content, "make it shorter")
    }))
  })
})
