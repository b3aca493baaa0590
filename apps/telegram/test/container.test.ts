/**
 * The bot's image and its service in the root compose file, checked against the repository
 * and the code they run (no Docker engine here to build them): the image runs the package's
 * compiled start command as a non-root user with its data under /data, copying only files that
 * exist through commands the workspace has; the compose service's environment is a
 * configuration the bot accepts, on the compose's PostgreSQL (the HTTP service's side:
 * apps/http/test/container.test.ts — one store for both).
 */
import { assert, describe, it } from "@effect/vitest"
import { envOf, imageProblems, instructions, parseDockerfile, readCompose, substitute } from "deixis-test-support/container"
import { keysOf } from "deixis-test-support/readme"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import { join } from "node:path"
import * as BotConfig from "../src/BotConfig.js"
import * as Llm from "../src/Llm.js"

const root = join(import.meta.dirname, "..", "..", "..")
const runtime = parseDockerfile(fs.readFileSync(join(root, "apps/telegram/Dockerfile"), "utf8")).at(-1)!
const compose = readCompose(join(root, "compose.yaml"))
const environment = (service: string, variables: Record<string, string>) =>
  new Map(Object.entries(compose.services[service]!.environment ?? {}).map(([key, value]) => [key, substitute(String(value), variables)] as const))

describe("container files", () => {
  it("the image is multi-stage and runs the compiled start command as a non-root user, data under /data; what it copies exists, what it runs is the workspace's", () => {
    assert.deepStrictEqual(imageProblems(root, "apps/telegram/Dockerfile", "@deixis/telegram-bot"), [])
    assert.deepStrictEqual(instructions(runtime, "USER"), ["node"])
    assert.strictEqual(envOf(runtime).get("DEIXIS_DATA_DIR"), "/data")
    assert.deepStrictEqual(instructions(runtime, "VOLUME"), ['["/data"]'])
    assert.match(instructions(runtime, "HEALTHCHECK").join(" "), /\/healthz/)
    // It exposes the ops port and the webhook port it sets.
    assert.deepStrictEqual(instructions(runtime, "EXPOSE"), [`${envOf(runtime).get("BOT_WEBHOOK_PORT")} ${envOf(runtime).get("BOT_OPS_PORT")}`])
  })

  it("the compose service's environment (empty optional values included) is a valid configuration on the compose's PostgreSQL", () => {
    const env = environment("bot", { BOT_TOKEN: "123:abc" })
    const postgres = environment("postgres", {})
    const url = new URL(env.get("DEIXIS_STORE")!)
    assert.deepStrictEqual(
      [url.hostname, url.port, url.pathname.slice(1), url.username, url.password],
      ["postgres", "5432", postgres.get("POSTGRES_DB"), postgres.get("POSTGRES_USER"), postgres.get("POSTGRES_PASSWORD")]
    )
    const provider = ConfigProvider.fromMap(new Map([...envOf(runtime), ...env]))
    const config = Effect.runSync(Effect.either(Effect.withConfigProvider(BotConfig.config, provider)))
    assert.isTrue(Either.isRight(config), String(Either.isLeft(config) ? config.left : ""))
    if (Either.isRight(config)) {
      assert.strictEqual(config.right.transport._tag, "polling")
      assert.isTrue(Option.isNone(config.right.llm))
      assert.strictEqual(config.right.timeZone, "UTC")
    }
    const store = Effect.runSync(Effect.withConfigProvider(BotConfig.storeConfig, provider))
    assert.strictEqual(store._tag, "postgres")
    const keys = new Set([...keysOf(BotConfig.config), ...keysOf(BotConfig.storeConfig), ...keysOf(Llm.config)])
    for (const key of env.keys()) assert.isTrue(keys.has(key), key)
    assert.throws(() => environment("bot", {}), /BOT_TOKEN is required/)
    // It publishes the ops port; the stop (DEIXIS_SHUTDOWN_TIMEOUT's default) fits Docker's default grace of 10 s.
    assert.deepStrictEqual(compose.services["bot"]!.ports!.map((p) => p.split(":").at(-1)), [envOf(runtime).get("BOT_OPS_PORT")])
    assert.isUndefined(compose.services["bot"]!.stop_grace_period)
    assert.isBelow(Duration.toMillis(BotConfig.defaults.shutdownTimeout), 10_000)
  })

  it("refuses a webhook URL that is not https, naming the key", () => {
    const result = Effect.runSync(Effect.either(Effect.withConfigProvider(
      BotConfig.config,
      ConfigProvider.fromMap(new Map([["BOT_TOKEN", "1:x"], ["BOT_WEBHOOK_URL", "http://insecure.example.com/hook"]]))
    )))
    assert.isTrue(Either.isLeft(result) && String(result.left).includes("BOT_WEBHOOK_URL"))
  })
})
