import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"

export interface Captured {
  readonly level: string
  readonly message: string
  readonly annotations: Record<string, unknown>
}

/** Runs `effect` with every log (debug included) captured instead of printed. */
export const captureLogs = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<{ readonly result: A; readonly logs: ReadonlyArray<Captured> }, E, R> =>
  Effect.suspend(() => {
    const logs: Array<Captured> = []
    const logger = Logger.make(({ annotations, logLevel, message }) => {
      logs.push({
        level: logLevel.label,
        message: Array.isArray(message) ? message.map(String).join(" ") : String(message),
        annotations: Object.fromEntries(HashMap.toEntries(annotations))
      })
    })
    return effect.pipe(
      Logger.withMinimumLogLevel(LogLevel.Debug),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      Effect.map((result) => ({ result, logs }))
    )
  })
