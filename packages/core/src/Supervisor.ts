/**
 * Supervision of a process's long-lived fibers (a writer, a sweep, a sender, a fan-out): a fiber
 * that fails or dies is either restarted — with a log line at Error naming it, after a short
 * back-off — or, once its restarts are spent (or when it may not restart), it ends the process:
 * {@link Supervisor}'s `failed` fails with {@link FiberDied}, which the app's main turns into
 * one Fatal line and a non-zero exit. Never a live process whose fiber quietly died.
 *
 * The HTTP service and the Telegram bot both use it (one helper, as they share `Lifecycle`).
 *
 * @since 0.3.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"

/**
 * A supervised fiber failed for good: the process must stop.
 *
 * @since 0.3.0
 * @category errors
 */
export class FiberDied extends Data.TaggedError("FiberDied")<{
  readonly fiber: string
  readonly restarts: number
  readonly cause: Cause.Cause<unknown>
}> {
  override get message() {
    return `${this.fiber} failed${this.restarts > 0 ? ` after ${this.restarts} restarts` : ""}: ${Cause.pretty(this.cause).split("\n")[0]}`
  }
}

/**
 * The process's supervisor: where a fiber that cannot go on says so (`fatal`), and what the
 * main program waits on beside its work (`failed`, which fails with the first such death).
 *
 * @since 0.3.0
 * @category tags
 */
export class Supervisor extends Context.Tag("@deixis/core/Supervisor")<Supervisor, {
  readonly fatal: (died: FiberDied) => Effect.Effect<void>
  readonly failed: Effect.Effect<never, FiberDied>
}>() {}

/**
 * A supervisor for one process (or one test).
 *
 * @since 0.3.0
 * @category layers
 */
export const layer: Layer.Layer<Supervisor> = Layer.effect(
  Supervisor,
  Effect.map(Deferred.make<never, FiberDied>(), (died) => ({
    fatal: (error) => Effect.asVoid(Deferred.fail(died, error)),
    failed: Deferred.await(died)
  }))
)

/**
 * What a fiber does after a failure or a defect: restart (at most `limit` times in a row without
 * running `healthyAfter` in between — then the process stops), or stop the process at once.
 *
 * @since 0.3.0
 * @category models
 */
export type Policy =
  | { readonly _tag: "Restart"; readonly limit: number; /** Real time. */ readonly healthyAfter: Duration.Duration; readonly delay: Duration.Duration; readonly maxDelay: Duration.Duration }
  | { readonly _tag: "Restart forever"; readonly delay: Duration.Duration; readonly maxDelay: Duration.Duration }
  | { readonly _tag: "Stop" }

/**
 * The policy of {@link restartForever}.
 *
 * @since 0.3.0
 * @category models
 */
export type RestartForever = Extract<Policy, { readonly _tag: "Restart forever" }>

/**
 * Restarts up to `limit` times in a row (100 ms back-off, doubled each time up to 2 s; a run of
 * a minute without failing starts the count again), then stops the process. Five restarts
 * take about 3 s.
 *
 * @since 0.3.0
 * @category policies
 */
export const restart = (options: { readonly limit?: number; readonly healthyAfter?: Duration.DurationInput; readonly delay?: Duration.DurationInput } = {}): Policy => ({
  _tag: "Restart",
  limit: options.limit ?? 5,
  healthyAfter: Duration.decode(options.healthyAfter ?? "1 minute"),
  delay: Duration.decode(options.delay ?? "100 millis"),
  maxDelay: Duration.seconds(2)
})

/**
 * Restarts every time, backing off up to `maxDelay`: for periodic work (a sweep) whose failure
 * costs nothing but a late run, so it never stops the process.
 *
 * @since 0.3.0
 * @category policies
 */
export const restartForever = (options: { readonly delay?: Duration.DurationInput; readonly maxDelay?: Duration.DurationInput } = {}): RestartForever => ({
  _tag: "Restart forever",
  delay: Duration.decode(options.delay ?? "1 second"),
  maxDelay: Duration.decode(options.maxDelay ?? "1 minute")
})

/**
 * Stops the process on the first failure.
 *
 * @since 0.3.0
 * @category policies
 */
export const stop: Policy = { _tag: "Stop" }

/**
 * What a supervised fiber's life looks like from outside: `onDown` runs when it failed (before
 * the back-off), `onUp` each time it starts — readiness follows them.
 *
 * @since 0.3.0
 * @category models
 */
export interface Hooks {
  readonly onUp?: Effect.Effect<void> | undefined
  readonly onDown?: ((cause: Cause.Cause<unknown>) => Effect.Effect<void>) | undefined
}

/**
 * Runs `effect` under `policy` in its own fiber for the lifetime of the scope; `name` is what
 * log lines and the Fatal line call it. The fiber ending normally (or being interrupted, by the
 * scope closing) ends the supervision; a failure or a defect is restarted or stops the process.
 * A policy that can stop the process needs the {@link Supervisor}.
 *
 * @since 0.3.0
 * @category supervising
 */
export const fork = <E, R>(
  name: string,
  effect: Effect.Effect<unknown, E, R>,
  policy: Policy,
  hooks: Hooks = {}
): Effect.Effect<Fiber.RuntimeFiber<void>, never, R | Scope.Scope | Supervisor> =>
  Effect.forkScoped(run(name, effect, policy, hooks))

/**
 * {@link fork} for a policy that never stops the process ({@link restartForever}): needs no
 * {@link Supervisor}, so a package's own background work (a store's sweep) can use it.
 *
 * @since 0.3.0
 * @category supervising
 */
export const forkRestarting = <E, R>(
  name: string,
  effect: Effect.Effect<unknown, E, R>,
  policy: RestartForever = restartForever(),
  hooks: Hooks = {}
): Effect.Effect<Fiber.RuntimeFiber<void>, never, R | Scope.Scope> =>
  Effect.forkScoped(run(name, effect, policy, hooks) as Effect.Effect<void, never, R>)

const run = <E, R>(name: string, effect: Effect.Effect<unknown, E, R>, policy: Policy, hooks: Hooks): Effect.Effect<void, never, R | Supervisor> =>
  Effect.gen(function*() {
    let restarts = 0
    for (;;) {
      // Real time, not the Clock: the supervisor must not depend on what it supervises.
      const started = performance.now()
      if (hooks.onUp !== undefined) yield* hooks.onUp
      const exit = yield* Effect.exit(effect)
      if (exit._tag === "Success" || Cause.isInterruptedOnly(exit.cause)) return
      const cause = exit.cause
      if (hooks.onDown !== undefined) yield* hooks.onDown(cause)
      const ended = performance.now()
      if (policy._tag === "Restart" && ended - started >= Duration.toMillis(policy.healthyAfter)) restarts = 0
      if (policy._tag === "Stop" || (policy._tag === "Restart" && restarts >= policy.limit)) {
        const supervisor = yield* Supervisor
        return yield* supervisor.fatal(new FiberDied({ fiber: name, restarts, cause }))
      }
      const delay = Duration.min(Duration.times(policy.delay, 2 ** Math.min(restarts, 20)), policy.maxDelay)
      restarts++
      yield* Effect.logError(`${name} failed; restarting it`, cause).pipe(
        Effect.annotateLogs({ fiber: name, restart: restarts, restart_in_ms: Duration.toMillis(delay) })
      )
      yield* Effect.sleep(delay)
    }
  })
