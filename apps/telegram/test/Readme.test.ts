import * as ContextLoader from "@deixis/chathistory/ContextLoader"
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import * as WritePolicy from "@deixis/chathistory/WritePolicy"
import * as ContextStore from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import * as Scoring from "@deixis/core/Scoring"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import { SqlStore } from "@deixis/store-sql"
import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { checkConfigDocumentation, undocumentedModules, relativeLinks } from "deixis-test-support/readme"
import * as BotConfig from "../src/BotConfig.js"
import * as TelegramBot from "../src/index.js"
import * as Llm from "../src/Llm.js"

const readme = new URL("../README.md", import.meta.url)

describe("README", () => {
  it("documents every configuration key the bot reads with its real default", () => {
    // The token is required, and LLM mode's keys are read only once it is switched on.
    const baseline = { BOT_TOKEN: "123:abc", LLM_BASE_URL: "http://127.0.0.1:1/v1", LLM_MODEL: "m" }
    // The core settings the bot's layers read (the same as the HTTP service's).
    const core = [
      TtlPolicy.config,
      Scoring.config,
      ContextStore.memoryConfig,
      HistoryStore.memoryConfig,
      WritePolicy.config,
      ContextLoader.config,
      ConversationState.MaxBytesConfig,
      SqlStore.sqliteConfig,
      SqlStore.pgConfig,
      SqlStore.retentionConfig
    ]
    expect(checkConfigDocumentation(readme, [BotConfig.config, BotConfig.storeConfig, Llm.config, ...core], baseline))
      .toEqual({ undocumented: [], unknown: [], wrongDefaults: [] })
  })

  it("lists every module", () => {
    expect(undocumentedModules(readme, TelegramBot)).toEqual([])
  })

  it("every relative link of the README, its docs and BENCHMARKS.md names an existing file", () => {
    const pages = ["README.md", "BENCHMARKS.md", ...fs.readdirSync(new URL("../docs/", import.meta.url)).map((f) => `docs/${f}`)]
    const { links, missing } = relativeLinks(new URL("../", import.meta.url), pages)
    // The README links to each page its summaries stand for, so the check has links to check.
    expect(links.filter((l) => l.page === "README.md").map((l) => l.target.pathname.split("/apps/telegram/")[1]))
      .toEqual(expect.arrayContaining(["docs/llm-mode.md", "docs/how-it-works.md", "BENCHMARKS.md"]))
    expect(missing).toEqual([])
  })
})
