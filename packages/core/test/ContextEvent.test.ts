import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { ContextStore } from "../src/ContextStore.js"
import * as JSONSchema from "effect/JSONSchema"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as ActiveContext from "../src/ActiveContext.js"
import * as Schema from "effect/Schema"
import { ContextEventBatch, decodeEvents, toMigratedChat } from "../src/ContextEvent.js"
import { activate, ingest, message, withCore } from "./fixtures.js"

const failure = (input: unknown) => {
  const result = decodeEvents(input)
  assert.isTrue(Either.isLeft(result), "expected the input to be rejected")
  return Either.getLeft(result).pipe((o) => o._tag === "Some" ? o.value : assert.fail("no error"))
}

describe("events", () => {
  it("ids accept integers or strings and are strings inside", () => {
    const [event] = Either.getOrThrow(decodeEvents({ type: "message_observed", chat_id: -1001234567890, message_id: "42", topic_id: 7 }))
    assert.deepStrictEqual(
      [event!.chat_id, event!.type === "message_observed" ? event!.message_id : "", event!.type === "message_observed" ? event!.topic_id : ""],
      ["-1001234567890", "42", "7"]
    )
  })

  it("a message event moved to the chat its chat migrated into carries the new chat and the carried-over ids; other events stay", () => {
    const [observed, edited, closed] = Either.getOrThrow(decodeEvents([
      { type: "message_observed", chat_id: "-5", message_id: "42", reply_to_message_id: "41" },
      { type: "message_edited", chat_id: "-5", message_id: "43", edited_at: "2026-02-13T08:20:10Z" },
      { type: "poll_closed", event_id: "poll_closed:1", poll_id: "1" }
    ]))
    const moved = [observed!, edited!, closed!].map((e) => toMigratedChat(e, "-1009"))
    assert.deepStrictEqual(moved[0], Object.assign({}, observed, { chat_id: "-1009", message_id: "~42", reply_to_message_id: "~41" }))
    assert.deepStrictEqual(moved[1], Object.assign({}, edited, { chat_id: "-1009", message_id: "~43", reply_to_message_id: null }))
    assert.strictEqual(moved[2], closed)
  })

  it("a malformed event names the failing field", () => {
    assert.strictEqual(failure({ type: "message_observed", message_id: 1 }).path, "[0].chat_id")
    assert.strictEqual(failure([message(1), { ...message(2), chat_id: "" }]).path, "[1].chat_id")
    assert.strictEqual(failure({ ...message(1), chat_id: 1.5 }).path, "[0].chat_id")
    assert.strictEqual(failure({ ...message(1), sent_at: "yesterday" }).path, "[0].sent_at")
    assert.strictEqual(failure({ ...message(1), sent_at: "2026-11-22T10:00:00" }).path, "[0].sent_at")
    assert.strictEqual(failure({ ...message(1), links: [{ url: "" }] }).path, "[0].links[0].url")
    assert.strictEqual(failure({ ...message(1), media: [{ kind: "media.hologram" }] }).path, "[0].media[0].kind")
    assert.strictEqual(failure({ type: "object_activated", event_id: "e", chat_id: 1, reason: "mentioned", object_id: "x" }).path, "[0].reason")
    assert.strictEqual(failure({ type: "object_activated", event_id: "e", chat_id: 1, reason: "summarized" }).path, "[0].source_message_id")
    assert.strictEqual(failure({ type: "poll_closed", event_id: "e" }).path, "[0].poll_id")
    assert.strictEqual(failure({ type: "teleported", chat_id: 1 }).path, "[0].type")
    assert.strictEqual(failure(null).path, "[0]")
  })

  it("a batch holds at most 1000 events", () => {
    const batch = Array.from({ length: 1001 }, (_, i) => message(i + 1))
    assert.match(failure(batch).message, /at most 1000/)
  })

  it("a batch over the limit is refused before its events are decoded", () => {
    const batch: Array<unknown> = Array.from({ length: 1001 }, (_, i) => message(i + 1))
    const valid = failure(batch)
    // An event past the bound that would fail decoding with another error is never looked at.
    batch[1000] = { ...message(1001), chat_id: "" }
    assert.deepStrictEqual(failure(batch), valid)
    batch[0] = 5
    assert.deepStrictEqual(failure(batch), valid)
    // Within the bound the events decode as before, and the first bad one is named.
    assert.strictEqual(failure(batch.slice(0, 1000)).path, "[0]")
    const schema = Schema.decodeUnknownEither(ContextEventBatch)
    assert.deepStrictEqual(Either.getOrThrow(schema([{ type: "message_observed", chat_id: 1, message_id: 2 }])).map((e) => e.type), ["message_observed"])
    // The JSON Schema is the refinement's: an array of ContextEvent with maxItems.
    const json = JSONSchema.make(ContextEventBatch) as unknown as { $defs: Record<string, Record<string, unknown>> }
    assert.deepStrictEqual(
      [json.$defs["ContextEventBatch"]?.["type"], json.$defs["ContextEventBatch"]?.["maxItems"], json.$defs["ContextEventBatch"]?.["items"]],
      ["array", 1000, { $ref: "#/$defs/ContextEvent" }]
    )
  })

  it.effect("a malformed batch changes nothing", () =>
    withCore(Effect.gen(function*() {
      const error = yield* Effect.flip(ingest(message(1), message(2), { ...message(3), reply_to_message_id: {} } as never))
      assert.strictEqual(error._tag === "InvalidEvent" ? error.path : error._tag, "[2].reply_to_message_id")
      const store = yield* ContextStore
      assert.deepStrictEqual(yield* store.snapshot("1"), { messages: [], objects: [] })
    })))

  it.effect("applying the same events twice changes nothing", () =>
    withCore(Effect.gen(function*() {
      const events = [
        message(1, { links: [{ url: "https://example.com" }] }),
        activate("summarized", { event_id: "s1", source_message_id: 1, kind: "link" }),
        activate("resolver_touch", { event_id: "t1", object_id: "1/1/link" })
      ]
      const first = yield* ingest(...events)
      const store = yield* ContextStore
      const before = yield* store.snapshot("1")
      const second = yield* ingest(...events)
      assert.deepStrictEqual([first.applied, second.applied, second.duplicates], [3, 0, 3])
      assert.deepStrictEqual(yield* store.snapshot("1"), before)
    })))

  it.effect("an activation that arrives before its message keeps its state when the message is seen", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(activate("url_fetched", { source_message_id: 1, kind: "link", ref: "https://example.com" }))
      yield* ingest(message(1, { links: [{ url: "https://example.com", title: "Example" }] }))
      const store = yield* ContextStore
      const [link] = (yield* store.snapshot("1")).objects
      assert.deepStrictEqual(link!.activation_reasons, ["url_fetched"])
      assert.strictEqual(link!.title_or_label, "Example")
    })))

  it.effect("an article activated from a message's link keeps the link's URL and title", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(
        message(1, { links: [{ url: "https://example.com/post", title: "The post" }] }),
        activate("summarized", { source_message_id: 1, kind: "article" })
      )
      const store = yield* ContextStore
      const { objects } = yield* store.snapshot("1")
      const article = objects.find((o) => o.kind === "article")
      assert.deepStrictEqual([article?.ref, article?.title_or_label], ["https://example.com/post", "The post"])
    })))

  it("arrays inside events and requests are refused for their length before their elements are decoded", () => {
    const links = Array.from({ length: 51 }, (_, i) => ({ url: `https://example.com/${i}` }))
    const tooMany = failure({ ...message(1), links })
    assert.strictEqual(tooMany.path, "[0].links")
    assert.match(tooMany.message, /^Expected an array of at most 50 item\(s\), actual/)
    const badTail = failure({ ...message(1), links: [...links.slice(0, 50), { url: "" }] })
    assert.deepStrictEqual([badTail.path, badTail.message.split(", actual")[0]], [tooMany.path, tooMany.message.split(", actual")[0]])
    // Within the bound, elements decode as before.
    assert.strictEqual(failure({ ...message(1), links: [{ url: "" }] }).path, "[0].links[0].url")
    const kinds = Schema.decodeUnknownEither(ActiveContext.ListRequest, { errors: "first" })
    const request = (allowed_kinds: ReadonlyArray<unknown>) => ({ chat_id: 1, current_message_id: 2, allowed_kinds })
    const issue = (input: unknown) => Either.getLeft(kinds(input)).pipe(Option.map((e) => ParseResult.ArrayFormatter.formatErrorSync(e)))
    const over = issue(request(Array.from({ length: 13 }, () => "link")))
    const shape = (o: typeof over) => Option.getOrThrow(o).map((i) => [i._tag, i.path, i.message.split(", actual")[0]])
    assert.deepStrictEqual(shape(over), [
      ["Refinement", ["allowed_kinds"], "Expected an array of at most 12 item(s)"],
      ["Type", ["allowed_kinds"], "Expected undefined"]
    ])
    assert.deepStrictEqual(shape(issue(request([...Array.from({ length: 12 }, () => "link"), 5]))), shape(over))
    assert.deepStrictEqual(Option.getOrThrow(issue(request([])))[0]?.message, "Expected an array of at least 1 item(s), actual []")
    assert.isTrue(Either.isRight(kinds(request(["link", "poll"]))))
  })

  it("long labels are cut to one short line without splitting a character", () => {
    const [event] = Either.getOrThrow(decodeEvents(message(1, { links: [{ url: "https://x", title: "😀".repeat(100) + "\nsecond line" }] })))
    const title = event!.type === "message_observed" ? event!.links[0]!.title! : ""
    assert.strictEqual(Array.from(title).length, 80)
    assert.isTrue(title.endsWith("…"))
    assert.notInclude(title, "\n")
    assert.isFalse(/[\uD800-\uDBFF]…$/.test(title))
  })
})
