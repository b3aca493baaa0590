import { describe, expect, it } from "vitest"
import * as fc from "fast-check"
import * as fs from "node:fs"
import * as path from "node:path"
import { Scanner, ScanError } from "../src/internal/scanner.js"

const text = ["private.json", "group.json", "forum.json"].map((f) => fs.readFileSync(path.join(__dirname, "fixtures", f), "utf8"))

const scan = (chunks: ReadonlyArray<string>) => {
  const scanner = new Scanner("messages", 1 << 20)
  const tokens = chunks.flatMap((c) => scanner.feed(c))
  scanner.end()
  return tokens
}

// Cuts `s` at the given offsets.
const cut = (s: string, offsets: ReadonlyArray<number>) => {
  const at = [...new Set(offsets.map((o) => o % (s.length + 1)))].sort((a, b) => a - b)
  const out: Array<string> = []
  let from = 0
  for (const o of at) {
    out.push(s.slice(from, o))
    from = o
  }
  out.push(s.slice(from))
  return out
}

describe("the export splitter", () => {
  it("property: however the file is cut into chunks, the same fields and messages come out, each message parsing to the same JSON", () => {
    for (const file of text) {
      const whole = scan([file])
      const messages = (JSON.parse(file) as { messages: Array<unknown> }).messages
      expect(whole.filter((t) => t._tag === "Element").map((t) => t._tag === "Element" && JSON.parse(t.raw))).toEqual(messages)
      fc.assert(fc.property(fc.array(fc.nat(), { maxLength: 40 }), (offsets) => {
        expect(scan(cut(file, offsets))).toEqual(whole)
      }), { numRuns: 200 })
    }
  })

  it("strings holding brackets, quotes, escapes and commas do not end a message early", () => {
    const file = JSON.stringify({ type: "personal_chat", id: 1, messages: [{ id: 1, text: "a ] } , \" \\\\ [{" }, { id: 2, text: "ok" }] })
    const tokens = scan(cut(file, [5, 40, 41, 42, 60]))
    expect(tokens.filter((t) => t._tag === "Element").map((t) => t._tag === "Element" && JSON.parse(t.raw).id)).toEqual([1, 2])
  })

  it("a message over the size bound is refused by its index, before it is all read", () => {
    const scanner = new Scanner("messages", 100)
    expect(() => scanner.feed(`{"type":"x","messages":[{"id":1,"text":"${"x".repeat(200)}"}]}`)).toThrow(ScanError)
  })
})
