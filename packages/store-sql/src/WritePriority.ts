/**
 * Which writes go first when the store is busy. A write made while {@link urgent} is set on its
 * fiber — an answer someone waits for, and what that answer records — goes ahead of the backlog
 * of ordinary writes (recording) queued for the same database: on SQLite it is sent to the
 * writer thread at once, behind at most a few ordinary calls, rather than behind all of them.
 * Order within a fiber, and what each write commits, are unchanged; only the queue's order
 * across fibers is.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"

/**
 * Whether the writes of this fiber (and the fibers it forks) are urgent; false by default.
 *
 * @since 0.1.0
 * @category fiber refs
 */
export const urgent: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

/**
 * Runs `effect` with its writes urgent.
 *
 * @since 0.1.0
 * @category combinators
 */
export const asUrgent = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => Effect.locally(effect, urgent, true)
