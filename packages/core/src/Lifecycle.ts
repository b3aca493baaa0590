/**
 * A process's stop, bounded and told: what asked for it (SIGTERM, SIGINT, or a failure), a hard
 * bound on the whole of it (`DEIXIS_SHUTDOWN_TIMEOUT`, from the signal), and a last line saying
 * how long it took; and the version a process reports ({@link versionOf}). The HTTP service
 * and the Telegram bot both run by it, as `Logging` gives them one logger. Node only: it
 * watches `process` signals (nothing happens on import; {@link watch} installs the handlers).
 *
 * `NodeRuntime.runMain` turns the first SIGINT / SIGTERM into the interruption that releases
 * everything, then stops listening; a second signal would then kill the process by default —
 * and one comes when the process runs under pnpm (`pnpm start`), which passes a terminal's
 * Ctrl-C on to its script once more, then fails with `ELIFECYCLE` because its script died of a
 * signal. So the signals stay handled for the life of the process: a second one is ignored,
 * the stop under way being bounded anyway.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import { readFileSync } from "node:fs"

let stop: { readonly reason: string; readonly at: number } | undefined
let bound: number | undefined

// Marks the stop's beginning (the first call wins) and arms the bound on its length.
const begin = (reason: string) => {
  if (stop !== undefined) return
  stop = { reason, at: Date.now() }
  if (bound === undefined) return
  const ms = bound
  setTimeout(() => {
    process.stderr.write(`the stop did not finish within DEIXIS_SHUTDOWN_TIMEOUT (${ms} ms); exiting\n`)
    process.exit(1)
  }, ms).unref()
}

let installed = false

/**
 * What a stop of `timeoutMs` in all leaves for the work under way (requests, updates being
 * handled): all of it but a reserve for what comes after (closing the stores) — a quarter, at
 * most two seconds.
 *
 * @since 0.1.0
 * @category timing
 */
export const drainBudget = (timeoutMs: number): number => timeoutMs - Math.min(2_000, Math.floor(timeoutMs / 4))

/**
 * Watches SIGINT and SIGTERM from now on (for the life of the process), bounds the stop to
 * `timeoutMs` from the signal, and when the scope closes logs `<name> stopped` with the reason
 * and the time the stop took: acquired first, so that line is the last.
 *
 * @since 0.1.0
 * @category lifecycle
 */
export const watch = (name: string, timeoutMs: number): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      bound = timeoutMs
      if (installed) return
      installed = true
      for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => begin(signal))
    }),
    (_, exit) =>
      Effect.suspend(() =>
        Effect.logInfo(`${name} stopped`).pipe(
          Effect.annotateLogs({ reason: stop?.reason ?? reasonOf(exit), took_ms: Date.now() - (stop?.at ?? Date.now()) })
        )
      )
  )

const reasonOf = (exit: Exit.Exit<unknown, unknown>) => (Exit.isFailure(exit) && !Exit.isInterrupted(exit) ? "failure" : "end")

/**
 * Starts the stop's clock when the scope begins to close, for a stop no signal asked for (a
 * failure): acquired last, so released first.
 *
 * @since 0.1.0
 * @category lifecycle
 */
export const starts: Effect.Effect<void, never, Scope.Scope> = Effect.addFinalizer((exit) => Effect.sync(() => begin(reasonOf(exit))))

/**
 * The version of the package named `name` (an app's `package.json` `version`), from the
 * nearest package.json of that name at or above `from` (the caller's `import.meta.url`): the
 * same from `src/`, `dist/`, a benchmark build (`.bench/src/`) and a container image (`/app`).
 * `"unknown"` when none is found within four levels. Read once by each app, at start.
 *
 * @since 0.1.0
 * @category version
 */
export const versionOf = (name: string, from: string | URL): string => {
  for (let dir = new URL(".", from), i = 0; i < 4; dir = new URL("..", dir), i++) {
    try {
      const manifest = JSON.parse(readFileSync(new URL("package.json", dir), "utf8")) as { name?: unknown; version?: unknown }
      if (manifest.name === name && typeof manifest.version === "string") return manifest.version
    } catch {
      // No package.json at this level: look one up.
    }
  }
  return "unknown"
}
