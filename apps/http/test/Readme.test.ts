import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { checkConfigDocumentation, relativeLinks } from "deixis-test-support/readme"
import { DeixisToolkit } from "@deixis/tools"
import { HttpApi } from "@effect/platform"
import { Api } from "../src/Api.js"
import * as Routes from "../src/Routes.js"
import * as Server from "../src/Server.js"
import * as Store from "../src/Store.js"

const readme = new URL("../README.md", import.meta.url)

describe("README", () => {
  it("documents every configuration key of the service with its real default", () => {
    expect(checkConfigDocumentation(readme, [Server.config, Store.config]))
      .toEqual({ undocumented: [], unknown: [], wrongDefaults: [] })
  })

  it("lists exactly the route table, each route with its access", () => {
    const section = fs.readFileSync(readme, "utf8").split("## Endpoints (v1)")[1]!.split("\n## ")[0]!
    // A row names one route or several (`GET /mcp`, `DELETE /mcp`), then their access.
    const documented = [...section.matchAll(/^\| ((?:`[A-Z]+ [^`]+`(?:, )?)+) \| ([a-z ]+) \|/gm)].flatMap(([, routes, access]) =>
      [...routes!.matchAll(/`([A-Z]+) ([^`?]+)(?:\?[^`]*)?`/g)].map(([, method, path]) =>
        `${method} ${path!.replace(/\{(\w+)\}/g, ":$1")} ${access}`))
    // An endpoint's access is what its security middleware declares: the bearer token, or also Telegram's secret header.
    const declared = new Map<string, string>()
    HttpApi.reflect(Api, {
      onGroup: () => {},
      onEndpoint: ({ endpoint, middleware }) => {
        const schemes = [...middleware].flatMap((tag) => Object.keys((tag as unknown as { security: object }).security))
        declared.set(`${endpoint.method} ${endpoint.path}`, schemes.includes("telegramSecret") ? "token or telegram secret" : "token")
      }
    })
    expect(documented.sort()).toEqual(
      Routes.table.map((r) => `${r.method} ${r.path} ${r.access ?? declared.get(`${r.method} ${r.path}`)}`).sort()
    )
  })

  it("lists exactly the toolkit's tools for POST /mcp", () => {
    const row = fs.readFileSync(readme, "utf8").split("\n").find((line) => line.startsWith("| `POST /mcp` |"))!
    const listed = [...row.split(": the tools ")[1]!.split(". ")[0]!.matchAll(/`(\w+)`/g)].map((m) => m[1]!)
    expect(listed.sort()).toEqual(Object.keys(DeixisToolkit.toolkit.tools).sort())
  })

  it("every relative link of the README, its docs and BENCHMARKS.md names an existing file", () => {
    const pages = ["README.md", "BENCHMARKS.md", ...fs.readdirSync(new URL("../docs/", import.meta.url)).map((f) => `docs/${f}`)]
    const { links, missing } = relativeLinks(new URL("../", import.meta.url), pages)
    // The README links to each page its summaries stand for, so the check has links to check.
    expect(links.filter((l) => l.page === "README.md").map((l) => l.target.pathname.split("/apps/http/")[1]))
      .toEqual(expect.arrayContaining(["docs/request-path.md", "BENCHMARKS.md"]))
    expect(missing).toEqual([])
  })
})
