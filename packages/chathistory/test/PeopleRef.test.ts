import { assert, describe, it } from "@effect/vitest"
import * as PeopleRef from "../src/PeopleRef.js"

describe("PeopleRef", () => {
  it("sender reference formatting: display name outranks first/last name outranks @username", () => {
    const full = { username: "alice", display_name: "Alice W.", first_name: "Alice", last_name: "Wonder" }
    assert.strictEqual(PeopleRef.format(full).ref, "[Alice W.](tg:@alice)")
    const { display_name: _d, ...names } = full
    assert.strictEqual(PeopleRef.format(names).ref, "[Alice Wonder](tg:@alice)")
    assert.strictEqual(PeopleRef.format({ username: "alice", first_name: "Alice" }).ref, "[Alice](tg:@alice)")
    assert.strictEqual(PeopleRef.format({ username: "alice", last_name: "Wonder" }).ref, "[Wonder](tg:@alice)")
    assert.strictEqual(PeopleRef.format({ username: "alice" }).ref, "[@alice](tg:@alice)")
    // Blank names do not count.
    assert.strictEqual(PeopleRef.format({ username: "alice", display_name: "  ", first_name: "" }).ref, "[@alice](tg:@alice)")
  })

  it("[]() are stripped from labels and whitespace runs collapse", () => {
    const ref = PeopleRef.format({ username: "bob", display_name: "[Bob] (the\nbuilder)" })
    assert.strictEqual(ref.ref, "[Bob the builder](tg:@bob)")
    assert.strictEqual(ref.warning, null)
    assert.strictEqual(PeopleRef.sanitizeLabel("a[b]c(d)e"), "abcde")
    assert.strictEqual(PeopleRef.format({ username: "@bo(b)" }).ref, "[@bob](tg:@bob)")
  })

  it("a missing username degrades to the plain label with a warning and never fails", () => {
    const named = PeopleRef.format({ user_id: "7", first_name: "Carol" })
    assert.strictEqual(named.ref, "Carol")
    assert.strictEqual(named.username, null)
    assert.include(named.warning ?? "", "no username for user 7")
    assert.strictEqual(PeopleRef.format({ user_id: "7" }).ref, "user 7")
    assert.strictEqual(PeopleRef.format({}).ref, "unknown")
    assert.isNotNull(PeopleRef.format({ username: "  " }).warning)
  })
})
