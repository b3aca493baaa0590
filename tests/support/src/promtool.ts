/**
 * `promtool check metrics` (Prometheus's linter of the text exposition format) on a scrape.
 * The apps' `test` scripts make sure promtool is installed first (`scripts/promtool.mjs`:
 * Debian's `prometheus` package, installed with apt-get when run as root).
 */
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"

/** The promtool binary: `PROMTOOL_PATH`, or Debian's. Throws saying how to install it. */
export const promtoolPath = (): string => {
  const path = [process.env["PROMTOOL_PATH"], "/usr/bin/promtool", "/usr/local/bin/promtool"].find((p) => p !== undefined && existsSync(p))
  if (path === undefined) throw new Error("promtool is missing: `apt-get install -y prometheus` (the test script does it as root), or set PROMTOOL_PATH")
  return path
}

/** Runs `promtool check metrics` on a scrape: its exit code and what it said (problems, one a line). */
export const checkMetrics = (scrape: string): Promise<{ readonly code: number | null; readonly output: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(promtoolPath(), ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, output }))
    child.stdin.end(scrape)
  })
