import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { activate, advance, ingest, list, message, minutes, resolve, T0, withCore } from "./fixtures.js"

const article = (id: number, topic: number | null, options: { sender?: number } = {}) =>
  message(id, {
    topic_id: topic,
    sender_user_id: options.sender ?? 100,
    links: [{ url: `https://example.com/${id}`, title: `Article ${id}` }]
  })

describe("resolve_reference_target", () => {
  describe("spec tests", () => {
    it.effect("exact reply target resolution", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, poll: { poll_id: "p1", question: "Lunch?" } }),
          activate("poll_created", { source_message_id: 1, kind: "poll" }),
          article(2, 7),
          activate("summarized", { source_message_id: 2, kind: "link" }),
          message(3, { topic_id: 7, reply_to_message_id: 1 })
        )
        const result = yield* resolve({ chat_id: 1, topic_id: 7, current_message_id: 3, reply_to_message_id: 1, sender_user_id: 100, raw_user_text: "close it" })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.object_id, "1/1/poll")
        assert.strictEqual(result.scope_used, "reply_chain")
        assert.include(result.reasons, "exact_reply_target")
      })))

    it.effect("same-topic vs other-topic conflict", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          article(1, 7),
          activate("summarized", { source_message_id: 1, kind: "link" })
        )
        yield* advance(minutes(5))
        // A newer active article, but in another topic.
        yield* ingest(article(2, 8), activate("summarized", { source_message_id: 2, kind: "link" }), message(3, { topic_id: 7 }))
        const result = yield* resolve({ chat_id: 1, topic_id: 7, current_message_id: 3, sender_user_id: 100, raw_user_text: "" })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.object_id, "1/1/link")
        assert.strictEqual(result.scope_used, "topic")
        assert.isFalse(result.candidates.some((c) => c.topic_id === "8"))
      })))

    it.effect("kind filtering for poll/reminder/media", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, poll: { poll_id: "p1", question: "Lunch?" } }),
          activate("poll_created", { source_message_id: 1, kind: "poll" }),
          message(2, { topic_id: 7 }),
          activate("reminder_created", { source_message_id: 2, kind: "reminder", due_at: "2026-11-23T09:00:00Z", title_or_label: "standup" }),
          message(3, { topic_id: 7, media: [{ kind: "media.image", file_id: "f1" }] }),
          activate("media_described", { source_message_id: 3, kind: "media.image" }),
          message(4, { topic_id: 7 })
        )
        const base = { chat_id: 1, topic_id: 7, current_message_id: 4, sender_user_id: 100, raw_user_text: "" } as const
        for (const [kind, expected] of [["poll", "1/1/poll"], ["reminder", "1/2/reminder"], ["media.image", "1/3/media.image"]] as const) {
          const result = yield* resolve({ ...base, allowed_kinds: [kind] })
          assert.strictEqual(result.status, "resolved", kind)
          assert.strictEqual(result.best_match?.object_id, expected)
          assert.isTrue(result.candidates.every((c) => c.kind === kind))
        }
        const byHint = yield* resolve({ ...base, normalized_reference_hints: { target_kind_hint: "reminder" } })
        assert.strictEqual(byHint.best_match?.object_id, "1/2/reminder")
        assert.include(byHint.reasons, "kind_match")
      })))

    it.effect("sender ownership preference", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, sender_user_id: 100 }),
          activate("reminder_created", { source_message_id: 1, kind: "reminder", due_at: "2026-11-23T09:00:00Z" }),
          message(2, { topic_id: 7, sender_user_id: 200 }),
          activate("reminder_created", { source_message_id: 2, kind: "reminder", due_at: "2026-11-23T10:00:00Z" }),
          message(3, { topic_id: 7, sender_user_id: 100 })
        )
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 3, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "reminder", ownership_hint: "mine" }
        })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.object_id, "1/1/reminder")
        assert.include(result.reasons, "owned_by_sender")
      })))

    it.effect("ambiguity return instead of bad guess", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          article(1, 7),
          article(2, 7),
          activate("summarized", { source_message_id: 1, kind: "link" }),
          activate("summarized", { source_message_id: 2, kind: "link" }),
          message(3, { topic_id: 7 })
        )
        const result = yield* resolve({ chat_id: 1, topic_id: 7, current_message_id: 3, sender_user_id: 100, raw_user_text: "" })
        assert.strictEqual(result.status, "ambiguous")
        assert.isNull(result.best_match)
        assert.deepStrictEqual(result.candidates.map((c) => c.object_id).sort(), ["1/1/link", "1/2/link"])
        assert.include(result.reasons, "near_equal_scores")
        assert.isBelow(result.confidence, 1)
      })))

    it.effect("stale candidate deprioritization", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, media: [{ kind: "media.image" }] }),
          activate("media_described", { source_message_id: 1, kind: "media.image" })
        )
        yield* advance(minutes(42)) // 3 of its 45 minutes left: near expiry, stale
        yield* ingest(
          message(2, { topic_id: 7, media: [{ kind: "media.image" }] }),
          activate("media_described", { source_message_id: 2, kind: "media.image" }),
          message(3, { topic_id: 7 })
        )
        yield* advance(minutes(1))
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 3, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "image" }, max_candidates: 3
        })
        assert.strictEqual(result.best_match?.object_id, "1/2/media.image")
        const stale = result.diagnostics.scored.find((s) => s.object_id === "1/1/media.image")
        assert.isDefined(stale)
        assert.isBelow(stale!.features["stale"]!, 0)
      })))

    it.effect("an expired typed object gives way to its message candidate", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, poll: { poll_id: "old", question: "Lunch?" } }),
          activate("poll_created", { source_message_id: 1, kind: "poll" }),
          { type: "poll_closed", event_id: "c", poll_id: "old" }
        )
        yield* advance(minutes(60 * 24 * 39)) // a closed poll, 39 days old
        yield* ingest(message(2, { topic_id: 7, reply_to_message_id: 1 }))
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 2, reply_to_message_id: 1, sender_user_id: 100, raw_user_text: ""
        })
        assert.strictEqual(result.status, "resolved")
        assert.deepStrictEqual([result.best_match?.object_id, result.best_match?.kind], ["1/1/message", "message"])
        assert.isFalse(result.diagnostics.scored.some((s) => s.object_id === "1/1/poll"))
        // Asked for polls only, no typed poll is invented.
        const polls = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 2, sender_user_id: 100, raw_user_text: "", allowed_kinds: ["poll"]
        })
        assert.strictEqual(polls.status, "not_found")
      })))

    it.effect("missing hints fallback", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, media: [{ kind: "media.pdf", label: "report.pdf" }] }),
          activate("media_inspected", { source_message_id: 1, kind: "media.pdf" }),
          message(2, { topic_id: 7 }),
          message(3, { topic_id: 7 })
        )
        const result = yield* resolve({ chat_id: 1, topic_id: 7, current_message_id: 3, sender_user_id: 100, raw_user_text: "what does it say?" })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.object_id, "1/1/media.pdf")
        assert.includeMembers([...result.reasons], ["currently_active", "same_topic"])
      })))

    it.effect("multilingual caller path using normalized hints rather than literal tokens", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, poll: { poll_id: "p1", question: "Обед?" } }),
          activate("poll_created", { source_message_id: 1, kind: "poll", created_by_bot: true }),
          article(2, 7),
          activate("summarized", { source_message_id: 2, kind: "link" }),
          message(3, { topic_id: 7 })
        )
        const base = { chat_id: 1, topic_id: 7, current_message_id: 3, sender_user_id: 100 } as const
        const hints = { target_kind_hint: "poll", positional_hint: "latest" } as const
        // The same hints in any language give the same answer; the words themselves are never read.
        const results = yield* Effect.all([
          "закрой этот опрос",
          "close that poll",
          "ferme ce sondage",
          "この投票を締め切って",
          "article summary link this"
        ].map((raw_user_text) => resolve({ ...base, raw_user_text, normalized_reference_hints: hints })))
        for (const result of results) {
          assert.strictEqual(result.best_match?.object_id, "1/1/poll")
          assert.deepStrictEqual(result, results[0])
        }
        // Without hints, words naming a kind change nothing: the text is never searched.
        const withoutHints = yield* resolve({ ...base, raw_user_text: "" })
        const wordy = yield* resolve({ ...base, raw_user_text: "the article, not the poll: статья" })
        assert.deepStrictEqual(wordy, withoutHints)
      })))
  })

  describe("edge cases", () => {
    it.effect("multiple active discussions in one chat: prefer topic scope strongly", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, poll: { poll_id: "p7", question: "Topic 7 poll" } }),
          activate("poll_created", { source_message_id: 1, kind: "poll" })
        )
        yield* advance(minutes(20))
        yield* ingest(
          message(2, { topic_id: 8, poll: { poll_id: "p8", question: "Topic 8 poll" } }),
          activate("poll_created", { source_message_id: 2, kind: "poll" }),
          message(3, { topic_id: 7 })
        )
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 3, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "poll", recency_hint: "latest" }
        })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.object_id, "1/1/poll")
      })))

    it.effect("reply exists but referenced kind does not match: include reply candidate but allow higher-scoring typed candidate", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, poll: { poll_id: "p1", question: "Lunch?" } }),
          activate("poll_created", { source_message_id: 1, kind: "poll" }),
          message(2, { topic_id: 7, sender_user_id: 200 }),
          message(3, { topic_id: 7, reply_to_message_id: 2 })
        )
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 3, reply_to_message_id: 2, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "poll" }, max_candidates: 3
        })
        assert.strictEqual(result.best_match?.object_id, "1/1/poll")
        const reply = result.diagnostics.scored.find((s) => s.object_id === "1/2/message")
        assert.isDefined(reply, "the reply target stays a candidate")
        assert.isAbove(reply!.features["reply_target"]!, 0)
        assert.isBelow(reply!.features["kind_mismatch"]!, 0)
      })))

    it.effect("no topic support in chat: fall back to chat-only mode cleanly", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          article(1, null),
          activate("summarized", { source_message_id: 1, kind: "link" }),
          message(2)
        )
        const result = yield* resolve({ chat_id: 1, current_message_id: 2, sender_user_id: 100, raw_user_text: "" })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.object_id, "1/1/link")
        assert.strictEqual(result.scope_used, "chat")
        assert.notInclude(result.reasons, "weak_scope_fallback")
        assert.notInclude(result.reasons, "same_topic")
      })))

    it.effect("two candidates with near-equal score: return ambiguous, do not guess", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, media: [{ kind: "media.image" }, { kind: "media.image" }] }),
          activate("media_inspected", { source_message_id: 1, kind: "media.image" }),
          activate("media_inspected", { object_id: "1/1/media.image/1" }),
          message(2, { topic_id: 7 })
        )
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 2, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "image" }
        })
        assert.strictEqual(result.status, "ambiguous")
        assert.strictEqual(result.candidates.length, 2)
        assert.isNull(result.best_match)
      })))

    it.effect("user asks for \"my reminder\" but reminders belong to multiple users: prefer sender-owned reminders", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(message(1, { topic_id: 7, sender_user_id: 100 }), activate("reminder_created", { source_message_id: 1, kind: "reminder", due_at: "2026-11-23T09:00:00Z" }))
        yield* advance(minutes(3))
        // Two other users' reminders, both newer.
        yield* ingest(
          message(2, { topic_id: 7, sender_user_id: 200 }),
          activate("reminder_created", { source_message_id: 2, kind: "reminder", due_at: "2026-11-23T09:00:00Z" }),
          message(3, { topic_id: 7, sender_user_id: 300 }),
          activate("reminder_created", { source_message_id: 3, kind: "reminder", due_at: "2026-11-23T09:00:00Z" }),
          message(4, { topic_id: 7, sender_user_id: 100 })
        )
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 4, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "reminder", ownership_hint: "mine" }
        })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.created_by_user_id, "100")
      })))

    it.effect("object expired from TTL but source message still exists: allow message candidate, not typed object hallucination", () =>
      withCore(
        Effect.gen(function*() {
          yield* ingest(
            message(1, { topic_id: 7, media: [{ kind: "media.image" }] }),
            activate("media_described", { source_message_id: 1, kind: "media.image" })
          )
          yield* advance(minutes(60 * 24 * 8)) // past TTL and the 7-day retention
          const { ContextStore } = yield* Effect.promise(() => import("../src/ContextStore.js"))
          const store = yield* ContextStore
          const now = Date.parse("2026-11-30T10:00:00Z")
          assert.strictEqual(yield* store.sweep(now), 1)
          yield* ingest(message(2, { topic_id: 7, reply_to_message_id: 1 }))
          const result = yield* resolve({
            chat_id: 1, topic_id: 7, current_message_id: 2, reply_to_message_id: 1, sender_user_id: 100, raw_user_text: "",
            normalized_reference_hints: { target_kind_hint: "image" }
          })
          assert.isFalse(result.candidates.some((c) => c.kind === "media.image"))
          assert.isFalse(result.diagnostics.scored.some((s) => s.object_id === "1/1/media.image"))
          assert.isTrue(result.diagnostics.scored.some((s) => s.object_id === "1/1/message"))
        }),
        // The sweep removes the object: a 7-day object retention (the default keeps objects).
        { store: { object_retention: minutes(60 * 24 * 7) } }
      ))

    it.effect("empty hints and no reply target: rely on recency + activity + scope only", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(article(1, 7), activate("summarized", { source_message_id: 1, kind: "link" }))
        yield* advance(minutes(90))
        yield* ingest(article(2, 7), activate("summarized", { source_message_id: 2, kind: "link" }))
        yield* advance(minutes(10))
        // A newer link nobody acted on, and newer plain chatter.
        yield* ingest(article(3, 7), message(4, { topic_id: 7 }), message(5, { topic_id: 7 }))
        const result = yield* resolve({ chat_id: 1, topic_id: 7, current_message_id: 5, sender_user_id: 100, raw_user_text: "" })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.object_id, "1/2/link")
        assert.includeMembers([...result.reasons], ["same_topic", "currently_active"])
      })))
  })

  describe("scope and safety", () => {
    it.effect("never returns an object of another chat", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { chat_id: 2, poll: { poll_id: "p", question: "elsewhere" } }),
          activate("poll_created", { chat_id: 2, source_message_id: 1, kind: "poll" }),
          message(2, { chat_id: 1 })
        )
        const result = yield* resolve({
          chat_id: 1, current_message_id: 2, reply_to_message_id: 1, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "poll" }
        })
        assert.strictEqual(result.status, "not_found")
        assert.deepStrictEqual(result.candidates, [])
        assert.deepStrictEqual(result.reasons, ["no_candidates"])
      })))

    it.effect("is safe on an unknown chat and with sparse state", () =>
      withCore(Effect.gen(function*() {
        const result = yield* resolve({ chat_id: 999, topic_id: 3, current_message_id: 1, reply_to_message_id: 5, raw_user_text: "this" })
        assert.strictEqual(result.status, "not_found")
        assert.strictEqual(result.confidence, 0)
        assert.isNull(result.best_match)
      })))

    it.effect("plain recent chatter alone is not a plausible target", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(message(1, { topic_id: 7, sender_user_id: 200 }), message(2, { topic_id: 7 }))
        const result = yield* resolve({ chat_id: 1, topic_id: 7, current_message_id: 2, sender_user_id: 100, raw_user_text: "" })
        assert.strictEqual(result.status, "not_found")
        assert.deepStrictEqual(result.reasons, ["below_min_score"])
      })))

    it.effect("an object the current message carries is a candidate (\"what is this image?\")", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(message(1, { topic_id: 7, media: [{ kind: "media.image", file_id: "f" }] }))
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 1, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "image" }
        })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.ref, "f")
      })))

    it.effect("ordinal hints pick by position among the hinted kind", () =>
      withCore(Effect.gen(function*() {
        for (const id of [1, 2, 3]) {
          yield* ingest(message(id, { topic_id: 7, poll: { poll_id: `p${id}` } }), activate("poll_listed", { source_message_id: id, kind: "poll" }))
          yield* advance(minutes(1))
        }
        yield* ingest(message(4, { topic_id: 7 }))
        const pick = (ordinal_hint: "first" | "second" | "last") =>
          resolve({
            chat_id: 1, topic_id: 7, current_message_id: 4, sender_user_id: 100, raw_user_text: "",
            normalized_reference_hints: { target_kind_hint: "poll", ordinal_hint }
          })
        assert.strictEqual((yield* pick("first")).best_match?.object_id, "1/1/poll")
        assert.strictEqual((yield* pick("second")).best_match?.object_id, "1/2/poll")
        assert.strictEqual((yield* pick("last")).best_match?.object_id, "1/3/poll")
      })))

    it.effect("the reply chain is walked beyond the direct target", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          article(1, 7),
          message(2, { topic_id: 7, reply_to_message_id: 1, direction: "outbound" }),
          message(3, { topic_id: 7, reply_to_message_id: 2 })
        )
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 3, reply_to_message_id: 2, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "article" }
        })
        assert.strictEqual(result.best_match?.object_id, "1/1/link")
        assert.include(result.reasons, "same_reply_chain")
        assert.strictEqual(result.diagnostics.chain_length, 2)
      })))

    it.effect("the log line carries the spec's fields and never the user's text", () => {
      const lines: Array<string> = []
      const capture = Logger.replace(Logger.defaultLogger, Logger.logfmtLogger.pipe(Logger.map((line) => { lines.push(line) })))
      return withCore(Effect.gen(function*() {
        yield* ingest(article(1, 7), activate("summarized", { source_message_id: 1, kind: "link" }), message(2, { topic_id: 7 }))
        yield* resolve({ chat_id: 1, topic_id: 7, current_message_id: 2, sender_user_id: 100, raw_user_text: "secret words", request_id: "req-1" })
        const line = lines.find((l) => l.includes("resolve_reference_target"))
        assert.isDefined(line)
        for (const field of ["request_id=req-1", "chat_id=1", "topic_id=7", "current_message_id=2", "candidate_count=", "status=resolved", "top_ids=1/1/link", "top_score_gap="]) {
          assert.include(line!, field)
        }
        assert.notInclude(lines.join("\n"), "secret words")
      })).pipe(Effect.provide(capture))
    })
  })

  describe("real group traffic", () => {
    const photo = (id: number, album: string | undefined, extra: Parameters<typeof message>[1] = {}) =>
      message(id, {
        topic_id: 7,
        media: [{ kind: "media.image", file_id: `photo-${id}` }],
        ...(album === undefined ? {} : { media_group_id: album }),
        ...extra
      })

    it.effect("a reply to the second photo of an album is the second photo", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(photo(1, "alb"), photo(2, "alb"), photo(3, "alb"), message(4, { topic_id: 7, reply_to_message_id: 2 }))
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 4, reply_to_message_id: 2, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "image" }
        })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.object_id, "1/2/media.image")
        assert.isUndefined(result.album)
        assert.notInclude(result.reasons, "whole_album")
      })))

    it.effect("a request ambiguous only between the members of one album resolves to the album", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(photo(1, "alb"), photo(2, "alb"), photo(3, "alb"), message(4, { topic_id: 7 }))
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 4, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "image" }, max_candidates: 5
        })
        assert.strictEqual(result.status, "resolved")
        assert.deepStrictEqual(result.album, { album_id: "alb", object_ids: ["1/1/media.image", "1/2/media.image", "1/3/media.image"] })
        assert.strictEqual(result.best_match?.object_id, "1/1/media.image")
        assert.strictEqual(result.best_match?.album_id, "alb")
        assert.include(result.reasons, "whole_album")
        assert.notInclude(result.reasons, "near_equal_scores")
      })))

    it.effect("images of two different posts stay ambiguous", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(photo(1, "a"), photo(2, "b"), message(3, { topic_id: 7 }))
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 3, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "image" }
        })
        assert.strictEqual(result.status, "ambiguous")
        assert.isUndefined(result.album)
      })))

    it.effect("after a message's link is edited, the new URL resolves and the old one is gone", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 7, links: [{ url: "https://example.com/typo" }] }),
          activate("url_fetched", { source_message_id: 1, kind: "link" })
        )
        yield* advance(minutes(1))
        yield* ingest(
          { type: "message_edited", chat_id: 1, message_id: 1, topic_id: 7, sender_user_id: 100, edited_at: "2026-11-22T10:01:00Z", links: [{ url: "https://example.com/right" }] },
          message(2, { topic_id: 7, reply_to_message_id: 1 })
        )
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 2, reply_to_message_id: 1, sender_user_id: 100, raw_user_text: "",
          normalized_reference_hints: { target_kind_hint: "link" }
        })
        assert.strictEqual(result.best_match?.ref, "https://example.com/right")
        assert.isFalse(result.diagnostics.scored.some((c) => c.object_id !== "1/1/link"))
      })))

    it.effect("in a forum, a request without a topic resolves in the General topic, not topic 500", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(
          message(1, { topic_id: 500, is_forum: true, links: [{ url: "https://example.com/500" }] }),
          activate("summarized", { source_message_id: 1, kind: "link" }),
          message(2, { links: [{ url: "https://example.com/general" }] }),
          message(3)
        )
        const result = yield* resolve({ chat_id: 1, current_message_id: 3, sender_user_id: 100, raw_user_text: "", normalized_reference_hints: { target_kind_hint: "link" } })
        assert.strictEqual(result.status, "resolved")
        assert.strictEqual(result.best_match?.object_id, "1/2/link")
        assert.strictEqual(result.scope_used, "topic")
        assert.include(result.reasons, "same_topic")
      })))

    it.effect("record_touch records a resolver touch, refreshing within the kind's TTL; a plain resolve changes nothing", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(article(1, 7), message(2, { topic_id: 7, reply_to_message_id: 1 }))
        const request = {
          chat_id: 1, topic_id: 7, current_message_id: 2, reply_to_message_id: 1, sender_user_id: 100, raw_user_text: ""
        } as const
        yield* resolve(request)
        const plain = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2 })
        assert.deepStrictEqual(plain.objects, [])
        yield* advance(minutes(1))
        const touched = yield* resolve({ ...request, record_touch: true })
        assert.strictEqual(touched.best_match?.object_id, "1/1/link")
        const listed = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2 })
        assert.deepStrictEqual(listed.objects.map((o) => [o.object_id, o.why_active.includes("activated_by_resolver")]), [["1/1/link", true]])
        // Within the link's TTL (2 hours) of the touch, never beyond.
        assert.strictEqual(listed.objects[0]!.active_until, T0 + minutes(1) + minutes(120))
        // The same request touching again changes nothing (idempotent per request message).
        yield* advance(minutes(30))
        yield* resolve({ ...request, record_touch: true })
        const again = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 2 })
        assert.strictEqual(again.objects[0]!.active_until, T0 + minutes(121))
      })))

    it.effect("a touched plain message becomes an active message object", () =>
      withCore(Effect.gen(function*() {
        yield* ingest(message(1, { topic_id: 7 }), message(2, { topic_id: 7, reply_to_message_id: 1 }))
        const result = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 2, reply_to_message_id: 1, sender_user_id: 100, raw_user_text: "", record_touch: true
        })
        assert.strictEqual(result.best_match?.object_id, "1/1/message")
        const listed = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 3 })
        assert.deepStrictEqual(listed.objects.map((o) => [o.object_id, o.kind]), [["1/1/message", "message"]])
      })))
  })
})
