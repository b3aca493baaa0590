/**
 * The service as a child process, started the way an operator starts it from the sources
 * (`pnpm dev`), for tests of what only a process shows: signals, exit codes, durability.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { join } from "node:path"

export { freePort } from "deixis-test-support/net"

export interface Launched {
  readonly child: ChildProcess
  /** Everything the process wrote so far, stdout and stderr. */
  readonly output: () => string
}

/** Starts the service on `port` over the SQLite file `file`. */
export const launch = (port: number, file: string, env: Record<string, string> = {}): Launched => {
  const child = spawn(process.execPath, ["--conditions=@deixis/source", "--import", "tsx", "src/main.ts"], {
    cwd: join(import.meta.dirname, ".."),
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DEIXIS_STORE: `sqlite:${file}`, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  return { child, output: () => output }
}

/** Resolves once /readyz answers 200. */
export const ready = async (port: number) => {
  for (let attempt = 0; attempt < 900; attempt++) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false)
    if (ok) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error("the service did not become ready")
}

/** The exit code, once the process has exited. */
export const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code)))
