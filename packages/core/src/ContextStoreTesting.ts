/**
 * The ContextStore contract suite. Every adapter (memory, SQLite, PostgreSQL) runs these very
 * cases: `contextStoreContract("sqlite", layerSqlite(...))` inside a vitest file.
 *
 * Each case works in chats of its own (the chat list's cases search for theirs), so one store
 * may serve the whole suite; the store must be configured with an object retention of
 * {@link contractObjectRetention} (7 days) for the sweep cases.
 *
 * @since 0.1.0
 */
import { assert, beforeAll, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type ContextEventInput, ContextEventBatch } from "./ContextEvent.js"
import { isActive } from "./ContextObject.js"
import { ContextStore, type PoolQuery } from "./ContextStore.js"
import * as TtlPolicy from "./TtlPolicy.js"

const T0 = Date.parse("2026-11-22T10:00:00Z")
const minute = 60_000
const decode = Schema.decodeUnknownSync(ContextEventBatch)

let chatSequence = 0
/** A chat id no other case uses, even across runs against one persistent store. */
const freshChat = () => `contract-${Date.now().toString(36)}-${++chatSequence}`

/** The policy the cases apply events under, and the settings their expectations read. */
let settings: TtlPolicy.TtlSettings = TtlPolicy.defaults
let policy: TtlPolicy.TtlPolicyShape = TtlPolicy.defaultPolicy

const apply = (events: ReadonlyArray<ContextEventInput>, now = T0) =>
  Effect.flatMap(ContextStore, (store) => store.apply(decode(events), { now, ttl: policy }))

const query = (chat: string, overrides: Partial<PoolQuery> = {}): PoolQuery => ({
  chat_id: chat,
  topic_id: null,
  current_message_id: "1000",
  reply_to_message_id: null,
  sender_user_id: null,
  kinds: undefined,
  prefer_kinds: [],
  include_owned: false,
  active_only: false,
  now: T0,
  limits: { chain_depth: 8, recent_objects: 16, recent_per_kind: 8, recent_messages: 4, owned: 8, fallback_active: 16 },
  ...overrides
})

const pool = (q: PoolQuery) => Effect.flatMap(ContextStore, (store) => store.pool(q))
const snapshot = (chat: string) => Effect.flatMap(ContextStore, (store) => store.snapshot(chat))

/**
 * The object retention the store under test is configured with (`object_retention`): the sweep
 * cases expect objects inactive for longer to go, and others to stay.
 *
 * @since 0.2.0
 * @category testing
 */
export const contractObjectRetention = 7 * 24 * 60 * minute

/**
 * What the suite runs under: the TTL settings of the policy events are applied with (today's
 * rules over them), so an adapter is proven to keep whatever a replaced policy wrote.
 *
 * @since 0.2.0
 * @category testing
 */
export interface ContractOptions {
  readonly ttl?: Partial<TtlPolicy.TtlSettings>
}

/**
 * A replaced policy's settings, every duration other than today's: run the suite with it too
 * (`contextStoreContract(name, layer, { ttl: replacedTtl })`) to prove the adapter keeps what
 * the policy wrote rather than rules of its own.
 *
 * @since 0.2.0
 * @category testing
 */
export const replacedTtl: Partial<TtlPolicy.TtlSettings> = {
  medium: 20 * minute,
  short_medium: 7 * minute,
  short: 3 * minute,
  poll_grace: 4 * minute,
  reminder_grace: 2 * minute,
  touch_cap_factor: 2
}

/**
 * Registers the contract cases for one adapter.
 *
 * @since 0.1.0
 * @category testing
 */
