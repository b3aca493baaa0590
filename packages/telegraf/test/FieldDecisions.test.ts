/**
 * Every field of a Bot API `Update` and of a `Message`, as the machine-readable specification
 * lists them (test/fixtures/bot-api.json, derived by scripts/bot-api-fixture.mjs), has a named
 * decision in FieldDecisions, and the mapper acts on it. A newer specification's fixture with
 * a field not decided fails here.
 */
import { assert, describe, it } from "@effect/vitest"
import { messageFieldDecisions, updateDecisions } from "../src/FieldDecisions.js"
import { mapUpdate } from "../src/UpdateMapper.js"
import * as spec from "./utils/BotApiSpec.js"

const updateFields = spec.fieldsOf("Update").map(([name]) => name).filter((name) => name !== "update_id")
const messageFields = spec.fieldsOf("Message").map(([name]) => name)

describe("FieldDecisions against the Bot API specification", () => {
  it("the fixture is the Bot API 10.1 specification's", () => {
    assert.strictEqual(spec.version, "Bot API 10.1")
    assert.include(spec.source, "PaulSonOfLars/telegram-bot-api-spec")
    assert.isAbove(updateFields.length, 20)
    assert.isAbove(messageFields.length, 100)
  })

  it("every Update field has a named decision", () => {
    const undecided = updateFields.filter((f) => !(f in updateDecisions))
    assert.deepStrictEqual(undecided, [], `Update fields without a decision in FieldDecisions.updateDecisions`)
  })

  it("every Message field has a named decision", () => {
    const undecided = messageFields.filter((f) => !(f in messageFieldDecisions))
    assert.deepStrictEqual(undecided, [], `Message fields without a decision in FieldDecisions.messageFieldDecisions`)
  })

  it("no decision is on a field the specification does not have", () => {
    assert.deepStrictEqual(Object.keys(updateDecisions).filter((f) => !updateFields.includes(f)), [])
    assert.deepStrictEqual(Object.keys(messageFieldDecisions).filter((f) => !messageFields.includes(f)), [])
  })

  it("every decision names what or why", () => {
    for (const [field, d] of [...Object.entries(updateDecisions), ...Object.entries(messageFieldDecisions)]) {
      const text = "why" in d ? d.why : d.as
      assert.isAbove(text.trim().length, 4, field)
      assert.notMatch(text, /unknown/i, field)
    }
  })

  it("an update type skipped is skipped with its named reason, never as unknown", () => {
    for (const [type, d] of Object.entries(updateDecisions)) {
      if (d.kind !== "skipped") continue
      const mapped = mapUpdate({ update_id: 7, [type]: { id: "x" } })
      assert.strictEqual(mapped.skipped, `${type}: ${d.why}`, type)
      assert.strictEqual(mapped.update_type, type)
    }
  })

  it("a message carrying only a notice field is a service message named by that field; content is recorded", () => {
    const base = { message_id: 5, date: 1_771_000_000, chat: { id: 42, type: "group", title: "g" }, from: { id: 9, first_name: "A" } }
    for (const [field, d] of Object.entries(messageFieldDecisions)) {
      if (d.kind !== "notice") continue
      const mapped = mapUpdate({ update_id: 8, message: { ...base, [field]: {} } })
      assert.strictEqual(mapped.skipped, `service message (${field}): not conversation`, field)
    }
    const text = mapUpdate({ update_id: 9, message: { ...base, text: "hi" } })
    assert.strictEqual(text.history.length, 1)
  })
})
