import { ContextIngest } from "@deixis/core/ContextIngest"
import * as ConversationState from "@deixis/core/ConversationState"
import * as Deixis from "@deixis/core/Deixis"
import * as ContextLoader from "@deixis/chathistory/ContextLoader"
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import { testItem } from "@deixis/chathistory/HistoryStoreTesting"
import type { Tool } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as DeixisToolkit from "../src/DeixisToolkit.js"
import type * as Envelope from "../src/Envelope.js"

const now = 1_771_000_100_000

const services = Layer.mergeAll(
  Deixis.layerMemory(),
  ConversationState.layer().pipe(Layer.provide(ConversationState.layerMemory)),
  ContextLoader.layer().pipe(Layer.provideMerge(HistoryStore.layerMemory()))
)

const run = <A, E>(effect: Effect.Effect<A, E, DeixisToolkit.Requirements | ContextIngest | Tool.HandlersFor<DeixisToolkit.Tools>>, budgets: Partial<DeixisToolkit.Budgets> = {}) =>
  Effect.zipRight(
    TestClock.setTime(now),
    effect.pipe(Effect.provide(DeixisToolkit.layer({ budgets }).pipe(Layer.provideMerge(services))))
  )

/** Calls a tool as a model would, with untrusted arguments; a failure's envelope is returned too. */
const call = (name: DeixisToolkit.ToolName, params: unknown) =>
  Effect.flatMap(DeixisToolkit.toolkit, (built) =>
    built.handle(name, params as never).pipe(
      Effect.map((r) => r.encodedResult as Envelope.Envelope),
      Effect.catchAll((error) => Effect.succeed(error as Envelope.Envelope))
    ))

type Node = { readonly [key: string]: unknown }
const objectsOf = (schema: unknown, out: Array<Node> = []): Array<Node> => {
  if (Array.isArray(schema)) schema.forEach((s) => objectsOf(s, out))
  else if (typeof schema === "object" && schema !== null) {
    const node = schema as Node
    if (node["type"] === "object" && node["properties"] !== undefined) out.push(node)
    Object.values(node).forEach((v) => objectsOf(v, out))
  }
  return out
}

