import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { firstExample, undocumentedModules } from "deixis-test-support/readme"
import * as Grammy from "../src/index.js"

const readme = new URL("../README.md", import.meta.url)

describe("README", () => {
  it("lists every module of the public API", () => {
    expect(undocumentedModules(readme, Grammy)).toEqual([])
  })

  it("shows examples/bot.ts, the complete bot, as its example", () => {
    expect(firstExample(readme)).toBe(fs.readFileSync(new URL("../examples/bot.ts", import.meta.url), "utf8"))
  })
})
