import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import * as Lifecycle from "../src/Lifecycle.js"

describe("Lifecycle", () => {
  it("the work under way gets all of the stop but a quarter, at most two seconds, kept for closing the stores", () => {
    assert.strictEqual(Lifecycle.drainBudget(8_000), 6_000)
    assert.strictEqual(Lifecycle.drainBudget(20_000), 18_000)
    assert.strictEqual(Lifecycle.drainBudget(1_000), 750)
  })

  it("an app's version is its nearest package.json of that name, looked up from the module; unknown when there is none", () => {
    const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
    assert.strictEqual(Lifecycle.versionOf("@deixis/core", import.meta.url), manifest.version)
    assert.strictEqual(Lifecycle.versionOf("@deixis/no-such-app", import.meta.url), "unknown")
  })
})
