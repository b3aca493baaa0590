import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { firstExample, undocumentedModules } from "deixis-test-support/readme"
import * as Telegraf from "../src/index.js"

const readme = new URL("../README.md", import.meta.url)

// The package reads no configuration keys of its own (its README says so): nothing to check there.
describe("README", () => {
  it("lists every module of the public API", () => {
    expect(undocumentedModules(readme, Telegraf)).toEqual([])
  })

  it("shows examples/bot.ts, the complete bot, as its example", () => {
    expect(firstExample(readme)).toBe(fs.readFileSync(new URL("../examples/bot.ts", import.meta.url), "utf8"))
  })
})
