import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const here = new URL("..", import.meta.url).pathname

const sources = (dir: string): Array<string> =>
  fs.readdirSync(path.join(here, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => path.join(dir, file))

describe("the bot's tests", () => {
  it("use the published @deixis/telegraf/testing entry point, never another package's test folder", () => {
    const reaching: Array<string> = []
    let fakeBotApi = 0
    for (const file of [...sources("src"), ...sources("test")]) {
      const text = fs.readFileSync(path.join(here, file), "utf8")
      for (const [, specifier] of text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
        if (specifier === "@deixis/telegraf/testing") fakeBotApi++
        // A relative path out of this app, or a package's test folder: not an API a team has.
        if (/^(\.\.\/)+(\.\.\/)?packages\//.test(specifier!) || /^@deixis\/[^/]+\/test\//.test(specifier!)) {
          reaching.push(`${file}: ${specifier}`)
        }
      }
    }
    expect(reaching).toEqual([])
    expect(fakeBotApi).toBeGreaterThan(0)
  })
})