describe("DeixisToolkit", () => {
  it("offers seven tools whose parameters are closed JSON Schemas from the Schemas", () => {
    assert.deepStrictEqual(DeixisToolkit.definitions.map((d) => d.name), [
      "resolve_reference_target",
      "list_active_context_objects",
      "get_message_thread_context",
      "get_conversation_state",
      "update_conversation_state",
      "record_context_action",
      "read_url"
    ])
    for (const definition of DeixisToolkit.definitions) {
      assert.isAbove(definition.description.length, 20)
      const objects = objectsOf(definition.parameters)
      assert.isAtLeast(objects.length, 1, definition.name)
      for (const o of objects) assert.strictEqual(o["additionalProperties"], false, definition.name)
      assert.include((definition.parameters as { required: Array<string> }).required, "chat_id")
    }
    const resolve = DeixisToolkit.definitions[0]!.parameters as { properties: Record<string, unknown> }
    assert.includeMembers(Object.keys(resolve.properties), ["normalized_reference_hints", "allowed_kinds", "max_candidates", "quote_text", "quote_position"])
  })

  it.effect("every tool answers with the envelope over the real services", () =>
    Effect.gen(function*() {
      yield* Effect.flatMap(ContextIngest, (i) =>
        i.ingest([
          { type: "message_observed", chat_id: 5, message_id: 1, topic_id: 3, sender_user_id: 9, poll: { poll_id: "p", question: "Lunch?" } },
          { type: "object_activated", event_id: "c", chat_id: 5, reason: "poll_created", source_message_id: 1, kind: "poll" }
        ]))
      const resolved = yield* call("resolve_reference_target", {
        chat_id: 5, topic_id: 3, current_message_id: 2, normalized_reference_hints: { target_kind_hint: "poll" }
      })
      assert.strictEqual(resolved.status, "ok")
      assert.match(resolved.summary, /^resolved: poll 5\/1\/poll "Lunch\?"/)
      assert.strictEqual((resolved.data as { best_match: { object_id: string } }).best_match.object_id, "5/1/poll")

      const listed = yield* call("list_active_context_objects", { chat_id: "5", topic_id: "3", current_message_id: "2" })
      assert.strictEqual(listed.summary, "1 active object in topic")

      const updated = yield* call("update_conversation_state", { chat_id: "5", topic_id: "3", patch: { step: "poll" }, expected_revision: 0 })
      assert.deepStrictEqual([updated.status, updated.summary], ["ok", "updated to revision 1"])
      const read = yield* call("get_conversation_state", { chat_id: "5", topic_id: "3" })
      assert.deepStrictEqual((read.data as { state: unknown }).state, { step: "poll" })

      const stale = yield* call("update_conversation_state", { chat_id: "5", topic_id: "3", patch: { step: "x" }, expected_revision: 0 })
      assert.deepStrictEqual([stale.status, stale.error?.code], ["error", "ConversationStateConflict"])
      assert.strictEqual((stale.data as { current_revision: number }).current_revision, 1)
    }).pipe(run))

  it.effect("get_message_thread_context walks the reply chain within its bounds and reports the bound that cut it", () =>
    Effect.gen(function*() {
      const history = yield* HistoryStore.HistoryStore
      // m1 ← m2 ← … ← m10, each replying to the one before; m11 replies to m10.
      for (let i = 1; i <= 11; i++) {
        yield* history.append(testItem("5", String(i), {
          topic_id: "3",
          sent_at: now - (20 - i) * 1000,
          reply_to_message_id: i === 1 ? null : String(i - 1)
        }))
      }
      const thread = yield* call("get_message_thread_context", { chat_id: "5", topic_id: "3", message_id: 11 })
      assert.strictEqual(thread.status, "ok")
      const data = thread.data as DeixisToolkit.ThreadContext
      assert.strictEqual(data.message?.text, "message 11")
      assert.deepStrictEqual(data.reply, { target_id: "10", status: "found" })
      assert.deepStrictEqual(data.chain?.message_ids, ["10", "9", "8", "7", "6", "5", "4", "3"])
      assert.deepStrictEqual(data.chain?.truncated_by, ["chain_max_messages"])
      assert.include(thread.summary, "cut by chain_max_messages")
      assert.notInclude(data.messages.map((m) => m.message_id), "11")
    }).pipe(run))

  it.effect("a long thread leaves out its oldest messages to fit the budget, as valid JSON", () =>
    Effect.gen(function*() {
      const history = yield* HistoryStore.HistoryStore
      for (let i = 1; i <= 10; i++) {
        yield* history.append(testItem("5", String(i), { sent_at: now - (20 - i) * 1000, text: `${i} ${"words ".repeat(60)}` }))
      }
      const thread = yield* call("get_message_thread_context", { chat_id: "5", message_id: 11 })
      assert.isAtMost(JSON.stringify(thread).length, 1500)
      const data = thread.data as DeixisToolkit.ThreadContext
      assert.isAbove(data.omitted_older, 0)
      assert.strictEqual(data.messages.at(-1)?.message_id, "10")
      assert.strictEqual(data.omitted_older + data.messages.length, 10)
    }).pipe((effect) => run(effect, { get_message_thread_context: 1500 })))

  it.effect("arguments that do not decode fail with a clear error, not a crash", () =>
    Effect.gen(function*() {
      const result = yield* Effect.flatMap(DeixisToolkit.toolkit, (built) =>
        Effect.either(built.handle("get_conversation_state", { topic_id: 3 } as never)))
      if (result._tag === "Right") return assert.fail("the call should have failed")
      const envelope = DeixisToolkit.errorEnvelope(result.left)
      assert.strictEqual(envelope.status, "error")
      assert.strictEqual(envelope.error?.code, "InvalidParameters")
      assert.deepStrictEqual(envelope.data, { _tag: "InvalidParameters", tool: "get_conversation_state" })
      assert.include(envelope.error?.message, "get_conversation_state: the arguments do not match")
      assert.include(envelope.error?.message, "[\"chat_id\"]")
    }).pipe(run))

  it.effect("a resolution through the toolkit is recorded as a resolver touch; the model is not asked to choose", () =>
    run(Effect.gen(function*() {
      const ingest = yield* ContextIngest
      yield* ingest.ingest([
        { type: "message_observed", chat_id: 5, message_id: 1, links: [{ url: "https://example.com/a" }] },
        { type: "message_observed", chat_id: 5, message_id: 2, reply_to_message_id: 1 }
      ])
      const definition = DeixisToolkit.definitions.find((d) => d.name === "resolve_reference_target")!
      assert.notInclude(JSON.stringify(definition.parameters), "record_touch")
      const resolved = yield* call("resolve_reference_target", { chat_id: 5, current_message_id: 2, reply_to_message_id: 1 })
      assert.strictEqual(resolved.status, "ok")
      const listed = yield* call("list_active_context_objects", { chat_id: 5, current_message_id: 3 })
      const objects = (listed.data as { objects: ReadonlyArray<{ object_id: string; why_active: ReadonlyArray<string> }> }).objects
      assert.deepStrictEqual(objects.map((o) => [o.object_id, o.why_active.includes("activated_by_resolver")]), [["5/1/link", true]])
    })))
  it.effect("resolve_reference_target returns its scoring diagnostics only when asked for", () =>
    run(Effect.gen(function*() {
      const ingest = yield* ContextIngest
      yield* ingest.ingest([{ type: "message_observed", chat_id: 5, message_id: 1, links: [{ url: "https://example.com/a" }] }])
      const plain = yield* call("resolve_reference_target", { chat_id: 5, current_message_id: 2, reply_to_message_id: 1 })
      assert.notProperty(plain.data as object, "diagnostics")
      assert.property(plain.data as object, "best_match")
      const asked = yield* call("resolve_reference_target", { chat_id: 5, current_message_id: 2, reply_to_message_id: 1, include_diagnostics: true })
      assert.property(asked.data as object, "diagnostics")
      assert.isBelow(JSON.stringify(plain).length, JSON.stringify(asked).length)
    })))

  const activeIds = (currentMessageId: number) =>
    Effect.map(call("list_active_context_objects", { chat_id: 5, current_message_id: currentMessageId, max_results: 10 }), (listed) =>
      (listed.data as { objects: ReadonlyArray<{ object_id: string; why_active: ReadonlyArray<string> }> }).objects.map((o) => [o.object_id, o.why_active.find((w) => w.startsWith("activated_by_")) ?? "none"]))

  it.effect("a URL fetch activates the link: url_fetched names the message and the URL", () =>
    run(Effect.gen(function*() {
      const ingest = yield* ContextIngest
      yield* ingest.ingest([{ type: "message_observed", chat_id: 5, message_id: 1, links: [{ url: "https://a.example/x" }, { url: "https://b.example/y" }] }])
      assert.deepStrictEqual(yield* activeIds(2), [])
      const recorded = yield* call("record_context_action", { chat_id: 5, action: "url_fetched", message_id: 1, url: "https://b.example/y", current_message_id: 2 })
      assert.deepStrictEqual([recorded.status, recorded.summary], ["ok", "recorded: link 5/1/link/1 activated (url_fetched)"])
      assert.deepStrictEqual(yield* activeIds(2), [["5/1/link/1", "activated_by_url_fetch"]])
      // A URL the message does not carry as a link becomes a link of its own on that message.
      const extra = yield* call("record_context_action", { chat_id: 5, action: "url_fetched", message_id: 1, url: "https://c.example/z" })
      assert.strictEqual((extra.data as { object_id: string }).object_id, "5/1/link/2")
    })))

  it.effect("a summary the model writes becomes an active summary object, and \"make it shorter\" resolves to it", () =>
    run(Effect.gen(function*() {
      const ingest = yield* ContextIngest
      yield* ingest.ingest([
        { type: "message_observed", chat_id: 5, message_id: 1, sender_user_id: 9, links: [{ url: "https://a.example/x" }] },
        { type: "message_observed", chat_id: 5, message_id: 2, sender_user_id: 8, from_bot: true, reply_to_message_id: 1 }
      ])
      const recorded = yield* call("record_context_action", { chat_id: 5, action: "summary_written", message_id: 2, label: "Summary of the article" })
      assert.strictEqual(recorded.status, "ok")
      assert.deepStrictEqual(yield* activeIds(3), [["5/2/summary", "activated_by_summary"]])
      const shorter = yield* call("resolve_reference_target", { chat_id: 5, current_message_id: 3, sender_user_id: 9 })
      assert.strictEqual((shorter.data as { best_match: { object_id: string; created_by_bot: boolean } }).best_match.object_id, "5/2/summary")
      assert.isTrue((shorter.data as { best_match: { created_by_bot: boolean } }).best_match.created_by_bot)
    })))

  it.effect("a media item described is activated with media_described", () =>
    run(Effect.gen(function*() {
      const ingest = yield* ContextIngest
      yield* ingest.ingest([{ type: "message_observed", chat_id: 5, message_id: 1, media: [{ kind: "media.image", file_id: "f1" }] }])
      const recorded = yield* call("record_context_action", { chat_id: 5, action: "media_described", message_id: 1, current_message_id: 2 })
      assert.deepStrictEqual([recorded.status, (recorded.data as { object_id: string }).object_id], ["ok", "5/1/media.image"])
      assert.deepStrictEqual(yield* activeIds(2), [["5/1/media.image", "activated_by_media_inspection"]])
    })))

  it.effect("an action on a missing target fails with InvalidRequest naming the field, and nothing changes", () =>
    run(Effect.gen(function*() {
      const ingest = yield* ContextIngest
      yield* ingest.ingest([{ type: "message_observed", chat_id: 5, message_id: 1, links: [{ url: "https://a.example/x" }] }])
      const cases = [
        [{ action: "url_fetched", message_id: 99, url: "https://a.example/x" }, "message_id", "no message 99 in chat 5"],
        [{ action: "url_fetched", message_id: 1 }, "url", "url_fetched needs the url fetched"],
        [{ action: "media_described", message_id: 1 }, "message_id", "message 1 carries no media item"],
        [{ action: "summary_written" }, "message_id", "summary_written needs the message holding the summary"]
      ] as const
      for (const [params, path, message] of cases) {
        const failed = yield* call("record_context_action", { chat_id: 5, ...params })
        assert.deepStrictEqual([failed.status, failed.error?.code, failed.error?.message], ["error", "InvalidRequest", message])
        assert.strictEqual((failed.data as { path: string }).path, path)
      }
      assert.deepStrictEqual(yield* activeIds(2), [])
    })))
})
