import { fileURLToPath } from "node:url"
import { importCycleViolations } from "deixis-test-support/imports"
import { describe, expect, it } from "vitest"

describe("src layout", () => {
  it("has no import cycle at run time, and type cycles only between a module and its internal/ implementation", () => {
    expect(importCycleViolations(fileURLToPath(new URL("../src", import.meta.url)))).toEqual([])
  })
})
