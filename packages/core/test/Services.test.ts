import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as ContextEvent from "../src/ContextEvent.js"
import * as ContextIngest from "../src/ContextIngest.js"
import * as ContextStore from "../src/ContextStore.js"
import * as Deixis from "../src/Deixis.js"
import * as KindRegistry from "../src/KindRegistry.js"
import * as Scoring from "../src/Scoring.js"
import * as TtlPolicy from "../src/TtlPolicy.js"
import { activate, advance, ingest, list, message, minutes, resolve, T0, withCore } from "./fixtures.js"

/** The core over a fresh memory store with the given rules replaced, clock at T0. */
const withServices = <A, E, R>(effect: Effect.Effect<A, E, R>, rules: Deixis.Rules) =>
  TestClock.setTime(T0).pipe(
    Effect.zipRight(effect),
    Effect.provide(Deixis.layerWithRules(ContextStore.layerMemory({ sweep_interval: 0 }), rules))
  )

/** Chat 2 runs on short TTLs; every other chat on today's rules. */
const perChatPolicy = Layer.effect(
  TtlPolicy.TtlPolicy,
  Effect.sync(() => {
    const base = TtlPolicy.make(TtlPolicy.defaults)
    const fast = TtlPolicy.make({ ...TtlPolicy.defaults, medium: minutes(5) })
    const pick = (chatId: string) => (chatId === "2" ? fast : base)
    return {
      classFor: base.classFor,
      ttlOf: (o) => pick(o.chat_id).ttlOf(o),
      activate: (o, reason, at) => pick(o.chat_id).activate(o, reason, at),
      pendingUntil: (o) => pick(o.chat_id).pendingUntil(o),
      closePoll: (o, at) => pick(o.chat_id).closePoll(o, at),
      fireReminder: (o, at) => pick(o.chat_id).fireReminder(o, at),
      cancelReminder: (o, at) => pick(o.chat_id).cancelReminder(o, at)
    }
  })
)

const linksInTwoChats = ingest(
  message(1, { links: [{ url: "https://a" }] }),
  activate("summarized", { source_message_id: 1, kind: "link" }),
  message(1, { chat_id: 2, links: [{ url: "https://b" }] }),
  activate("summarized", { chat_id: 2, source_message_id: 1, kind: "link" })
)

const activeIn = (chat: number) =>
  Effect.map(list({ chat_id: chat, current_message_id: 9 }), (r) => r.objects.map((o) => o.object_id))

describe("TtlPolicy as a service", () => {
  it.effect("replacing the TtlPolicy layer changes the tools' answers: a per-chat policy expires chat 2's link sooner", () =>
    withServices(
      Effect.gen(function*() {
        yield* linksInTwoChats
        assert.strictEqual((yield* list({ chat_id: 2, current_message_id: 9 })).objects[0]!.active_until, T0 + minutes(5))
        yield* advance(minutes(10))
        assert.deepStrictEqual(yield* activeIn(1), ["1/1/link"])
        assert.deepStrictEqual(yield* activeIn(2), [])
      }),
      { policy: perChatPolicy }
    ))

  it.effect("with the default layer both chats' links stay active (the control)", () =>
    withCore(Effect.gen(function*() {
      yield* linksInTwoChats
      yield* advance(minutes(10))
      assert.deepStrictEqual(yield* activeIn(1), ["1/1/link"])
      assert.deepStrictEqual(yield* activeIn(2), ["2/1/link"])
    })))
})

const twoLinks = ingest(
  message(1, { topic_id: 7, links: [{ url: "https://a", title: "pinned: rules" }] }),
  activate("summarized", { source_message_id: 1, kind: "link" }),
  message(2, { topic_id: 7, links: [{ url: "https://b", title: "news" }] }),
  activate("summarized", { source_message_id: 2, kind: "link" }),
  message(3, { topic_id: 7 })
)
const whichLink = resolve({
  chat_id: 1, topic_id: 7, current_message_id: 3, sender_user_id: 100,
  normalized_reference_hints: { target_kind_hint: "link" }
})

