import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { checkConfigDocumentation, firstExample, undocumentedModules } from "deixis-test-support/readme"
import * as StoreSql from "../src/index.js"

const readme = new URL("../README.md", import.meta.url)

describe("README", () => {
  it("documents every configuration key with its real default", () => {
    const { SqlStore, StoreConfig } = StoreSql
    expect(checkConfigDocumentation(readme, [StoreConfig.config, SqlStore.sqliteConfig, SqlStore.pgConfig, SqlStore.retentionConfig]))
      .toEqual({ undocumented: [], unknown: [], wrongDefaults: [] })
  })

  it("lists every module of the public API", () => {
    expect(undocumentedModules(readme, StoreSql)).toEqual([])
  })

  it("shows examples/quickstart.ts as its example", () => {
    expect(firstExample(readme)).toBe(fs.readFileSync(new URL("../examples/quickstart.ts", import.meta.url), "utf8"))
  })
})
