import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { firstExample, undocumentedModules, relativeLinks } from "deixis-test-support/readme"
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

  // The README is the reference; the mapping rules and the benchmark history live in pages it
  // links to. A page moved or renamed must not leave a dead link, nor a page no link reaches.
  const docs = fs.readdirSync(new URL("../docs/", import.meta.url)).filter((page) => page.endsWith(".md")).map((page) => `docs/${page}`)
  const pages = ["README.md", "BENCHMARKS.md", ...docs]
  const { links, missing } = relativeLinks(new URL("../", import.meta.url), pages)

  it("every relative link of the README, BENCHMARKS.md and docs/ names a file of the package", () => {
    expect(links.map((l) => l.page)).toEqual(expect.arrayContaining(["README.md", "docs/update-mapping.md"]))
    expect(missing).toEqual([])
  })

  it("links every page of docs/ and BENCHMARKS.md from the README", () => {
    const linked = links.filter((l) => l.page === "README.md").map((l) => l.target.pathname)
    const unlinked = ["BENCHMARKS.md", ...docs].filter((page) => !linked.includes(new URL(`../${page}`, import.meta.url).pathname))
    expect(unlinked).toEqual([])
  })
})
