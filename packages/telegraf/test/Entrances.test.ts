/**
 * One recording path: the Telegraf middleware (real Telegraf against the fake Bot API on
 * loopback) and a direct call of the recorder leave the very same state for the whole corpus,
 * and recording it all again changes nothing.
 */
import { ReferenceResolver, ResolveRequest } from "@deixis/core/ReferenceResolver"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Telegraf } from "telegraf"
import type { Update } from "telegraf/types"
import * as DeixisTelegraf from "../src/DeixisTelegraf.js"
import * as TelegramRecorder from "../src/TelegramRecorder.js"
import { chats, corpus, options, recordedState } from "../src/TelegramFixtures.js"
import * as FakeBotApi from "./utils/FakeBotApi.js"

const fresh = () => DeixisTelegraf.layerMemory()
const viaTelegraf = Effect.gen(function*() {
  const api = yield* FakeBotApi.make({ botId: Number(options.botId), username: options.botUsername })
  const runtime = yield* Effect.runtime<DeixisTelegraf.Services>()
  const bot = new Telegraf<DeixisTelegraf.DeixisContext>("123:TEST", { telegram: { apiRoot: api.apiRoot } })
  bot.use(DeixisTelegraf.middleware(runtime, { mode: "talkative" }))
  const feed = Effect.forEach(corpus, (f) => Effect.promise(() => bot.handleUpdate(f.update as unknown as Update)), { discard: true })
  yield* feed
  const first = yield* recordedState()
  yield* feed
  return { first, again: yield* recordedState(), calls: api.calls().map((c) => c.method) }
})
const viaRecorder = Effect.gen(function*() {
  for (const f of corpus) yield* TelegramRecorder.record(f.update, { ...options, mode: "talkative" })
  return yield* recordedState()
})
const viaBatch = Effect.gen(function*() {
  yield* TelegramRecorder.recordBatch(corpus.map((f) => f.update), { ...options, mode: "talkative" })
  return yield* recordedState()
})

describe("one recording path for the whole corpus", () => {
  it.scoped("the Telegraf middleware records exactly what the recorder records, one update or a batch at a time, and a replay changes nothing", () =>
    Effect.gen(function*() {
      const telegraf = yield* viaTelegraf.pipe(Effect.provide(fresh()))
      const direct = yield* viaRecorder.pipe(Effect.provide(fresh()))
      const batch = yield* viaBatch.pipe(Effect.provide(fresh()))
      assert.deepStrictEqual(telegraf.first, direct)
      assert.deepStrictEqual(batch, direct)
      assert.deepStrictEqual(telegraf.again, telegraf.first)
      // Recording made no Bot API call but getMe.
      assert.deepStrictEqual([...new Set(telegraf.calls)], ["getMe"])
    }))

  it.effect("after the corpus: the upgraded group's data lives under the supergroup, before its own messages", () =>
    Effect.gen(function*() {
      const state = yield* viaRecorder
      const group = state[String(chats.group.id)]!
      const upgraded = state[String(chats.upgraded.id)]!
      assert.deepStrictEqual(group.snapshot, { messages: [], objects: [] })
      assert.strictEqual(group.info.migrated_to, String(chats.upgraded.id))
      assert.deepStrictEqual(upgraded.snapshot.messages.map((m) => m.message_id), ["~40", "~41", "~42", "~43", "~44", "~52", "~54", "2"])
      assert.deepStrictEqual(upgraded.snapshot.objects.map((o) => [o.object_id, o.source_message_id]), [
        [`${chats.group.id}/40/link`, "~40"],
        [`${chats.group.id}/52/link`, "~52"]
      ])
      assert.deepStrictEqual(upgraded.history["(none)"]!.map((i) => i.message_id), ["~40", "~41", "~42", "~43", "~44", "~52", "~54", "2"])
    }).pipe(Effect.provide(fresh())))

  it.effect("after the corpus: service notices are nowhere, a reaction is in its message's topic, the bot's answer is recorded", () =>
    Effect.gen(function*() {
      const state = yield* viaRecorder
      const supergroup = state[String(chats.supergroup.id)]!
      const forum = state[String(chats.forum.id)]!
      const ids = supergroup.snapshot.messages.map((m) => m.message_id)
      for (const notice of ["64", "66", "91"]) assert.notInclude(ids, notice)
      for (const notice of ["500", "521", "524"]) assert.notInclude(forum.snapshot.messages.map((m) => m.message_id), notice)
      assert.deepStrictEqual(forum.history["500"]!.map((i) => i.message_id ?? i.text), ["501", "503", "🎉", "520", "522", "526"])
      const answered = supergroup.history["(none)"]!.find((i) => i.message_id === "83")!
      assert.strictEqual(answered.bot_response_id, "84")
      // The pinned message, seen only through the reply to its notice, is recorded with its link.
      const pinned = supergroup.history["(none)"]!.find((i) => i.message_id === "60")!
      assert.strictEqual(pinned.seen_via, "reply")
      assert.deepStrictEqual(
        supergroup.snapshot.objects.filter((o) => o.source_message_id === "60").map((o) => o.ref),
        ["https://example.com/meetup/42"]
      )
      // The edit replaced message 52's link; the album's media carry its id.
      assert.deepStrictEqual(
        supergroup.snapshot.objects.filter((o) => o.source_message_id === "52").map((o) => o.ref),
        ["https://example.com/rust-2026"]
      )
      assert.deepStrictEqual(
        supergroup.snapshot.objects.filter((o) => o.album_id !== undefined).map((o) => o.source_message_id),
        ["70", "71", "72", "95"]
      )
      assert.isTrue(forum.info.is_forum)
    }).pipe(Effect.provide(fresh())))

  it.effect("after the corpus: /what as a reply to a pin notice resolves to the pinned message's link", () =>
    Effect.gen(function*() {
      yield* viaRecorder
      const resolver = yield* ReferenceResolver
      const result = yield* resolver.resolve(Schema.decodeUnknownSync(ResolveRequest)({
        chat_id: chats.supergroup.id, current_message_id: 65, reply_to_message_id: 60, sender_user_id: 1001
      }))
      assert.strictEqual(result.status, "resolved")
      assert.strictEqual(result.best_match?.ref, "https://example.com/meetup/42")
      assert.include(result.reasons, "exact_reply_target")
    }).pipe(Effect.provide(fresh())))
})

