import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { checkConfigDocumentation, firstExample, undocumentedModules, relativeLinks } from "deixis-test-support/readme"
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

  // The README is the reference; the design, the retention model, distribution and the benchmark
  // history live in pages it links to. A page moved or renamed must not leave a dead link, nor a
  // page no link reaches.
  const docs = fs.readdirSync(new URL("../docs/", import.meta.url)).filter((page) => page.endsWith(".md")).map((page) => `docs/${page}`)
  const pages = ["README.md", "BENCHMARKS.md", ...docs]
  const { links, missing } = relativeLinks(new URL("../", import.meta.url), pages)

  it("every relative link of the README, BENCHMARKS.md and docs/ names a file of the package", () => {
    expect(links.map((l) => l.page)).toEqual(expect.arrayContaining(["README.md", "docs/how-it-works.md", "docs/retention.md"]))
    expect(missing).toEqual([])
  })

  it("links every page of docs/ and BENCHMARKS.md from the README", () => {
    const linked = links.filter((l) => l.page === "README.md").map((l) => l.target.pathname)
    const unlinked = ["BENCHMARKS.md", ...docs].filter((page) => !linked.includes(new URL(`../${page}`, import.meta.url).pathname))
    expect(unlinked).toEqual([])
  })
})
