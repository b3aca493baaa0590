import * as StoreConfig from "@deixis/store-sql/StoreConfig"
import { checkConfigDocumentation, firstExample, undocumentedModules } from "deixis-test-support/readme"
import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import * as Barrel from "../src/index.js"

const readme = new URL("../README.md", import.meta.url)

describe("README", () => {
  it("documents the store configuration the commands read, with its real defaults", () => {
    expect(checkConfigDocumentation(readme, [StoreConfig.config])).toEqual({ undocumented: [], unknown: [], wrongDefaults: [] })
  })

  it("lists every module of the public API", () => {
    expect(undocumentedModules(readme, Barrel)).toEqual([])
  })

  it("shows examples/import.ts as its example", () => {
    expect(firstExample(readme)).toBe(fs.readFileSync(new URL("../examples/import.ts", import.meta.url), "utf8"))
  })
})
