import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Mentions from "../src/Mentions.js"

const people = Mentions.directory([
  { user_id: "2", username: "bob", display_name: "Bob" },
  { user_id: "3", username: "carol", first_name: "Carol", last_name: "King" }
])

/** The UTF-16 offset of `needle` in `text`, as Telegram reports it. */
const at = (text: string, needle: string) => ({ offset: text.indexOf(needle), length: needle.length })

describe("Mentions", () => {
  it("mention entity replacement to [nickname](tg:@username)", () => {
    const text = "Please review @bob's update, @carol."
    const out = Mentions.normalize(text, [
      { type: "mention", ...at(text, "@bob") },
      { type: "mention", ...at(text, "@carol") },
      { type: "bold", offset: 0, length: 6 }
    ], people)
    assert.strictEqual(out.text, "Please review [Bob](tg:@bob)'s update, [Carol King](tg:@carol).")
    assert.deepStrictEqual(out.warnings, [])
  })

  it("a mention of someone unknown uses @username as the nickname; the typed spelling wins", () => {
    const text = "hi @Dave_99"
    const out = Mentions.normalize(text, [{ type: "mention", ...at(text, "@Dave_99") }], people)
    assert.strictEqual(out.text, "hi [@Dave_99](tg:@Dave_99)")
  })

  it("text_mention with a username becomes a reference; the directory adds a display name", () => {
    const text = "ask Robert now"
    const entity = { type: "text_mention", ...at(text, "Robert"), user: { id: "2", first_name: "Robert", username: "bob" } }
    assert.strictEqual(Mentions.normalize(text, [entity], people).text, "ask [Bob](tg:@bob) now")
    assert.strictEqual(Mentions.normalize(text, [entity]).text, "ask [Robert](tg:@bob) now")
  })

  it("text_mention without a username keeps the original text, with a warning, and never fails", () => {
    const text = "thanks Erin!"
    const out = Mentions.normalize(text, [{ type: "text_mention", ...at(text, "Erin"), user: { id: "55", first_name: "Erin" } }])
    assert.strictEqual(out.text, text)
    assert.strictEqual(out.warnings.length, 1)
    assert.include(out.warnings[0] ?? "", "user 55 has no username")
  })

  it("emoji and astral characters before an entity do not shift the replaced span", () => {
    // 👍🏽 is 4 UTF-16 units (2 code points), 𝒜 is 2 units (1 code point), 👨‍👩‍👧 is 8 units.
    const text = "👍🏽 𝒜 👨‍👩‍👧 ping @bob, then 🎉 @carol"
    const bob = text.indexOf("@bob")
    assert.strictEqual(bob, 22) // in UTF-16 units, as Telegram counts
    assert.strictEqual(Array.from(text.slice(0, bob)).length, 16) // code points would shift the span
    const out = Mentions.normalize(text, [
      { type: "mention", offset: bob, length: 4 },
      { type: "mention", ...at(text, "@carol") }
    ], people)
    assert.strictEqual(out.text, "👍🏽 𝒜 👨‍👩‍👧 ping [Bob](tg:@bob), then 🎉 [Carol King](tg:@carol)")
  })

  it("an @word without an entity is left alone: mentions come from entities, not a regex", () => {
    const text = "mail me@example.com or @bob"
    assert.strictEqual(Mentions.normalize(text, [], people).text, text)
  })

  it("entities out of range, overlapping, cutting a surrogate pair, or not over an @username are skipped with a warning", () => {
    const text = "🎉@bob @carol"
    const out = Mentions.normalize(text, [
      { type: "mention", offset: 1, length: 4 }, // starts inside 🎉
      { type: "mention", offset: 2, length: 4 }, // @bob
      { type: "mention", offset: 3, length: 4 }, // overlaps @bob
      { type: "mention", offset: 7, length: 9 }, // beyond the text
      { type: "mention", offset: 0, length: 2 }, // 🎉 is no username
      { type: "text_mention", offset: 7, length: 6 } // no user
    ], people)
    assert.strictEqual(out.text, "🎉[Bob](tg:@bob) @carol")
    assert.strictEqual(out.warnings.length, 5)
  })

  it("property: text around a mention is preserved byte for byte, whatever comes before it", () => {
    const piece = fc.constantFrom("a", " ", "é", "😀", "👍🏽", "𝒜", "中", "\n", "‍")
    const prose = fc.array(piece, { maxLength: 12 }).map((parts) => parts.join(""))
    fc.assert(
      fc.property(prose, prose, (before, after) => {
        const text = `${before}@bob${after}`
        const out = Mentions.normalize(text, [{ type: "mention", offset: before.length, length: 4 }], people)
        assert.strictEqual(out.text, `${before}[Bob](tg:@bob)${after}`)
      })
    )
  })
})
