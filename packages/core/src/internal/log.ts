import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as LogLevel from "effect/LogLevel"

/**
 * One compact structured line per tool call. The fields are built only when Info is
 * enabled: annotating costs more than the call itself.
 */
export const logCall = (message: string, fields: () => Record<string, unknown>): Effect.Effect<void> =>
  Effect.flatMap(FiberRef.get(FiberRef.currentMinimumLogLevel), (minimum) =>
    LogLevel.greaterThanEqual(LogLevel.Info, minimum)
      ? Effect.logInfo(message).pipe(Effect.annotateLogs(fields()))
      : Effect.void)
