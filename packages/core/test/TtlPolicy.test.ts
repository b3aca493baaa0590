import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { ContextObject } from "../src/ContextObject.js"
import { ContextStore } from "../src/ContextStore.js"
import * as Deixis from "../src/Deixis.js"
import * as Scoring from "../src/Scoring.js"
import * as TtlPolicy from "../src/TtlPolicy.js"
import { activate, advance, ingest, list, message, minutes, resolve, T0, withCore } from "./fixtures.js"

const hours = (n: number) => n * 3_600_000
const base: ContextObject = {
  object_id: "o",
  kind: "article",
  chat_id: "1",
  topic_id: null,
  source_message_id: "1",
  created_at: T0,
  last_touched_at: T0,
  activation_reasons: [],
  created_by_bot: false,
  ttl_class: "medium",
  active_until: null,
  activated_at: null
}
const s = TtlPolicy.defaults
const p = TtlPolicy.make(s)
// Environment-style keys, as ConfigProvider.fromEnv reads them.
const envProvider = (entries: ReadonlyArray<readonly [string, string]>) =>
  ConfigProvider.fromMap(new Map(entries), { pathDelim: "_" })

describe("TtlPolicy", () => {
  it("defaults follow the spec's guidance", () => {
    assert.deepStrictEqual(s, {
      medium: hours(2),
      short_medium: minutes(45),
      short: minutes(15),
      poll_open_max: hours(24 * 7),
      poll_grace: minutes(15),
      reminder_grace: minutes(15),
      touch_cap_factor: 3
    })
    assert.strictEqual(p.classFor("summary", "summary_generated"), "medium")
    assert.strictEqual(p.classFor("media.voice", "media_transcribed"), "short_medium")
    assert.strictEqual(p.classFor("reminder", "reminder_created"), "medium")
    assert.strictEqual(p.classFor("reminder", "reminder_listed"), "short")
    assert.strictEqual(p.classFor("poll", "poll_listed"), "poll_open")
  })

  it("an explicit activation never shortens activity", () => {
    const created = p.activate({ ...base, kind: "reminder" }, "reminder_created", T0)
    const listed = p.activate(created, "reminder_listed", T0 + minutes(1))
    assert.strictEqual(created.active_until, T0 + hours(2))
    assert.strictEqual(listed.active_until, T0 + hours(2))
    assert.strictEqual(listed.ttl_class, "short")
    // Listed again after the first TTL ran out: the short management TTL applies.
    const later = p.activate(listed, "reminder_listed", T0 + hours(3))
    assert.strictEqual(later.active_until, T0 + hours(3) + minutes(15))
  })

  it("a resolver touch refreshes within the kind's TTL, never indefinitely", () => {
    let o = p.activate(base, "summarized", T0)
    // Touch every 90 minutes: each touch extends, but never past 3 × 2h since the summary.
    for (let t = T0 + minutes(90); t < T0 + hours(6); t += minutes(90)) {
      o = p.activate(o, "resolver_touch", t)
      assert.isAtMost(o.active_until!, T0 + hours(6))
    }
    assert.strictEqual(o.active_until, T0 + hours(6))
    assert.deepStrictEqual(o.activation_reasons, ["summarized", "resolver_touch"])
    // An explicit action renews the episode.
    const reused = p.activate(o, "summarized", T0 + hours(5))
    assert.strictEqual(reused.activated_at, T0 + hours(5))
    assert.strictEqual(reused.active_until, T0 + hours(7))
  })

  it("a poll is active while open and for the grace period after it closes", () => {
    const open = p.activate({ ...base, kind: "poll", poll: { state: "open" } }, "poll_created", T0)
    assert.strictEqual(open.active_until, T0 + hours(24 * 7))
    const closed = p.closePoll(open, T0 + hours(30))
    assert.strictEqual(closed.active_until, T0 + hours(30) + minutes(15))
    // A poll nobody activated stays inactive when it closes.
    assert.isNull(p.closePoll({ ...base, kind: "poll", poll: { state: "open" } }, T0).active_until)
  })

  it.effect("a cancelled reminder stops being active; a fired one is active for the management TTL", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(
        message(1),
        activate("reminder_created", { source_message_id: 1, kind: "reminder", due_at: "2026-11-22T18:00:00Z" }),
        message(2),
        activate("reminder_created", { source_message_id: 2, kind: "reminder", due_at: "2026-11-22T18:00:00Z" })
      )
      yield* advance(hours(8))
      yield* ingest(
        { type: "reminder_fired", event_id: "f", chat_id: 1, object_id: "1/1/reminder" },
        { type: "reminder_cancelled", event_id: "c", chat_id: 1, object_id: "1/2/reminder" }
      )
      const active = yield* list({ chat_id: 1, current_message_id: 3 })
      assert.deepStrictEqual(active.objects.map((o) => [o.object_id, o.reminder?.status]), [["1/1/reminder", "fired"]])
      yield* advance(minutes(16))
      assert.deepStrictEqual((yield* list({ chat_id: 1, current_message_id: 3 })).objects, [])
    })))

  it.effect("durations come from configuration", () =>
    Effect.gen(function*() {
      const policy = yield* TtlPolicy.TtlPolicy
      const link = policy.activate(base, "url_fetched", T0)
      assert.strictEqual(link.active_until, T0 + minutes(5))
      // Touches stop at 2 × the TTL since the activation.
      let touched = link
      for (let t = T0 + minutes(4); t <= T0 + minutes(8); t += minutes(4)) touched = policy.activate(touched, "resolver_touch", t)
      assert.strictEqual(touched.active_until, T0 + minutes(10))
      const poll = policy.activate({ ...base, kind: "poll", poll: { state: "open" } }, "poll_created", T0)
      assert.strictEqual(policy.closePoll(poll, T0 + minutes(1)).active_until, T0 + minutes(1) + s.poll_grace)
    }).pipe(
      Effect.provide(TtlPolicy.layerConfig.pipe(Layer.provide(Layer.setConfigProvider(envProvider([
        ["DEIXIS_TTL_MEDIUM", "5 minutes"],
        ["DEIXIS_TTL_TOUCH_CAP_FACTOR", "2"]
      ])))))
    ))

  it.effect("a bad configuration value fails with the key's name", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(TtlPolicy.layerConfig.pipe(
        Layer.provide(Layer.setConfigProvider(envProvider([["DEIXIS_TTL_TOUCH_CAP_FACTOR", "0.5"]])))
      )))
      assert.include(String(error), "TTL_TOUCH_CAP_FACTOR")
    }).pipe(Effect.scoped))
})

