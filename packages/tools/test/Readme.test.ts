import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { checkConfigDocumentation, firstExample, undocumentedModules } from "deixis-test-support/readme"
import * as Tools from "../src/index.js"

const readme = new URL("../README.md", import.meta.url)

describe("README", () => {
  it("documents every configuration key with its real default", () => {
    expect(checkConfigDocumentation(readme, [Tools.DeixisToolkit.config, Tools.UrlReader.config]))
      .toEqual({ undocumented: [], unknown: [], wrongDefaults: [] })
  })

  it("lists every module of the public API", () => {
    expect(undocumentedModules(readme, Tools)).toEqual([])
  })

  it("shows examples/toolkit.ts as its example", () => {
    expect(firstExample(readme)).toBe(fs.readFileSync(new URL("../examples/toolkit.ts", import.meta.url), "utf8"))
  })
})
