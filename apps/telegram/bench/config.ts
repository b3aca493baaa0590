/**
 * The bot's configuration for the benches: long polling against the fake Bot API at `apiRoot`,
 * logging off. Built from the Effect modules the caller passes, so `bench:burst` can build it
 * with another checkout's modules (`BENCH_BASE`) as well as this one's.
 */
import type * as DurationModule from "effect/Duration"
import type * as LogLevelModule from "effect/LogLevel"
import type * as OptionModule from "effect/Option"
import type * as RedactedModule from "effect/Redacted"

export interface Modules {
  readonly Duration: typeof DurationModule
  readonly LogLevel: typeof LogLevelModule
  readonly Option: typeof OptionModule
  readonly Redacted: typeof RedactedModule
}

export const benchConfig = ({ Duration, LogLevel, Option, Redacted }: Modules, apiRoot: string) => ({
  token: Redacted.make("123:BENCH"),
  apiRoot,
  mode: "smart" as const,
  transport: { _tag: "polling" as const },
  send: { maxAttempts: 3, baseDelay: Duration.seconds(1), maxDelay: Duration.seconds(30), timeout: Duration.seconds(15) },
  polling: { timeout: Duration.seconds(10), conflictTimeout: Duration.minutes(5) },
  concurrency: 32,
  recordingConcurrency: 4,
  queueCapacity: 10_000,
  updateLease: Duration.minutes(5),
  updateRetention: Duration.days(2),
  updateMaxAttempts: 5,
  reminderRetryDelay: Duration.minutes(1),
  reminderLease: Duration.minutes(5),
  reminderPollInterval: Duration.seconds(5),
  timeZone: "UTC",
  ops: { port: 0, host: "127.0.0.1" },
  logging: { level: LogLevel.None, format: "logfmt" as const },
  shutdownTimeout: Duration.seconds(10),
  llm: Option.none()
})
