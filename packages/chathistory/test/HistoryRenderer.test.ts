import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import type { HistoryItem } from "../src/HistoryItem.js"
import * as HistoryRenderer from "../src/HistoryRenderer.js"
import { testItem } from "../src/HistoryStoreTesting.js"
import { history as historyArb } from "./arbitraries.js"

const t0 = Date.UTC(2026, 1, 13, 8, 20, 10)
const bot = { user_id: "900", username: "mistermorph_bot", nickname: "MisterMorph", is_bot: true, display_ref: "[MisterMorph](tg:@mistermorph_bot)" }

const alice = testItem("-100", "1", {
  text: "Please review [Bob](tg:@bob)'s update.",
  quote: {
    sender_ref: "[Carol](tg:@carol)",
    text: "I will add details tomorrow.",
    markdown_block: "> [Carol](tg:@carol): I will add details tomorrow."
  }
})
const reply = testItem("-100", "2", {
  kind: "outbound_agent",
  sent_at: t0 + 5000,
  reply_to_message_id: "1",
  sender: bot,
  text: "Got it, I will organize it first."
})
const reaction = testItem("-100", null, {
  kind: "inbound_reaction",
  sent_at: t0 + 9000,
  reply_to_message_id: "2",
  text: "👍"
})
const current = testItem("-100", "3", {
  sent_at: t0 + 60_000,
  sender: { user_id: "2", username: "bob", nickname: "Bob", is_bot: false, display_ref: "[Bob](tg:@bob)" },
  text: "@mistermorph_bot any news?",
  attachments: [{ kind: "document", name: "plan.pdf" }]
})

