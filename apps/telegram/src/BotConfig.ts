/**
 * The bot's configuration, read from the environment. Every default is written once, here.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Llm from "./Llm.js"

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
 * Retries of Bot API calls: 429 waits `retry_after` (at most `maxDelay`), 5xx and network
 * errors back off exponentially from `baseDelay`; `maxAttempts` bounds both.
 *
 * @since 0.1.0
 * @category models
 */
export interface SendPolicy {
  readonly maxAttempts: number
  readonly baseDelay: Duration.Duration
  readonly maxDelay: Duration.Duration
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
  /** How long a reminder whose message could not be sent waits before the next try. */
  readonly reminderRetryDelay: Duration.Duration
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
  send: { maxAttempts: 5, baseDelay: Duration.seconds(1), maxDelay: Duration.seconds(60) },
  reminderRetryDelay: Duration.minutes(1)
} as const

const transport: Config.Config<Transport> = Config.all({
  url: Config.option(Config.string("BOT_WEBHOOK_URL")),
  secret: Config.option(Config.redacted("BOT_WEBHOOK_SECRET")),
  port: Config.port("BOT_WEBHOOK_PORT").pipe(Config.withDefault(defaults.webhookPort)),
  host: Config.string("BOT_WEBHOOK_HOST").pipe(Config.withDefault(defaults.webhookHost))
}).pipe(Config.map(({ url, ...rest }): Transport =>
  url._tag === "None" ? { _tag: "polling" } : { _tag: "webhook", url: url.value, ...rest }
))

/**
 * `BOT_TOKEN` (required, redacted), `BOT_API_ROOT`, `BOT_GROUP_MODE`, `BOT_WEBHOOK_URL`,
 * `BOT_WEBHOOK_SECRET`, `BOT_WEBHOOK_PORT`, `BOT_WEBHOOK_HOST`, `BOT_SEND_MAX_ATTEMPTS`,
 * `BOT_SEND_BASE_DELAY`, `BOT_SEND_MAX_DELAY`, `BOT_REMINDER_RETRY_DELAY`, and the LLM mode's
 * `LLM_*` keys (`Llm.config`).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<BotConfig> = Config.all({
  token: Config.redacted("BOT_TOKEN"),
  apiRoot: Config.string("BOT_API_ROOT").pipe(Config.withDefault(defaults.apiRoot)),
  mode: Config.literal("talkative", "strict", "smart")("BOT_GROUP_MODE").pipe(Config.withDefault(defaults.mode)),
  transport,
  send: Config.all({
    maxAttempts: Config.integer("BOT_SEND_MAX_ATTEMPTS").pipe(
      Config.withDefault(defaults.send.maxAttempts),
      Config.validate({ message: "BOT_SEND_MAX_ATTEMPTS must be at least 1", validation: (n) => n >= 1 })
    ),
    baseDelay: Config.duration("BOT_SEND_BASE_DELAY").pipe(Config.withDefault(defaults.send.baseDelay)),
    maxDelay: Config.duration("BOT_SEND_MAX_DELAY").pipe(Config.withDefault(defaults.send.maxDelay))
  }),
  reminderRetryDelay: Config.duration("BOT_REMINDER_RETRY_DELAY").pipe(Config.withDefault(defaults.reminderRetryDelay)),
  llm: Llm.config
})
