/**
 * The service's image and the root compose file, checked against the repository and the code
 * they run (there is no Docker engine here to build them): what the Dockerfile copies exists and
 * is not kept out, the commands it runs are the workspace's scripts, it runs the start command
 * as a non-root user; the compose file runs the service, the bot and PostgreSQL, the service on
 * the compose's database (the bot's side: apps/telegram/test/container.test.ts), with an
 * environment it accepts, the port its image exposes, and variables the root README names.
 */
import {
  envOf,
  imageProblems,
  instructions,
  parseDockerfile,
  readCompose,
  substitute,
  variablesOf
} from "deixis-test-support/container"
import { keysOf } from "deixis-test-support/readme"
import { Logging } from "@deixis/core"
import type * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import * as Routes from "../src/Routes.js"
import * as Server from "../src/Server.js"
import * as Store from "../src/Store.js"

const root = join(import.meta.dirname, "..", "..", "..")
const image = parseDockerfile(readFileSync(join(root, "apps/http/Dockerfile"), "utf8"))
const runtime = image.at(-1)!
const compose = readCompose(join(root, "compose.yaml"))
const readme = readFileSync(join(root, "README.md"), "utf8")

const read = <A>(config: Config.Config<A>, env: ReadonlyMap<string, string>) =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(config, ConfigProvider.fromMap(new Map(env)))))

/** A compose service's environment as `docker compose` gives it, with only the required variables set. */
const environment = (service: string, variables: Record<string, string>) =>
  new Map(Object.entries(compose.services[service]!.environment ?? {}).map(([key, value]) => [key, substitute(String(value), variables)] as const))

const required = { DEIXIS_API_TOKEN: "0123abcd" }

describe("apps/http/Dockerfile", () => {
  it("copies files that exist and are not kept out, runs the workspace's own scripts, and runs `node dist/main.js` as a non-root user", () => {
    expect(imageProblems(root, "apps/http/Dockerfile", "@deixis/http")).toEqual([])
    expect(instructions(runtime, "USER")).toEqual(["node"])
  })

  it("its environment is one the service accepts once DEIXIS_API_TOKEN is set, and refuses without, saying so; it listens on the port it exposes, its state in its volume", () => {
    const env = envOf(runtime)
    const refused = read(Server.config, env)
    expect(Either.isLeft(refused) && String(refused.left)).toContain("refusing to listen on 0.0.0.0 without authentication")
    const accepted = read(Server.config, new Map([...env, ["DEIXIS_API_TOKEN", "t0ken"]]))
    expect(Either.isRight(accepted)).toBe(true)
    if (Either.isRight(accepted)) expect(instructions(runtime, "EXPOSE")).toEqual([String(accepted.right.port)])
    const store = read(Store.config, env)
    expect(store).toEqual(Either.right({ _tag: "sqlite", filename: "/data/deixis.sqlite" }))
    expect(instructions(runtime, "VOLUME")).toEqual(['["/data"]'])
    // Every key it sets is one the service reads.
    const keys = new Set([...keysOf(Server.config), ...keysOf(Store.config)])
    for (const key of env.keys()) if (key !== "NODE_ENV") expect(keys, key).toContain(key)
    // The health check asks a public route of the route table.
    const check = instructions(runtime, "HEALTHCHECK").join(" ")
    const path = /'\/(\w+)'/.exec(check)![1]
    expect(Routes.table.find((r) => r.path === `/${path}`)?.access).toBe("public")
  })

  it("its stop fits Docker's default grace: DEIXIS_SHUTDOWN_TIMEOUT's default is under 10 s", () => {
    expect(Server.defaults.shutdownTimeoutMs).toBeLessThan(10_000)
    expect(instructions(runtime, "STOPSIGNAL")).toEqual(["SIGTERM"])
  })
})

describe("compose.yaml (the repository root)", () => {
  it("runs PostgreSQL, the HTTP service and the bot, each image built from a Dockerfile in the repository", () => {
    expect(Object.keys(compose.services).sort()).toEqual(["bot", "http", "postgres"])
    expect(compose.services["http"]!.build).toEqual({ context: ".", dockerfile: "apps/http/Dockerfile" })
    expect(compose.services["bot"]!.build).toEqual({ context: ".", dockerfile: "apps/telegram/Dockerfile" })
    for (const app of ["http", "bot"]) expect(compose.services[app]!.depends_on).toEqual({ postgres: { condition: "service_healthy" } })
  })

  it("the service's store is the compose's PostgreSQL database (the bot's test checks the same of the bot: one store)", () => {
    const postgres = environment("postgres", required)
    const url = new URL(environment("http", required).get("DEIXIS_STORE")!)
    expect([url.hostname, url.port, url.pathname.slice(1), url.username, url.password])
      .toEqual(["postgres", "5432", postgres.get("POSTGRES_DB"), postgres.get("POSTGRES_USER"), postgres.get("POSTGRES_PASSWORD")])
  })

  it("the service's environment is a configuration it accepts, on PostgreSQL, and every key it sets is one it reads", () => {
    const http = environment("http", required)
    const served = read(Server.config, new Map([...envOf(runtime), ...http]))
    expect(Either.isRight(served), String(Either.isLeft(served) && served.left)).toBe(true)
    expect(read(Store.config, http).pipe(Either.map((c) => c._tag))).toEqual(Either.right("postgres"))
    const keys = new Set([...keysOf(Server.config), ...keysOf(Store.config), ...keysOf(Logging.config)])
    for (const key of http.keys()) expect(keys, key).toContain(key)
  })

  it("compose refuses to start without DEIXIS_API_TOKEN, naming it", () => {
    expect(() => environment("http", {})).toThrow(/DEIXIS_API_TOKEN is required/)
  })

  it("publishes the port the image exposes, and the service's stop fits the grace compose gives it", () => {
    expect(compose.services["http"]!.ports!.map((p) => p.split(":").at(-1))).toEqual(instructions(runtime, "EXPOSE"))
    // No stop_grace_period: Docker's default 10 s, more than the whole stop (checked above).
    expect(compose.services["http"]!.stop_grace_period).toBeUndefined()
  })

  it("every variable it reads is named in the root README's Containers section, and the README runs it as written", () => {
    const section = readme.split("## Containers")[1]!.split("\n## ")[0]!
    const variables = new Set(
      Object.values(compose.services).flatMap((s) => Object.values(s.environment ?? {}).flatMap((v) => variablesOf(String(v)).map((x) => x.name)))
    )
    for (const name of variables) expect(section, name).toContain(`\`${name}\``)
    expect(section).toContain("docker compose up -d --build")
    for (const port of ["8080", "9464"]) expect(section).toContain(`127.0.0.1:${port}`)
  })
})
