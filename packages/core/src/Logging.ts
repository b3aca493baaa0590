/**
 * The logger deixis processes run with: a level and a format read from the environment, every
 * line one line. Values are escaped (logfmt quotes them as JSON strings; JSON escapes them), so
 * no field — a chat id, a message, a cause — can forge a line of its own.
 *
 * Two more rules hold for every line, whatever wrote it:
 * - a failure's stack trace is written only when the level is `Debug` or finer; at `Info` a
 *   cause reads as its errors' names and messages, one line;
 * - the secrets the process was given (`LoggingOptions.secrets`: tokens, passwords) never
 *   appear: each is replaced by `<redacted>`, as it is and in the encodings a URL, a JSON string
 *   or a logfmt value would give it.
 *
 * @since 0.2.0
 */
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as FiberId from "effect/FiberId"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as LogSpan from "effect/LogSpan"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { formatTimestamp } from "./Ids.js"

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
  /** Values no line may show (tokens, passwords): each is written as `<redacted>`. */
  readonly secrets?: ReadonlyArray<Redacted.Redacted<string>> | undefined
}

// Every spelling a level is known by: Effect's names (`Warning`, `None`) and labels (`WARN`, `OFF`).
const levelNames: ReadonlyMap<string, LogLevel.LogLevel> = new Map(
  LogLevel.allLevels.flatMap((level) => [[level._tag.toLowerCase(), level], [level.label.toLowerCase(), level]] as const)
)

/**
 * A level from its name, in any case: `All`, `Trace`, `Debug`, `Info`, `Warning` (or `Warn`),
 * `Error`, `Fatal`, `None` (or `Off`); none for anything else.
 *
 * @since 0.3.0
 * @category parsing
 */
export const parseLevel = (text: string): Option.Option<LogLevel.LogLevel> =>
  Option.fromNullable(levelNames.get(text.trim().toLowerCase()))

/**
 * A level key read with {@link parseLevel}; a wrong value is refused naming the key and the
 * spellings it takes.
 *
 * @since 0.3.0
 * @category config
 */
export const level = (name: string): Config.Config<LogLevel.LogLevel> =>
  Config.string().pipe(Config.mapOrFail((text) =>
    Option.match(parseLevel(text), {
      onNone: () =>
        Either.left(ConfigError.InvalidData(
          [],
          `${name} must be one of All, Trace, Debug, Info, Warning, Error, Fatal, None (any case; WARN and OFF too), not ${
            JSON.stringify(text)
          }`
        )),
      onSome: Either.right
    })
  ), Config.nested(name))

/**
 * DEIXIS_LOG_LEVEL (`All`, `Trace`, `Debug`, `Info`, `Warning`, `Error`, `Fatal`, `None`, in
 * any case, `WARN` and `OFF` too; default `Info`) and DEIXIS_LOG_FORMAT (`logfmt` or `json`;
 * default `logfmt`).
 *
 * @since 0.2.0
 * @category config
 */