describe("Scoring as a service", () => {
  it.effect("replacing the Scoring layer with a custom feature changes the resolved object", () =>
    Effect.gen(function*() {
      const plain = yield* withCore(Effect.zipRight(twoLinks, whichLink))
      assert.strictEqual(plain.best_match?.object_id ?? plain.candidates[0]!.object_id, "1/2/link")
      const pinned: Scoring.CustomFeature = {
        name: "x.pinned",
        value: (entry) => (entry.object.title_or_label?.startsWith("pinned:") ? 80 : 0)
      }
      const custom = yield* withServices(Effect.zipRight(twoLinks, whichLink), { scorer: Scoring.layer({}, [pinned]) })
      assert.strictEqual(custom.status, "resolved")
      assert.strictEqual(custom.best_match!.object_id, "1/1/link")
      assert.strictEqual(custom.diagnostics.scored[0]!.features["x.pinned"], 80)
      assert.isUndefined(custom.diagnostics.scored[1]!.features["x.pinned"])
    }))

  it.effect("replacing the Scoring thresholds changes resolved into not_found", () =>
    withServices(
      Effect.gen(function*() {
        yield* twoLinks
        const result = yield* whichLink
        assert.strictEqual(result.status, "not_found")
        assert.deepStrictEqual(result.reasons, ["below_min_score"])
      }),
      {
        scorer: Layer.effect(
          Scoring.Scoring,
          Effect.map(TtlPolicy.TtlPolicy, (ttl) => ({ ...Scoring.make({}, { ttl }), plausible: () => false }))
        )
      }
    ))
})

const ticket = KindRegistry.custom({ kind: "x.ticket", ttl_class: "short_medium", hints: ["file"] })
const ticketEvents = [
  message(1, { topic_id: 7, links: [{ url: "https://a" }] }),
  activate("summarized", { source_message_id: 1, kind: "link" }),
  message(2, { topic_id: 7 }),
  activate("followup_attached", { source_message_id: 2, kind: "x.ticket", title_or_label: "TCK-42" }),
  message(3, { topic_id: 7 })
] as const

describe("KindRegistry: a team's own kind", () => {
  it.effect("a registered namespaced kind (x.ticket) is accepted by ingest and returned by both tools", () =>
    withServices(
      Effect.gen(function*() {
        yield* ingest(...ticketEvents)
        const resolved = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 3, normalized_reference_hints: { target_kind_hint: "x.ticket" }
        })
        assert.strictEqual(resolved.status, "resolved")
        assert.strictEqual(resolved.best_match!.kind, "x.ticket")
        assert.strictEqual(resolved.best_match!.title_or_label, "TCK-42")
        assert.include(resolved.reasons, "kind_match")
        // Its descriptor also answers the `file` hint.
        const file = yield* resolve({
          chat_id: 1, topic_id: 7, current_message_id: 3, normalized_reference_hints: { target_kind_hint: "file" }
        })
        assert.strictEqual(file.best_match?.kind, "x.ticket")
        const listed = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 3, allowed_kinds: ["x.ticket"] })
        assert.deepStrictEqual(listed.objects.map((o) => o.kind), ["x.ticket"])
        // Its TTL class is the descriptor's: short_medium.
        assert.strictEqual(listed.objects[0]!.active_until, T0 + TtlPolicy.defaults.short_medium)
      }),
      { kinds: [ticket] }
    ))

  it.effect("an unregistered custom kind is rejected with an error naming the event's kind, changing nothing", () =>
    withCore(Effect.gen(function*() {
      const error = yield* Effect.flip(ingest(...ticketEvents))
      assert.strictEqual(error._tag, "InvalidEvent")
      assert.strictEqual((error as { readonly path: string }).path, "[3].kind")
      const listed = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 3 })
      assert.deepStrictEqual(listed.objects, [])
    })))

  it.effect("apply, the typed way in, refuses an unregistered kind as ingest does: the same error, nothing changed", () =>
    withCore(Effect.gen(function*() {
      const core = yield* ContextIngest.ContextIngest
      const decoded = ContextEvent.decodeEvents(ticketEvents)
      assert.isTrue(Either.isRight(decoded))
      const typed = Either.getOrThrow(decoded)
      const viaApply = yield* Effect.flip(core.apply(typed))
      const viaIngest = yield* Effect.flip(core.ingest(ticketEvents))
      assert.deepStrictEqual(viaApply, viaIngest)
      assert.deepInclude(viaApply, { _tag: "InvalidEvent", path: "[3].kind", message: "kind \"x.ticket\" is not registered in the KindRegistry" })
      const listed = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 3 })
      assert.deepStrictEqual(listed.objects, [])
      assert.deepInclude(yield* Effect.flatMap(ContextStore.ContextStore, (store) => store.stats), { chats: 0, messages: 0 })
    })))

  it.effect("the tools answer a kind or kind hint nobody registered with InvalidRequest naming the field", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(message(1))
      const listed = yield* Effect.flip(list({ chat_id: 1, current_message_id: 2, allowed_kinds: ["link", "x.nope"] }))
      assert.deepStrictEqual([listed._tag, (listed as { readonly path: string }).path], ["InvalidRequest", "allowed_kinds[1]"])
      const resolved = yield* Effect.flip(
        resolve({ chat_id: 1, current_message_id: 2, normalized_reference_hints: { target_kind_hint: "x.nope" } })
      )
      assert.deepStrictEqual(
        [resolved._tag, (resolved as { readonly path: string }).path],
        ["InvalidRequest", "normalized_reference_hints.target_kind_hint"]
      )
    })))

  it.effect("a kind that is not namespaced, or registered twice, fails the registry's layer with its name", () =>
    Effect.gen(function*() {
      const bare = yield* Effect.either(KindRegistry.make([{ ...ticket, kind: "media.ticket" }]))
      assert.isTrue(Either.isLeft(bare) && bare.left.kind === "media.ticket")
      const twice = yield* Effect.either(KindRegistry.make([ticket, ticket]))
      assert.isTrue(Either.isLeft(twice) && twice.left.message.includes("twice"))
    }))

  it("the built-in table is the one source of each kind's TTL class, hints and Telegram content", () => {
    const kinds = KindRegistry.defaultRegistry
    assert.deepStrictEqual(kinds.kindsForHint("file"), ["media.document", "media.pdf"])
    assert.strictEqual(kinds.ttlClass("reminder", "reminder_created"), "medium")
    assert.strictEqual(kinds.ttlClass("reminder", "reminder_listed"), "short")
    assert.strictEqual(kinds.forTelegram("document:application/pdf"), "media.pdf")
    assert.strictEqual(kinds.forTelegram("photo"), "media.image")
    assert.strictEqual(kinds.label("link", { url: "https://example.com/" + "a".repeat(100) })!.length, 80)
  })
})

