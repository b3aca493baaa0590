import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { checkConfigDocumentation, firstExample, undocumentedModules, relativeLinks } from "deixis-test-support/readme"
import * as ChatHistory from "../src/index.js"

const readme = new URL("../README.md", import.meta.url)

describe("README", () => {
  it("documents every configuration key with its real default", () => {
    const { ContextLoader, HistoryStore, PromptAssembler, WritePolicy } = ChatHistory
    expect(checkConfigDocumentation(readme, [ContextLoader.config, WritePolicy.config, PromptAssembler.config, HistoryStore.memoryConfig]))
      .toEqual({ undocumented: [], unknown: [], wrongDefaults: [] })
  })

  it("lists every module of the public API", () => {
    expect(undocumentedModules(readme, ChatHistory)).toEqual([])
    expect(undocumentedModules(readme, { NotAModule: 1 })).toEqual(["NotAModule"])
  })

  it("every relative link of the README names a file of the package", () => {
    const { links, missing } = relativeLinks(new URL("../", import.meta.url), ["README.md"])
    expect(links.map((l) => l.target.pathname)).toContain(new URL("../BENCHMARKS.md", import.meta.url).pathname)
    expect(missing).toEqual([])
  })

  it("shows examples/quickstart.ts as its example", () => {
    expect(firstExample(readme)).toBe(fs.readFileSync(new URL("../examples/quickstart.ts", import.meta.url), "utf8"))
  })
})
