import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Inspectable from "effect/Inspectable"
import * as LogLevel from "effect/LogLevel"

/**
 * One compact structured line per tool call, at Info: what `Effect.logInfo(message)` under
 * `Effect.annotateLogs(fields())` hands the loggers — the same message, level, fiber, spans,
 * date and annotations (the fiber's own, then the fields, in their order) — in one step.
 * `annotateLogs` sets the annotations as a scoped fiber-ref change, in and out (each set copies
 * the fiber's refs and hashes both annotation maps to compare them): most of a tool call's cost
 * at Info. The fields are built only when Info is enabled and a logger is installed.
 */
export const logCall = (message: string, fields: () => Record<string, unknown>): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    if (LogLevel.greaterThan(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), LogLevel.Info)) return Effect.void
    const loggers = fiber.getFiberRef(FiberRef.currentLoggers)
    if (HashSet.size(loggers) === 0) return Effect.void
    const values = fields()
    const annotations = HashMap.mutate(fiber.getFiberRef(FiberRef.currentLogAnnotations), (map) => {
      for (const key of Object.keys(values)) HashMap.set(map, key, values[key])
    })
    const context = fiber.getFiberRefs()
    const spans = fiber.getFiberRef(FiberRef.currentLogSpan)
    const date = new Date(Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis())
    const options = {
      fiberId: fiber.id(),
      logLevel: LogLevel.Info,
      message: [message],
      cause: Cause.empty,
      context,
      spans,
      annotations,
      date
    }
    Inspectable.withRedactableContext(context, () => {
      for (const logger of loggers) logger.log(options)
    })
    return Effect.void
  })