describe("every hint of the PRD has an effect", () => {
  const twoInTopic = ingest(
    message(1, { topic_id: 7, links: [{ url: "https://a" }] }),
    activate("summarized", { source_message_id: 1, kind: "link" }),
    message(2, { topic_id: 7, links: [{ url: "https://b" }] }),
    activate("summarized", { source_message_id: 2, kind: "link" }),
    message(3, { topic_id: 8, links: [{ url: "https://c" }] }),
    activate("summarized", { source_message_id: 3, kind: "link" }),
    message(4, { topic_id: 7 })
  )
  const features = (hints: Record<string, string>) =>
    Effect.map(
      resolve({ chat_id: 1, topic_id: 7, current_message_id: 4, sender_user_id: 100, normalized_reference_hints: hints }),
      (r) => Object.fromEntries(r.diagnostics.scored.map((s) => [s.object_id, s.features]))
    )

  it.effect("positional_hint \"current_topic_recent\" points at the newest object of the request's topic", () =>
    withCore(Effect.gen(function*() {
      yield* twoInTopic
      const plain = yield* features({})
      assert.isUndefined(plain["1/2/link"]!["position_match"])
      const hinted = yield* features({ positional_hint: "current_topic_recent" })
      assert.strictEqual(hinted["1/2/link"]!["position_match"], Scoring.defaults.weights.position_match)
      assert.isUndefined(hinted["1/1/link"]!["position_match"])
    })))

  it.effect("recency_hint \"recent\" weighs recency 1.5 times, \"latest\" twice", () =>
    withCore(Effect.gen(function*() {
      yield* twoInTopic
      const base = (yield* features({}))["1/2/link"]!["recency"]!
      assert.strictEqual((yield* features({ recency_hint: "recent" }))["1/2/link"]!["recency"], base * 1.5)
      assert.strictEqual((yield* features({ recency_hint: "latest" }))["1/2/link"]!["recency"], base * 2)
    })))

  it.effect("ownership_hint \"any\" turns the sender's ambient ownership off; \"mine\" weighs it fully", () =>
    withCore(Effect.gen(function*() {
      yield* twoInTopic
      assert.strictEqual((yield* features({}))["1/2/link"]!["owned_by_sender"], Scoring.defaults.owned_ambient)
      assert.isUndefined((yield* features({ ownership_hint: "any" }))["1/2/link"]!["owned_by_sender"])
      assert.strictEqual(
        (yield* features({ ownership_hint: "mine" }))["1/2/link"]!["owned_by_sender"],
        Scoring.defaults.weights.owned_by_sender
      )
    })))

  it.effect("\"kind_match\" is reported in list results where allowed_kinds applied, and only there", () =>
    withCore(Effect.gen(function*() {
      yield* twoInTopic
      const filtered = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 4, allowed_kinds: ["link"] })
      assert.isAbove(filtered.objects.length, 0)
      for (const o of filtered.objects) assert.include(o.why_active, "kind_match")
      const unfiltered = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 4 })
      for (const o of unfiltered.objects) assert.notInclude(o.why_active, "kind_match")
    })))
})
