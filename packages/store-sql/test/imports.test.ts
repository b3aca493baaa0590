/**
 * The import graph of `src`: no module reaches itself through its relative imports, type-only
 * imports included (the knot `contextCache → db → unitState → contextCache` is gone: `Row`
 * lives in the statement builder, a leaf).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const src = fileURLToPath(new URL("../src", import.meta.url))

const modules = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? modules(full) : entry.name.endsWith(".ts") ? [full] : []
  })

/** Each module's relative imports and re-exports, as files. */
const graph = (): Map<string, Array<string>> => {
  const out = new Map<string, Array<string>>()
  for (const file of modules(src)) {
    const text = fs.readFileSync(file, "utf8")
    const targets = [...text.matchAll(/^(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"/gms)].map((m) =>
      path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, ".ts"))
    )
    out.set(file, targets)
  }
  return out
}

/** Every cycle found by a depth-first walk, as the modules on it. */
const cycles = (g: Map<string, Array<string>>): Array<string> => {
  const found: Array<string> = []
  const state = new Map<string, "open" | "done">()
  const stack: Array<string> = []
  const visit = (node: string) => {
    state.set(node, "open")
    stack.push(node)
    for (const next of g.get(node) ?? []) {
      if (state.get(next) === "open") found.push([...stack.slice(stack.indexOf(next)), next].map((f) => path.relative(src, f)).join(" → "))
      else if (!state.has(next)) visit(next)
    }
    stack.pop()
    state.set(node, "done")
  }
  for (const node of g.keys()) if (!state.has(node)) visit(node)
  return found
}

describe("the import graph of src", () => {
  it("has no cycle, type-only imports included", () => {
    const g = graph()
    // The walk sees the modules it should: the writer thread imports the write bodies.
    assert.isTrue((g.get(path.join(src, "internal", "sqliteWorker.ts")) ?? []).includes(path.join(src, "internal", "sqliteProcedures.ts")))
    assert.deepStrictEqual(cycles(g), [])
  })

  it("the walk finds a cycle where there is one", () => {
    const edges: Array<readonly [string, string]> = [["a.ts", "b.ts"], ["b.ts", "c.ts"], ["c.ts", "a.ts"]]
    const g = new Map(edges.map(([from, to]) => [path.join(src, from), [path.join(src, to)]]))
    assert.deepStrictEqual(cycles(g), ["a.ts → b.ts → c.ts → a.ts"])
  })
})
