import { describe, expect, it } from "vitest"
import { checkConfigDocumentation } from "deixis-test-support/readme"
import * as BotConfig from "../src/BotConfig.js"
import * as Llm from "../src/Llm.js"
import * as Stores from "../src/Stores.js"

const readme = new URL("../README.md", import.meta.url)

describe("README", () => {
  it("documents every configuration key with its real default", () => {
    // The token is required, and LLM mode's keys are read only once it is switched on.
    const baseline = { BOT_TOKEN: "123:abc", LLM_BASE_URL: "http://127.0.0.1:1/v1", LLM_MODEL: "m" }
    expect(checkConfigDocumentation(readme, [BotConfig.config, Llm.config, Stores.config], baseline))
      .toEqual({ undocumented: [], unknown: [], wrongDefaults: [] })
  })
})
