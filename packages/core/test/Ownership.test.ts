/**
 * Ownership scopes ordinals: with `ownership_hint: mine`, ordinal and positional hints count
 * among the sender's own objects; with `others`, among everyone else's; with `bot_created`,
 * among the bot's — the PRD's examples and their mixes with kind hints, as a table.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { ContextEventInput } from "../src/ContextEvent.js"
import { activate, ingest, message, minutes, resolve, T0, withCore } from "./fixtures.js"

const at = (n: number) => new Date(T0 - minutes(20 - n)).toISOString()
const photo = (id: number, sender: number) =>
  message(id, { topic_id: 7, sender_user_id: sender, sent_at: at(id), media: [{ kind: "media.image", file_id: `photo-${id}` }] })

// In topic 7, oldest first: Alice (100) and Bob (200) post photos, a poll, reminders; the bot posts a summary.
const state: ReadonlyArray<ContextEventInput> = [
  photo(1, 100),
  photo(2, 200),
  photo(3, 100),
  message(4, { topic_id: 7, sender_user_id: 200, sent_at: at(4), poll: { poll_id: "p4", question: "Lunch?" } }),
  photo(5, 200),
  message(6, { topic_id: 7, sender_user_id: 100, sent_at: at(6), poll: { poll_id: "p6", question: "Dinner?" } }),
  message(7, { topic_id: 7, sender_user_id: 100, sent_at: at(7) }),
  activate("reminder_created", { source_message_id: 7, kind: "reminder", due_at: "2026-11-23T09:00:00Z", at: at(7) }),
  message(8, { topic_id: 7, sender_user_id: 200, sent_at: at(8) }),
  activate("reminder_created", { source_message_id: 8, kind: "reminder", due_at: "2026-11-23T10:00:00Z", at: at(8) }),
  message(9, { topic_id: 7, sender_user_id: 7000, direction: "outbound", sent_at: at(9) }),
  activate("summary_generated", { source_message_id: 9, kind: "summary", created_by_bot: true, at: at(9) }),
  photo(10, 200),
  message(11, { topic_id: 7, sender_user_id: 100, sent_at: at(11) })
]

const rows: ReadonlyArray<{
  readonly name: string
  readonly sender: number | null
  readonly hints: Record<string, string>
  readonly expected: string | "unresolved"
}> = [
  { name: "my reminder, with reminders of two users: the sender's", sender: 100, hints: { ownership_hint: "mine", target_kind_hint: "reminder" }, expected: "1/7/reminder" },
  { name: "their reminder: the other user's", sender: 100, hints: { ownership_hint: "others", target_kind_hint: "reminder" }, expected: "1/8/reminder" },
  { name: "my last photo: the sender's newest photo, though Bob posted two since", sender: 100, hints: { ownership_hint: "mine", ordinal_hint: "last", target_kind_hint: "image" }, expected: "1/3/media.image" },
  { name: "my first photo: the sender's oldest", sender: 100, hints: { ownership_hint: "mine", ordinal_hint: "first", target_kind_hint: "image" }, expected: "1/1/media.image" },
  { name: "my second photo: the sender's second", sender: 100, hints: { ownership_hint: "mine", ordinal_hint: "second", target_kind_hint: "image" }, expected: "1/3/media.image" },
  { name: "the last photo, no ownership, asked by a third member: everyone's newest", sender: 300, hints: { ordinal_hint: "last", target_kind_hint: "image" }, expected: "1/10/media.image" },
  { name: "their first photo: the oldest not the sender's", sender: 100, hints: { ownership_hint: "others", ordinal_hint: "first", target_kind_hint: "image" }, expected: "1/2/media.image" },
  { name: "their previous photo: the one before others' newest", sender: 100, hints: { ownership_hint: "others", positional_hint: "previous", target_kind_hint: "image" }, expected: "1/5/media.image" },
  { name: "Bob's last photo, asked by Bob: his newest", sender: 200, hints: { ownership_hint: "mine", ordinal_hint: "last", target_kind_hint: "image" }, expected: "1/10/media.image" },
  { name: "their last photo, asked by Bob: Alice's newest", sender: 200, hints: { ownership_hint: "others", ordinal_hint: "last", target_kind_hint: "image" }, expected: "1/3/media.image" },
  { name: "my poll: the sender's", sender: 100, hints: { ownership_hint: "mine", target_kind_hint: "poll" }, expected: "1/6/poll" },
  { name: "their poll: the other's", sender: 100, hints: { ownership_hint: "others", target_kind_hint: "poll" }, expected: "1/4/poll" },
  { name: "the bot's last thing: the bot's summary", sender: 100, hints: { ownership_hint: "bot_created", ordinal_hint: "last" }, expected: "1/9/summary" },
  { name: "my photo from a sender nobody knows: no guess", sender: null, hints: { ownership_hint: "mine", ordinal_hint: "last", target_kind_hint: "image" }, expected: "unresolved" }
]

describe("ownership scopes ordinals", () => {
  for (const row of rows) {
    it.effect(row.name, () =>
      withCore(Effect.gen(function*() {
        yield* ingest(...state)
        const result = yield* resolve({
          chat_id: 1,
          topic_id: 7,
          current_message_id: 12,
          sender_user_id: row.sender,
          normalized_reference_hints: row.hints
        })
        if (row.expected === "unresolved") {
          assert.notStrictEqual(result.status, "resolved", result.best_match?.object_id)
          return
        }
        assert.strictEqual(result.status, "resolved", `${result.status}: ${result.candidates.map((c) => c.object_id).join(", ")}`)
        assert.strictEqual(result.best_match?.object_id, row.expected)
        const ordinal = row.hints["ordinal_hint"] !== undefined || row.hints["positional_hint"] !== undefined
        if (ordinal) assert.include(result.reasons, "positional_match")
      })))
  }

  it.effect("an object not whose the hint names stays a candidate, penalised: a reply to someone else's photo asking for \"mine\"", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(...state)
      const result = yield* resolve({
        chat_id: 1, topic_id: 7, current_message_id: 12, reply_to_message_id: 10, sender_user_id: 100,
        normalized_reference_hints: { ownership_hint: "mine", target_kind_hint: "image" }, max_candidates: 10
      })
      const replied = result.diagnostics.scored.find((s) => s.object_id === "1/10/media.image")
      assert.isDefined(replied)
      assert.isBelow(replied!.features["ownership_mismatch"]!, 0)
      assert.isAbove(replied!.features["reply_target"]!, 0)
    })))
})
