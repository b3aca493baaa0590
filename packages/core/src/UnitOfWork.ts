/**
 * One unit of work over the stores: what a caller runs through {@link UnitOfWork} is written
 * all at once or not at all, and is committed when the call returns.
 *
 * The stores that share a database provide it (`@deixis/store-sql` runs the effect in one SQL
 * transaction, each store call inside it a savepoint, and moves its caches once the transaction
 * committed); without such a store the default runs the effect as it is — the memory stores
 * write each call at once, so a unit is just its calls in order.
 *
 * A caller that records many things in a row (a page of Telegram updates) wraps them in
 * `run`, so the batch costs one commit instead of one per store call:
 *
 * ```ts
 * const unit = yield* UnitOfWork
 * yield* unit.run(Effect.zipRight(ingest.apply(events), history.appendAll(items)))
 * ```
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type { StoreError } from "./ContextStore.js"

/**
 * @since 0.2.0
 * @category models
 */
export interface UnitOfWorkShape {
  /**
   * Runs `effect` as one unit: on success everything it wrote is committed before this
   * returns; on failure nothing it wrote is kept (where the stores can undo it). Nested calls
   * join the outer unit. Fails with `StoreError` when the commit itself fails.
   */
  readonly run: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreError, R>
  /**
   * Whether store calls that do not depend on each other are better sent at once (a context
   * batch and its history items; two reads for one answer): true where each waits for a round
   * trip, and inside a unit both are read in one (`@deixis/store-sql` on PostgreSQL). Elsewhere
   * (memory, SQLite: calls that run on this thread) one after the other costs less. See
   * {@link both}.
   *
   * @since 0.4.0
   */
  readonly callsAtOnce?: boolean | undefined
}

/**
 * The unit that runs its effect as it is: what stores without transactions (the memory
 * stores) offer.
 *
 * @since 0.2.0
 * @category constructors
 */
export const passThrough: UnitOfWorkShape = { run: (effect) => effect }

/**
 * The unit of work of the stores in context; {@link passThrough} unless a store layer provides
 * one (`@deixis/store-sql`'s `layerSqlite` / `layerPg` do).
 *
 * @since 0.2.0
 * @category tags
 */
export class UnitOfWork extends Context.Reference<UnitOfWork>()("@deixis/core/UnitOfWork", {
  defaultValue: (): UnitOfWorkShape => passThrough
}) {}

/**
 * Two store calls that do not depend on each other, as the stores in context run them best
 * (`UnitOfWorkShape.callsAtOnce`): at once — the second in a fiber of its own, joined, and
 * interrupted if the first fails or the caller is interrupted — or one after the other. At
 * once costs about a third of `Effect.all`'s `concurrency: 2` (its fiber scope and queue);
 * one after the other, where the calls run on this thread, saves even that.
 *
 * @since 0.4.0
 * @category combinators
 */
export const both = <A, E, R, B, E2, R2>(
  first: Effect.Effect<A, E, R>,
  second: Effect.Effect<B, E2, R2>
): Effect.Effect<readonly [A, B], E | E2, R | R2> =>
  Effect.flatMap(UnitOfWork, (unit) =>
    unit.callsAtOnce === true
      ? Effect.flatMap(Effect.fork(second), (fiber) =>
        Effect.onExit(
          Effect.zip(first, Fiber.join(fiber)),
          (exit) => (Exit.isSuccess(exit) ? Effect.void : Fiber.interrupt(fiber))
        ))
      : Effect.zip(first, second))