export const config: Config.Config<LoggingOptions> = Config.all({
  level: level("DEIXIS_LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info)),
  format: Config.literal("logfmt", "json")("DEIXIS_LOG_FORMAT").pipe(Config.withDefault<Format>("logfmt"))
})

/**
 * Whether lines at this minimum level carry stack traces: `Debug` and finer do.
 *
 * @since 0.3.0
 * @category formatting
 */
export const showsStacks = (minimum: LogLevel.LogLevel): boolean => LogLevel.lessThanEqual(minimum, LogLevel.Debug)

const firstLine = (error: Cause.PrettyError): string => {
  const text = `${error.name}: ${error.message}`
  return error.cause === undefined ? text : `${text} [cause]: ${firstLine(error.cause as Cause.PrettyError)}`
}

/**
 * A cause as a log line shows it: with `stack`, as `Cause.pretty` renders it (stack traces and
 * nested causes); without, each error's name and message (and its `cause`'s), one per line.
 *
 * @since 0.3.0
 * @category formatting
 */
export const renderCause = (cause: Cause.Cause<unknown>, stack: boolean): string => {
  if (stack) return Cause.pretty(cause, { renderErrorCause: true })
  if (Cause.isInterruptedOnly(cause)) return "All fibers interrupted without errors."
  return Cause.prettyErrors(cause).map(firstLine).join("\n")
}

/**
 * A function that replaces every given secret in a text by `<redacted>`: the value itself, its
 * URL encodings (`encodeURIComponent`, `encodeURI`: a token in a Bot API URL) and its escaped
 * form inside a JSON string (a logfmt or JSON value). The identity when there is no secret.
 *
 * @since 0.3.0
 * @category formatting
 */
export const makeRedactor = (secrets: Iterable<Redacted.Redacted<string>>): (text: string) => string => {
  const forms = new Set<string>()
  for (const secret of secrets) {
    const value = Redacted.value(secret)
    if (value === "") continue
    for (const form of [value, encodeURIComponent(value), encodeURI(value)]) {
      forms.add(form)
      forms.add(JSON.stringify(form).slice(1, -1))
    }
  }
  if (forms.size === 0) return (text) => text
  // Longest first: a form that contains another is replaced whole. A search per form is a
  // few times cheaper than one regular expression of them all, on every line at Info.
  const ordered = [...forms].sort((a, b) => b.length - a.length)
  return (text) => {
    for (const form of ordered) if (text.includes(form)) text = text.replaceAll(form, "<redacted>")
    return text
  }
}

/**
 * How a logger renders a line: with stack traces or not, and what it redacts.
 *
 * @since 0.3.0
 * @category models
 */
export interface LineOptions {
  readonly stack: boolean
  readonly redact: (text: string) => string
}

/**
 * The line options for the given logging options: stack traces at `Debug` and finer, the
 * secrets redacted.
 *
 * @since 0.3.0
 * @category formatting
 */
export const lineOptions = (options: LoggingOptions): LineOptions => ({
  stack: showsStacks(options.level),
  redact: makeRedactor(options.secrets ?? [])
})

// Effect's logfmt rules (`Logger.logfmtLogger`): a value with no whitespace, `"` or `=` as it is,
// any other JSON-quoted; `"`, `=` and whitespace in a label replaced by `_`.
const textOnly = /^[^\s"=]*$/
const quoted = (value: string) => (textOnly.test(value) ? value : JSON.stringify(value))
// A fiber's name, `#12`, without the set of ids `FiberId.threadName` builds for it.
const threadName = (fiberId: FiberId.FiberId): string =>
  fiberId._tag === "Runtime" ? `#${fiberId.id}` : FiberId.threadName(fiberId)

/**
 * A logfmt logger writing `Logger.logfmtLogger`'s line byte for byte when `stack` is on and
 * nothing is redacted (the tests compare them), for less: labels are cleaned once (each logger
 * keeps its own), a fiber's name is not built through a hash set, values are tested rather than
 * matched. At the HTTP service's default level every tool call logs a line, so this is on its
 * hot path.
 *
 * @since 0.3.0
 * @category loggers
 */
export const makeLogfmtLogger = (options: LineOptions): Logger.Logger<unknown, string> => {
  const labels = new Map<string, string>()
  const labelOf = (key: string): string => {
    let label = labels.get(key)
    if (label === undefined) {
      label = key.replace(/[\s="]/g, "_")
      // Annotation keys are the code's own, a few dozen; the bound only keeps a mistake cheap.
      if (labels.size < 1024) labels.set(key, label)
    }
    return label
  }
  return Logger.make(({ annotations, cause, date, fiberId, logLevel, message, spans }) => {
    // `formatTimestamp` is `toISOString`, computed without the Date's own formatting.
    let out = "timestamp=" + quoted(formatTimestamp(date.getTime()))
    out += " level=" + quoted(logLevel.label)
    out += " fiber=" + quoted(threadName(fiberId))
    if (Array.isArray(message)) {
      for (let i = 0; i < message.length; i++) out += " message=" + quoted(Inspectable.toStringUnknown(message[i], 0))
    } else {
      out += " message=" + quoted(Inspectable.toStringUnknown(message, 0))
    }
    if (!Cause.isEmptyType(cause)) out += " cause=" + quoted(renderCause(cause, options.stack))
    for (const span of spans) out += " " + LogSpan.render(date.getTime())(span)
    for (const [key, value] of annotations) out += " " + labelOf(key) + "=" + quoted(Inspectable.toStringUnknown(value, 0))
    return options.redact(out)
  })
}

// As `Logger.jsonLogger` writes an error given as the message: its own fields, name and message.
const errorToJSON = (u: unknown): unknown =>
  u instanceof Error && !("toJSON" in u) ? { ...u, name: u.name, message: u.message } : u

/**
 * A JSON logger writing `Logger.jsonLogger`'s object, its cause rendered by
 * {@link renderCause}, the line redacted.
 *
 * @since 0.3.0
 * @category loggers
 */
export const makeJsonLogger = (options: LineOptions): Logger.Logger<unknown, string> =>
  Logger.make((input) => {
    const entry = Logger.structuredLogger.log({ ...input, cause: Cause.empty })
    // Overridden in place: the keys keep `Logger.jsonLogger`'s order.
    return options.redact(Inspectable.stringifyCircular({
      ...entry,
      message: Array.isArray(entry.message) ? entry.message.map(errorToJSON) : errorToJSON(entry.message),
      cause: Cause.isEmptyType(input.cause) ? undefined : renderCause(input.cause, options.stack)
    }))
  })

/**
 * The string logger of the chosen format, with the options' stack and redaction rules.
 *
 * @since 0.3.0
 * @category loggers
 */
export const makeLogger = (options: LoggingOptions): Logger.Logger<unknown, string> =>
  (options.format === "json" ? makeJsonLogger : makeLogfmtLogger)(lineOptions(options))

/**
 * Replaces the default logger with the chosen format, at the chosen minimum level, one
 * `console.log` per line.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: LoggingOptions): Layer.Layer<never> =>
  Layer.merge(
    Logger.replace(Logger.defaultLogger, Logger.withConsoleLog(makeLogger(options))),
    Logger.minimumLogLevel(options.level)
  )

/**
 * {@link layer}, configured from the environment.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerConfig: Layer.Layer<never, ConfigError.ConfigError> = Layer.unwrapEffect(
  Config.map(config, layer)
)
