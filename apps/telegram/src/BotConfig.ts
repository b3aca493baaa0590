/**
 * The bot's configuration, read from the environment. Every default is written once, here.
 *
 * @since 0.1.0
 */
import * as ConfigKeys from "@deixis/core/ConfigKeys"
import * as Logging from "@deixis/core/Logging"
import { StoreConfig } from "@deixis/store-sql"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as os from "node:os"
import * as path from "node:path"
import * as Llm from "./LlmConfig.js"
import * as Times from "./Times.js"

/**
 * How updates arrive: long polling, or a webhook at `url` (Telegram sends the secret in
 * `X-Telegram-Bot-Api-Secret-Token`; requests without it are refused).
 *
 * @since 0.1.0
 * @category models
 */
export type Transport =
  | { readonly _tag: "polling" }
  | {
    readonly _tag: "webhook"
    readonly url: string
    readonly secret: Option.Option<Redacted.Redacted<string>>
    readonly port: number
    readonly host: string
  }

/**
 * Bot API calls: each attempt is aborted after `timeout`; 429 waits `retry_after` (at most
 * `maxDelay`), 5xx and network errors back off exponentially from `baseDelay`; `maxAttempts`
 * bounds both.
 *
 * @since 0.1.0
 * @category models
 */
export interface SendPolicy {
  readonly maxAttempts: number
  readonly baseDelay: Duration.Duration
  readonly maxDelay: Duration.Duration
  readonly timeout: Duration.Duration
}

/**
 * Long polling: the `getUpdates` long-poll timeout, and how long 409 Conflict (another
 * instance polling, or a webhook set) is retried before the process exits non-zero.
 *
 * @since 0.1.0
 * @category models
 */
export interface PollingPolicy {
  readonly timeout: Duration.Duration
  readonly conflictTimeout: Duration.Duration
}

/**
 * @since 0.1.0
 * @category models
 */
export interface BotConfig {
  readonly token: Redacted.Redacted<string>
  readonly apiRoot: string
  readonly mode: "talkative" | "strict" | "smart"
  readonly transport: Transport
  readonly send: SendPolicy
  readonly polling: PollingPolicy
  /** Answers (commands, LLM turns) handled at once (different chats); one chat's (topic's) updates are always in order. */
  readonly concurrency: number
  /**
   * Runs of updates that need no answer recorded at once (different chats): fewer, while a
   * backlog waits, make larger runs (one unit of work each).
   */
  readonly recordingConcurrency: number
  /** Updates waiting or being handled at most; polling waits and the webhook answers 503 beyond. */
  readonly queueCapacity: number
  /** How long an update being handled is held by its receiver before another process may take it over. */
  readonly updateLease: Duration.Duration
  /** How long handled update ids are remembered (redeliveries within it are skipped). */
  readonly updateRetention: Duration.Duration
  /**
   * How many times an update is handed out to be handled (its receipt included) before it is
   * given up: an update whose recording keeps failing is marked done, logged at Error and
   * counted as `abandoned`.
   */
  readonly updateMaxAttempts: number
  /** How long a reminder whose message could not be sent waits before the next try. */
  readonly reminderRetryDelay: Duration.Duration
  /** How long a process holds a due reminder it is sending before another may take it over. */
  readonly reminderLease: Duration.Duration
  /** The longest the reminder sender sleeps before looking for due reminders again. */
  readonly reminderPollInterval: Duration.Duration
  /** A chat's time zone until `/timezone` sets one. */
  readonly timeZone: string
  /** The health and metrics server: port (0: any free port) and host. */
  readonly ops: { readonly port: number; readonly host: string }
  /** The level and format of the logs (core's `Logging`: every value escaped). */
  readonly logging: Logging.LoggingOptions
  /** How long shutdown waits for updates being handled before interrupting them. */
  readonly shutdownTimeout: Duration.Duration
  /** LLM mode: on when `LLM_BASE_URL` is set (see `Llm.config`). */
  readonly llm: Option.Option<Llm.LlmConfig>
}

