import * as fc from "fast-check"
import type { HistoryItem } from "../src/HistoryItem.js"
import { testItem } from "../src/HistoryStoreTesting.js"

const senders = [
  { user_id: "1", username: "alice", nickname: "Alice", is_bot: false, display_ref: "[Alice](tg:@alice)" },
  { user_id: "2", username: null, nickname: "Bob", is_bot: false, display_ref: "Bob" },
  { user_id: "9", username: "morph_bot", nickname: "Morph", is_bot: true, display_ref: "[Morph](tg:@morph_bot)" }
] as const

export const text = fc.string({ unit: "grapheme", maxLength: 40 })

/** Any item of chat `chatId` (message id left to the caller). */
export const item = (chatId: string): fc.Arbitrary<Omit<HistoryItem, "message_id">> =>
  fc.record({
    kind: fc.constantFrom("inbound_user", "inbound_reaction", "outbound_agent", "outbound_reaction", "system"),
    sent_at: fc.integer({ min: 0, max: 4_102_444_800_000 }),
    sender: fc.constantFrom(...senders),
    text,
    quote: fc.option(text.map((t) => ({ sender_ref: "[Carol](tg:@carol)", text: t, markdown_block: `> [Carol](tg:@carol): ${t}` })), { nil: null }),
    attachments: fc.array(fc.record({ kind: fc.constantFrom("photo", "document", "voice") }), { maxLength: 2 })
  }).map((fields) => {
      const { message_id: _m, ...base } = testItem(chatId, null)
      return { ...base, ...fields }
    })

/** A history: items with increasing message ids, some without one (reactions). */
export const history = (chatId: string, maxLength = 20): fc.Arbitrary<ReadonlyArray<HistoryItem>> =>
  fc.array(fc.tuple(item(chatId), fc.boolean()), { maxLength }).map((pairs) =>
    pairs.map(([fields, withId], i) => ({ ...fields, message_id: withId || i === 0 ? String(i + 1) : null }))
  )
