import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"

/** A duration key (`"2 hours"`), read as milliseconds. */
export const millis = (name: string, fallback: Duration.DurationInput): Config.Config<number> =>
  Config.duration(name).pipe(Config.withDefault(Duration.decode(fallback)), Config.map(Duration.toMillis))

/** A positive integer key. */
export const positiveInt = (name: string, fallback: number): Config.Config<number> =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be a positive integer`, validation: (n) => n > 0 })
  )

/** A configuration read with no keys set: its defaults, written once next to their keys. */
export const defaultsOf = <A>(config: Config.Config<A>): A =>
  Effect.runSync(Effect.withConfigProvider(config, ConfigProvider.fromMap(new Map())))

/**
 * A retention key: how long something is kept — a duration (`"30 days"`), or `off` (or `0`):
 * kept without a time limit. Read as milliseconds, 0 standing for off.
 */
export const retention = (name: string, fallback: "off" | Duration.DurationInput): Config.Config<number> =>
  Config.nested(
    Config.mapOrFail(Config.string(), (raw) => {
      const text = raw.trim()
      if (text === "off" || text === "0") return Either.right(0)
      const decoded = Duration.decodeUnknown(text)
      return Option.isSome(decoded) && Duration.toMillis(decoded.value) > 0
        ? Either.right(Duration.toMillis(decoded.value))
        : Either.left(ConfigError.InvalidData([], `Expected a duration ("30 days") or off, but received ${raw}`))
    }),
    name
  ).pipe(Config.withDefault(fallback === "off" ? 0 : Duration.toMillis(Duration.decode(fallback))))
