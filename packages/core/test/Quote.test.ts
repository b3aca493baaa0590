/**
 * Which parts of a replied message a quote selects (`Quote.selects`), as a table; then the same
 * decision through the store and the resolver: the recorded quote remembered on the parts it
 * selects, a caller's `quote_text`, bad quote input refused.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ContextStore } from "../src/ContextStore.js"
import { decodeEvents } from "../src/ContextEvent.js"
import * as Quote from "../src/Quote.js"
import { ResolveRequest } from "../src/ReferenceResolver.js"
import { ingest, message, resolve, withCore } from "./fixtures.js"

// "😀 see https://a.example/x and https://b.example/y, cc @carol" — the emoji counts two UTF-16 units.
const text = "😀 see https://a.example/x and https://b.example/y, cc @carol"
const at = (part: string) => ({ offset: text.indexOf(part), length: part.length })
const linkA: Quote.Part = { object_id: "a", span: at("https://a.example/x"), texts: ["https://a.example/x"] }
const linkB: Quote.Part = { object_id: "b", span: at("https://b.example/y"), texts: ["https://b.example/y"] }
const quoteOf = (selected: string, position = text.indexOf(selected)): Quote.Quote => ({ text: selected, position })

// A photo captioned "Trail map 🥾 https://example.com/trail", the caption's link inside it.
const caption = "Trail map 🥾 https://example.com/trail"
const photo: Quote.Part = { object_id: "photo", span: { offset: 0, length: caption.length }, texts: [caption] }
const trail: Quote.Part = {
  object_id: "trail",
  span: { offset: caption.indexOf("https"), length: "https://example.com/trail".length },
  texts: ["https://example.com/trail"]
}

const table: ReadonlyArray<readonly [string, ReadonlyArray<Quote.Part>, Quote.Quote, ReadonlyArray<string>]> = [
  ["a quote of one link's URL selects that link", [linkA, linkB], quoteOf("https://b.example/y"), ["b"]],
  ["a quote starting before a link and ending inside it selects it", [linkA, linkB], quoteOf("see https://a.exa"), ["a"]],
  ["a quote across both links selects both", [linkA, linkB], quoteOf("https://a.example/x and https://b.example/y"), ["a", "b"]],
  ["a quote of plain words selects nothing", [linkA, linkB], quoteOf(" and "), []],
  ["a quote of a mention selects nothing (a person is no object)", [linkA, linkB], quoteOf("@carol"), []],
  ["a quote by UTF-16 position: the link after an emoji starts at unit 7", [linkA], { text: "https://a", position: 7 }, ["a"]],
  ["a caption's words select the captioned photo", [photo, trail], { text: "Trail map", position: 0 }, ["photo"]],
  ["the link inside a caption, quoted, selects the link alone", [photo, trail], { text: "https://example.com/trail", position: 13 }, ["trail"]],
  // Unit 12 is the space after the two-unit emoji; as a code-point index it would be the link's "h".
  ["positions are UTF-16 code units: the space before the caption's link selects the photo, not the link", [photo, trail], { text: " ", position: 12 }, ["photo"]],
  ["a quote of words and the link of a caption selects both", [photo, trail], { text: "map 🥾 https://example.com", position: 6 }, ["photo", "trail"]],
  ["without a position, a part is selected by its text: the quote inside it", [linkA, linkB], { text: "b.example" }, ["b"]],
  ["without a position, a part inside the quote is selected", [linkA, linkB], { text: "see https://a.example/x and" }, ["a"]],
  ["without a position, four units shared at the edges count", [linkA, linkB], { text: "le/y, cc" }, ["b"]],
  ["without a position, fewer than four shared units do not", [linkA, linkB], { text: "e/y, cc" }, []],
  ["without a position, the caption's link quoted selects the link, not the photo", [photo, trail], { text: "https://example.com/trail" }, ["trail"]],
  ["a part without a span is matched by its text even when the quote has a position", [{ object_id: "t", texts: ["spec"] }], { text: "the spec", position: 40 }, ["t"]],
  ["whitespace is compared collapsed", [{ object_id: "t", texts: ["Saturday hike"] }], { text: "Saturday\n  hike" }, ["t"]]
]

describe("Quote.selects", () => {
  for (const [name, parts, quote, expected] of table) {
    it(name, () => {
      assert.deepStrictEqual(Quote.selects(parts, quote), [...expected])
    })
  }

  it("partOf: a link shows its URL and title, a media item its label", () => {
    assert.deepStrictEqual(Quote.partOf({ object_id: "l", kind: "link", ref: "https://x", title_or_label: "X" }).texts, ["https://x", "X"])
    assert.deepStrictEqual(Quote.partOf({ object_id: "m", kind: "media.image", ref: "file-id", title_or_label: "cat" }).texts, ["cat"])
  })

  it("quoted_in keeps the newest eight quoting messages, each once", () => {
    let list: ReadonlyArray<string> | undefined
    for (let i = 1; i <= 10; i++) list = Quote.addQuotedIn(list, String(i))
    list = Quote.addQuotedIn(list, "5")
    assert.deepStrictEqual(list, ["3", "4", "6", "7", "8", "9", "10", "5"])
  })
})

const twoLinks = message(10, {
  links: [
    { url: "https://a.example/x", span: at("https://a.example/x") },
    { url: "https://b.example/y", span: at("https://b.example/y") }
  ]
})

describe("a recorded quote", () => {
  it.effect("marks the replied message's part it selects with the quoting message, and nothing else", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(twoLinks, message(11, { reply_to_message_id: 10, quote: quoteOf("https://b.example/y") }))
      const store = yield* ContextStore
      const a = yield* store.object("1", "1/10/link")
      const b = yield* store.object("1", "1/10/link/1")
      assert.isUndefined(Option.getOrThrow(a).quoted_in)
      assert.deepStrictEqual(Option.getOrThrow(b).quoted_in, ["11"])
      const result = yield* resolve({ chat_id: 1, current_message_id: 11, reply_to_message_id: 10 })
      assert.deepStrictEqual([result.status, result.best_match?.object_id], ["resolved", "1/10/link/1"])
      assert.include(result.reasons, "quote_match")
      // Another reply to the same message, without a quote, is not steered by it.
      const other = yield* resolve({ chat_id: 1, current_message_id: 12, reply_to_message_id: 10 })
      assert.strictEqual(other.status, "ambiguous")
    })))

  it.effect("a quote that selects nothing marks nothing and changes nothing", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(twoLinks, message(11, { reply_to_message_id: 10, quote: quoteOf(" and ") }))
      const store = yield* ContextStore
      for (const id of ["1/10/link", "1/10/link/1"]) assert.isUndefined(Option.getOrThrow(yield* store.object("1", id)).quoted_in)
      assert.strictEqual((yield* resolve({ chat_id: 1, current_message_id: 11, reply_to_message_id: 10 })).status, "ambiguous")
    })))

  it.effect("a caller's quote_text wins over the recorded quote", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(twoLinks, message(11, { reply_to_message_id: 10, quote: quoteOf("https://b.example/y") }))
      const result = yield* resolve({ chat_id: 1, current_message_id: 11, reply_to_message_id: 10, quote_text: "https://a.example/x" })
      assert.strictEqual(result.best_match?.object_id, "1/10/link")
    })))

  it.effect("an edit of the replied message places its kept link anew", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(twoLinks, {
        type: "message_edited",
        chat_id: 1,
        message_id: 10,
        edited_at: "2026-11-22T10:00:00Z",
        links: [{ url: "https://a.example/x", span: { offset: 0, length: 19 } }]
      })
      const store = yield* ContextStore
      assert.deepStrictEqual(Option.getOrThrow(yield* store.object("1", "1/10/link")).span, { offset: 0, length: 19 })
    })))
})

describe("bad quote input", () => {
  it("a request's quote_position must be a UTF-16 offset, its quote_text not empty", () => {
    const decode = Schema.decodeUnknownEither(ResolveRequest)
    assert.isTrue(Either.isLeft(decode({ chat_id: 1, current_message_id: 2, quote_text: "" })))
    assert.isTrue(Either.isLeft(decode({ chat_id: 1, current_message_id: 2, quote_text: "x", quote_position: -1 })))
    assert.isTrue(Either.isLeft(decode({ chat_id: 1, current_message_id: 2, quote_text: "x", quote_position: 1.5 })))
    assert.isTrue(Either.isRight(decode({ chat_id: 1, current_message_id: 2, quote_text: "x", quote_position: 0 })))
  })

  it("an event's span and quote are checked: a batch with a bad one is refused whole, naming the field", () => {
    const bad = decodeEvents([
      { type: "message_observed", chat_id: 1, message_id: 1, links: [{ url: "https://a", span: { offset: 0, length: 0 } }] }
    ])
    assert.isTrue(Either.isLeft(bad))
    if (Either.isLeft(bad)) assert.include(bad.left.path, "span")
    const quote = decodeEvents([{ type: "message_observed", chat_id: 1, message_id: 2, reply_to_message_id: 1, quote: { text: "" } }])
    assert.isTrue(Either.isLeft(quote))
    if (Either.isLeft(quote)) assert.include(quote.left.path, "quote")
  })
})
