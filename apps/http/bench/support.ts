/**
 * What the benches' drivers share (the compiled bench cannot import the test support's
 * TypeScript sources): a free loopback port, waiting for a server to answer, a process's memory,
 * and dropping the PostgreSQL schema a run made.
 */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { createServer } from "node:net"

export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

/** Whether the server at `url` answered `/healthz` within ~30 s. */
export const untilHealthy = async (url: string): Promise<boolean> => {
  for (let i = 0; i < 300; i++) {
    if (await fetch(url + "/healthz").then(() => true, () => false)) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return false
}

/** VmRSS and VmHWM (peak) of a process, in bytes (Linux; NaN when unreadable). */
export const processMemory = (pid: number): { readonly rss: number; readonly peak: number } => {
  let status = ""
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8")
  } catch {
    // Not Linux, or the process is gone.
  }
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN) * 1024
  return { rss: kb("VmRSS"), peak: kb("VmHWM") }
}

/** Drops the schema a run made on PostgreSQL (or says to drop it by hand). */
export const dropPgSchema = (pgUrl: string, schema: string) => {
  try {
    execFileSync("psql", [pgUrl, "-q", "-c", `DROP SCHEMA IF EXISTS "${schema}" CASCADE`], { stdio: "ignore" })
  } catch {
    console.error(`could not drop schema ${schema}; drop it by hand`)
  }
}
