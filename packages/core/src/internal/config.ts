import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

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

/** An optional secret key: trimmed, then checked against `pattern`; errors name the key, never the value. */
export const secret = (
  name: string,
  rule: { readonly pattern: RegExp; readonly description: string; readonly emptyIsUnset?: boolean }
): Config.Config<Option.Option<Redacted.Redacted<string>>> =>
  Config.option(Config.string(name)).pipe(Config.mapOrFail((raw) => {
    if (Option.isNone(raw)) return Either.right(Option.none())
    const value = raw.value.trim()
    if (value === "" && rule.emptyIsUnset === true) return Either.right(Option.none())
    return rule.pattern.test(value)
      ? Either.right(Option.some(Redacted.make(value)))
      : Either.left(ConfigError.InvalidData([name], `${name} ${value === "" ? "is empty" : "has the wrong shape"}: it must be ${rule.description}`))
  }))

/** The keys among `names` whose values start or end with whitespace (which {@link secret} drops). */
export const padded = (names: ReadonlyArray<string>): Config.Config<ReadonlyArray<string>> =>
  Config.all(names.map((name) => Config.option(Config.string(name)))).pipe(Config.map((values) =>
    names.filter((_, i) => {
      const value = values[i]!
      return Option.isSome(value) && value.value.trim() !== "" && value.value.trim() !== value.value
    })
  ))

/** A configuration error as one line: each problem with the key it is about. */
export const describeError = (error: ConfigError.ConfigError): string =>
  ConfigError.reduceWithContext(error, undefined, {
    andCase: (_, left, right) => `${left}; ${right}`,
    orCase: (_, left, right) => `${left}; or ${right}`,
    invalidDataCase: (_, path, message) => withKey(path, message),
    missingDataCase: (_, path, message) => withKey(path, message),
    sourceUnavailableCase: (_, path, message) => withKey(path, message),
    unsupportedCase: (_, path, message) => withKey(path, message)
  })

// Effect's own messages ("Expected an integer value but received abc") do not name the key.
const withKey = (path: ReadonlyArray<string>, message: string) => {
  const key = path.join(".")
  return key === "" || message.startsWith(key) ? message : `${key}: ${message}`
}
