/**
 * The store's outage as the bot's fibers see it: a failure because the database cannot be used
 * (unreachable, disk full, file locked — `Availability` of `@deixis/store-sql`), not because of
 * the update. The store logs an outage once and its end once; the intake and the reminder sender
 * log such failures at Debug, so an outage is not a line per request, and retry them instead of
 * treating the update as failed.
 *
 * @since 0.3.0
 */
import * as Availability from "@deixis/store-sql/Availability"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Schedule from "effect/Schedule"

/**
 * Whether `error` (a store error, an error wrapping one in `cause`, or a `Cause`) is the store's outage.
 *
 * @since 0.3.0
 * @category guards
 */
export const isOutage = (error: unknown): boolean => {
  if (Cause.isCause(error)) {
    const failures = [...Cause.failures(error)]
    return failures.length > 0 && failures.every(isOutage)
  }
  if (Availability.isRetryable(error)) return true
  const cause = typeof error === "object" && error !== null ? (error as { readonly cause?: unknown }).cause : undefined
  return cause !== undefined && cause !== error && Availability.isRetryable(cause)
}

/**
 * `effect`, tried again on `schedule` while it fails with the store's outage, as
 * `Effect.retry({ while: isOutage, schedule })` does. `Effect.retry` starts its schedule on
 * every run, the ones that succeed too, at more cost than a store call on this thread; here the
 * schedule starts at the first outage, which it takes as its first failure.
 *
 * @since 0.4.0
 * @category retrying
 */
export const retryOutage = (schedule: Schedule.Schedule<unknown, unknown>) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.catchIf(effect, isOutage, (first) => {
    let replayed = false
    return Effect.retry(
      Effect.suspend(() => {
        if (replayed) return effect
        replayed = true
        return Effect.fail(first)
      }),
      { while: isOutage, schedule }
    )
  })

/**
 * Logs a failure at `level`, or at Debug when it is the store's outage (already logged once by the store).
 *
 * @since 0.3.0
 * @category logging
 */
export const logFailure = (level: "Warning" | "Error", message: string, error: unknown): Effect.Effect<void> =>
  isOutage(error) ? Effect.logDebug(message, error) : level === "Error" ? Effect.logError(message, error) : Effect.logWarning(message, error)
