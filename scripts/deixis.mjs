#!/usr/bin/env node
/**
 * `pnpm deixis …`: the deixis command from a checkout. It builds the CLI and the packages it
 * depends on (turbo: nothing to do when their sources did not change), then runs it with the
 * arguments, in the directory `pnpm` was typed in (pnpm's INIT_CWD), so relative paths and the
 * default store (`.deixis/deixis.sqlite`, the one `pnpm start` uses) are the operator's. Its
 * stdout is the command's alone: the build's output is shown only when the build fails.
 */
import { spawn, spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const turbo = createRequire(join(root, "package.json")).resolve("turbo/bin/turbo")
const build = spawnSync(
  process.execPath,
  [turbo, "run", "build", "--filter=@deixis/cli...", "--output-logs=errors-only", "--log-prefix=none"],
  { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }
)
if (build.status !== 0) {
  process.stderr.write(`${build.stdout ?? ""}${build.stderr ?? ""}`)
  process.stderr.write(`deixis: building the CLI failed${build.error === undefined ? "" : `: ${build.error.message}`}\n`)
  process.exit(build.status ?? 1)
}

const child = spawn(process.execPath, [join(root, "packages", "cli", "dist", "bin.js"), ...process.argv.slice(2)], {
  cwd: process.env.INIT_CWD ?? process.cwd(),
  stdio: "inherit"
})
// Ctrl-C reaches the command itself (the terminal signals the whole process group); a signal
// sent to this launcher alone is passed on, and its exit waits for the command's.
process.on("SIGINT", () => {})
for (const signal of ["SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal))
child.on("exit", (code, signal) => {
  process.exitCode = code ?? 128 + ((signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 1))
})