describe("HistoryRenderer", () => {
  it("stable rendering of history array into a single chat_history_context payload", () => {
    const messages = HistoryRenderer.historyMessage([alice, reply])
    assert.strictEqual(messages.length, 1)
    assert.strictEqual(messages[0]?.role, "user")
    const content = messages[0]?.content ?? ""
    assert.strictEqual(
      content,
      `{"type":"chat_history_context","channel":"telegram","note":"Historical messages only. Do not treat as the current user request.","messages":[
{"kind":"inbound_user","time":"2026-02-13T08:20:10Z","sender":"[Alice](tg:@alice)","text":"Please review [Bob](tg:@bob)'s update.","quote":"> [Carol](tg:@carol): I will add details tomorrow.","message_id":"1"},
{"kind":"outbound_agent","time":"2026-02-13T08:20:15Z","sender":"[MisterMorph](tg:@mistermorph_bot)","text":"Got it, I will organize it first.","message_id":"2","reply_to_message_id":"1"}
]}`
    )
    const parsed: unknown = JSON.parse(content)
    assert.deepInclude(parsed, { type: "chat_history_context", channel: "telegram", note: HistoryRenderer.HISTORY_NOTE })
    assert.strictEqual(HistoryRenderer.renderHistoryContext([alice, reply]), content)
    assert.deepStrictEqual(HistoryRenderer.historyMessage([]), [])
  })

  it("timestamps render as RFC 3339 UTC", () => {
    assert.strictEqual(HistoryRenderer.formatTime(t0), "2026-02-13T08:20:10Z")
    assert.strictEqual(HistoryRenderer.formatTime(t0 + 250), "2026-02-13T08:20:10.250Z")
    const time = HistoryRenderer.renderItem(testItem("c", "1", { sent_at: Date.parse("2026-02-13T11:20:10+03:00") })).time
    assert.match(time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/)
    assert.strictEqual(time, "2026-02-13T08:20:10Z")
  })

  it("property: the time formatter agrees with Date#toISOString over years 0-9999 and beyond", () => {
    const iso = (ms: number) => new Date(ms).toISOString().replace(/\.000Z$/, "Z")
    fc.assert(fc.property(fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }), (ms) => {
      assert.strictEqual(HistoryRenderer.formatTime(ms), iso(ms))
    }))
    for (const ms of [0, -1, 951_782_400_000, 4_107_542_400_000, -62_167_219_200_001, 253_402_300_800_000, 1.5]) {
      assert.strictEqual(HistoryRenderer.formatTime(ms), iso(ms), String(ms))
    }
  })

  it("quoted content appears as > ... in the injected history context", () => {
    const multi = testItem("c", "5", {
      quote: { sender_ref: "[Bob](tg:@bob)", text: "a\nb", markdown_block: "> [Bob](tg:@bob): a\n> b" }
    })
    const payload = JSON.parse(HistoryRenderer.renderHistoryContext([alice, multi])) as {
      messages: ReadonlyArray<{ quote?: string }>
    }
    assert.strictEqual(payload.messages[0]?.quote, "> [Carol](tg:@carol): I will add details tomorrow.")
    assert.strictEqual(payload.messages[1]?.quote, "> [Bob](tg:@bob): a\n> b")
  })

  it("in group chats every rendered history item carries its speaker and timestamp", () => {
    const payload = JSON.parse(HistoryRenderer.renderHistoryContext([alice, reply, reaction])) as {
      messages: ReadonlyArray<{ sender: string; time: string; kind: string }>
    }
    assert.deepStrictEqual(payload.messages.map((m) => [m.kind, m.sender, m.time]), [
      ["inbound_user", "[Alice](tg:@alice)", "2026-02-13T08:20:10Z"],
      ["outbound_agent", "[MisterMorph](tg:@mistermorph_bot)", "2026-02-13T08:20:15Z"],
      ["inbound_reaction", "[Alice](tg:@alice)", "2026-02-13T08:20:19Z"]
    ])
  })

  it("the current message is rendered separately, after history, never inside it", () => {
    const prompt = HistoryRenderer.renderPrompt({ history: [alice, reply], current })
    assert.deepStrictEqual(prompt.messages.map((m) => m.role), ["user", "user"])
    const [history, last] = prompt.messages
    assert.notInclude(history?.content ?? "", "any news?")
    assert.strictEqual(
      last?.content,
      `{"type":"current_message","kind":"inbound_user","time":"2026-02-13T08:21:10Z","sender":"[Bob](tg:@bob)","text":"@mistermorph_bot any news?","attachments":["document: plan.pdf"],"message_id":"3"}`
    )
    assert.deepStrictEqual(prompt.system, [])
    // No history, still a current message.
    assert.deepStrictEqual(HistoryRenderer.renderPrompt({ history: [], current }).messages.length, 1)
  })

  it("the bot's own past replies become assistant turns when the caller asks for role-split rendering", () => {
    const later = testItem("-100", "4", { sent_at: t0 + 70_000, text: "thanks" })
    const turns = HistoryRenderer.renderTurns([alice, reply, reaction, later], { role_split: true })
    assert.deepStrictEqual(turns.map((m) => m.role), ["user", "assistant", "user"])
    assert.strictEqual(turns[1]?.content, "Got it, I will organize it first.")
    assert.strictEqual(turns[0]?.content, HistoryRenderer.renderHistoryContext([alice]))
    assert.strictEqual(turns[2]?.content, HistoryRenderer.renderHistoryContext([reaction, later]))
    // Without role_split the same history is one user message.
    assert.deepStrictEqual(HistoryRenderer.renderTurns([alice, reply]).map((m) => m.role), ["user"])
    const prompt = HistoryRenderer.renderPrompt({ history: [alice, reply], current, role_split: true })
    assert.deepStrictEqual(prompt.messages.map((m) => m.role), ["user", "assistant", "user"])
  })

  it("addressing LLM request includes chat_history_context and current speaker info", () => {
    const json = HistoryRenderer.renderAddressingInput({
      bot_username: "@mistermorph_bot",
      aliases: ["morph", "MM"],
      current,
      history: [alice, reply]
    })
    const input = JSON.parse(json) as HistoryRenderer.AddressingInput
    assert.deepStrictEqual(Object.keys(input), ["bot_username", "aliases", "current_message", "chat_history_context"])
    assert.strictEqual(input.bot_username, "mistermorph_bot")
    assert.deepStrictEqual(input.aliases, ["morph", "MM"])
    assert.strictEqual(input.current_message.sender, "[Bob](tg:@bob)")
    assert.strictEqual(input.current_message.time, "2026-02-13T08:21:10Z")
    assert.strictEqual(input.current_message.text, "@mistermorph_bot any news?")
    assert.strictEqual(input.chat_history_context.type, "chat_history_context")
    assert.strictEqual(input.chat_history_context.note, HistoryRenderer.HISTORY_NOTE)
    assert.deepStrictEqual(input.chat_history_context.messages.map((m) => m.sender), ["[Alice](tg:@alice)", "[MisterMorph](tg:@mistermorph_bot)"])
  })

  it("main agent can choose telegram_react under structured history: reactions and reactable message ids reach its prompt", () => {
    // What the agent needs to decide on a reaction is in the prompt; the choice itself is the LLM's.
    const prompt = HistoryRenderer.renderPrompt({ history: [alice, reply, reaction], current })
    const history = JSON.parse(prompt.messages[0]?.content ?? "") as {
      messages: ReadonlyArray<{ kind: string; message_id?: string; reply_to_message_id?: string; text: string }>
    }
    assert.deepInclude(history.messages[2], { kind: "inbound_reaction", reply_to_message_id: "2", text: "👍" })
    const currentPayload = JSON.parse(prompt.messages[1]?.content ?? "") as { message_id: string }
    assert.strictEqual(currentPayload.message_id, "3")
  })

  it("a gap note goes to the system lines, not into history", () => {
    const prompt = HistoryRenderer.renderPrompt({ history: [alice], current, gap_note: "Conversation gap: 2 hours." })
    assert.deepStrictEqual(prompt.system, ["Conversation gap: 2 hours."])
    assert.notInclude(prompt.messages.map((m) => m.content).join(""), "Conversation gap")
  })

  it("property: rendering is stable under append — earlier items' bytes never change", () => {
    const closing = HistoryRenderer.HISTORY_CLOSING
    fc.assert(
      fc.property(historyArb("c", 12), historyArb("c", 6), (xs, ys) => {
        const before = HistoryRenderer.renderHistoryContext(xs)
        const after = HistoryRenderer.renderHistoryContext([...xs, ...ys])
        assert.isTrue(before.endsWith(closing))
        assert.isTrue(after.startsWith(before.slice(0, before.length - closing.length)))
        assert.strictEqual(JSON.parse(after).messages.length, xs.length + ys.length)
        // Role split: every turn but the last is unchanged, and the last one only grows.
        const turnsBefore = HistoryRenderer.renderTurns(xs, { role_split: true })
        const turnsAfter = HistoryRenderer.renderTurns([...xs, ...ys], { role_split: true })
        const n = turnsBefore.length
        assert.deepStrictEqual(turnsAfter.slice(0, Math.max(0, n - 1)), turnsBefore.slice(0, Math.max(0, n - 1)))
        const last = turnsBefore[n - 1]
        if (last !== undefined) {
          const grown = turnsAfter[n - 1]
          assert.strictEqual(grown?.role, last.role)
          const stem = last.role === "user" ? last.content.slice(0, last.content.length - closing.length) : last.content
          assert.isTrue(grown?.content.startsWith(stem))
        }
      })
    )
  })

  it("property: an item's line is exactly JSON.stringify of its rendered form, whatever UTF-16 its strings hold", () => {
    // Any code units: quotes, backslashes, controls, paired and lone surrogates.
    const units = fc.array(fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0xd800, max: 0xdfff }), fc.constantFrom(0x22, 0x5c, 0x0a)), { maxLength: 24 })
      .map((codes) => String.fromCharCode(...codes))
    fc.assert(fc.property(units, units, units, (text, ref, quote) => {
      const item = testItem("c", "1", {
        text,
        sender: { user_id: "1", username: null, nickname: ref, is_bot: false, display_ref: ref },
        quote: { sender_ref: null, text: quote, markdown_block: quote },
        attachments: [{ kind: "document", name: text }],
        edited_at: 1_771_000_123_456,
        forward: { origin: "hidden_user", sender_ref: ref, sent_at: 1_770_000_000_000, automatic: false },
        album_id: quote.length === 0 ? "a" : quote,
        seen_via: "reply"
      })
      assert.strictEqual(HistoryRenderer.renderItemJson(item), JSON.stringify(HistoryRenderer.renderItem(item)))
    }))
  })

  it("an edited, forwarded album item seen only in a reply says so, after the fields it always had", () => {
    const item = testItem("c", "7", {
      text: "caption",
      edited_at: Date.UTC(2026, 1, 13, 8, 25, 0),
      forward: { origin: "channel", sender_ref: "[News](tg:@news)", sent_at: Date.UTC(2026, 1, 12, 9, 0, 0), automatic: true },
      album_id: "13579",
      seen_via: "reply"
    })
    assert.strictEqual(
      HistoryRenderer.renderItemJson(item),
      `{"kind":"inbound_user","time":"2026-02-13T08:20:10Z","sender":"[Alice](tg:@alice)","text":"caption","message_id":"7",` +
        `"edited_at":"2026-02-13T08:25:00Z","forward_origin":"[News](tg:@news)","forward_date":"2026-02-12T09:00:00Z",` +
        `"album_id":"13579","seen_via":"reply"}`
    )
    // An item without them renders exactly as before: appended fields never move old bytes.
    assert.strictEqual(
      HistoryRenderer.renderItemJson(testItem("c", "7", { text: "caption" })),
      `{"kind":"inbound_user","time":"2026-02-13T08:20:10Z","sender":"[Alice](tg:@alice)","text":"caption","message_id":"7"}`
    )
  })

  it("property: rendering is deterministic and each item renders independently of its neighbours", () => {
    fc.assert(
      fc.property(historyArb("c", 10), (xs: ReadonlyArray<HistoryItem>) => {
        const lines = HistoryRenderer.renderHistoryContext(xs).split("\n").slice(1, -1)
        assert.deepStrictEqual(lines.map((l) => l.replace(/,$/, "")), xs.map((x) => JSON.stringify(HistoryRenderer.renderItem(x))))
        assert.strictEqual(HistoryRenderer.renderHistoryContext(xs), HistoryRenderer.renderHistoryContext(xs.slice()))
      })
    )
  })
})
