/**
 * `pnpm bench` (second part): prompt assembly per turn — the ContextLoader's load plus
 * `PromptAssembler.assemble` — in a chat of 1,000 and of 100,000 messages (one topic, 35%
 * replies, half the turns replying to one of the last 200 messages), with the conversation
 * state and 8 active objects; and the prompt's size in estimated tokens for a 16-message
 * window. Prints a markdown table. Never a test: numbers depend on the machine.
 */
import type { ActiveObject } from "@deixis/core/ActiveContext"
import * as Effect from "effect/Effect"
import * as ContextLoader from "../src/ContextLoader.js"
import type { HistoryItem, Sender } from "../src/HistoryItem.js"
import * as HistoryStore from "../src/HistoryStore.js"
import * as PromptAssembler from "../src/PromptAssembler.js"
import { makeText } from "./text.js"

const TURNS = 20_000
const WARMUP = 5_000

// A fixed-seed generator, so runs compare.
const { pick, random, sentence } = makeText(0x51f15e)

const chat = "-1009000000"
const t0 = Date.UTC(2026, 10, 1)
const senders: ReadonlyArray<Sender> = Array.from({ length: 12 }, (_, u) =>
  u === 0
    ? { user_id: "7000", username: "deixis_bot", nickname: "Deixis", is_bot: true, display_ref: "[Deixis](tg:@deixis_bot)" }
    : { user_id: `${100 + u}`, username: `user_${u}`, nickname: `User${u}`, is_bot: false, display_ref: `[User${u}](tg:@user_${u})` })

const item = (m: number, replyTo: string | null): HistoryItem => {
  const sender = pick(senders)
  return {
    channel: "telegram",
    kind: sender.is_bot ? "outbound_agent" : "inbound_user",
    chat_id: chat,
    topic_id: null,
    chat_type: "supergroup",
    message_id: String(m),
    reply_to_message_id: replyTo,
    bot_response_id: null,
    sent_at: t0 + m * 45_000,
    sender,
    text: sentence(),
    quote: null,
    attachments: random() < 0.1 ? [{ kind: "photo" }] : []
  }
}

const state = `Conversation state, revision 7 (updated 2026-11-01T10:00:00.000Z by "101"):\n${
  JSON.stringify({ trip: { destination: "Lisbon", dates: ["2026-12-03", "2026-12-07"], people: 4 }, budget_eur: 2400, open: ["hotel", "car"] })
}`
const active: ReadonlyArray<ActiveObject> = Array.from({ length: 8 }, (_, i) => ({
  object_id: `${chat}/${900 + i}/${i % 2 === 0 ? "link" : "summary"}`,
  kind: i % 2 === 0 ? "link" as const : "summary" as const,
  source_message_id: String(900 + i),
  topic_id: null,
  title_or_label: i % 2 === 0 ? `https://news.example/story-${i}` : `Summary of story ${i - 1}`,
  confidence: 0.9 - i * 0.05,
  why_active: ["same_topic" as const],
  created_at: t0,
  last_touched_at: t0,
  active_until: t0 + 3_600_000,
  created_by_bot: i % 2 === 1
}))
const system = "You are @deixis_bot, an assistant in a Telegram chat. ".repeat(12)

const percentile = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const micros = (ns: number) => (ns / 1000).toFixed(2)

const measure = (messages: number) => {
  const store = HistoryStore.makeMemory({ max_items_per_chat: messages + 10 })
  for (let m = 1; m <= messages; m++) {
    Effect.runSync(store.append(item(m, m > 1 && random() < 0.35 ? String(Math.max(1, m - 1 - Math.floor(random() * 20))) : null)))
  }
  const loader = ContextLoader.make(store)
  // The turns' current messages, made before timing.
  const currents = Array.from({ length: TURNS + WARMUP }, () =>
    item(messages + 1, random() < 0.5 ? null : String(Math.max(1, messages - Math.floor(random() * 200)))))
  let assembleNs = 0
  const turn = (current: HistoryItem) => {
    const replyTo = current.reply_to_message_id
    const loaded = Effect.runSync(loader.load({ chat_id: chat, topic_id: null, message_id: current.message_id!, reply_to_message_id: replyTo, sent_at: current.sent_at }))
    const start = process.hrtime.bigint()
    const prompt = PromptAssembler.assemble({
      system,
      state,
      history: loaded.messages,
      reply_target_id: loaded.reply.status === "found" ? loaded.reply.target_id : null,
      gap_note: loaded.gap_note,
      active,
      turn_lines: [`Current scope (the tools always use it): chat_id=${chat}, topic_id=null, current_message_id=${messages + 1}`],
      current,
      budget: PromptAssembler.defaults
    })
    assembleNs = Number(process.hrtime.bigint() - start)
    return prompt
  }
  for (let i = 0; i < WARMUP; i++) turn(currents[TURNS + i]!)
  const ns = new Float64Array(TURNS)
  const assembleOnly = new Float64Array(TURNS)
  let tokens = 0
  for (let i = 0; i < TURNS; i++) {
    const start = process.hrtime.bigint()
    tokens += turn(currents[i]!).tokens
    ns[i] = Number(process.hrtime.bigint() - start)
    assembleOnly[i] = assembleNs
  }
  ns.sort()
  assembleOnly.sort()
  return { ns, assembleOnly, tokens: tokens / TURNS }
}

const windowOf16 = () => {
  const history = Array.from({ length: 16 }, (_, i) => item(i + 1, null))
  const prompt = PromptAssembler.assemble({
    system,
    state,
    history,
    active,
    turn_lines: [`Current scope (the tools always use it): chat_id=${chat}, topic_id=null, current_message_id=17`],
    current: item(17, null),
    budget: PromptAssembler.defaults
  })
  const historyTokens = PromptAssembler.estimateMessages(prompt.messages.slice(1, -2))
  return { total: prompt.tokens, historyTokens }
}

const main = () => {
  const small = measure(1_000)
  const large = measure(100_000)
  const w = windowOf16()
  const rows: ReadonlyArray<readonly [string, string]> = [
    ...([["1,000", small], ["100,000", large]] as const).flatMap(([n, r]) => [
      [`assemble p50, ${n} messages in the chat`, `${micros(percentile(r.assembleOnly, 0.5))} µs`] as const,
      [`assemble p99, ${n} messages in the chat`, `${micros(percentile(r.assembleOnly, 0.99))} µs`] as const,
      [`load + assemble p50, ${n} messages in the chat`, `${micros(percentile(r.ns, 0.5))} µs`] as const,
      [`load + assemble p90, ${n} messages in the chat`, `${micros(percentile(r.ns, 0.9))} µs`] as const,
      [`load + assemble p99, ${n} messages in the chat`, `${micros(percentile(r.ns, 0.99))} µs`] as const
    ]),
    ["prompt size per turn (mean, default windows)", `${Math.round(large.tokens).toLocaleString("en")} tokens`],
    ["prompt size, 16-message window (whole prompt)", `${w.total.toLocaleString("en")} tokens`],
    ["prompt size, 16-message window (the history alone)", `${w.historyTokens.toLocaleString("en")} tokens`]
  ]
  console.log([
    "",
    `Prompt assembly: Node ${process.version}, ${process.platform}/${process.arch}; default settings, the state and 8 active objects; ${TURNS.toLocaleString("en")} turns after ${WARMUP.toLocaleString("en")} warm-up.`,
    "",
    "| measure | result |",
    "|---|---|",
    ...rows.map(([k, v]) => `| ${k} | ${v} |`)
  ].join("\n"))
}

main()
