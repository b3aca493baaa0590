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
import { Logging } from "@deixis/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"

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
 * Core's `Logging.layer` with batched writes: the same lines (format, stack traces at Debug
 * only, secrets redacted) and minimum level, to stdout (or to `write`).
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (
  options: Logging.LoggingOptions,
  write: (chunk: string) => void = writeStdout
): Layer.Layer<never> => {
  const format = Logging.makeLogger(options)
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
