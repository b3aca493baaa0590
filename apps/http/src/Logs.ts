/**
 * The service's log lines, formatted as core's `Logging` formats them (logfmt or JSON, one line
 * each, the same bytes), but written to stdout in batches, instead of one synchronous
 * `console.log` each (on a pipe, a write system call per line, and the reader woken per line).
 * At the default level, Info, every tool call logs a line: logging took about 40% of the
 * service's CPU per request, most of it those writes (README, Benchmark).
 *
 * Lines are written at most 10 ms after they were logged, at once when 64 KiB are waiting,
 * when the layer is released, and on `process.exit` (so a crash's last lines are written too).
 * A SIGKILL loses at most the last 10 ms of lines.
 *
 * @since 0.2.0
 */
import { Ids, Logging } from "@deixis/core"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogSpan from "effect/LogSpan"

/**
 * Lines waiting for their write.
 *
 * @since 0.2.0
 * @category models
 */
export interface Sink {
  /** Adds a line (without its newline). */
  readonly line: (text: string) => void
  /** Writes every waiting line now. */
  readonly flush: () => void
}

const flushAtBytes = 64 * 1024
const flushAfterMs = 10

/**
 * A sink over `write`, which receives whole lines, newline-terminated, several at a time.
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeSink = (write: (chunk: string) => void): Sink => {
  let pending = ""
  let scheduled: ReturnType<typeof setTimeout> | undefined
  const flush = () => {
    if (scheduled !== undefined) {
      clearTimeout(scheduled)
      scheduled = undefined
    }
    if (pending === "") return
    const chunk = pending
    pending = ""
    write(chunk)
  }
  return {
    line: (text) => {
      pending += text + "\n"
      if (pending.length >= flushAtBytes) flush()
      else if (scheduled === undefined) {
        // Not holding the process open: `process.exit` and the layer's release flush.
        scheduled = setTimeout(flush, flushAfterMs)
        scheduled.unref()
      }
    },
    flush
  }
}

// Effect's logfmt rules (`Logger.logfmtLogger`): a value with no whitespace, `"` or `=` as it is,
// any other JSON-quoted; `"`, `=` and whitespace in a label replaced by `_`.
const textOnly = /^[^\s"=]*$/
const quoted = (value: string) => (textOnly.test(value) ? value : JSON.stringify(value))
// A fiber's name, `#12`, without the set of ids `FiberId.threadName` builds for it.
const threadName = (fiberId: FiberId.FiberId): string =>
  fiberId._tag === "Runtime" ? `#${fiberId.id}` : FiberId.threadName(fiberId)

/**
 * A logger writing `Logger.logfmtLogger`'s line, byte for byte (`test/logs.test.ts` compares
 * them), for less: labels are cleaned once (each logger keeps its own), a fiber's name is not
 * built through a hash set, values are tested rather than matched.
 *
 * @since 0.2.0
 * @category loggers
 */
export const makeLogfmtLogger = (): Logger.Logger<unknown, string> => {
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
    // `Ids.formatTimestamp` is `toISOString`, computed without the Date's own formatting.
    let out = "timestamp=" + quoted(Ids.formatTimestamp(date.getTime()))
    out += " level=" + quoted(logLevel.label)
    out += " fiber=" + quoted(threadName(fiberId))
    if (Array.isArray(message)) {
      for (let i = 0; i < message.length; i++) out += " message=" + quoted(Inspectable.toStringUnknown(message[i], 0))
    } else {
      out += " message=" + quoted(Inspectable.toStringUnknown(message, 0))
    }
    if (!Cause.isEmptyType(cause)) out += " cause=" + quoted(Cause.pretty(cause, { renderErrorCause: true }))
    for (const span of spans) out += " " + LogSpan.render(date.getTime())(span)
    for (const [key, value] of annotations) out += " " + labelOf(key) + "=" + quoted(Inspectable.toStringUnknown(value, 0))
    return out
  })
}

// As `console.log` writes to stdout (Node's Console does the same): a failed write, say to a
// closed pipe, is not the service's error, whether it fails at once or later.
const ignore = () => {}
const afterWrite = (error?: Error | null) => {
  if (error != null && process.stdout.listenerCount("error") === 0) process.stdout.once("error", ignore)
}
const writeStdout = (chunk: string) => {
  process.stdout.once("error", ignore)
  try {
    process.stdout.write(chunk, afterWrite)
  } finally {
    process.stdout.removeListener("error", ignore)
  }
}

/**
 * Core's `Logging.layer` with batched writes: the same format and minimum level, lines to
 * stdout (or to `write`).
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (
  options: Logging.LoggingOptions,
  write: (chunk: string) => void = writeStdout
): Layer.Layer<never> => {
  const format = options.format === "json" ? Logger.jsonLogger : makeLogfmtLogger()
  return Layer.merge(
    Layer.unwrapScoped(
      Effect.map(
        Effect.acquireRelease(
          Effect.sync(() => {
            const sink = makeSink(write)
            process.on("exit", sink.flush)
            return sink
          }),
          (sink) =>
            Effect.sync(() => {
              process.removeListener("exit", sink.flush)
              sink.flush()
            })
        ),
        (sink) => Logger.replace(Logger.defaultLogger, Logger.map(format, sink.line))
      )
    ),
    Logger.minimumLogLevel(options.level)
  )
}

/**
 * {@link layer}, configured from the environment as core's `Logging.layerConfig` is
 * (DEIXIS_LOG_LEVEL, DEIXIS_LOG_FORMAT).
 *
 * @since 0.2.0
 * @category layers
 */
export const layerConfig: Layer.Layer<never, ConfigError.ConfigError> = Layer.unwrapEffect(
  Config.map(Logging.config, (options) => layer(options))
)
