/**
 * The stop, bounded and told: what asked for it (SIGTERM, SIGINT, or a failure), a hard bound
 * on the whole of it (`DEIXIS_SHUTDOWN_TIMEOUT`, from the signal), and a last line saying how
 * long it took.
 *
 * `NodeRuntime.runMain` turns the first SIGINT / SIGTERM into the interruption that releases
 * the layers, then stops listening; a second signal would then kill the process by default —
 * and one comes when the service runs under pnpm (`pnpm start`), which passes a terminal's
 * Ctrl-C on to its script once more, then fails with `ELIFECYCLE` because its script died of a
 * signal. So the signals stay handled for the life of the process: a second one is noted and
 * ignored, the stop under way being bounded anyway.
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"

interface Stop {
  readonly reason: string
  readonly at: number
}

let stop: Stop | undefined
let bound: number | undefined

// Marks the stop's beginning (the first call wins) and arms the bound on its length.
const begin = (reason: string) => {
  if (stop !== undefined) return
  stop = { reason, at: Date.now() }
  if (bound === undefined) return
  const ms = bound
  setTimeout(() => {
    process.stderr.write(`deixis: the stop did not finish within DEIXIS_SHUTDOWN_TIMEOUT (${ms} ms); exiting\n`)
    process.exit(1)
  }, ms).unref()
}

let installed = false
const install = () => {
  if (installed) return
  installed = true
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => begin(signal))
}

/**
 * What a stop of `timeoutMs` in all leaves for the requests being handled: all of it but a
 * reserve for what comes after them (closing the stores) — a quarter, at most two seconds.
 *
 * @since 0.3.0
 * @category timing
 */
export const drainBudget = (timeoutMs: number): number => timeoutMs - Math.min(2_000, Math.floor(timeoutMs / 4))

/**
 * Provided under the service and over it: `outer` is built first and released last (it logs
 * `deixis stopped` with the reason and the time taken, once everything else is closed);
 * `inner` is built last and released first (a stop that began without a signal — a failure —
 * starts its clock there). The signals are watched from the moment `outer` is built.
 *
 * @since 0.3.0
 * @category layers
 */
export const layers = (timeoutMs: number) => ({
  outer: Layer.scopedDiscard(Effect.gen(function*() {
    bound = timeoutMs
    install()
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() =>
        Effect.logInfo("deixis stopped").pipe(Effect.annotateLogs({ reason: stop?.reason ?? "end", took_ms: Date.now() - (stop?.at ?? Date.now()) }))
      )
    )
  })),
  inner: Layer.scopedDiscard(Effect.addFinalizer((exit) => Effect.sync(() => begin(Exit.isFailure(exit) && !Exit.isInterrupted(exit) ? "failure" : "end"))))
})
