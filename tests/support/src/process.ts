/**
 * Processes as an operator runs them, for tests of what only a process shows: its output, its
 * exit code and signal, how long a stop takes. `run` runs a command to its end; `start` leaves
 * it running in a process group of its own, so a test can signal the group as a terminal's
 * Ctrl-C or a supervisor does, and nothing it started outlives the test (`kill` ends the group).
 * The `deixis` command runs from the workspace's sources (as `pnpm dev` runs the apps; `pnpm
 * deixis` runs the same code built).
 *
 * The apps' benches use `startApp` too: the built app as an operator runs it, ready when its
 * health URL answers, with what the OS counts for it (`usage`: CPU time, bytes written) read
 * from /proc, so a figure is the process's own cost and not the load generator's.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process"
import { mkdtempSync, readFileSync, symlinkSync } from "node:fs"
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

/**
 * Starts `command` in a process group of its own, with exactly `env` (plus PATH and HOME).
 * `outputLimit` keeps only the output's last that many characters (a bench's app logging a
 * line per request would otherwise fill the driver's memory); unbounded by default.
 */
export const start = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env: Record<string, string>; readonly outputLimit?: number }
): Running => {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true
  })
  let output = ""
  const listeners = new Set<() => void>()
  const limit = options.outputLimit ?? Number.POSITIVE_INFINITY
  const append = (chunk: Buffer) => {
    output += chunk.toString()
    if (output.length > limit) output = output.slice(output.length - limit)
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

/**
 * What the OS counted for a process so far (Linux /proc; NaN where unreadable): CPU time in
 * user and kernel mode, and what it wrote — `write_bytes` (bytes it caused to be sent to
 * storage: its page-cache writes and fsyncs, not writes to pipes or sockets) and `syscw` (its
 * write-like system calls, pipes and sockets included).
 */
export interface Usage {
  readonly userMs: number
  readonly systemMs: number
  readonly writeBytes: number
  readonly writeCalls: number
}

let ticks: number | undefined
/** The clock ticks per second /proc/<pid>/stat counts CPU time in (USER_HZ; 100 on Linux). */
const clockTicks = (): number => {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
    } catch {
      ticks = 100
    }
  }
  return ticks
}

const readProc = (path: string): string => {
  try {
    return readFileSync(path, "utf8")
  } catch {
    return ""
  }
}

/** {@link Usage} of process `pid` now. */
export const usage = (pid: number): Usage => {
  // The command name may hold spaces: the fields after it start after its closing parenthesis.
  const stat = readProc(`/proc/${pid}/stat`)
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  const ms = (field: string | undefined) => (field === undefined || stat === "" ? Number.NaN : (Number(field) * 1000) / clockTicks())
  const io = readProc(`/proc/${pid}/io`)
  const count = (key: string) => Number(new RegExp(`^${key}: (\\d+)$`, "m").exec(io)?.[1] ?? Number.NaN)
  // stat's fields 14 and 15 (utime, stime), counted from 1 with the pid and the name first.
  return { userMs: ms(fields[11]), systemMs: ms(fields[12]), writeBytes: count("write_bytes"), writeCalls: count("syscw") }
}

/** What a process used between two readings of {@link usage}. */
export const usageSince = (before: Usage, after: Usage): Usage => ({
  userMs: after.userMs - before.userMs,
  systemMs: after.systemMs - before.systemMs,
  writeBytes: after.writeBytes - before.writeBytes,
  writeCalls: after.writeCalls - before.writeCalls
})

/** Resolves true once `url` answers 200, false after `ms` or once `gone` says to stop asking. */
export const untilReady = async (url: string, ms = 30_000, gone: () => boolean = () => false): Promise<boolean> => {
  const end = Date.now() + ms
  while (Date.now() < end && !gone()) {
    const ok = await fetch(url).then((r) => r.ok, () => false)
    if (ok) return true
    await new Promise((r) => setTimeout(r, 50))
  }
  return false
}

/** A built app started by {@link startApp}. */
export interface App extends Running {
  readonly pid: number
  /** {@link usage} of the app's process. */
  readonly usage: () => Usage
  /** SIGTERM, then SIGKILL to its group if it has not exited after `ms`. */
  readonly stop: (ms?: number) => Promise<Exit>
}

const started = new Set<Running>()
let cleanup = false

/**
 * The built app `entry` (`dist/main.js`) as an operator runs it — `node <entry>` in `cwd`,
 * with exactly `env` (plus PATH and HOME), stdout and stderr drained from pipes as a log
 * collector would, only their last 64 KiB kept — resolved once `ready` answers 200. Whatever
 * is still running when this process exits is killed with it.
 */
export const startApp = async (
  entry: string,
  options: { readonly cwd: string; readonly env: Record<string, string>; readonly ready: string; readonly readyMs?: number; readonly nodeArgs?: ReadonlyArray<string> }
): Promise<App> => {
  if (!cleanup) {
    cleanup = true
    process.once("exit", () => {
      for (const running of started) running.kill()
    })
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      process.once(signal, () => {
        for (const running of started) running.kill()
        process.exit(130)
      })
    }
  }
  const running = start(process.execPath, [...(options.nodeArgs ?? []), entry], { cwd: options.cwd, env: options.env, outputLimit: 64 * 1024 })
  started.add(running)
  void running.exited.then(() => started.delete(running))
  const pid = running.child.pid!
  const stop = async (ms = 10_000): Promise<Exit> => {
    running.signal("SIGTERM")
    const timer = setTimeout(running.kill, ms)
    const exit = await running.exited
    clearTimeout(timer)
    running.kill()
    return exit
  }
  let exited = false
  const gone = running.exited.then(() => {
    exited = true
    return false
  })
  if (!(await Promise.race([untilReady(options.ready, options.readyMs, () => exited), gone]))) {
    running.kill()
    throw new Error(`${entry} was not ready at ${options.ready}:\n${running.output()}`)
  }
  return { ...running, pid, usage: () => usage(pid), stop }
}
