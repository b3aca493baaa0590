/**
 * The one reducer through which every ContextStore adapter applies events, so adapters
 * cannot drift. An adapter implements `StateWriter` — synchronous reads and writes within
 * one batch — over its storage (the memory adapter directly; a SQL adapter over rows it
 * loaded for the batch, writing back what changed), and calls `applyEvent` for each event
 * in order.
 *
 * @since 0.1.0
 */
export {
  /**
   * Applies one event: `applied`, `duplicate`, or `skipped` with the failing path.
   *
   * @since 0.1.0
   * @category reducer
   */
  applyEvent,
  /**
   * Applies a batch in order: how many were applied, how many were duplicates, and each
   * skipped event with its index and failing path (`[i].field`).
   *
   * @since 0.1.0
   * @category reducer
   */
  applyEvents,
  /**
   * @since 0.1.0
   * @category models
   */
  type Outcome,
  /**
   * @since 0.1.0
   * @category models
   */
  type StateWriter
} from "./internal/reducer.js"
