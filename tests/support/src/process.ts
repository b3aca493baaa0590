/**
 * Commands run as an operator runs them, as child processes: their exit code and output. The
 * `deixis` command runs from the workspace's sources (as `pnpm dev` runs the apps; `pnpm deixis`
 * runs the same code built).
 */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { join } from "node:path"
import { pathToFileURL } from "node:url"

export interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The workspace's root directory. */
export const root = join(import.meta.dirname, "..", "..", "..")

const cli = join(root, "packages", "cli", "src", "bin.ts")
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href

/**
 * This process's environment without the keys a run must choose itself (deixis settings,
 * colour switches), with `env` on top.
 */
export const environment = (env: Record<string, string> = {}): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && key !== "NO_COLOR" && key !== "FORCE_COLOR" && !key.startsWith("DEIXIS_")) out[key] = value
  }
  return { ...out, ...env }
}

/** Runs `command` to its end in `cwd` with `environment(env)`, collecting stdout and stderr. */
export const run = (command: string, args: ReadonlyArray<string>, env: Record<string, string> = {}, cwd = root): Promise<Ran> =>
  new Promise<Ran>((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: environment(env), stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })

/** The command line of `deixis <args>` from the sources: node and its arguments. */
export const deixisCommand = (args: ReadonlyArray<string>): ReadonlyArray<string> =>
  [process.execPath, "--conditions=@deixis/source", "--import", tsx, cli, ...args]

/** `deixis <args>` as a child process, from the sources. */
export const deixis = (args: ReadonlyArray<string>, env: Record<string, string> = {}, cwd = root): Promise<Ran> => {
  const [node, ...rest] = deixisCommand(args)
  return run(node!, rest, env, cwd)
}
