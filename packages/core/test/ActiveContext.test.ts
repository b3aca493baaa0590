import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { activate, advance, ingest, iso, list, message, minutes, T0, withCore } from "./fixtures.js"

const inTopic = (topic: number | null, id: number, extra: Parameters<typeof message>[1] = {}) =>
  message(id, { topic_id: topic, ...extra })

describe("list_active_context_objects", () => {
  describe("spec tests", () => {
    it.effect("activation by summary/media/poll/reminder events", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          inTopic(7, 1, { links: [{ url: "https://example.com/a" }] }),
          activate("summarized", { source_message_id: 1, kind: "link" }),
          inTopic(7, 2, { media: [{ kind: "media.voice" }] }),
          activate("media_transcribed", { source_message_id: 2, kind: "media.voice" }),
          inTopic(7, 3, { poll: { poll_id: "p", question: "Q" } }),
          activate("poll_created", { source_message_id: 3, kind: "poll" }),
          inTopic(7, 4),
          activate("reminder_created", { source_message_id: 4, kind: "reminder", due_at: "2026-11-23T09:00:00Z" }),
          inTopic(7, 5, { direction: "outbound", sender_user_id: 999 }),
          activate("summary_generated", { source_message_id: 5, kind: "summary", title_or_label: "Summary of the thread" }),
          inTopic(7, 6)
        )
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 6, sender_user_id: 100, max_results: 10 })
        const why: Record<string, ReadonlyArray<string>> = Object.fromEntries(result.objects.map((o) => [o.kind, o.why_active]))
        assert.deepStrictEqual(why, {
          summary: ["same_topic", "activated_by_summary", "touched_recently"],
          reminder: ["same_topic", "activated_by_reminder_create", "sender_owned", "future_reminder", "touched_recently"],
          poll: ["same_topic", "activated_by_poll_create", "sender_owned", "open_poll", "touched_recently"],
          "media.voice": ["same_topic", "activated_by_media_inspection", "sender_owned", "touched_recently"],
          link: ["same_topic", "activated_by_summary", "sender_owned", "touched_recently"]
        })
        assert.strictEqual(result.objects.length, 5)
        assert.isFalse(result.truncated)
      })))

    it.effect("no activation from plain mention", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          inTopic(7, 1, { links: [{ url: "https://example.com/a" }], media: [{ kind: "media.image" }], poll: { poll_id: "p" } }),
          inTopic(7, 2, { reply_to_message_id: 1 })
        )
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2, reply_to_message_id: 1, sender_user_id: 100 })
        assert.deepStrictEqual(result.objects, [])
      })))

    it.effect("topic isolation", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          inTopic(7, 1, { links: [{ url: "https://example.com/7" }] }),
          activate("url_fetched", { source_message_id: 1, kind: "link" }),
          inTopic(8, 2, { links: [{ url: "https://example.com/8" }] }),
          activate("url_fetched", { source_message_id: 2, kind: "link" }),
          inTopic(9, 3)
        )
        // Topic 7 has an active object of its own: nothing from 8 leaks in.
        const seven = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 10, sender_user_id: 100 })
        assert.deepStrictEqual(seven.objects.map((o) => o.object_id), ["1/1/link"])
        assert.strictEqual(seven.scope_used, "topic")
        assert.notInclude(seven.objects[0]!.why_active, "chat_scope_fallback")
      })))

    it.effect("a topic with nothing active falls back to the chat's active objects, marked as the fallback", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          inTopic(7, 1, { links: [{ url: "https://example.com/7" }] }),
          activate("url_fetched", { source_message_id: 1, kind: "link" }),
          inTopic(8, 2, { links: [{ url: "https://example.com/8" }] }),
          inTopic(9, 3)
        )
        // Topic 9 holds the request's own message and nothing active: the chat-level fallback.
        const nine = yield* list({ chat_id: 1, topic_id: 9, current_message_id: 3, sender_user_id: 100 })
        assert.deepStrictEqual(nine.objects.map((o) => o.object_id), ["1/1/link"])
        assert.strictEqual(nine.scope_used, "chat")
        assert.include(nine.objects[0]!.why_active, "chat_scope_fallback")
        assert.notInclude(nine.objects[0]!.why_active, "same_topic")
      })))

    it.effect("reply-chain precedence", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(inTopic(7, 1, { links: [{ url: "https://example.com/old" }] }), activate("summarized", { source_message_id: 1, kind: "link" }))
        yield* advance(minutes(40))
        yield* ingest(
          inTopic(7, 2, { media: [{ kind: "media.image" }] }),
          activate("media_described", { source_message_id: 2, kind: "media.image" }),
          inTopic(7, 3, { reply_to_message_id: 1 })
        )
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 3, reply_to_message_id: 1, sender_user_id: 100 })
        assert.deepStrictEqual(result.objects.map((o) => o.object_id), ["1/1/link", "1/2/media.image"])
        assert.include(result.objects[0]!.why_active, "same_reply_chain")
        assert.strictEqual(result.scope_used, "reply_chain")
      })))

    it.effect("stale object expiry", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(inTopic(7, 1, { media: [{ kind: "media.image" }] }), activate("media_inspected", { source_message_id: 1, kind: "media.image" }))
        yield* advance(minutes(44))
        const before = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2 })
        assert.strictEqual(before.objects.length, 1)
        assert.include(before.objects[0]!.why_active, "near_expiry")
        yield* advance(minutes(2))
        const after = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2, include_inactive_debug: true })
        assert.deepStrictEqual(after.objects, [])
        assert.deepStrictEqual(after.inactive_debug, [
          { object_id: "1/1/media.image", kind: "media.image", source_message_id: "1", why_inactive: "expired" }
        ])
      })))

    it.effect("inactive debug: the objects seen, never the plain messages around them", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          inTopic(7, 1, { links: [{ url: "https://example.com/a" }] }),
          inTopic(7, 2, { direction: "outbound", sender_user_id: 999 }),
          inTopic(7, 3),
          inTopic(7, 4),
          inTopic(7, 5),
          inTopic(7, 6)
        )
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 6, include_inactive_debug: true })
        assert.deepStrictEqual(result.objects, [])
        assert.deepStrictEqual(result.inactive_debug, [
          { object_id: "1/1/link", kind: "link", source_message_id: "1", why_inactive: "never_activated" }
        ])
      })))

    it.effect("mixed active object ordering", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(inTopic(7, 1, { links: [{ url: "https://example.com/a" }] }), activate("summarized", { source_message_id: 1, kind: "link" }))
        yield* advance(minutes(30))
        yield* ingest(inTopic(7, 2, { media: [{ kind: "media.image" }] }), activate("media_described", { source_message_id: 2, kind: "media.image" }))
        yield* advance(minutes(5))
        yield* ingest(inTopic(7, 3, { poll: { poll_id: "p" } }), activate("poll_created", { source_message_id: 3, kind: "poll" }))
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 4, sender_user_id: 100 })
        // The open poll (newest, open) first, then the image, then the older article.
        assert.deepStrictEqual(result.objects.map((o) => o.kind), ["poll", "media.image", "link"])
        const confidences = result.objects.map((o) => o.confidence)
        assert.deepStrictEqual(confidences, [...confidences].sort((a, b) => b - a))
      })))

    it.effect("allowed_kinds filtering", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          inTopic(7, 1, { links: [{ url: "https://example.com/a" }], media: [{ kind: "media.pdf" }] }),
          activate("summarized", { source_message_id: 1, kind: "link" }),
          activate("media_inspected", { source_message_id: 1, kind: "media.pdf" })
        )
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2, allowed_kinds: ["media.pdf", "poll"] })
        assert.deepStrictEqual(result.objects.map((o) => o.kind), ["media.pdf"])
      })))

    it.effect("empty result behavior", () =>
      withCore(Effect.gen(function*() {
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 1 })
        assert.deepStrictEqual(result, { objects: [], scope_used: "chat", generated_at: T0, truncated: false })
      })))
  })

  describe("edge cases", () => {
    it.effect("no active objects: return empty list, not synthetic guesses", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(inTopic(7, 1), inTopic(7, 2, { links: [{ url: "https://example.com" }] }), inTopic(7, 3, { direction: "outbound" }))
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 4, sender_user_id: 100 })
        assert.deepStrictEqual(result.objects, [])
        // Nothing active in the topic, nor elsewhere: the chat was searched.
        assert.strictEqual(result.scope_used, "chat")
        assert.isFalse(result.truncated)
      })))

    it.effect("several active objects in same topic: return top N ordered by score", () =>
      withCore(Effect.gen(function*() {
        for (let id = 1; id <= 8; id++) {
          yield* ingest(inTopic(7, id, { links: [{ url: `https://example.com/${id}` }] }), activate("url_fetched", { source_message_id: id, kind: "link" }))
          yield* advance(minutes(2))
        }
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 9, max_results: 3 })
        assert.deepStrictEqual(result.objects.map((o) => o.object_id), ["1/8/link", "1/7/link", "1/6/link"])
        assert.isTrue(result.truncated)
      })))

    it.effect("the chat fallback is bounded, yet a list reaches one past max_results into it, so truncated tells", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(inTopic(7, 100))
        for (let id = 1; id <= 30; id++) {
          yield* ingest(inTopic(8, id, { links: [{ url: `https://example.com/${id}` }] }), activate("url_fetched", { source_message_id: id, kind: "link" }))
          yield* advance(minutes(1))
        }
        // Topic 7 has nothing active: objects active in topic 8 are listed, more than the pool's default 16.
        const many = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 101, max_results: 20 })
        assert.strictEqual(many.objects.length, 20)
        assert.strictEqual(many.scope_used, "chat")
        assert.isTrue(many.truncated)
        const all = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 101, max_results: 30 })
        assert.strictEqual(all.objects.length, 30)
        assert.isFalse(all.truncated)
      })))

    it.effect("different topics have active objects: do not mix unless falling back from missing topic state", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          inTopic(7, 1, { poll: { poll_id: "p7" } }),
          activate("poll_created", { source_message_id: 1, kind: "poll" }),
          inTopic(8, 2, { poll: { poll_id: "p8" } }),
          activate("poll_created", { source_message_id: 2, kind: "poll" })
        )
        const known = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 3 })
        assert.deepStrictEqual(known.objects.map((o) => o.object_id), ["1/1/poll"])
        // Topic 42 was never seen: its state is missing, so the chat is searched, flagged.
        const missing = yield* list({ chat_id: 1, topic_id: 42, current_message_id: 3 })
        assert.strictEqual(missing.scope_used, "chat")
        assert.deepStrictEqual(missing.objects.map((o) => o.object_id).sort(), ["1/1/poll", "1/2/poll"])
        assert.isTrue(missing.objects.every((o) => o.why_active.includes("chat_scope_fallback")))
      })))

    it.effect("old active article plus newly created poll: both may appear if both remain valid in the same scope", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(inTopic(7, 1, { links: [{ url: "https://example.com/a" }] }), activate("summarized", { source_message_id: 1, kind: "link" }))
        yield* advance(minutes(100))
        yield* ingest(inTopic(7, 2, { poll: { poll_id: "p" } }), activate("poll_created", { source_message_id: 2, kind: "poll" }))
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 3 })
        assert.deepStrictEqual(result.objects.map((o) => o.kind), ["poll", "link"])
      })))

    it.effect("reply to old message in active topic: reply-chain relevance may outrank general topic activeness", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(inTopic(7, 1, { media: [{ kind: "media.document" }] }), activate("media_inspected", { source_message_id: 1, kind: "media.document" }))
        yield* advance(minutes(30))
        for (let id = 2; id <= 4; id++) {
          yield* ingest(inTopic(7, id, { links: [{ url: `https://example.com/${id}` }] }), activate("summarized", { source_message_id: id, kind: "link" }))
        }
        yield* ingest(inTopic(7, 5, { reply_to_message_id: 1 }))
        const result = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 5, reply_to_message_id: 1 })
        assert.strictEqual(result.objects[0]!.object_id, "1/1/media.document")
        assert.strictEqual(result.scope_used, "reply_chain")
      })))

    it.effect("topicless chat: operate in chat scope only", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(inTopic(null, 1, { links: [{ url: "https://example.com/a" }] }), activate("summarized", { source_message_id: 1, kind: "link" }))
        const result = yield* list({ chat_id: 1, current_message_id: 2 })
        assert.strictEqual(result.scope_used, "chat")
        assert.deepStrictEqual(result.objects.map((o) => o.object_id), ["1/1/link"])
        assert.notInclude(result.objects[0]!.why_active, "same_topic")
        assert.notInclude(result.objects[0]!.why_active, "chat_scope_fallback")
      })))
  })

  it.effect("reports ownership, generated_at from the Clock, and the object's expiry", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(inTopic(7, 1, { sender_user_id: 100 }), activate("reminder_created", { source_message_id: 1, kind: "reminder", due_at: "2026-11-23T09:00:00Z" }))
      yield* advance(minutes(1))
      const mine = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2, sender_user_id: 100 })
      const theirs = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2, sender_user_id: 200 })
      assert.isTrue(mine.objects[0]!.owned_by_sender)
      assert.include(mine.objects[0]!.why_active, "sender_owned")
      assert.isFalse(theirs.objects[0]!.owned_by_sender)
      assert.strictEqual(mine.generated_at, T0 + minutes(1))
      // A scheduled reminder is active until it is due, plus the 15-minute grace.
      assert.strictEqual(iso(mine.objects[0]!.active_until), "2026-11-23T09:15:00.000Z")
    })))

  it.effect("a pending reminder due in three weeks stays listed until it is due, then for its grace", () =>
    withCore(Effect.gen(function*() {
      const due = T0 + minutes(60 * 24 * 21)
      yield* ingest(inTopic(7, 1), activate("reminder_created", { source_message_id: 1, kind: "reminder", due_at: iso(due), title_or_label: "renew" }))
      yield* advance(minutes(60 * 24 * 20))
      const later = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2 })
      assert.deepStrictEqual(later.objects.map((o) => [o.object_id, o.why_active.includes("future_reminder")]), [["1/1/reminder", true]])
      yield* advance(minutes(60 * 24) + minutes(14))
      const inGrace = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2 })
      assert.deepStrictEqual(inGrace.objects.map((o) => o.object_id), ["1/1/reminder"])
      yield* advance(minutes(2))
      const past = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2 })
      assert.deepStrictEqual(past.objects, [])
    })))

  it.effect("in a forum, a request without a topic lists the General topic, not the whole chat", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(
        message(1, { topic_id: 500, is_forum: true, links: [{ url: "https://example.com/500" }] }),
        activate("summarized", { source_message_id: 1, kind: "link" }),
        message(2, { links: [{ url: "https://example.com/general" }] }),
        activate("summarized", { source_message_id: 2, kind: "link" })
      )
      const result = yield* list({ chat_id: 1, current_message_id: 3 })
      assert.deepStrictEqual(result.objects.map((o) => [o.object_id, o.topic_id]), [["1/2/link", "1"]])
      assert.strictEqual(result.scope_used, "topic")
      assert.include(result.objects[0]!.why_active, "same_topic")
    })))
})
