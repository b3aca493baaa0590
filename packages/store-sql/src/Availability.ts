/**
 * The store errors that say why the database could not be used, so that an edge can answer
 * accordingly (a 503 with `Retry-After`, an update left unconfirmed to be delivered again).
 * Each is a core `StoreError` (the ports' error, HTTP status 503): code that handles
 * `StoreError` keeps working, and code that cares tells them apart with `instanceof`.
 *
 * The stores also log an outage once, when the first statement fails for that reason, and its
 * end once, when the first statement succeeds after it (a full disk: the first committed write);
 * nothing per request in between.
 *
 * @since 0.2.0
 */
import { StoreError } from "@deixis/core/ContextStore"

/**
 * Why a database could not be used: its server cannot be reached (stopped, restarting, the
 * network), its disk is full, or its file is locked by another program past the busy timeout.
 *
 * @since 0.2.0
 * @category models
 */
export type Reason = "unavailable" | "disk_full" | "locked"

/**
 * The database cannot be reached (PostgreSQL stopped or restarting: ECONNREFUSED, 57P01
 * admin_shutdown, 57P03, a connection terminated…). Nothing of the failed operation was
 * written; the same operation can be retried once the database is back.
 *
 * @since 0.2.0
 * @category errors
 */
export class StoreUnavailable extends StoreError {}

/**
 * The disk under the database is full (SQLite's SQLITE_FULL, ENOSPC). The transaction was
 * rolled back: nothing of it was written and the database is intact; writes succeed again once
 * space is freed.
 *
 * @since 0.2.0
 * @category errors
 */
export class StoreFull extends StoreError {}

/**
 * The SQLite file is locked by another program (a transaction it holds) for longer than the
 * busy timeout (`DEIXIS_SQLITE_BUSY_TIMEOUT`) this store waited. Nothing was written.
 *
 * @since 0.2.0
 * @category errors
 */
export class StoreLocked extends StoreError {}

/**
 * Seconds a client is asked to wait before retrying an operation that failed with one of these
 * errors (an HTTP edge's `Retry-After`).
 *
 * @since 0.2.0
 * @category constants
 */
export const retryAfterSeconds = 2

/**
 * Whether `error` is one of this module's errors: the operation failed because the database
 * could not be used, not because of what was asked, and can be retried as it is.
 *
 * @since 0.2.0
 * @category guards
 */
export const isRetryable = (error: unknown): error is StoreUnavailable | StoreFull | StoreLocked =>
  error instanceof StoreUnavailable || error instanceof StoreFull || error instanceof StoreLocked
