/**
 * Processes as an operator runs them, for tests of what only a process shows: its output, its
 * exit code and signal, how long a stop takes. `run` runs a command to its end; `start` leaves
 * it running in a process group of its own, so a test can signal the group as a terminal's
 * Ctrl-C or a supervisor does, and nothing it started outlives the test (`kill` ends the group).
 * The `deixis` command runs from the workspace's sources (as `pnpm dev` runs the apps; `pnpm
 * deixis` runs the same code built).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process"
import { mkdtempSync, symlinkSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"

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

export interface Exit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  /** When it exited (`Date.now()`). */
  readonly at: number
}

export interface Running {
  readonly child: ChildProcess
  /** Everything written so far, stdout and stderr. */
  readonly output: () => string
  readonly exited: Promise<Exit>
  /** Resolves once the output matches, or rejects after `ms` (or at an exit) with the output. */
  readonly waitFor: (pattern: RegExp, ms: number) => Promise<void>
  /** Signals the process alone, or its whole group. */
  readonly signal: (signal: NodeJS.Signals, target?: "process" | "group") => void
  /** Ends the whole group with SIGKILL, if anything of it is left. */
  readonly kill: () => void
}

/** Starts `command` in a process group of its own, with exactly `env` (plus PATH and HOME). */
export const start = (command: string, args: ReadonlyArray<string>, options: { readonly cwd: string; readonly env: Record<string, string> }): Running => {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true
  })
  let output = ""
  const listeners = new Set<() => void>()
  const append = (chunk: Buffer) => {
    output += chunk.toString()
    for (const listener of [...listeners]) listener()
  }
  child.stdout!.on("data", append)
  child.stderr!.on("data", append)
  const exited = new Promise<Exit>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal, at: Date.now() })))
  let gone = false
  void exited.then(() => {
    gone = true
    for (const listener of [...listeners]) listener()
  })
  const waitFor = (pattern: RegExp, ms: number) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (pattern.test(output)) finish(resolve)
        else if (gone) finish(() => reject(new Error(`exited before ${pattern}:\n${output}`)))
      }
      const timer = setTimeout(() => finish(() => reject(new Error(`no ${pattern} within ${ms} ms:\n${output}`))), ms)
      const finish = (f: () => void) => {
        clearTimeout(timer)
        listeners.delete(check)
        f()
      }
      listeners.add(check)
      check()
    })
  const signal = (name: NodeJS.Signals, target: "process" | "group" = "process") => {
    if (target === "group") process.kill(-child.pid!, name)
    else child.kill(name)
  }
  const kill = () => {
    try {
      process.kill(-child.pid!, "SIGKILL")
    } catch {
      // The group is gone already.
    }
  }
  return { child, output: () => output, exited, waitFor, signal, kill }
}

/**
 * A directory holding a `pnpm` that runs pnpm 10.34.9 itself (not through npx, whose own
 * signal handling is not the project's), for a PATH: the pnpm running this test if it is one,
 * else the one `npx -y pnpm@10.34.9` keeps in npm's cache.
 */
export const pnpmDir = async (): Promise<string> => {
  const execpath = process.env["npm_execpath"]
  const bin = execpath !== undefined && /pnpm/.test(execpath)
    ? execpath
    : (await promisify(execFile)("npx", ["-y", "-p", "pnpm@10.34.9", "-c", "command -v pnpm"], { cwd: tmpdir() })).stdout.trim()
  const dir = mkdtempSync(join(tmpdir(), "deixis-pnpm-"))
  symlinkSync(bin, join(dir, "pnpm"))
  return dir
}
