import { assert, describe, it } from "@effect/vitest"
import { Json } from "../src/index.js"

const nested = (levels: number): unknown => {
  let value: unknown = 1
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { k: value }
  return value
}

describe("Json.nestsDeeperThan", () => {
  it("counts arrays and objects as levels; a primitive is level 0", () => {
    assert.isFalse(Json.nestsDeeperThan(1, 0))
    assert.isFalse(Json.nestsDeeperThan("[[[", 0))
    assert.isFalse(Json.nestsDeeperThan(null, 0))
    assert.isTrue(Json.nestsDeeperThan([], 0))
    assert.isFalse(Json.nestsDeeperThan([], 1))
    assert.isFalse(Json.nestsDeeperThan(nested(Json.maxDepth)))
    assert.isTrue(Json.nestsDeeperThan(nested(Json.maxDepth + 1)))
  })

  it("finds the deep branch beside shallow ones, and any depth without exhausting the stack", () => {
    assert.isTrue(Json.nestsDeeperThan({ a: 1, b: [1, 2, { c: nested(Json.maxDepth) }], d: "x" }))
    assert.isTrue(Json.nestsDeeperThan(nested(1_000_000)))
  })
})
