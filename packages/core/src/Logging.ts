/**
 * The logger deixis processes run with: a level and a format read from the environment, every
 * line one line. Values are escaped (logfmt quotes them as JSON strings; JSON escapes them), so
 * no field — a chat id, a message, a cause — can forge a line of its own.
 *
 * @since 0.2.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"

/**
 * `logfmt` (`timestamp=… level=INFO fiber=#1 message="…" chat_id="-100"`) or `json` (one
 * object per line, for log shippers).
 *
 * @since 0.2.0
 * @category models
 */
export type Format = "logfmt" | "json"

/**
 * @since 0.2.0
 * @category models
 */
export interface LoggingOptions {
  readonly level: LogLevel.LogLevel
  readonly format: Format
}

/**
 * DEIXIS_LOG_LEVEL (`All`, `Trace`, `Debug`, `Info`, `Warning`, `Error`, `Fatal`, `None`;
 * default `Info`) and DEIXIS_LOG_FORMAT (`logfmt` or `json`; default `logfmt`).
 *
 * @since 0.2.0
 * @category config
 */
export const config: Config.Config<LoggingOptions> = Config.all({
  level: Config.logLevel("DEIXIS_LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info)),
  format: Config.literal("logfmt", "json")("DEIXIS_LOG_FORMAT").pipe(Config.withDefault<Format>("logfmt"))
})

/**
 * Replaces the default logger with the chosen format, at the chosen minimum level.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: LoggingOptions): Layer.Layer<never> =>
  Layer.merge(options.format === "json" ? Logger.json : Logger.logFmt, Logger.minimumLogLevel(options.level))

/**
 * {@link layer}, configured from the environment.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerConfig: Layer.Layer<never, ConfigError.ConfigError> = Layer.unwrapEffect(
  Config.map(config, layer)
)
