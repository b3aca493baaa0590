/**
 * Small helpers for `DEIXIS_*` configuration keys, shared by every deixis package so each
 * default is written once, next to its key.
 *
 * @since 0.1.0
 */
export {
  /**
   * A configuration read with no keys set: its defaults.
   *
   * @since 0.1.0
   * @category config
   */
  defaultsOf,
  /**
   * A duration key (`"2 hours"`), read as milliseconds.
   *
   * @since 0.1.0
   * @category config
   */
  millis,
  /**
   * A positive integer key.
   *
   * @since 0.1.0
   * @category config
   */
  positiveInt,
  /**
   * A retention key: a duration (`"30 days"`), or `off` / `0` (kept without a time limit),
   * read as milliseconds with 0 for off.
   *
   * @since 0.2.0
   * @category config
   */
  retention
} from "./internal/config.js"
