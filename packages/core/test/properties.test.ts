import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import * as fc from "fast-check"
import { ActiveContext, ListRequest } from "../src/ActiveContext.js"
import { ContextIngest } from "../src/ContextIngest.js"
import type { ContextEventInput } from "../src/ContextEvent.js"
import { ContextStore } from "../src/ContextStore.js"
import * as Deixis from "../src/Deixis.js"
import { activationReasons } from "../src/ContextObject.js"
import { ReferenceResolver, ResolveRequest } from "../src/ReferenceResolver.js"
import { T0 } from "./fixtures.js"

const chats = ["1", "2"] as const
const topics = [null, "7", "8"] as const

type Step =
  | { readonly _tag: "events"; readonly events: ReadonlyArray<ContextEventInput> }
  | { readonly _tag: "wait"; readonly ms: number }

const messageArb = fc.record({
  chat: fc.constantFrom(...chats),
  id: fc.integer({ min: 1, max: 40 }),
  topic: fc.constantFrom(...topics),
  reply: fc.option(fc.integer({ min: 1, max: 40 }), { nil: null }),
  sender: fc.constantFrom("100", "200"),
  outbound: fc.boolean(),
  link: fc.boolean(),
  media: fc.option(fc.constantFrom("media.image", "media.pdf", "media.voice"), { nil: undefined }),
  poll: fc.boolean()
}).map(({ chat, id, topic, reply, sender, outbound, link, media, poll }): ContextEventInput => ({
  type: "message_observed",
  chat_id: chat,
  message_id: id,
  topic_id: topic,
  reply_to_message_id: reply,
  sender_user_id: sender,
  direction: outbound ? "outbound" : "inbound",
  links: link ? [{ url: `https://example.com/${chat}/${id}` }] : [],
  media: media === undefined ? [] : [{ kind: media }],
  ...(poll ? { poll: { poll_id: `poll-${chat}-${id}` } } : {})
}))

const activationArb = fc.record({
  chat: fc.constantFrom(...chats),
  id: fc.integer({ min: 1, max: 40 }),
  kind: fc.constantFrom("link", "media.image", "media.pdf", "poll", "summary", "reminder"),
  reason: fc.constantFrom(...activationReasons),
  event: fc.integer({ min: 1, max: 30 })
}).map(({ chat, id, kind, reason, event }): ContextEventInput => ({
  type: "object_activated",
  event_id: `e${event}`,
  chat_id: chat,
  reason,
  source_message_id: id,
  kind,
  ...(kind === "reminder" ? { due_at: "2026-11-23T09:00:00Z" } : {})
}))

const closeArb = fc.integer({ min: 1, max: 40 }).map((id): ContextEventInput => ({
  type: "poll_closed",
  event_id: `close-${id}`,
  poll_id: `poll-1-${id}`
}))

const stepsArb: fc.Arbitrary<ReadonlyArray<Step>> = fc.array(
  fc.oneof(
    { weight: 5, arbitrary: fc.array(fc.oneof(messageArb, messageArb, activationArb, closeArb), { minLength: 1, maxLength: 8 }).map((events): Step => ({ _tag: "events", events })) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 90 }).map((m): Step => ({ _tag: "wait", ms: m * 60_000 })) }
  ),
  { maxLength: 12 }
)

const requestArb = fc.record({
  chat: fc.constantFrom(...chats),
  topic: fc.constantFrom(...topics),
  current: fc.integer({ min: 1, max: 45 }),
  reply: fc.option(fc.integer({ min: 1, max: 40 }), { nil: null }),
  sender: fc.constantFrom("100", "200", "300"),
  hint: fc.option(fc.constantFrom("poll", "reminder", "image", "file", "article", "quote"), { nil: undefined }),
  ownership: fc.option(fc.constantFrom("mine", "bot_created", "any"), { nil: undefined }),
  max: fc.integer({ min: 1, max: 6 })
})
type RequestSpec = typeof requestArb extends fc.Arbitrary<infer A> ? A : never

const quiet = Logger.minimumLogLevel(LogLevel.None)
// A safety limit, not a timed assertion: each run builds fresh layers, slow on a loaded CI box.
const limit = 180_000
const run = <A>(effect: Effect.Effect<A, unknown, Deixis.Services>): Promise<A> =>
  Effect.runPromise(
    TestClock.setTime(T0).pipe(
      Effect.zipRight(effect),
      Effect.provide(Layer.mergeAll(Deixis.layerMemory({ store: { sweep_interval: 0 } }), quiet)),
      Effect.provide(TestContext.TestContext)
    )
  )

