/**
 * The service's long-lived fibers are supervised (core's `Supervisor`, provided under every
 * layer, the stores' included): one that keeps dying is restarted with a line at Error each time,
 * then ends the process — one Fatal line naming it, exit 1 — never a live process that cannot
 * work. (A SQLite writer thread that dies too often reports to the same supervisor: store-sql's
 * writer.test.ts.)
 */
import { describe, expect, it } from "vitest"
import { spawn } from "node:child_process"
import { join } from "node:path"
import { exited, freePort } from "./process.js"

describe("supervision", () => {
  it("a fiber injected through the service's layers that dies at every start: two restarts logged, then one FATAL line naming it, exit 1", async () => {
    const child = spawn(process.execPath, ["--conditions=@deixis/source", "--import", "tsx", "test/fixtures/faultyService.ts"], {
      cwd: join(import.meta.dirname, ".."),
      env: { ...process.env, PORT: String(await freePort()), HOST: "127.0.0.1", DEIXIS_STORE: "memory" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    expect(await exited(child), output).toBe(1)
    const lines = output.split("\n")
    const fatal = lines.filter((l) => l.includes("level=FATAL"))
    expect(fatal.length, output).toBe(1)
    expect(fatal[0]).toContain("deixis stopped: the injected fiber failed after 2 restarts: RuntimeException: injected defect")
    expect(lines.filter((l) => l.includes("level=ERROR") && l.includes("the injected fiber failed; restarting it")).length, output).toBe(2)
    // The stop is told as a stop: the service closed what it had opened.
    expect(output).toMatch(/message="deixis stopped"/)
  }, 120_000)
})
