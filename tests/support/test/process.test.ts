/**
 * The benches' process helpers read what the OS counted for a child: its CPU time and what it
 * wrote to storage, and start an app that is ready once its health URL answers.
 */
import { describe, expect, it } from "vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "../src/net.js"
import { start, startApp, usage, usageSince } from "../src/process.js"

// A child that spins for a while (CPU it spends), then writes 4 MiB to a file and fsyncs it
// (bytes sent to storage), then waits to be stopped.
const worker = `
const fs = require("node:fs")
let x = 0
for (let i = 0; i < 3e8; i++) x += i % 7
const fd = fs.openSync(process.argv[1], "w")
fs.writeSync(fd, Buffer.alloc(4 * 1024 * 1024, x % 251))
fs.fsyncSync(fd)
fs.closeSync(fd)
console.log("done")
setInterval(() => {}, 1000)
`

describe("deixis-test-support/process: usage", () => {
  it("counts a child's CPU time and the bytes it wrote to storage", async () => {
    const dir = mkdtempSync(join(tmpdir(), "deixis-usage-"))
    const child = start(process.execPath, ["-e", worker, join(dir, "out.bin")], { cwd: dir, env: {} })
    try {
      const before = usage(child.child.pid!)
      await child.waitFor(/done/, 60_000)
      const used = usageSince(before, usage(child.child.pid!))
      expect(used.userMs + used.systemMs).toBeGreaterThan(0)
      expect(used.writeBytes).toBeGreaterThanOrEqual(4 * 1024 * 1024)
      expect(used.writeCalls).toBeGreaterThanOrEqual(1)
    } finally {
      child.kill()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("reads NaN for a process that is not there", () => {
    const gone = usage(2 ** 22 + 1)
    expect([gone.userMs, gone.systemMs, gone.writeBytes, gone.writeCalls].every(Number.isNaN)).toBe(true)
  })
})

describe("deixis-test-support/process: startApp", () => {
  it("resolves once the app's ready URL answers 200, and stop ends it with SIGTERM", async () => {
    const port = await freePort()
    const dir = mkdtempSync(join(tmpdir(), "deixis-app-"))
    // Ready only after a moment: startApp must wait for the 200, not for the process.
    writeFileSync(join(dir, "main.cjs"), `
      const http = require("node:http")
      let ready = false
      setTimeout(() => (ready = true), 300)
      const s = http.createServer((req, res) => res.writeHead(req.url === "/healthz" && ready ? 200 : 503).end()).listen(${port}, "127.0.0.1")
      process.on("SIGTERM", () => s.close(() => process.exit(0)))
    `)
    try {
      const app = await startApp(join(dir, "main.cjs"), { cwd: dir, env: {}, ready: `http://127.0.0.1:${port}/healthz` })
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)
      expect(app.usage().userMs).toBeGreaterThanOrEqual(0)
      const exit = await app.stop()
      expect([exit.code, exit.signal]).toEqual([0, null])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("rejects with the app's output when it exits before it is ready", async () => {
    const dir = mkdtempSync(join(tmpdir(), "deixis-app-"))
    writeFileSync(join(dir, "main.cjs"), `console.error("cannot start: bad configuration"); process.exit(1)`)
    try {
      await expect(startApp(join(dir, "main.cjs"), { cwd: dir, env: {}, ready: "http://127.0.0.1:9/healthz" }))
        .rejects.toThrow(/cannot start: bad configuration/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
