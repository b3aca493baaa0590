import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { checkConfigDocumentation, firstExample, undocumentedModules } from "deixis-test-support/readme"
import * as Core from "../src/index.js"

const readme = new URL("../README.md", import.meta.url)

describe("README", () => {
  it("documents every configuration key with its real default", () => {
    const { ContextStore, ConversationState, Logging, Scoring, TtlPolicy } = Core
    expect(
      checkConfigDocumentation(readme, [TtlPolicy.config, Scoring.config, ContextStore.memoryConfig, ConversationState.MaxBytesConfig, Logging.config])
    ).toEqual({ undocumented: [], unknown: [], wrongDefaults: [] })
  })

  it("lists every module of the public API", () => {
    expect(undocumentedModules(readme, Core)).toEqual([])
  })

  it("shows examples/quickstart.ts, the example `pnpm example` runs, as its first example", () => {
    expect(firstExample(readme)).toBe(fs.readFileSync(new URL("../examples/quickstart.ts", import.meta.url), "utf8"))
  })
})