export const contextStoreContract = <E>(
  name: string,
  storeLayer: Layer.Layer<ContextStore, E>,
  options: ContractOptions = {}
): void => {
  const ttl: TtlPolicy.TtlSettings = { ...TtlPolicy.defaults, ...options.ttl }
  const ttlPolicy = TtlPolicy.make(ttl)
  describe(`ContextStore contract: ${name}${options.ttl === undefined ? "" : " (replaced TTL policy)"}`, () => {
    // vitest collects every describe before it runs one: each suite's cases read its own policy.
    beforeAll(() => {
      settings = ttl
      policy = ttlPolicy
    })
    layer(storeLayer, { timeout: "60 seconds" })((it) => {
      it.effect("a message applied twice is stored once", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const events: Array<ContextEventInput> = [
            { type: "message_observed", chat_id: chat, message_id: 1, topic_id: 5, sender_user_id: 7, sent_at: "2026-11-22T09:00:00Z" }
          ]
          const first = yield* apply(events)
          const again = yield* apply(events)
          assert.deepStrictEqual([first.applied, first.duplicates], [1, 0])
          assert.deepStrictEqual([again.applied, again.duplicates], [0, 1])
          const snap = yield* snapshot(chat)
          assert.deepStrictEqual(snap.messages, [{
            chat_id: chat,
            message_id: "1",
            topic_id: "5",
            reply_to_message_id: null,
            sender_user_id: "7",
            from_bot: false,
            sent_at: Date.parse("2026-11-22T09:00:00Z")
          }])
        }))

      it.effect("links, media and polls a message carries are known, not active", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          yield* apply([{
            type: "message_observed",
            chat_id: chat,
            message_id: 2,
            links: [{ url: "https://example.com/a", title: "A" }],
            media: [{ kind: "media.image", file_id: "f1" }, { kind: "media.image", file_id: "f2" }],
            poll: { poll_id: `${chat}-poll`, question: "Q?" }
          }])
          const { objects } = yield* snapshot(chat)
          assert.deepStrictEqual(objects.map((o) => o.object_id), [
            `${chat}/2/link`,
            `${chat}/2/media.image`,
            `${chat}/2/media.image/1`,
            `${chat}/2/poll`
          ])
          assert.isTrue(objects.every((o) => o.active_until === null && o.activation_reasons.length === 0))
          assert.deepStrictEqual(objects.map((o) => o.ref), ["https://example.com/a", "f1", "f2", undefined])
          const active = yield* pool(query(chat, { active_only: true }))
          assert.deepStrictEqual(active.entries, [])
        }))

      it.effect("activation by object id, or by source message and kind, with event-id idempotency", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          yield* apply([{ type: "message_observed", chat_id: chat, message_id: 3, links: [{ url: "https://example.com" }] }])
          const events: Array<ContextEventInput> = [
            { type: "object_activated", event_id: "a1", chat_id: chat, reason: "url_fetched", object_id: `${chat}/3/link` },
            { type: "object_activated", event_id: "a2", chat_id: chat, reason: "summary_generated", source_message_id: 4, kind: "summary", topic_id: 9, created_by_bot: true, title_or_label: "Summary" }
          ]
          const first = yield* apply(events, T0 + minute)
          const again = yield* apply(events, T0 + 2 * minute)
          assert.strictEqual(first.applied, 2)
          assert.deepStrictEqual([again.applied, again.duplicates], [0, 2])
          const link = Option.getOrThrow(yield* Effect.flatMap(ContextStore, (s) => s.object(chat, `${chat}/3/link`)))
          assert.deepStrictEqual(link.activation_reasons, ["url_fetched"])
          assert.strictEqual(link.active_until, T0 + minute + settings.medium)
          const summary = Option.getOrThrow(yield* Effect.flatMap(ContextStore, (s) => s.object(chat, `${chat}/4/summary`)))
          assert.deepStrictEqual([summary.topic_id, summary.created_by_bot, summary.title_or_label], ["9", true, "Summary"])
        }))

      it.effect("an event naming an unknown object is skipped, changes nothing, and stays skipped on replay", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const events: Array<ContextEventInput> = [
            { type: "object_activated", event_id: "x", chat_id: chat, reason: "poll_listed", object_id: "nope" },
            { type: "reminder_fired", event_id: "y", chat_id: chat, object_id: "nope" },
            { type: "object_activated", event_id: "w", chat_id: chat, reason: "reminder_created", source_message_id: 1, kind: "reminder" }
          ]
          const result = yield* apply(events)
          assert.deepStrictEqual(result.skipped.map((s) => s.path), ["[0].object_id", "[1].object_id", "[2].due_at"])
          assert.strictEqual(result.applied, 0)
          assert.deepStrictEqual(yield* snapshot(chat), { messages: [], objects: [] })
          const replay = yield* apply(events)
          assert.deepStrictEqual([replay.duplicates, replay.skipped.length], [3, 0])
        }))

      it.effect("a poll close that arrives before its poll is applied when the poll is seen", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const pollId = `${chat}-early`
          const close: ContextEventInput = { type: "poll_closed", event_id: "early", poll_id: pollId, at: "2026-11-22T09:30:00Z" }
          assert.strictEqual((yield* apply([close])).applied, 1)
          assert.strictEqual((yield* apply([close])).duplicates, 1)
          yield* apply([{ type: "message_observed", chat_id: chat, message_id: 1, poll: { poll_id: pollId } }])
          const [poll] = (yield* snapshot(chat)).objects
          assert.deepStrictEqual(poll!.poll, { poll_id: pollId, state: "closed", closed_at: Date.parse("2026-11-22T09:30:00Z") })
          assert.strictEqual((yield* apply([close])).duplicates, 1)
        }))

      it.effect("a poll closed by poll id alone finds its chat, and stays active for the grace period", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const pollId = `${chat}-p`
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 5, poll: { poll_id: pollId, question: "Q" }, direction: "outbound" },
            { type: "object_activated", event_id: "c", chat_id: chat, reason: "poll_created", source_message_id: 5, kind: "poll" }
          ])
          yield* apply([{ type: "poll_closed", event_id: "close", poll_id: pollId }], T0 + 10 * minute)
          const poll = Option.getOrThrow(yield* Effect.flatMap(ContextStore, (s) => s.object(chat, `${chat}/5/poll`)))
          assert.deepStrictEqual(poll.poll, { poll_id: pollId, state: "closed", closed_at: T0 + 10 * minute })
          assert.strictEqual(poll.active_until, T0 + 10 * minute + settings.poll_grace)
          assert.strictEqual(poll.ttl_class, "poll_grace")
        }))

      it.effect("a poll id names the poll where it was first seen: a forward of the poll elsewhere does not take its close", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const other = freshChat()
          const pollId = `${chat}-fwd`
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 5, poll: { poll_id: pollId, question: "Q" }, direction: "outbound" }
          ])
          // Telegram forwards a poll as the same poll (same id): into another chat, and into this one.
          yield* apply([
            { type: "message_observed", chat_id: other, message_id: 9, poll: { poll_id: pollId, question: "Q" } },
            { type: "message_observed", chat_id: chat, message_id: 6, poll: { poll_id: pollId, question: "Q" } }
          ])
          yield* apply([{ type: "poll_closed", event_id: "close", poll_id: pollId }], T0 + 10 * minute)
          const store = yield* ContextStore
          const original = Option.getOrThrow(yield* store.object(chat, `${chat}/5/poll`))
          assert.deepStrictEqual(original.poll, { poll_id: pollId, state: "closed", closed_at: T0 + 10 * minute })
          assert.strictEqual(Option.getOrThrow(yield* store.object(other, `${other}/9/poll`)).poll?.state, "open")
          assert.strictEqual(Option.getOrThrow(yield* store.object(chat, `${chat}/6/poll`)).poll?.state, "open")
        }))

      it.effect("reminders are updated, fired and cancelled", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const id = `${chat}/6/reminder`
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 6, sender_user_id: 1 },
            { type: "object_activated", event_id: "r", chat_id: chat, reason: "reminder_created", source_message_id: 6, kind: "reminder", due_at: "2026-11-22T12:00:00Z" }
          ])
          yield* apply([{ type: "reminder_updated", event_id: "u", chat_id: chat, object_id: id, due_at: "2026-11-22T13:00:00Z" }], T0 + minute)
          const read = Effect.map(Effect.flatMap(ContextStore, (s) => s.object(chat, id)), Option.getOrThrow)
          const updated = yield* read
          assert.deepStrictEqual(updated.reminder, { due_at: Date.parse("2026-11-22T13:00:00Z"), status: "scheduled" })
          assert.deepStrictEqual(updated.activation_reasons, ["reminder_created", "reminder_updated"])
          yield* apply([{ type: "reminder_fired", event_id: "f", chat_id: chat, object_id: id }], Date.parse("2026-11-22T13:00:00Z"))
          assert.strictEqual((yield* read).reminder?.status, "fired")
          const cancelAt = Date.parse("2026-11-22T13:01:00Z")
          yield* apply([{ type: "reminder_cancelled", event_id: "k", chat_id: chat, object_id: id }], cancelAt)
          const cancelled = yield* read
          assert.strictEqual(cancelled.reminder?.status, "cancelled")
          assert.isFalse(isActive(cancelled, cancelAt))
        }))

      it.effect("the reply chain is walked nearest first, bounded, and never loops", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 1, reply_to_message_id: 3 },
            { type: "message_observed", chat_id: chat, message_id: 2, reply_to_message_id: 1 },
            { type: "message_observed", chat_id: chat, message_id: 3, reply_to_message_id: 2 },
            { type: "message_observed", chat_id: chat, message_id: 4, reply_to_message_id: 3 }
          ])
          const chain = yield* Effect.flatMap(ContextStore, (s) => s.replyChain(chat, "4", 10))
          assert.deepStrictEqual(chain.map((m) => m.message_id), ["4", "3", "2", "1"])
          const bounded = yield* Effect.flatMap(ContextStore, (s) => s.replyChain(chat, "4", 2))
          assert.deepStrictEqual(bounded.map((m) => m.message_id), ["4", "3"])
        }))

      it.effect("the pool holds the reply target, its chain and the home scope, in tiers", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 1, topic_id: 7, links: [{ url: "https://a" }] },
            { type: "message_observed", chat_id: chat, message_id: 2, topic_id: 7, reply_to_message_id: 1 },
            { type: "message_observed", chat_id: chat, message_id: 3, topic_id: 7, media: [{ kind: "media.image" }] },
            { type: "message_observed", chat_id: chat, message_id: 4, topic_id: 8, media: [{ kind: "media.image" }] },
            { type: "message_observed", chat_id: chat, message_id: 5, topic_id: 7, reply_to_message_id: 2 },
            { type: "object_activated", event_id: "seen", chat_id: chat, reason: "media_described", object_id: `${chat}/3/media.image` }
          ])
          const result = yield* pool(query(chat, { topic_id: "7", current_message_id: "5", reply_to_message_id: "2" }))
          const tiers = Object.fromEntries(result.entries.map((e) => [e.object.object_id, e.tier]))
          assert.deepStrictEqual(tiers, {
            [`${chat}/2/message`]: "reply_target",
            [`${chat}/1/link`]: "reply_chain",
            [`${chat}/3/media.image`]: "home"
          })
          assert.deepStrictEqual(result.chain, ["2", "1"])
          assert.isFalse(result.fallback)
        }))

      it.effect("other topics are searched when the request's topic has nothing active: all of them when it is unknown, their active objects otherwise", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 1, topic_id: 7, links: [{ url: "https://a" }] },
            { type: "message_observed", chat_id: chat, message_id: 2, topic_id: 8 }
          ])
          // Topic 8 holds only the request's own message: the fallback runs, and finds nothing active.
          const known = yield* pool(query(chat, { topic_id: "8", current_message_id: "2", kinds: ["link"] }))
          assert.deepStrictEqual([known.entries.length, known.fallback], [0, true])
          const unknown = yield* pool(query(chat, { topic_id: "99", kinds: ["link"] }))
          assert.deepStrictEqual(unknown.entries.map((e) => [e.object.object_id, e.tier]), [[`${chat}/1/link`, "fallback"]])
          assert.isTrue(unknown.fallback)
          yield* apply([{ type: "object_activated", event_id: "a", chat_id: chat, reason: "url_fetched", object_id: `${chat}/1/link` }])
          const activeElsewhere = yield* pool(query(chat, { topic_id: "8", current_message_id: "2", kinds: ["link"] }))
          assert.deepStrictEqual(activeElsewhere.entries.map((e) => [e.object.object_id, e.tier]), [[`${chat}/1/link`, "fallback"]])
          // Topic 7 has its own active object: no fallback.
          const home = yield* pool(query(chat, { topic_id: "7", current_message_id: "3" }))
          assert.isFalse(home.fallback)
          assert.deepStrictEqual(home.entries.map((e) => [e.object.object_id, e.tier]), [[`${chat}/1/link`, "home"]])
        }))

      it.effect("the chat's fallback takes only the fallback_active longest-lived objects active elsewhere, ties by object id", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const events: Array<ContextEventInput> = [{ type: "message_observed", chat_id: chat, message_id: 100, topic_id: 1 }]
          for (let i = 1; i <= 12; i++) {
            events.push({ type: "message_observed", chat_id: chat, message_id: i, topic_id: 2 + (i % 3), links: [{ url: `https://x/${i}` }] })
          }
          yield* apply(events)
          // Links 1..10 activated a minute apart (10 lives longest); 11 and 12 at the same moment as 10.
          for (let i = 1; i <= 10; i++) {
            yield* apply([{ type: "object_activated", event_id: `a${i}`, chat_id: chat, reason: "url_fetched", object_id: `${chat}/${i}/link` }], T0 + i * minute)
          }
          yield* apply([
            { type: "object_activated", event_id: "a11", chat_id: chat, reason: "url_fetched", object_id: `${chat}/12/link` },
            { type: "object_activated", event_id: "a12", chat_id: chat, reason: "url_fetched", object_id: `${chat}/11/link` }
          ], T0 + 10 * minute)
          const limits = { ...query(chat).limits, fallback_active: 4 }
          const at = T0 + 11 * minute
          for (const activeOnly of [false, true]) {
            const result = yield* pool(query(chat, { topic_id: "1", current_message_id: "100", active_only: activeOnly, kinds: ["link"], limits, now: at }))
            assert.isTrue(result.fallback)
            assert.sameMembers(
              result.entries.filter((e) => e.tier === "fallback" && e.object.active_until !== null).map((e) => e.object.object_id),
              [`${chat}/10/link`, `${chat}/11/link`, `${chat}/12/link`, `${chat}/9/link`]
            )
          }
          // A larger bound takes them all.
          const all = yield* pool(query(chat, { topic_id: "1", current_message_id: "100", active_only: true, limits: { ...limits, fallback_active: 64 }, now: at }))
          assert.strictEqual(all.entries.length, 12)
          // Activated again, link 1 lives longest now; link 9 drops out.
          yield* apply([{ type: "object_activated", event_id: "again", chat_id: chat, reason: "summarized", object_id: `${chat}/1/link` }], at)
          const renewed = yield* pool(query(chat, { topic_id: "1", current_message_id: "100", active_only: true, limits, now: at }))
          assert.sameMembers(
            renewed.entries.map((e) => e.object.object_id),
            [`${chat}/1/link`, `${chat}/10/link`, `${chat}/11/link`, `${chat}/12/link`]
          )
        }))

      it.effect("the pool filters kinds and activity, and never offers the current message", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 1, links: [{ url: "https://a" }] },
            { type: "message_observed", chat_id: chat, message_id: 2, media: [{ kind: "media.pdf" }] },
            { type: "object_activated", event_id: "a", chat_id: chat, reason: "media_inspected", source_message_id: 2, kind: "media.pdf" },
            { type: "message_observed", chat_id: chat, message_id: 3 }
          ])
          const all = yield* pool(query(chat, { current_message_id: "3" }))
          assert.sameMembers(all.entries.map((e) => e.object.object_id), [`${chat}/1/link`, `${chat}/2/media.pdf`])
          const pdfs = yield* pool(query(chat, { current_message_id: "4", kinds: ["media.pdf", "message"] }))
          assert.sameMembers(pdfs.entries.map((e) => e.object.object_id), [`${chat}/2/media.pdf`, `${chat}/3/message`])
          const active = yield* pool(query(chat, { active_only: true }))
          assert.deepStrictEqual(active.entries.map((e) => e.object.object_id), [`${chat}/2/media.pdf`])
        }))

      it.effect("the pool is bounded however long the history", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const events: Array<ContextEventInput> = []
          for (let i = 1; i <= 300; i++) {
            events.push({ type: "message_observed", chat_id: chat, message_id: i, topic_id: 1, links: i % 2 === 0 ? [{ url: `https://x/${i}` }] : [] })
          }
          yield* apply(events)
          const result = yield* pool(query(chat, {
            topic_id: "1",
            current_message_id: "301",
            limits: { chain_depth: 8, recent_objects: 5, recent_per_kind: 3, recent_messages: 2, owned: 2, fallback_active: 16 },
            prefer_kinds: ["link"]
          }))
          const links = result.entries.filter((e) => e.object.kind === "link").map((e) => e.object.source_message_id)
          const messages = result.entries.filter((e) => e.object.kind === "message").map((e) => e.object.source_message_id)
          assert.deepStrictEqual(links, ["300", "298", "296", "294", "292"])
          assert.deepStrictEqual(messages, ["299", "297"])
        }))

      it.effect("a sweep removes objects past retention and keeps messages and active objects", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const old = T0 - 8 * 24 * 60 * minute
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 1, links: [{ url: "https://old" }] },
            { type: "message_observed", chat_id: chat, message_id: 2, links: [{ url: "https://kept" }] },
            { type: "object_activated", event_id: "a", chat_id: chat, reason: "summarized", object_id: `${chat}/2/link` }
          ], old)
          yield* apply([{ type: "object_activated", event_id: "b", chat_id: chat, reason: "summarized", object_id: `${chat}/2/link` }], T0)
          yield* Effect.flatMap(ContextStore, (s) => s.sweep(T0))
          const snap = yield* snapshot(chat)
          assert.deepStrictEqual(snap.objects.map((o) => o.object_id), [`${chat}/2/link`])
          assert.deepStrictEqual(snap.messages.map((m) => m.message_id), ["1", "2"])
        }))

      it.effect("an edit re-derives a message's links and media: unchanged ones keep their state, changed ones start afresh, gone ones go", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const observed: ContextEventInput = {
            type: "message_observed", chat_id: chat, message_id: 1, topic_id: 4, sender_user_id: 9,
            links: [{ url: "https://old.example" }, { url: "https://kept.example" }],
            media: [{ kind: "media.image", file_id: "photo-1" }]
          }
          yield* apply([
            observed,
            { type: "object_activated", event_id: "f", chat_id: chat, reason: "url_fetched", object_id: `${chat}/1/link` },
            { type: "object_activated", event_id: "a", chat_id: chat, reason: "summarized", source_message_id: 1, kind: "article" },
            { type: "object_activated", event_id: "k", chat_id: chat, reason: "url_fetched", object_id: `${chat}/1/link/1` }
          ])
          const edit: ContextEventInput = {
            type: "message_edited", chat_id: chat, message_id: 1, topic_id: 4, sender_user_id: 9,
            edited_at: "2026-11-22T10:05:00Z",
            links: [{ url: "https://new.example" }, { url: "https://kept.example" }]
          }
          const first = yield* apply([edit], T0 + 5 * minute)
          const again = yield* apply([edit], T0 + 6 * minute)
          assert.deepStrictEqual([first.applied, again.duplicates], [1, 1])
          const { messages, objects } = yield* snapshot(chat)
          assert.deepStrictEqual(messages.map((m) => [m.message_id, m.topic_id]), [["1", "4"]])
          assert.deepStrictEqual(
            objects.map((o) => [o.object_id, o.ref, o.active_until !== null]),
            [[`${chat}/1/link`, "https://new.example", false], [`${chat}/1/link/1`, "https://kept.example", true]]
          )
        }))

      it.effect("an edit of a message never seen records it as observed", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          yield* apply([{
            type: "message_edited", chat_id: chat, message_id: 7, sender_user_id: 3, sent_at: "2026-11-22T09:00:00Z",
            edited_at: "2026-11-22T09:30:00Z", media: [{ kind: "media.pdf", file_id: "doc" }]
          }])
          const { messages, objects } = yield* snapshot(chat)
          assert.deepStrictEqual(messages.map((m) => [m.message_id, m.sent_at]), [["7", Date.parse("2026-11-22T09:00:00Z")]])
          assert.deepStrictEqual(objects.map((o) => [o.object_id, o.ref]), [[`${chat}/7/media.pdf`, "doc"]])
        }))

      it.effect("an older edit applied after a newer one does not overwrite it", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const edit = (at: string, url: string): ContextEventInput => ({
            type: "message_edited", chat_id: chat, message_id: 1, sender_user_id: 9, sent_at: "2026-11-22T09:00:00Z",
            edited_at: at, links: [{ url }]
          })
          yield* apply([{ type: "message_observed", chat_id: chat, message_id: 1, sender_user_id: 9, links: [{ url: "https://v1.example" }] }])
          const newer = yield* apply([edit("2026-11-22T09:20:00Z", "https://v3.example")])
          const older = yield* apply([edit("2026-11-22T09:10:00Z", "https://v2.example")])
          // Superseded: counted with the duplicates, its id remembered.
          assert.deepStrictEqual([newer.applied, older.applied, older.duplicates], [1, 0, 1])
          assert.deepStrictEqual((yield* apply([edit("2026-11-22T09:10:00Z", "https://v2.example")])).duplicates, 1)
          // A redelivered original changes nothing either.
          yield* apply([{ type: "message_observed", chat_id: chat, message_id: 1, sender_user_id: 9, links: [{ url: "https://v1.example" }] }])
          const { objects } = yield* snapshot(chat)
          assert.deepStrictEqual(objects.map((o) => [o.object_id, o.ref]), [[`${chat}/1/link`, "https://v3.example"]])
          // Within one batch too.
          const other = freshChat()
          const at = (minutes: number, url: string): ContextEventInput => ({
            ...edit(`2026-11-22T09:${String(minutes).padStart(2, "0")}:00Z`, url), chat_id: other
          })
          yield* apply([at(30, "https://c.example"), at(20, "https://b.example"), at(25, "https://d.example")])
          assert.deepStrictEqual((yield* snapshot(other)).objects.map((o) => o.ref), ["https://c.example"])
        }))

      it.effect("an edit of a message not yet observed, then the message itself", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const original: ContextEventInput = {
            type: "message_observed", chat_id: chat, message_id: 3, sender_user_id: 9, sent_at: "2026-11-22T09:00:00Z",
            links: [{ url: "https://original.example" }]
          }
          const edit: ContextEventInput = {
            type: "message_edited", chat_id: chat, message_id: 3, sender_user_id: 9, sent_at: "2026-11-22T09:00:00Z",
            edited_at: "2026-11-22T09:05:00Z", links: [{ url: "https://edited.example" }]
          }
          const first = yield* apply([edit])
          const late = yield* apply([original])
          assert.deepStrictEqual([first.applied, late.applied, late.duplicates], [1, 0, 1])
          const { messages, objects } = yield* snapshot(chat)
          assert.deepStrictEqual(messages.map((m) => [m.message_id, m.sent_at]), [["3", Date.parse("2026-11-22T09:00:00Z")]])
          assert.deepStrictEqual(objects.map((o) => o.ref), ["https://edited.example"])
          // An older edit after that changes nothing; a newer one applies.
          yield* apply([{ ...edit, edited_at: "2026-11-22T09:01:00Z", links: [{ url: "https://older.example" }] }])
          assert.deepStrictEqual((yield* snapshot(chat)).objects.map((o) => o.ref), ["https://edited.example"])
          yield* apply([{ ...edit, edited_at: "2026-11-22T09:09:00Z", links: [{ url: "https://newer.example" }] }])
          assert.deepStrictEqual((yield* snapshot(chat)).objects.map((o) => o.ref), ["https://newer.example"])
        }))

      it.effect("edits in the same second: the later arrival wins", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const edit = (url: string): ContextEventInput => ({
            type: "message_edited", chat_id: chat, message_id: 1, sender_user_id: 9, sent_at: "2026-11-22T09:00:00Z",
            edited_at: "2026-11-22T09:10:00Z", links: [{ url }]
          })
          yield* apply([{ type: "message_observed", chat_id: chat, message_id: 1, sender_user_id: 9 }])
          const a = yield* apply([edit("https://a.example")])
          const b = yield* apply([edit("https://b.example")])
          assert.deepStrictEqual([a.applied, b.applied], [1, 1])
          assert.deepStrictEqual((yield* snapshot(chat)).objects.map((o) => o.ref), ["https://b.example"])
          // A redelivered copy of a version already applied is a duplicate, not a new arrival.
          const again = yield* apply([edit("https://b.example")])
          assert.deepStrictEqual([again.applied, again.duplicates], [0, 1])
          // An explicit event id names the version: a new id is a new arrival.
          yield* apply([{ ...edit("https://c.example"), event_id: "edit-c" }])
          yield* apply([{ ...edit("https://a.example"), event_id: "edit-a2" }])
          assert.deepStrictEqual((yield* snapshot(chat)).objects.map((o) => o.ref), ["https://a.example"])
        }))

      it.effect("a chat remembers it is a forum: a message or request without a topic there is in the General topic", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const store = yield* ContextStore
          assert.deepStrictEqual(yield* store.chat(chat), { chat_id: chat, is_forum: false, title: null, migrated_to: null, migrated_at: null })
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 1, topic_id: 500, is_forum: true, links: [{ url: "https://t500" }] },
            { type: "message_observed", chat_id: chat, message_id: 2, links: [{ url: "https://general" }] },
            { type: "object_activated", event_id: "g", chat_id: chat, reason: "summarized", source_message_id: 3, kind: "summary", created_by_bot: true }
          ])
          assert.isTrue((yield* store.chat(chat)).is_forum)
          const { messages, objects } = yield* snapshot(chat)
          assert.deepStrictEqual(messages.map((m) => [m.message_id, m.topic_id]), [["1", "500"], ["2", "1"]])
          assert.deepStrictEqual(objects.map((o) => [o.object_id, o.topic_id]), [
            [`${chat}/1/link`, "500"], [`${chat}/2/link`, "1"], [`${chat}/3/summary`, "1"]
          ])
          const general = yield* pool(query(chat, { topic_id: null, current_message_id: "4", kinds: ["link"] }))
          assert.strictEqual(general.topic_id, "1")
          assert.deepStrictEqual(general.entries.map((e) => [e.object.object_id, e.tier]), [[`${chat}/2/link`, "home"]])
          // A message saying the chat is no forum any more is believed.
          yield* apply([{ type: "message_observed", chat_id: chat, message_id: 5, is_forum: false }])
          assert.isFalse((yield* store.chat(chat)).is_forum)
        }))

      it.effect("an expired object gives way to its message in the pool; a debug listing keeps it", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 1, sender_user_id: 2, media: [{ kind: "media.image", file_id: "p" }] },
            { type: "object_activated", event_id: "d", chat_id: chat, reason: "media_described", object_id: `${chat}/1/media.image` }
          ])
          const later = T0 + settings.short_medium + minute
          const result = yield* pool(query(chat, { current_message_id: "2", now: later }))
          assert.deepStrictEqual(result.entries.map((e) => [e.object.object_id, e.object.kind, e.tier]), [[`${chat}/1/message`, "message", "home"]])
          const debug = yield* pool(query(chat, { current_message_id: "2", now: later, keep_expired: true }))
          assert.deepStrictEqual(debug.entries.map((e) => e.object.object_id), [`${chat}/1/media.image`])
        }))

      it.effect("an object activated before its message was seen gives way to that message only in the message's own topic", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          // The activation comes first (no topic known yet); the message turns out to be in topic 7.
          yield* apply([
            { type: "object_activated", event_id: "early", chat_id: chat, reason: "summarized", source_message_id: 13, kind: "media.image" },
            { type: "message_observed", chat_id: chat, message_id: 13, topic_id: 7, sender_user_id: 2 },
            { type: "message_observed", chat_id: chat, message_id: 14, sender_user_id: 2 }
          ])
          const later = T0 + settings.short_medium + minute
          const elsewhere = yield* pool(query(chat, { topic_id: null, current_message_id: "14", now: later }))
          assert.deepStrictEqual(elsewhere.entries.filter((e) => e.object.topic_id === "7").map((e) => e.object.object_id), [])
          // A reply to it reaches it wherever it is.
          const replied = yield* pool(query(chat, { topic_id: null, current_message_id: "14", reply_to_message_id: "13", now: later }))
          assert.deepStrictEqual(replied.entries.filter((e) => e.tier === "reply_target").map((e) => e.object.object_id), [`${chat}/13/message`])
        }))

      it.effect("the media of an album carry its id", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 1, media_group_id: "alb", media: [{ kind: "media.image", file_id: "a" }] },
            { type: "message_observed", chat_id: chat, message_id: 2, media_group_id: "alb", media: [{ kind: "media.video", file_id: "b" }] }
          ])
          const { objects } = yield* snapshot(chat)
          assert.deepStrictEqual(objects.map((o) => [o.object_id, o.album_id]), [[`${chat}/1/media.image`, "alb"], [`${chat}/2/media.video`, "alb"]])
        }))

      it.effect("a part's span is kept, and a quoted reply is remembered on the part it selects, also in a later batch", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          yield* apply([{
            type: "message_observed", chat_id: chat, message_id: 1,
            links: [{ url: "https://a.example", span: { offset: 0, length: 17 } }, { url: "https://b.example", span: { offset: 22, length: 17 } }]
          }])
          // The reply in a batch of its own: the store loads the replied message's objects to mark them.
          yield* apply([{ type: "message_observed", chat_id: chat, message_id: 2, reply_to_message_id: 1, quote: { text: "https://b.example", position: 22 } }])
          const { objects } = yield* snapshot(chat)
          assert.deepStrictEqual(objects.map((o) => [o.object_id, o.span, o.quoted_in]), [
            [`${chat}/1/link`, { offset: 0, length: 17 }, undefined],
            [`${chat}/1/link/1`, { offset: 22, length: 17 }, ["2"]]
          ])
          const { entries } = yield* pool(query(chat, { current_message_id: "2", reply_to_message_id: "1" }))
          assert.deepStrictEqual(entries.find((e) => e.object.object_id === `${chat}/1/link/1`)?.object.quoted_in, ["2"])
        }))

      it.effect("a chat migrates once: messages re-keyed before the new chat's own, objects, poll ids and event ids moved", () =>
        Effect.gen(function*() {
          const from = freshChat()
          const to = freshChat()
          const store = yield* ContextStore
          const pollId = `${from}-poll`
          yield* apply([
            { type: "message_observed", chat_id: from, message_id: 1, sender_user_id: 5, links: [{ url: "https://a" }] },
            { type: "message_observed", chat_id: from, message_id: 2, reply_to_message_id: 1, poll: { poll_id: pollId, question: "Q" } },
            { type: "object_activated", event_id: "sum", chat_id: from, reason: "summarized", object_id: `${from}/1/link` },
            // The new chat's first message (Telegram numbers it 1 as well) arrived first.
            { type: "message_observed", chat_id: to, message_id: 1, sender_user_id: 5 }
          ])
          const at = T0 + minute
          const first = yield* store.migrateChat(from, to, at)
          assert.deepStrictEqual(first, { migrated: true, moved: 4 })
          assert.deepStrictEqual(yield* store.migrateChat(from, to, at + minute), { migrated: false, moved: 0 })
          assert.deepStrictEqual(yield* snapshot(from), { messages: [], objects: [] })
          assert.deepStrictEqual(yield* store.chat(from), { chat_id: from, is_forum: false, title: null, migrated_to: to, migrated_at: at })
          const snap = yield* snapshot(to)
          assert.deepStrictEqual(snap.messages.map((m) => [m.message_id, m.reply_to_message_id, m.chat_id]), [
            ["~1", null, to], ["~2", "~1", to], ["1", null, to]
          ])
          assert.deepStrictEqual(snap.objects.map((o) => [o.object_id, o.chat_id, o.source_message_id, o.active_until !== null]), [
            [`${from}/1/link`, to, "~1", true], [`${from}/2/poll`, to, "~2", false]
          ])
          // The poll id now names the new chat; an event id seen in the old chat stays seen.
          yield* apply([{ type: "poll_closed", event_id: "close", poll_id: pollId }], at + minute)
          const poll = Option.getOrThrow(yield* store.object(to, `${from}/2/poll`))
          assert.strictEqual(poll.poll?.state, "closed")
          const replay = yield* apply([{ type: "object_activated", event_id: "sum", chat_id: to, reason: "summarized", object_id: `${from}/1/link` }])
          assert.strictEqual(replay.duplicates, 1)
          // The reply chain and the pool work in the new chat with the moved ids.
          const chain = yield* store.replyChain(to, "~2", 5)
          assert.deepStrictEqual(chain.map((m) => m.message_id), ["~2", "~1"])
          const live = yield* pool(query(to, { current_message_id: "2", active_only: true, now: at }))
          assert.deepStrictEqual(live.entries.map((e) => e.object.object_id), [`${from}/1/link`])
        }))

      it.effect("a quoted reply is still remembered on the part it selects after the chat migrates", () =>
        Effect.gen(function*() {
          const from = freshChat()
          const to = freshChat()
          yield* apply([
            {
              type: "message_observed", chat_id: from, message_id: 1,
              links: [{ url: "https://a.example", span: { offset: 0, length: 17 } }, { url: "https://b.example", span: { offset: 22, length: 17 } }]
            },
            { type: "message_observed", chat_id: from, message_id: 2, reply_to_message_id: 1, quote: { text: "https://b.example", position: 22 } }
          ])
          yield* (yield* ContextStore).migrateChat(from, to, T0 + minute)
          const { objects } = yield* snapshot(to)
          assert.deepStrictEqual(objects.map((o) => [o.object_id, o.source_message_id, o.quoted_in]), [
            [`${from}/1/link`, "~1", undefined],
            [`${from}/1/link/1`, "~1", ["~2"]]
          ])
          // The moved reply still selects the part it quoted.
          const { entries } = yield* pool(query(to, { current_message_id: "~2", reply_to_message_id: "~1" }))
          assert.deepStrictEqual(entries.find((e) => e.object.object_id === `${from}/1/link/1`)?.object.quoted_in, ["~2"])
        }))

      it.effect("a pending reminder is never swept before its due time plus its grace", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const day = 24 * 60 * minute
          const due = T0 + 30 * day
          yield* apply([
            { type: "message_observed", chat_id: chat, message_id: 1, sender_user_id: 4 },
            { type: "object_activated", event_id: "r", chat_id: chat, reason: "reminder_created", source_message_id: 1, kind: "reminder", due_at: new Date(due).toISOString() }
          ])
          const id = `${chat}/1/reminder`
          const store = yield* ContextStore
          // Well past the 7-day retention of an ordinary activation: still pending, still there and active.
          yield* store.sweep(T0 + 20 * day)
          const kept = Option.getOrThrow(yield* store.object(chat, id))
          assert.isTrue(isActive(kept, due))
          assert.isFalse(isActive(kept, due + settings.reminder_grace))
          yield* store.sweep(due + settings.reminder_grace)
          assert.isTrue(Option.isSome(yield* store.object(chat, id)))
        }))

      it.effect("the chat list gives each chat's title, newest message time and counts, newest first, page by page", () =>
        Effect.gen(function*() {
          const prefix = freshChat()
          const [a, b, c] = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`]
          yield* apply([
            { type: "message_observed", chat_id: a, message_id: 1, chat_title: "Book Club", sent_at: "2026-11-22T08:00:00Z", links: [{ url: "https://a" }] },
            { type: "message_observed", chat_id: a, message_id: 2, chat_title: "Book Club", sent_at: "2026-11-22T09:00:00Z", is_forum: true },
            { type: "message_observed", chat_id: b, message_id: 7, chat_title: "Hiking", sent_at: "2026-11-22T09:30:00Z" },
            { type: "message_observed", chat_id: c, message_id: 3, sent_at: "2026-11-22T07:00:00Z" }
          ])
          const store = yield* ContextStore
          const first = yield* store.chats({ search: prefix, limit: 2 })
          assert.deepStrictEqual(first.chats, [
            { chat_id: b, title: "Hiking", is_forum: false, last_message_at: Date.parse("2026-11-22T09:30:00Z"), messages: 1, objects: 0 },
            { chat_id: a, title: "Book Club", is_forum: true, last_message_at: Date.parse("2026-11-22T09:00:00Z"), messages: 2, objects: 1 }
          ])
          assert.deepStrictEqual(first.next, { last_message_at: Date.parse("2026-11-22T09:00:00Z"), chat_id: a })
          const second = yield* store.chats({ search: prefix, limit: 2, after: first.next! })
          assert.deepStrictEqual(second.chats.map((x) => [x.chat_id, x.title, x.messages]), [[c, null, 1]])
          assert.isNull(second.next)
          // The whole list at once gives the same chats in the same order.
          const all = yield* store.chats({ search: prefix, limit: 50 })
          assert.deepStrictEqual(all.chats.map((x) => x.chat_id), [b, a, c])
          assert.isNull(all.next)
        }))

      it.effect("the chat list finds a title ignoring case (any script) and an id by any part of it", () =>
        Effect.gen(function*() {
          const prefix = freshChat()
          const [ru, en] = [`${prefix}-ru`, `${prefix}-en`]
          yield* apply([
            { type: "message_observed", chat_id: ru, message_id: 1, chat_title: `Книжный клуб ${prefix}` },
            { type: "message_observed", chat_id: en, message_id: 1, chat_title: `Trail Runners ${prefix}` }
          ])
          const store = yield* ContextStore
          const ids = (search: string) => Effect.map(store.chats({ search, limit: 10 }), (p) => p.chats.map((x) => x.chat_id))
          assert.deepStrictEqual(yield* ids(`КНИЖНЫЙ КЛУБ ${prefix.toUpperCase()}`), [ru])
          assert.deepStrictEqual(yield* ids(`trail runners ${prefix}`), [en])
          assert.deepStrictEqual(yield* ids(`${prefix}-e`), [en])
          // Characters LIKE would read as patterns are plain text.
          assert.deepStrictEqual(yield* ids(`${prefix}%`), [])
          assert.deepStrictEqual(yield* ids(`${prefix}_en`), [])
        }))

      it.effect("a chat's title is the newest an event carried; an event without one leaves it", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          const store = yield* ContextStore
          yield* apply([{ type: "message_observed", chat_id: chat, message_id: 1, chat_title: "Old name" }])
          yield* apply([{ type: "message_observed", chat_id: chat, message_id: 2, chat_title: "New name" }])
          yield* apply([{ type: "message_observed", chat_id: chat, message_id: 3 }])
          assert.strictEqual((yield* store.chat(chat)).title, "New name")
          assert.deepStrictEqual((yield* store.chats({ search: chat, limit: 5 })).chats.map((x) => x.title), ["New name"])
        }))

      it.effect("a chat holding neither messages nor objects is not listed", () =>
        Effect.gen(function*() {
          const chat = freshChat()
          // Skipped (no such object): its id is remembered, nothing else.
          yield* apply([{ type: "object_activated", event_id: "x", chat_id: chat, reason: "summarized", object_id: `${chat}/1/link` }])
          const objectsOnly = `${chat}-objects`
          yield* apply([{ type: "object_activated", event_id: "s", chat_id: objectsOnly, reason: "summarized", source_message_id: 9, kind: "summary", created_by_bot: true }])
          const page = yield* Effect.flatMap(ContextStore, (s) => s.chats({ search: chat, limit: 5 }))
          assert.deepStrictEqual(page.chats, [
            { chat_id: objectsOnly, title: null, is_forum: false, last_message_at: null, messages: 0, objects: 1 }
          ])
        }))

      it.effect("never crosses chats, and orders messages by position", () =>
        Effect.gen(function*() {
          const a = freshChat()
          const b = freshChat()
          yield* apply([
            { type: "message_observed", chat_id: a, message_id: 10, links: [{ url: "https://a" }] },
            { type: "message_observed", chat_id: a, message_id: 9 },
            { type: "message_observed", chat_id: b, message_id: 10, reply_to_message_id: 9 }
          ])
          const fromB = yield* pool(query(b, { current_message_id: "11", reply_to_message_id: "10" }))
          assert.isTrue(fromB.entries.every((e) => e.object.chat_id === b))
          assert.deepStrictEqual(fromB.chain, ["10"])
          assert.deepStrictEqual((yield* snapshot(a)).messages.map((m) => m.message_id), ["9", "10"])
        }))
    })
  })
}
