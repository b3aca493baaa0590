/**
 * A streaming splitter of one JSON object: its top-level fields come out one at a time as raw
 * JSON text, except the elements of one array field (`messages`), which come out one element
 * at a time. Memory is bounded by the largest single value, never by the file: a 1 GB export
 * is read with one message in memory at a time.
 *
 * It checks structure only (brackets, strings, separators); each value's own text is given to
 * `JSON.parse` by the caller, which finds any error inside it.
 */

/** What the splitter found. */
export type Token =
  | { readonly _tag: "Field"; readonly key: string; readonly raw: string }
  | { readonly _tag: "ArrayStart"; readonly key: string }
  | { readonly _tag: "Element"; readonly key: string; readonly index: number; readonly raw: string }
  | { readonly _tag: "ArrayEnd"; readonly key: string; readonly count: number }

/** Why the text is not one JSON object of the expected shape. */
export class ScanError extends Error {
  constructor(
    readonly reason: "not-object" | "syntax" | "too-large" | "truncated",
    message: string,
    /** The index of the array element being read, when the error is inside one (the message then says "it"). */
    readonly element: number | null
  ) {
    super(message)
  }
}

type State =
  | "start" // before the opening brace
  | "key" // before a key (or the closing brace)
  | "colon"
  | "value" // before a value
  | "afterValue" // after a value: ',' or '}'
  | "array" // inside the streamed array, before an element or ']'
  | "afterElement" // after an element: ',' or ']'
  | "done"

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0xfeff

export class Scanner {
  private state: State = "start"
  private key = ""
  // A value being captured: its text so far, bracket depth, string state.
  private parts: Array<string> = []
  private size = 0
  private depth = 0
  private inString = false
  private escaped = false
  private capturing: "key" | "value" | "element" | null = null
  private index = 0
  private consumed = 0

  constructor(
    private readonly arrayKey: string,
    private readonly maxValue: number
  ) {}

  /** Reads a chunk, returning what completed in it. */
  feed(chunk: string): Array<Token> {
    const out: Array<Token> = []
    let i = 0
    const n = chunk.length
    while (i < n) {
      if (this.capturing !== null) {
        i = this.capture(chunk, i, out)
        continue
      }
      const c = chunk.charCodeAt(i)
      if (isSpace(c)) {
        i++
        continue
      }
      switch (this.state) {
        case "start":
          if (c !== 0x7b) throw new ScanError("not-object", describeStart(chunk.slice(i, i + 64)), null)
          this.state = "key"
          i++
          break
        case "key":
          if (c === 0x7d) this.state = "done"
          else if (c === 0x22) {
            // The key is captured from its opening quote, already read.
            this.begin("key")
            this.parts.push("\"")
            this.size = 1
            this.inString = true
          } else throw this.syntax(`expected a field name, found ${show(c)}`, i)
          i++
          break
        case "colon":
          if (c !== 0x3a) throw this.syntax(`expected ':' after "${this.key}", found ${show(c)}`, i)
          this.state = "value"
          i++
          break
        case "value":
          if (this.key === this.arrayKey) {
            if (c !== 0x5b) throw this.syntax(`"${this.arrayKey}" is not an array`, i)
            out.push({ _tag: "ArrayStart", key: this.key })
            this.state = "array"
            i++
          } else {
            this.begin("value")
          }
          break
        case "afterValue":
          if (c === 0x2c) this.state = "key"
          else if (c === 0x7d) this.state = "done"
          else throw this.syntax(`expected ',' or '}' after "${this.key}", found ${show(c)}`, i)
          i++
          break
        case "array":
          if (c === 0x5d) {
            out.push({ _tag: "ArrayEnd", key: this.key, count: this.index })
            this.state = "afterValue"
            i++
          } else {
            this.begin("element")
          }
          break
        case "afterElement":
          if (c === 0x2c) this.state = "array"
          else if (c === 0x5d) {
            out.push({ _tag: "ArrayEnd", key: this.key, count: this.index })
            this.state = "afterValue"
          } else throw this.syntax(`expected ',' or ']' after it, found ${show(c)}`, i)
          i++
          break
        case "done":
          throw this.syntax(`text after the end of the object: ${show(c)}`, i)
      }
    }
    this.consumed += n
    return out
  }

  /** Says whether the object was complete; throws when the text ended inside it. */
  end(): void {
    if (this.state === "done" && this.capturing === null) return
    if (this.state === "start") throw new ScanError("not-object", "the file is empty", null)
    const inside = this.capturing === "element" || this.state === "afterElement" || this.state === "array"
    throw new ScanError(
      "truncated",
      this.capturing === "element"
        ? `the file ends inside it (truncated)`
        : `the file ends before the object closes (truncated)`,
      inside ? this.index : null
    )
  }

  private syntax(message: string, i: number): ScanError {
    const inside = this.state === "array" || this.state === "afterElement" || this.capturing === "element"
    return new ScanError("syntax", `${message} at character ${this.consumed + i}`, inside ? this.index : null)
  }

  private begin(kind: "key" | "value" | "element") {
    this.capturing = kind
    this.parts = []
    this.size = 0
    this.depth = 0
    this.inString = false
    this.escaped = false
  }

  // Reads the captured value from `i`; returns where it stopped (the value's end, or the chunk's).
  private capture(chunk: string, i: number, out: Array<Token>): number {
    const start = i
    const n = chunk.length
    let ended = -1
    while (i < n) {
      const c = chunk.charCodeAt(i)
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (c === 0x5c) this.escaped = true
        else if (c === 0x22) {
          this.inString = false
          // A string at depth 0 (a key, a string value) ends the capture.
          if (this.depth === 0) {
            ended = i + 1
            break
          }
        }
        i++
        continue
      }
      if (c === 0x22) this.inString = true
      else if (c === 0x7b || c === 0x5b) this.depth++
      else if (c === 0x7d || c === 0x5d) {
        if (this.depth === 0) {
          // A scalar ended by the enclosing bracket.
          ended = i
          break
        }
        this.depth--
        if (this.depth === 0) {
          ended = i + 1
          break
        }
      } else if (this.depth === 0 && (c === 0x2c || isSpace(c))) {
        ended = i
        break
      }
      i++
    }
    const stop = ended === -1 ? n : ended
    this.size += stop - start
    if (this.size > this.maxValue) {
      const what = this.capturing === "element" ? "it" : `the value of "${this.key}"`
      throw new ScanError("too-large", `${what} is larger than ${this.maxValue} characters`, this.capturing === "element" ? this.index : null)
    }
    this.parts.push(chunk.slice(start, stop))
    if (ended === -1) return n
    const raw = this.parts.join("")
    this.parts = []
    const kind = this.capturing
    this.capturing = null
    if (kind === "key") {
      this.key = JSON.parse(raw) as string
      this.state = "colon"
    } else if (kind === "value") {
      out.push({ _tag: "Field", key: this.key, raw })
      this.state = "afterValue"
    } else {
      out.push({ _tag: "Element", key: this.key, index: this.index, raw })
      this.index++
      this.state = "afterElement"
    }
    return stop
  }
}

const show = (c: number) => (Number.isNaN(c) ? "the end" : JSON.stringify(String.fromCharCode(c)))

const describeStart = (head: string): string => {
  const text = head.trimStart()
  if (text.startsWith("<")) return "an HTML file (Telegram Desktop's \"HTML\" export?), not a JSON chat export"
  if (text.startsWith("[")) return "a JSON array, not a Telegram Desktop chat export (an object with \"messages\")"
  if (text.length === 0) return "the file is empty"
  return `not JSON: it starts with ${JSON.stringify(text.slice(0, 20))}`
}
