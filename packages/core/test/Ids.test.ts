import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import { ContextEvent, Errors, Ids, ReferenceResolver } from "../src/index.js"

const decodeId = Schema.decodeUnknownEither(Schema.Struct({ chat_id: Ids.ChatId }))

/** The path and message of a rejected `{ chat_id }`, or the decoded id. */
const chatId = (input: unknown): string | { readonly path: string; readonly message: string } =>
  Either.match(decodeId({ chat_id: input }), { onLeft: Errors.pathOf, onRight: (r) => r.chat_id })

const rejected = (input: unknown): string => {
  const result = chatId(input)
  assert.isObject(result, `expected ${JSON.stringify(input)} to be rejected`)
  const { message, path } = result as { readonly path: string; readonly message: string }
  assert.strictEqual(path, "chat_id")
  return message
}

const timestamp = (input: string) => Schema.decodeUnknownEither(Ids.Timestamp)(input)

describe("Ids", () => {
  describe("ids", () => {
    it("a string or a safe integer decodes to the same string id", () => {
      assert.strictEqual(chatId(5), "5")
      assert.strictEqual(chatId("5"), "5")
      assert.strictEqual(chatId(-1001234567890), "-1001234567890")
      assert.strictEqual(chatId(Number.MAX_SAFE_INTEGER), "9007199254740991")
      assert.strictEqual(chatId("x".repeat(128)), "x".repeat(128))
    })

    it("an empty id and an id over 128 characters are refused", () => {
      assert.include(rejected(""), "must not be empty")
      assert.include(rejected("x".repeat(129)), "at most 128 characters")
    })

    it("length counts characters, not UTF-16 code units", () => {
      assert.strictEqual(chatId("😀".repeat(128)), "😀".repeat(128))
      assert.include(rejected("😀".repeat(129)), "at most 128 characters")
    })

    it("control characters (C0, DEL, C1), line separators and bidi controls are refused, naming the character", () => {
      for (const [char, code] of [
        ["\u0000", "U+0000"],
        ["\n", "U+000A"],
        ["\r", "U+000D"],
        ["\u001B", "U+001B"],
        ["\u007F", "U+007F"],
        ["\u0085", "U+0085"],
        ["\u009F", "U+009F"],
        ["\u2028", "U+2028"],
        ["\u2029", "U+2029"],
        ["\u202E", "U+202E"],
        ["\u2066", "U+2066"]
      ] as const) {
        assert.include(rejected(`chat${char}42`), `${code} at index 4`)
      }
    })

    it("a lone surrogate is refused, so two ids cannot alias once encoded as UTF-8", () => {
      assert.include(rejected("a\uD800"), "lone surrogate U+D800 at index 1")
      assert.include(rejected("\uDC00a"), "lone surrogate U+DC00 at index 0")
      // Both would become "a\uFFFD" in UTF-8 (what a database stores).
      assert.notStrictEqual(Buffer.from("a\uD800").toString(), "a\uD800")
    })

    it("an integer beyond 2^53 - 1 is refused instead of aliasing a neighbour", () => {
      // JSON.parse maps both literals to one double: accepting either would merge two ids.
      const a = JSON.parse("9007199254740993") as number
      const b = JSON.parse("9007199254740992") as number
      assert.strictEqual(a, b)
      assert.include(rejected(a), "within ±(2^53 − 1)")
      assert.include(rejected(-(2 ** 60)), "send a larger id as a string")
    })

    it("a fraction, a boolean or null is refused with one message", () => {
      for (const input of [1.5, true, null, {}, []]) {
        assert.strictEqual(rejected(input), "an id must be an integer or a string of 1-128 characters")
      }
    })

    it("the JSON Schema states the bounds an LLM or client must keep", () => {
      const schema = JSONSchema.make(Ids.ChatId) as unknown as { $defs: { ChatId: { anyOf: ReadonlyArray<Record<string, unknown>> } } }
      assert.deepStrictEqual(schema.$defs.ChatId.anyOf, [
        { type: "string", minLength: 1, maxLength: 128 },
        { type: "integer", minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }
      ])
    })

    it("event ids, poll ids, object ids and request ids follow the same rules", () => {
      const decode = Schema.decodeUnknownEither(ContextEvent.ContextEventBatch)
      const bad = (event: Record<string, unknown>) =>
        Either.match(decode([event]), { onLeft: Errors.pathOf, onRight: () => ({ path: "", message: "accepted" }) })
      const activation = { type: "object_activated", event_id: "e", chat_id: 1, reason: "poll_created", object_id: "o" }
      assert.deepStrictEqual(bad({ ...activation, event_id: "e\nforged" }).path, "[0].event_id")
      assert.deepStrictEqual(bad({ ...activation, object_id: "o\u0000" }).path, "[0].object_id")
      assert.deepStrictEqual(bad({ ...activation, poll_id: "p\u2028" }).path, "[0].poll_id")
      assert.deepStrictEqual(
        bad({ type: "message_observed", chat_id: 1, message_id: 2, poll: { poll_id: "x".repeat(129) } }).path,
        "[0].poll.poll_id"
      )
      const request = Schema.decodeUnknownEither(ReferenceResolver.ResolveRequest)({
        chat_id: 1,
        current_message_id: 2,
        request_id: "r\r\nlevel=error"
      })
      assert.strictEqual(Either.isLeft(request) ? Errors.pathOf(request.left).path : "", "request_id")
    })

    it("composed ids have room: an object id holds two full ids and a kind, an event id two ids and an object id", () => {
      const id = "x".repeat(128)
      const objectId = `${id}/${id}/media.document/12`
      assert.isTrue(Ids.isValidId(objectId, Ids.MAX_OBJECT_ID_LENGTH))
      assert.isTrue(Ids.isValidId(`telegram:reminder_listed:${id}:${id}:${objectId}`, Ids.MAX_EVENT_ID_LENGTH))
      assert.isFalse(Ids.isValidId("y".repeat(Ids.MAX_OBJECT_ID_LENGTH + 1), Ids.MAX_OBJECT_ID_LENGTH))
    })

    it("property: every accepted string id decodes to itself and has no forbidden character", () => {
      fc.assert(
        fc.property(fc.string({ unit: "binary", maxLength: 140 }), (s) => {
          const result = decodeId({ chat_id: s })
          const ok = Either.isRight(result)
          assert.strictEqual(ok, Ids.isValidId(s))
          if (ok) {
            assert.strictEqual(result.right.chat_id, s)
            assert.isFalse(/[\u0000-\u001F\u007F-\u009F\u2028\u2029]/.test(s))
            // Well formed: a UTF-8 round trip changes nothing.
            assert.strictEqual(Buffer.from(s, "utf8").toString("utf8"), s)
          }
        }),
        { numRuns: 2000 }
      )
    })

    it("property: distinct accepted inputs never decode to one id unless they are an integer and its decimal string", () => {
      fc.assert(
        fc.property(
          fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.double(), fc.string({ minLength: 1, maxLength: 20 })),
          fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.double(), fc.string({ minLength: 1, maxLength: 20 })),
          (a, b) => {
            const x = decodeId({ chat_id: a })
            const y = decodeId({ chat_id: b })
            if (Either.isRight(x) && Either.isRight(y) && x.right.chat_id === y.right.chat_id) {
              assert.strictEqual(String(a), String(b))
            }
          }
        ),
        { numRuns: 2000 }
      )
    })
  })

  describe("timestamps", () => {
    it("a date that does not exist is refused instead of rolling over", () => {
      for (const [input, problem] of [
        ["2026-02-30T10:00:00Z", "2026-02 has no day 30"],
        ["2025-02-29T10:00:00Z", "2025-02 has no day 29"],
        ["1900-02-29T10:00:00Z", "1900-02 has no day 29"],
        ["2026-04-31T10:00:00Z", "2026-04 has no day 31"],
        ["2026-13-01T10:00:00Z", "month 13 does not exist"],
        ["2026-00-10T10:00:00Z", "month 00 does not exist"],
        ["2026-01-00T10:00:00Z", "2026-01 has no day 00"]
      ] as const) {
        const result = timestamp(input)
        assert.isTrue(Either.isLeft(result), input)
        if (Either.isLeft(result)) assert.strictEqual(Errors.pathOf(result.left).message, problem)
      }
    })

    it("February 29 exists in leap years, including 2000", () => {
      assert.deepStrictEqual(timestamp("2024-02-29T10:00:00Z"), Either.right(Date.UTC(2024, 1, 29, 10)))
      assert.deepStrictEqual(timestamp("2000-02-29T00:00:00Z"), Either.right(Date.UTC(2000, 1, 29)))
    })

    it("hours over 23, minutes or seconds over 59 and offsets beyond ±23:59 are refused", () => {
      for (const [input, problem] of [
        ["2026-01-01T24:00:00Z", "hour 24 is out of range 00-23"],
        ["2026-01-01T10:60:00Z", "minute 60 is out of range 00-59"],
        ["2026-01-01T10:00:61Z", "second 61 is out of range 00-59"],
        ["2026-01-01T10:00:00+24:00", "offset +24:00 is out of range (at most ±23:59)"],
        ["2026-01-01T10:00:00-05:60", "offset -05:60 is out of range (at most ±23:59)"]
      ] as const) {
        const result = timestamp(input)
        assert.isTrue(Either.isLeft(result), input)
        if (Either.isLeft(result)) assert.strictEqual(Errors.pathOf(result.left).message, problem)
      }
    })

    it("a leap second is refused with a way out, not aliased with the next second", () => {
      const result = timestamp("2016-12-31T23:59:60Z")
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) assert.include(Errors.pathOf(result.left).message, "leap second")
    })

    it("forms without an offset or with a local time only are refused", () => {
      for (const input of ["2026-01-01T10:00:00", "2026-01-01", "10:00:00Z", "2026-1-1T10:00:00Z", "1767261600"]) {
        assert.isTrue(Either.isLeft(timestamp(input)), input)
      }
    })

    it("offsets, fractions, lower case and a space separator decode to the same instant", () => {
      const at = Date.UTC(2026, 10, 22, 10, 0, 0, 123)
      for (const input of [
        "2026-11-22T10:00:00.123Z",
        "2026-11-22t10:00:00.123z",
        "2026-11-22 10:00:00.123Z",
        "2026-11-22T15:30:00.123+05:30",
        "2026-11-22T05:00:00.123456789-05:00",
        "2026-11-22T10:00:00.123-00:00"
      ]) {
        assert.deepStrictEqual(timestamp(input), Either.right(at), input)
      }
    })

    it("years before 100 are not read as the 1900s", () => {
      assert.deepStrictEqual(timestamp("0050-01-01T00:00:00Z"), Either.right(Date.parse("0050-01-01T00:00:00Z")))
      assert.strictEqual(new Date(Either.getOrThrow(timestamp("0050-01-01T00:00:00Z"))).getUTCFullYear(), 50)
    })

    it("property: every real date-time decodes to the instant the platform computes, and encodes back", () => {
      fc.assert(
        fc.property(fc.date({ min: new Date("0100-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59.999Z"), noInvalidDate: true }), (date) => {
          const text = date.toISOString()
          assert.deepStrictEqual(timestamp(text), Either.right(date.getTime()))
          assert.strictEqual(Schema.encodeSync(Ids.Timestamp)(date.getTime()), text)
        }),
        { numRuns: 2000 }
      )
    })

    it("property: formatTimestamp writes exactly what toISOString writes, for any instant a Date holds", () => {
      const maxMs = 8_640_000_000_000_000
      const instant = fc.oneof(
        fc.integer({ min: -maxMs, max: maxMs }),
        fc.integer({ min: -62_167_219_200_000 - 86_400_000, max: 253_402_300_799_999 + 86_400_000 }), // years 0000–9999 and their edges
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        fc.double({ min: -maxMs, max: maxMs, noNaN: true }),
        fc.constantFrom(-0, 0, -1, 951_782_400_000, 951_868_799_999, 4_107_542_400_000, -62_167_219_200_000, 253_402_300_799_999)
      )
      fc.assert(
        fc.property(instant, (ms) => assert.strictEqual(Ids.formatTimestamp(ms), new Date(ms).toISOString())),
        { numRuns: 5000 }
      )
    })

    it("formatTimestamp throws where toISOString throws: no instant, or one out of a Date's range", () => {
      for (const ms of [Number.NaN, Number.POSITIVE_INFINITY, 8_640_000_000_000_001]) {
        assert.throws(() => Ids.formatTimestamp(ms), RangeError)
      }
    })

    it("property: a day past the end of its month never decodes", () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1, max: 12 }), (year, month) => {
          const last = new Date(Date.UTC(2000, month, 0)).getUTCDate() // days in `month` of a leap year
          const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
          const days = month === 2 && !leap ? 28 : last
          const pad = (n: number, w: number) => String(n).padStart(w, "0")
          const ok = timestamp(`${pad(year, 4)}-${pad(month, 2)}-${pad(days, 2)}T00:00:00Z`)
          const over = timestamp(`${pad(year, 4)}-${pad(month, 2)}-${pad(days + 1, 2)}T00:00:00Z`)
          assert.isTrue(Either.isRight(ok))
          assert.isTrue(Either.isLeft(over))
        }),
        { numRuns: 1000 }
      )
    })
  })
})
