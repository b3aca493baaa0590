import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { checkConfigDocumentation, firstExample, tsBlocks, undocumentedModules, relativeLinks } from "deixis-test-support/readme"
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

  // The examples of "Replacing the rules" (docs/replacing-the-rules.md, linked from the README):
  // there verbatim, and each prints what it shows.
  const run = promisify(execFile)
  const example = (name: string) => fs.readFileSync(new URL(`../examples/${name}.ts`, import.meta.url), "utf8")
  const output = async (name: string) => {
    const { stdout } = await run(process.execPath, ["--conditions=@deixis/source", "--import", "tsx", `examples/${name}.ts`], {
      cwd: new URL("..", import.meta.url).pathname
    })
    return JSON.parse(stdout.split("\n").filter((line) => line.startsWith("{")).at(-1)!) as Record<string, unknown>
  }

  it("shows each custom-rules example (custom kind, TTL policy, scorer feature) verbatim", () => {
    const blocks = tsBlocks(fs.readFileSync(new URL("../docs/replacing-the-rules.md", import.meta.url), "utf8"))
    for (const name of ["customKind", "customTtlPolicy", "customScorer"]) expect(blocks, name).toContain(example(name))
  })

  it("every relative link of the README and its docs names a file of the package", () => {
    const { links, missing } = relativeLinks(new URL("../", import.meta.url), ["README.md", "BENCHMARKS.md", "docs/replacing-the-rules.md", "docs/conversation-state.md"])
    expect(links.map((l) => l.page)).toEqual(expect.arrayContaining(["README.md", "docs/conversation-state.md"]))
    expect(missing).toEqual([])
  })

  it("the conversation state page documents its size cap with the real default", () => {
    expect(checkConfigDocumentation(new URL("../docs/conversation-state.md", import.meta.url), [Core.ConversationState.MaxBytesConfig]))
      .toEqual({ undocumented: [], unknown: [], wrongDefaults: [] })
  })

  it("the custom kind example: x.ticket is resolved and listed", async () => {
    expect(await output("customKind")).toEqual({
      status: "resolved",
      kind: "x.ticket",
      label: "TCK-42: login fails",
      listed: ["x.ticket"]
    })
  }, 60_000)

  it("the custom TTL policy example: the busy chat's link has 10 minutes, the other 2 hours", async () => {
    expect(await output("customTtlPolicy")).toEqual({ minutes_left: { "-1001": 120, "-1002": 10 } })
  }, 60_000)

  it("the custom scorer feature example: the embedding's closest link wins, its feature in diagnostics", async () => {
    expect(await output("customScorer")).toEqual({ status: "resolved", best: "-1001/10/link", embedding: 40 })
  }, 60_000)

  it("names only ConfigKeys helpers that ConfigKeys exports", () => {
    const row = fs.readFileSync(readme, "utf8").split("\n").find((line) => line.startsWith("| `ConfigKeys` |"))!
    const named = [...row.split("|")[2]!.matchAll(/`(\w+)(?:\([^`]*\))?`/g)].map((m) => m[1]!)
    expect(named.sort()).toEqual(Object.keys(Core.ConfigKeys).sort())
  })

  it("every `pnpm <script>` it says to run at the repository root is a root script running core's", () => {
    const root = JSON.parse(fs.readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as {
      readonly scripts: Record<string, string>
    }
    const text = [fs.readFileSync(readme, "utf8"), ...["quickstart", "customKind", "customTtlPolicy", "customScorer"].map(example)].join("\n")
    const said = [...text.matchAll(/`pnpm (\w+)` at the repository root/g)].map((m) => m[1]!)
    expect(said.length).toBeGreaterThan(0)
    for (const script of said) expect(root.scripts[script], script).toContain("@deixis/core")
  })
})
