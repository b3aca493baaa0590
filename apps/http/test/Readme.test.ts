import { describe, expect, it } from "vitest"
import { checkConfigDocumentation } from "deixis-test-support/readme"
import * as Server from "../src/Server.js"
import * as Store from "../src/Store.js"

const readme = new URL("../README.md", import.meta.url)

describe("README", () => {
  it("documents every configuration key of the service with its real default", () => {
    expect(checkConfigDocumentation(readme, [Server.config, Store.config]))
      .toEqual({ undocumented: [], unknown: [], wrongDefaults: [] })
  })
})
