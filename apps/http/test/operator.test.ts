/**
 * What an operator sees of the service as a process: the start line (version, store file), the
 * stop line and how long a stop takes, the exit codes, what a wrong configuration says — and
 * that no log line, at any level, holds a secret. `pnpm start` from the repository root is run
 * as a terminal and a supervisor stop it.
 */
import { freePort } from "deixis-test-support/net"
import { pnpmDir, type Running, start } from "deixis-test-support/process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"

const app = join(import.meta.dirname, "..")
const root = join(app, "..", "..")
const version = (JSON.parse(readFileSync(join(app, "package.json"), "utf8")) as { version: string }).version

const running: Array<Running> = []
afterEach(() => {
  for (const r of running.splice(0)) r.kill()
})

/** The service from its sources, as `pnpm dev` runs it. */
const service = (env: Record<string, string>) => {
  const r = start(process.execPath, ["--conditions=@deixis/source", "--import", "tsx", "src/main.ts"], { cwd: app, env })
  running.push(r)
  return r
}

const listening = /listening on http/

describe("the service as an operator runs it", () => {
  it("the start line names package.json's version and the SQLite file; /openapi.json, /docs and /mcp report the same version", async () => {
    const dir = mkdtempSync(join(tmpdir(), "deixis-http-operator-"))
    try {
      const port = await freePort()
      const r = service({ PORT: String(port), DEIXIS_SQLITE_FILE: join(dir, "state.sqlite") })
      await r.waitFor(listening, 120_000)
      const line = r.output().split("\n").find((l) => listening.test(l))!
      expect(line).toContain(`deixis ${version} listening on http://127.0.0.1:${port}`)
      expect(line).toContain(`store="sqlite ${join(dir, "state.sqlite")}"`)
      const openapi = await fetch(`http://127.0.0.1:${port}/openapi.json`).then((res) => res.json() as Promise<{ info: { version: string } }>)
      expect(openapi.info.version).toBe(version)
      // The docs page embeds the OpenAPI document it renders; MCP's initialize names the server.
      expect(await fetch(`http://127.0.0.1:${port}/docs`).then((res) => res.text())).toContain(`"version":"${version}"`)
      const mcp = await fetch(`http://127.0.0.1:${port}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "1" } } })
      }).then((res) => res.json() as Promise<{ result: { serverInfo: { version: string } } }>)
      expect(mcp.result.serverInfo.version).toBe(version)
      r.signal("SIGTERM")
      expect((await r.exited).code).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 180_000)

  it("SIGTERM with a request that never ends (the live feed): exit 0 within DEIXIS_SHUTDOWN_TIMEOUT, the stop line last with the reason and the time taken", async () => {
    const port = await freePort()
    const r = service({ PORT: String(port), DEIXIS_STORE: "memory", DEIXIS_SHUTDOWN_TIMEOUT: "3 seconds" })
    await r.waitFor(listening, 120_000)
    const live = await fetch(`http://127.0.0.1:${port}/v1/inspect/live?seconds=300`, { headers: { accept: "text/event-stream" } })
    expect(live.status).toBe(200)
    // How the stream ends: it asked for 300 s, longer than this test may run, so it ends only
    // because the stop closed it once the drain's bound had passed.
    const streamEnded = live.body!.pipeTo(new WritableStream()).then(() => "ended", () => "closed")
    r.signal("SIGTERM")
    const exit = await r.exited
    expect(exit.code).toBe(0)
    expect(["ended", "closed"]).toContain(await streamEnded)
    const lines = r.output().trim().split("\n")
    expect(lines.at(-1)).toMatch(/message="deixis stopped" reason=SIGTERM took_ms=\d+$/)
  }, 180_000)

  it("a second signal during the stop is absorbed: still exit 0 (pnpm passes a Ctrl-C on once more)", async () => {
    const port = await freePort()
    const r = service({ PORT: String(port), DEIXIS_STORE: "memory", DEIXIS_SHUTDOWN_TIMEOUT: "3 seconds" })
    await r.waitFor(listening, 120_000)
    const live = await fetch(`http://127.0.0.1:${port}/v1/inspect/live?seconds=300`, { headers: { accept: "text/event-stream" } })
    void live.body!.pipeTo(new WritableStream()).catch(() => {})
    r.signal("SIGINT")
    await new Promise((resolve) => setTimeout(resolve, 200))
    r.signal("SIGINT")
    r.signal("SIGTERM")
    const exit = await r.exited
    expect([exit.code, exit.signal]).toEqual([0, null])
    expect(r.output()).toMatch(/message="deixis stopped" reason=SIGINT/)
  }, 180_000)

  it("a wrong configuration: one FATAL line naming the key, no stack trace, exit 1", async () => {
    const cases: ReadonlyArray<readonly [Record<string, string>, string]> = [
      [{ HOST: "0.0.0.0" }, "deixis cannot start: HOST: refusing to listen on 0.0.0.0 without authentication"],
      [{ DEIXIS_LOG_LEVEL: "Loud" }, "DEIXIS_LOG_LEVEL must be one of All, Trace, Debug, Info, Warning, Error, Fatal, None"],
      [{ DEIXIS_API_TOKEN: "two words" }, "DEIXIS_API_TOKEN has the wrong shape"]
    ]
    for (const [env, said] of cases) {
      const r = service({ PORT: String(await freePort()), DEIXIS_STORE: "memory", ...env })
      const exit = await r.exited
      expect(exit.code, JSON.stringify(env)).toBe(1)
      const fatal = r.output().split("\n").filter((l) => l.includes("level=FATAL"))
      expect(fatal.length, r.output()).toBe(1)
      expect(fatal[0]).toContain(said)
      expect(r.output()).not.toMatch(/\bat .*\.ts:\d+/)
      expect(r.output()).not.toContain("two words")
    }
  }, 300_000)

  it("the documented level spellings start it: Warning, info, OFF", async () => {
    for (const level of ["Warning", "info", "OFF"]) {
      const port = await freePort()
      const r = service({ PORT: String(port), DEIXIS_STORE: "memory", DEIXIS_LOG_LEVEL: level })
      await ready(port, r)
      r.signal("SIGTERM")
      const exit = await r.exited
      expect(exit.code, `${level}:\n${r.output()}`).toBe(0)
      // Info lines (the start and stop lines) only at info.
      expect(r.output().includes("deixis stopped"), level).toBe(level === "info")
    }
  }, 300_000)

  it("no secret in any line at any level: a padded API token, the metrics token, the Telegram secret, a PostgreSQL password", async () => {
    const secrets = { api: "api-SECRET-7f3a", metrics: "metrics-SECRET-91c2", telegram: "telegram-SECRET-44aa", pg: "pg-SECRET-0d1e" }
    for (const level of ["All", "Debug", "Info"]) {
      const port = await freePort()
      const r = service({
        PORT: String(port),
        DEIXIS_STORE: "memory",
        DEIXIS_LOG_LEVEL: level,
        DEIXIS_API_TOKEN: ` ${secrets.api}\n`,
        DEIXIS_METRICS_TOKEN: secrets.metrics,
        DEIXIS_TELEGRAM_SECRET: secrets.telegram
      })
      await ready(port, r)
      // A client that puts the token where an id goes: the tool call's log line carries it.
      const answer = await fetch(`http://127.0.0.1:${port}/v1/tools/resolve_reference_target`, {
        method: "POST",
        headers: { authorization: `Bearer ${secrets.api}`, "content-type": "application/json" },
        body: JSON.stringify({ chat_id: secrets.api, current_message_id: secrets.metrics, raw_user_text: secrets.telegram })
      })
      expect(answer.status).toBe(200)
      r.signal("SIGTERM")
      expect((await r.exited).code).toBe(0)
      const output = r.output()
      expect(output).toContain("DEIXIS_API_TOKEN had leading or trailing whitespace")
      expect(output).toContain("<redacted>")
      for (const secret of Object.values(secrets)) expect(output, level).not.toContain(secret)
    }
    // A PostgreSQL it cannot reach: the FATAL line says so, without the password.
    const pg = service({
      PORT: String(await freePort()),
      DEIXIS_LOG_LEVEL: "All",
      DEIXIS_STORE: `postgres://deixis:${secrets.pg}@127.0.0.1:${await freePort()}/deixis`
    })
    expect((await pg.exited).code).toBe(1)
    expect(pg.output()).toContain("deixis stopped on a failure")
    expect(pg.output()).not.toContain(secrets.pg)
  }, 300_000)

  it("`pnpm start` at the repository root: a terminal's Ctrl-C or a supervisor's SIGTERM ends it with exit 0, the stop line and no pnpm error", async () => {
    const bin = await pnpmDir()
    // SIGINT to the group is a terminal's Ctrl-C (every process of it gets one, and pnpm passes
    // one more on); SIGTERM to pnpm alone is a supervisor stopping what it started; SIGTERM to
    // the group is systemd's default.
    const stops: ReadonlyArray<readonly [NodeJS.Signals, "group" | "process"]> = [["SIGINT", "group"], ["SIGTERM", "process"], ["SIGTERM", "group"]]
    for (const [signal, target] of stops) {
      const port = await freePort()
      const r = start("pnpm", ["start"], { cwd: root, env: { PATH: `${bin}:${process.env["PATH"]}`, PORT: String(port), DEIXIS_STORE: "memory" } })
      running.push(r)
      await r.waitFor(listening, 300_000)
      r.signal(signal, target)
      const exit = await r.exited
      expect([exit.code, exit.signal], `${signal} to the ${target}:\n${r.output()}`).toEqual([0, null])
      expect(r.output()).toContain(`message="deixis stopped" reason=${signal}`)
      expect(r.output()).not.toMatch(/ELIFECYCLE|ERR_PNPM|Command failed/)
    }
  }, 600_000)
})

/** Resolves once /readyz answers 200. */
const ready = async (port: number, r: Running) => {
  for (let i = 0; i < 1_200; i++) {
    if (await fetch(`http://127.0.0.1:${port}/readyz`).then((res) => res.ok, () => false)) return
    if (r.child.exitCode !== null) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`the service did not become ready:\n${r.output()}`)
}