/**
 * The defaults, for code that builds a {@link BotConfig} by hand (tests).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  apiRoot: "https://api.telegram.org",
  mode: "smart",
  webhookPort: 8080,
  webhookHost: "0.0.0.0",
  send: { maxAttempts: 5, baseDelay: Duration.seconds(1), maxDelay: Duration.seconds(60), timeout: Duration.seconds(15) },
  polling: { timeout: Duration.seconds(30), conflictTimeout: Duration.minutes(5) },
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
  opsPort: 9464,
  opsHost: "0.0.0.0",
  logging: ConfigKeys.defaultsOf(Logging.config),
  // The whole stop, under Docker's default grace of 10 s before it kills.
  shutdownTimeout: Duration.seconds(8)
} as const

/** An optional key where an empty value (`KEY=` in a compose file) means unset. */
const optional = <A>(config: Config.Config<A>, isEmpty: (a: A) => boolean) =>
  Config.option(config).pipe(Config.map(Option.filter((a) => !isEmpty(a))))

const transport: Config.Config<Transport> = Config.all({
  url: optional(Config.string("BOT_WEBHOOK_URL"), (s) => s.trim() === "").pipe(
    Config.validate({
      message: "BOT_WEBHOOK_URL must be an https:// URL",
      validation: Option.match({ onNone: () => true, onSome: (url) => URL.canParse(url) && url.startsWith("https://") })
    })
  ),
  // Telegram's own rule for setWebhook's secret_token.
  secret: ConfigKeys.secret("BOT_WEBHOOK_SECRET", {
    pattern: /^[A-Za-z0-9_-]{1,256}$/,
    description: "1-256 characters A-Z, a-z, 0-9, _ and -",
    emptyIsUnset: true
  }),
  port: Config.integer("BOT_WEBHOOK_PORT").pipe(
    Config.withDefault(defaults.webhookPort),
    Config.validate({ message: "BOT_WEBHOOK_PORT must be 0..65535", validation: (n) => n >= 0 && n <= 65535 })
  ),
  host: Config.string("BOT_WEBHOOK_HOST").pipe(Config.withDefault(defaults.webhookHost))
}).pipe(Config.map(({ url, ...rest }): Transport =>
  url._tag === "None" ? { _tag: "polling" } : { _tag: "webhook", url: url.value, ...rest }
))

