import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { importCycleViolations } from "deixis-test-support/imports"
import { afterAll, describe, expect, it } from "vitest"

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-imports-"))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

/** A throwaway `src` made of the given files. */
const tree = (name: string, files: Record<string, string>): string => {
  const root = path.join(scratch, name)
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
    fs.writeFileSync(path.join(root, file), text)
  }
  return root
}

describe("src layout", () => {
  it("has no import cycle at run time, and type cycles only between a module and its internal/ implementation", () => {
    expect(importCycleViolations(fileURLToPath(new URL("../src", import.meta.url)))).toEqual([])
  })

  it("the check finds a cycle of value imports, even through a re-export", () => {
    const root = tree("runtime", {
      "A.ts": `import { b } from "./B.js"\nexport const a = b`,
      "B.ts": `export * from "./C.js"\nexport const b = 1`,
      "C.ts": `import { a } from "./A.js"\nexport const c = a`
    })
    expect(importCycleViolations(root)).toEqual(["runtime cycle: A.ts ↔ B.ts ↔ C.ts"])
  })

  it("the check allows a module and its internal/ implementation to share types, and no other type cycle", () => {
    const allowed = tree("own-internal", {
      "Store.ts": `import { make } from "./internal/store.js"\nexport interface Store { n: number }\nexport const store = make()`,
      "internal/store.ts": `import type { Store } from "../Store.js"\nexport const make = (): Store => ({ n: 1 })`
    })
    expect(importCycleViolations(allowed)).toEqual([])
    const twoPublic = tree("two-public", {
      "A.ts": `import { type B } from "./B.js"\nexport interface A { b?: B }`,
      "B.ts": `import type { A } from "./A.js"\nexport interface B { a?: A }`
    })
    expect(importCycleViolations(twoPublic)).toEqual([
      "type cycle beyond a module and its internal/ implementation: A.ts ↔ B.ts"
    ])
  })
})