const play = (steps: ReadonlyArray<Step>) =>
  Effect.forEach(steps, (step) =>
    step._tag === "wait"
      ? TestClock.adjust(step.ms)
      : Effect.flatMap(ContextIngest, (i) => i.ingest(step.events)), { discard: true })

const ask = (r: RequestSpec) =>
  Effect.gen(function*() {
    const resolver = yield* ReferenceResolver
    const active = yield* ActiveContext
    const resolved = yield* resolver.resolve(Schema.decodeSync(ResolveRequest)({
      chat_id: r.chat,
      topic_id: r.topic,
      current_message_id: r.current,
      reply_to_message_id: r.reply,
      sender_user_id: r.sender,
      raw_user_text: "",
      normalized_reference_hints: {
        ...(r.hint === undefined ? {} : { target_kind_hint: r.hint }),
        ...(r.ownership === undefined ? {} : { ownership_hint: r.ownership })
      },
      max_candidates: r.max
    }))
    const listed = yield* active.list(Schema.decodeSync(ListRequest)({
      chat_id: r.chat,
      topic_id: r.topic,
      current_message_id: r.current,
      sender_user_id: r.sender,
      max_results: r.max
    }))
    return { resolved, listed }
  })

const encode = (answer: Effect.Effect.Success<ReturnType<typeof ask>>) =>
  JSON.stringify({
    resolved: Schema.encodeSync(Schema.typeSchema(Schema.Any))(answer.resolved),
    listed: answer.listed
  })

describe("properties", () => {
  it("determinism: the same state and input give byte-identical output", async () => {
    await fc.assert(fc.asyncProperty(stepsArb, requestArb, async (steps, request) => {
      const first = await run(Effect.zipRight(play(steps), ask(request)))
      const second = await run(Effect.zipRight(play(steps), ask(request)))
      assert.strictEqual(encode(second), encode(first))
    }), { numRuns: 100 })
  }, limit)

  it("no object of another chat is ever returned", async () => {
    await fc.assert(fc.asyncProperty(stepsArb, requestArb, async (steps, request) => {
      const { listed, resolved } = await run(Effect.zipRight(play(steps), ask(request)))
      for (const c of [...resolved.candidates, ...(resolved.best_match === null ? [] : [resolved.best_match])]) {
        assert.strictEqual(c.chat_id, request.chat)
      }
      for (const o of listed.objects) assert.isTrue(o.object_id.startsWith(`${request.chat}/`))
    }), { numRuns: 200 })
  }, limit)

  it("topic isolation: without a reply, a known topic's results stay in that topic", async () => {
    await fc.assert(fc.asyncProperty(stepsArb, requestArb, async (steps, request) => {
      const unreplied = { ...request, reply: null }
      const { listed, resolved } = await run(Effect.zipRight(play(steps), ask(unreplied)))
      if (!resolved.diagnostics.fallback) {
        for (const c of resolved.candidates) assert.strictEqual(c.topic_id, request.topic)
        for (const o of listed.objects) assert.strictEqual(o.topic_id, request.topic)
      }
    }), { numRuns: 200 })
  }, limit)

  it("idempotency: re-applying any event sequence changes nothing", async () => {
    await fc.assert(fc.asyncProperty(stepsArb, async (steps) => {
      const [before, after, second] = await run(Effect.gen(function*() {
        yield* play(steps)
        const store = yield* ContextStore
        const before = yield* Effect.all(chats.map((c) => store.snapshot(c)))
        const events = steps.flatMap((s) => (s._tag === "events" ? s.events : []))
        const second = yield* Effect.flatMap(ContextIngest, (i) => i.ingest(events.slice(0, 1000)))
        const after = yield* Effect.all(chats.map((c) => store.snapshot(c)))
        return [before, after, second] as const
      }))
      assert.deepStrictEqual(after, before)
      assert.strictEqual(second.applied, 0)
    }), { numRuns: 150 })
  }, limit)

  it("results are bounded by max_candidates and max_results", async () => {
    await fc.assert(fc.asyncProperty(stepsArb, requestArb, async (steps, request) => {
      const { listed, resolved } = await run(Effect.zipRight(play(steps), ask(request)))
      assert.isAtMost(resolved.candidates.length, request.max)
      assert.isAtMost(listed.objects.length, request.max)
      if (resolved.status === "ambiguous") assert.isNull(resolved.best_match)
      if (resolved.status === "resolved") assert.strictEqual(resolved.candidates[0]?.object_id, resolved.best_match?.object_id)
    }), { numRuns: 200 })
  }, limit)
})