const positive = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be at least 1`, validation: (n) => n >= 1 })
  )

/**
 * The directory the bot keeps its data in (the SQLite file): `DEIXIS_DATA_DIR`, else
 * `$XDG_DATA_HOME/deixis-telegram-bot`, else `~/.local/share/deixis-telegram-bot` — never the
 * source tree. The container image sets `/data`.
 *
 * @since 0.1.0
 * @category config
 */
export const dataDir: Config.Config<string> = Config.string("DEIXIS_DATA_DIR").pipe(
  Config.orElse(() => Config.map(Config.string("XDG_DATA_HOME"), (dir) => path.join(dir, "deixis-telegram-bot"))),
  Config.withDefault(path.join(os.homedir(), ".local", "share", "deixis-telegram-bot"))
)

/**
 * The store choice: `StoreConfig` of `@deixis/store-sql` (the same parser as the HTTP
 * service), its default SQLite file `deixis.sqlite` in {@link dataDir}.
 *
 * @since 0.1.0
 * @category config
 */
export const storeConfig: Config.Config<StoreConfig.StoreChoice> = StoreConfig.configWith(
  Config.map(dataDir, (dir) => path.join(dir, "deixis.sqlite"))
)

/**
 * A bot token's shape: the bot's id, a colon, then letters, digits, `_` and `-`
 * (`123456789:AAE…`, as @BotFather gives it). Checked at start, so a token Telegraf would not
 * recognise — and could not redact from its own errors — never reaches a URL.
 *
 * @since 0.3.0
 * @category config
 */
export const tokenShape = /^\d+:[A-Za-z0-9_-]+$/

/**
 * `BOT_TOKEN`: required, its shape checked, a stray space or newline around it dropped (with a
 * warning at start: see {@link paddedKeys}). Every error names the key and never the value.
 *
 * @since 0.3.0
 * @category config
 */
export const token: Config.Config<Redacted.Redacted<string>> = ConfigKeys.secret("BOT_TOKEN", {
  pattern: tokenShape,
  description: "the token @BotFather gave: the bot's id, a colon, then letters, digits, _ and - (123456789:AAE…)"
}).pipe(Config.mapOrFail(Option.match({
  onNone: () =>
    Either.left(ConfigError.MissingData(["BOT_TOKEN"], "BOT_TOKEN is not set: set it to the token @BotFather gave (123456789:AAE…)")),
  onSome: Either.right
})))

/**
 * The secret keys whose values may come with whitespace to drop, for the warning at start.
 *
 * @since 0.3.0
 * @category config
 */
export const paddedKeys: Config.Config<ReadonlyArray<string>> = ConfigKeys.padded(["BOT_TOKEN", "BOT_WEBHOOK_SECRET"])

/**
 * Every `BOT_*` key, `DEIXIS_LOG_LEVEL`, `DEIXIS_LOG_FORMAT`, `DEIXIS_SHUTDOWN_TIMEOUT`, and the LLM mode's
 * `LLM_*` keys (`Llm.config`).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<BotConfig> = Config.all({
  token,
  apiRoot: Config.string("BOT_API_ROOT").pipe(Config.withDefault(defaults.apiRoot)),
  mode: Config.literal("talkative", "strict", "smart")("BOT_GROUP_MODE").pipe(Config.withDefault(defaults.mode)),
  transport,
  send: Config.all({
    maxAttempts: positive("BOT_SEND_MAX_ATTEMPTS", defaults.send.maxAttempts),
    baseDelay: Config.duration("BOT_SEND_BASE_DELAY").pipe(Config.withDefault(defaults.send.baseDelay)),
    maxDelay: Config.duration("BOT_SEND_MAX_DELAY").pipe(Config.withDefault(defaults.send.maxDelay)),
    timeout: Config.duration("BOT_API_TIMEOUT").pipe(Config.withDefault(defaults.send.timeout))
  }),
  polling: Config.all({
    timeout: Config.duration("BOT_POLL_TIMEOUT").pipe(Config.withDefault(defaults.polling.timeout)),
    conflictTimeout: Config.duration("BOT_POLL_CONFLICT_TIMEOUT").pipe(Config.withDefault(defaults.polling.conflictTimeout))
  }),
  concurrency: positive("BOT_CONCURRENCY", defaults.concurrency),
  recordingConcurrency: positive("BOT_RECORDING_CONCURRENCY", defaults.recordingConcurrency),
  queueCapacity: positive("BOT_QUEUE_CAPACITY", defaults.queueCapacity),
  updateLease: Config.duration("BOT_UPDATE_LEASE").pipe(Config.withDefault(defaults.updateLease)),
  updateRetention: Config.duration("BOT_UPDATE_RETENTION").pipe(Config.withDefault(defaults.updateRetention)),
  updateMaxAttempts: positive("BOT_UPDATE_MAX_ATTEMPTS", defaults.updateMaxAttempts),
  reminderRetryDelay: Config.duration("BOT_REMINDER_RETRY_DELAY").pipe(Config.withDefault(defaults.reminderRetryDelay)),
  reminderLease: Config.duration("BOT_REMINDER_LEASE").pipe(Config.withDefault(defaults.reminderLease)),
  reminderPollInterval: Config.duration("BOT_REMINDER_POLL_INTERVAL").pipe(Config.withDefault(defaults.reminderPollInterval)),
  timeZone: Config.string("BOT_TIMEZONE").pipe(
    Config.withDefault(defaults.timeZone),
    Config.validate({ message: "BOT_TIMEZONE must be an IANA time zone such as Europe/Berlin", validation: Times.isTimeZone })
  ),
  ops: Config.all({
    port: Config.integer("BOT_OPS_PORT").pipe(
      Config.withDefault(defaults.opsPort),
      Config.validate({ message: "BOT_OPS_PORT must be 0..65535", validation: (n) => n >= 0 && n <= 65535 })
    ),
    host: Config.string("BOT_OPS_HOST").pipe(Config.withDefault(defaults.opsHost))
  }),
  logging: Logging.config,
  shutdownTimeout: Config.duration("DEIXIS_SHUTDOWN_TIMEOUT").pipe(Config.withDefault(defaults.shutdownTimeout)),
  llm: Llm.config
})