describe("configured scoring", () => {
  it.effect("thresholds and weights come from configuration and change outcomes", () =>
    Effect.gen(function*() {
      const run = (env: ReadonlyArray<readonly [string, string]>) =>
        Effect.gen(function*() {
          yield* ingest(message(1, { links: [{ url: "https://a" }] }), message(2))
          return yield* resolve({ chat_id: 1, current_message_id: 2, normalized_reference_hints: { target_kind_hint: "article" } })
        }).pipe(
          Effect.provide(Deixis.layerMemoryConfig.pipe(Layer.provide(Layer.setConfigProvider(envProvider(env)))))
        )
      assert.strictEqual((yield* run([])).status, "resolved")
      assert.strictEqual((yield* run([["DEIXIS_RESOLVE_MIN_SCORE", "200"]])).status, "not_found")
      const weighted = yield* run([["DEIXIS_SCORE_KIND_MATCH", "50"]])
      assert.strictEqual(weighted.diagnostics.scored[0]!.features["kind_match"], 50)
    }))

  it("the scorer's defaults are the configuration read with no keys", () => {
    assert.strictEqual(Scoring.defaults.min_score, 60)
    assert.strictEqual(Scoring.make({ weights: { recency: 1 } }).settings.weights.reply_target, Scoring.defaults.weights.reply_target)
  })

  it.effect("a resolver touch is an activation event the caller sends", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(message(1, { links: [{ url: "https://a" }] }), message(2, { reply_to_message_id: 1 }))
      const result = yield* resolve({ chat_id: 1, current_message_id: 2, reply_to_message_id: 1 })
      assert.strictEqual(result.status, "resolved")
      yield* ingest(activate("resolver_touch", { object_id: result.best_match!.object_id }))
      const store = yield* ContextStore
      const touched = Option.getOrThrow(yield* store.object("1", "1/1/link"))
      assert.deepStrictEqual(touched.activation_reasons, ["resolver_touch"])
      const listed = yield* list({ chat_id: 1, current_message_id: 3 })
      assert.include(listed.objects[0]!.why_active, "activated_by_resolver")
    })))
})
