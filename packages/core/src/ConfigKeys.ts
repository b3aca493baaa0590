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
   * A configuration error as one line for a start-up failure: each problem with the key it
   * is about (`BOT_TOKEN is not set…; PORT: Expected an integer…`).
   *
   * @since 0.3.0
   * @category errors
   */
  describeError,
  /**
   * A duration key (`"2 hours"`), read as milliseconds.
   *
   * @since 0.1.0
   * @category config
   */
  millis,
  /**
   * The keys among the given ones whose values start or end with whitespace, which
   * {@link secret} drops: a process warns about them at start, naming the key.
   *
   * @since 0.3.0
   * @category config
   */
  padded,
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
  retention,
  /**
   * An optional secret key (a token, a password), read as a `Redacted`. Surrounding whitespace
   * is dropped: no secret shape allows it, so a stray space or newline from a paste or a secret
   * file cannot change which secret is meant (see {@link padded} for the warning). The value is
   * then checked against `pattern`; a wrong one is refused naming the key and `description`,
   * never the value. `emptyIsUnset` reads an empty value (`KEY=` in a compose file) as unset.
   *
   * @since 0.3.0
   * @category config
   */
  secret
} from "./internal/config.js"
