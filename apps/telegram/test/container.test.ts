/**
 * The container files, checked against the code they run (no Docker engine here to build them):
 * the image runs the package's compiled start command as a non-root user with its data under
 * /data, and the compose file's environment is a configuration the bot accepts.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as BotConfig from "../src/BotConfig.js"

const read = (name: string) => fs.readFileSync(new URL(`../${name}`, import.meta.url), "utf8")

describe("container files", () => {
  it("the image is multi-stage and runs the compiled start command as a non-root user, data under /data", () => {
    const dockerfile = read("Dockerfile")
    const start = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts["start"]!
    assert.strictEqual(start, "node dist/main.js")
    assert.strictEqual([...dockerfile.matchAll(/^FROM /gm)].length, 2)
    assert.match(dockerfile, /^CMD \["node", "dist\/main\.js"\]$/m)
    assert.match(dockerfile, /^USER node$/m)
    assert.match(dockerfile, /DEIXIS_DATA_DIR=\/data/)
    assert.match(dockerfile, /^HEALTHCHECK .*\n.*\/healthz/m)
    assert.match(dockerfile, /pnpm install --frozen-lockfile/)
  })

  it("the compose file's environment (empty optional values included) is a valid configuration on PostgreSQL", () => {
    const compose = read("compose.yaml")
    const bot = compose.slice(compose.indexOf("\n  bot:"))
    const block = bot.slice(bot.indexOf("environment:"), bot.indexOf("depends_on:"))
    // What `docker compose` substitutes with only BOT_TOKEN set.
    const env = new Map<string, string>()
    for (const [, key, raw] of block.matchAll(/^\s{6}([A-Z_]+): (.*)$/gm)) {
      const value = raw!.replace(/\$\{BOT_TOKEN:\?[^}]*\}/, "123:abc").replace(/\$\{[A-Z_]+:-([^}]*)\}/g, "$1")
      env.set(key!, value)
    }
    assert.strictEqual(env.get("DEIXIS_STORE"), "postgres://deixis:deixis@postgres:5432/deixis")
    const provider = ConfigProvider.fromMap(env)
    const config = Effect.runSync(Effect.either(Effect.withConfigProvider(BotConfig.config, provider)))
    assert.isTrue(Either.isRight(config), String(Either.isLeft(config) ? config.left : ""))
    if (Either.isRight(config)) {
      assert.strictEqual(config.right.transport._tag, "polling")
      assert.isTrue(Option.isNone(config.right.llm))
      assert.strictEqual(config.right.timeZone, "UTC")
    }
    const store = Effect.runSync(Effect.withConfigProvider(BotConfig.storeConfig, provider))
    assert.strictEqual(store._tag, "postgres")
    // Compose waits longer than the bot's own shutdown bound before it kills it.
    assert.match(compose, /DEIXIS_SHUTDOWN_TIMEOUT: 10 seconds/)
    assert.match(compose, /stop_grace_period: 20s/)
  })

  it("refuses a webhook URL that is not https, naming the key", () => {
    const result = Effect.runSync(Effect.either(Effect.withConfigProvider(
      BotConfig.config,
      ConfigProvider.fromMap(new Map([["BOT_TOKEN", "1:x"], ["BOT_WEBHOOK_URL", "http://insecure.example.com/hook"]]))
    )))
    assert.isTrue(Either.isLeft(result) && String(result.left).includes("BOT_WEBHOOK_URL"))
  })
})
