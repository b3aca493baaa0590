import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"

const src = new URL("../src/", import.meta.url)

/** The modules of `src` each module imports at runtime (`import type` and type-only lists left out). */
const graph = (): ReadonlyMap<string, ReadonlyArray<string>> => {
  const modules = readdirSync(src).filter((f) => f.endsWith(".ts"))
  return new Map(modules.map((file) => {
    const text = readFileSync(new URL(file, src), "utf8")
    const imports = [...text.matchAll(/^import\s+(?!type\b)([\s\S]*?)\s+from\s+"\.\/([^"]+)\.js"/gm)]
      // `import { type A, type B } from` is erased at runtime.
      .filter(([, names]) => !/^\{(\s*type\s+\w+\s*,?)+\s*\}$/.test(names!.trim()))
      .map(([, , module]) => `${module}.ts`)
    return [file, imports] as const
  }))
}

/** Every cycle, as the path that closes it. */
const cycles = (edges: ReadonlyMap<string, ReadonlyArray<string>>): Array<string> => {
  const found: Array<string> = []
  const state = new Map<string, "visiting" | "done">()
  const visit = (node: string, path: ReadonlyArray<string>) => {
    if (state.get(node) === "visiting") return void found.push([...path.slice(path.indexOf(node)), node].join(" → "))
    if (state.get(node) === "done") return
    state.set(node, "visiting")
    for (const next of edges.get(node) ?? []) visit(next, [...path, node])
    state.set(node, "done")
  }
  for (const node of edges.keys()) visit(node, [])
  return found
}

describe("apps/http's modules", () => {
  it("import one another without a cycle at runtime", () => {
    const edges = graph()
    assert.isAbove(edges.size, 20)
    assert.include(edges.get("Pipeline.ts"), "Executor.ts")
    assert.deepStrictEqual(cycles(edges), [])
  })

  it("the check finds a cycle when there is one", () => {
    assert.deepStrictEqual(cycles(new Map([["A.ts", ["B.ts"]], ["B.ts", ["C.ts"]], ["C.ts", ["A.ts"]]])), ["A.ts → B.ts → C.ts → A.ts"])
  })
})
