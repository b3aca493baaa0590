import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as DeixisTelegraf from "../src/DeixisTelegraf.js"
import * as TelegramRecorder from "../src/TelegramRecorder.js"
import * as F from "./fixtures/updates.js"

// A person's reactions to a message, as Telegram reports them: the whole set now, at `seconds`.
const reaction = (update_id: number, seconds: number, emoji: ReadonlyArray<string>, user: { readonly id: number } = F.bob) => ({
  update_id,
  message_reaction: {
    chat: F.forum,
    message_id: 50,
    user,
    date: 1_771_000_000 + seconds,
    old_reaction: [],
    new_reaction: emoji.map((e) => ({ type: "emoji", emoji: e }))
  }
})

const talkative = { mode: "talkative" as const }
const record = (update: unknown) => TelegramRecorder.record(update, talkative)

// The reactions history holds for message 50 (in its topic, 7): sender and text, oldest first.
const reactions = Effect.gen(function*() {
  const history = yield* HistoryStore
  const entries = yield* history.recent({ chat_id: String(F.forum.id), topic_id: "7" }, 20)
  return entries.filter((e) => e.item.kind === "inbound_reaction").map((e) => [e.item.sender.user_id, e.item.text])
})

describe("TelegramRecorder: reactions", () => {
  it.effect("a reaction replaced: history shows the current one, not the stale one", () =>
    Effect.gen(function*() {
      yield* record(F.topicTextWithLinks)
      yield* record(reaction(1, 10, ["👍"]))
      yield* record(reaction(2, 10, ["👍"], F.alice))
      const changed = yield* record(reaction(3, 20, ["❤️", "🔥"]))
      assert.strictEqual(changed.recorded, 1)
      assert.deepStrictEqual(yield* reactions, [[String(F.bob.id), "❤️ 🔥"], [String(F.alice.id), "👍"]])
      // The earlier update delivered again, late: it changes nothing.
      assert.strictEqual((yield* record(reaction(1, 10, ["👍"]))).recorded, 0)
      assert.deepStrictEqual(yield* reactions, [[String(F.bob.id), "❤️ 🔥"], [String(F.alice.id), "👍"]])
    }).pipe(Effect.provide(DeixisTelegraf.layerMemory())))

  it.effect("a reaction removed: its item goes; given again, it comes back", () =>
    Effect.gen(function*() {
      yield* record(F.topicTextWithLinks)
      yield* record(reaction(1, 10, ["👍"]))
      yield* record(reaction(2, 10, ["👍"], F.alice))
      const removed = yield* record(reaction(3, 20, []))
      assert.deepStrictEqual([removed.recorded, removed.mapped.skipped], [1, undefined])
      assert.deepStrictEqual(yield* reactions, [[String(F.alice.id), "👍"]])
      // Given again, then the withdrawal before it arrives late: the reaction stays.
      yield* record(reaction(4, 30, ["🎉"]))
      assert.strictEqual((yield* record(reaction(3, 20, []))).recorded, 0)
      assert.deepStrictEqual(yield* reactions, [[String(F.alice.id), "👍"], [String(F.bob.id), "🎉"]])
      // Given and withdrawn within one batch.
      yield* TelegramRecorder.recordBatch([reaction(5, 40, ["👀"], F.alice), reaction(6, 41, [], F.alice)], talkative)
      assert.deepStrictEqual(yield* reactions, [[String(F.bob.id), "🎉"]])
    }).pipe(Effect.provide(DeixisTelegraf.layerMemory())))

  it.effect("a reaction removed that was never recorded: nothing is recorded, nothing fails", () =>
    Effect.gen(function*() {
      yield* record(F.topicTextWithLinks)
      // Recorded by an earlier deployment in `smart` mode (reactions not kept), or never delivered.
      const removed = yield* record(reaction(1, 10, []))
      assert.deepStrictEqual([removed.recorded, removed.mapped.skipped, removed.mapped.history], [0, undefined, []])
      assert.deepStrictEqual(yield* reactions, [])
      const history = yield* HistoryStore
      assert.deepStrictEqual(
        (yield* history.recent({ chat_id: String(F.forum.id), topic_id: "7" }, 20)).map((e) => e.item.kind),
        ["inbound_user"]
      )
    }).pipe(Effect.provide(DeixisTelegraf.layerMemory())))
})
