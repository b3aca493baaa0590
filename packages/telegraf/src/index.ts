/**
 * @since 0.1.0
 */

/**
 * The pure Update → events / history items mapper (no Telegraf runtime).
 *
 * @since 0.1.0
 */
export * as UpdateMapper from "./UpdateMapper.js"

/**
 * The one recording path: a raw Update to everything deixis records, idempotently.
 *
 * @since 0.1.0
 */
export * as TelegramRecorder from "./TelegramRecorder.js"

/**
 * The framework-neutral part of a bot-framework adapter: recording, and the `ctx.deixis` operations.
 *
 * @since 0.4.0
 */
export * as DeixisAdapter from "./DeixisAdapter.js"

/**
 * The Telegraf middleware (`ctx.deixis`) and the Effect functions it runs.
 *
 * @since 0.1.0
 */
export * as DeixisTelegraf from "./DeixisTelegraf.js"

/**
 * The named decision on every Bot API `Update` and `Message` field: recorded as what, or skipped why.
 *
 * @since 0.4.0
 */
export * as FieldDecisions from "./FieldDecisions.js"
