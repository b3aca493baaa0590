import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

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
