/**
 * LLM mode's settings (`LLM_*`), apart from the assistant so that the bot's configuration can
 * read them without loading the assistant.
 *
 * @since 0.4.0
 */
import * as PromptAssembler from "@deixis/chathistory/PromptAssembler"
import { DeixisToolkit, UrlReader } from "@deixis/tools"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"

/**
 * @since 0.1.0
 * @category models
 */
export interface LlmConfig {
  /** The server's OpenAI-compatible base, e.g. `http://localhost:11434/v1`; requests go to `/chat/completions`. */
  readonly baseUrl: string
  readonly model: string
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  /** Tool rounds before the model must answer without tools. */
  readonly maxRounds: number
  /** The limit of each model call. */
  readonly timeout: Duration.Duration
  /** Names that address the bot as a whole word, case-insensitive. */
  readonly aliases: ReadonlyArray<string>
  /** Extra instructions appended to the system prompt. */
  readonly instructions: string
  readonly budgets: DeixisToolkit.Budgets
  /** The prompt's token budget (`DEIXIS_PROMPT_*`). */
  readonly prompt: PromptAssembler.PromptBudget
  /** `read_url`'s bounds (`DEIXIS_FETCH_*`). */
  readonly fetch: UrlReader.Settings
}

/**
 * The defaults, written once.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  maxRounds: 6,
  timeout: Duration.seconds(60),
  aliases: [] as ReadonlyArray<string>,
  instructions: ""
} as const

/**
 * `LLM_BASE_URL` (LLM mode is off when unset), `LLM_MODEL` (required with it), `LLM_API_KEY`
 * (optional, redacted), `LLM_MAX_ROUNDS` (6), `LLM_TIMEOUT` (60 seconds), `LLM_ALIASES`
 * (comma-separated, none), `LLM_INSTRUCTIONS` (empty), and the tools' `DEIXIS_TOOLS_BUDGET_*`,
 * the prompt budget's `DEIXIS_PROMPT_*` and `read_url`'s `DEIXIS_FETCH_*` keys. The context
 * loader (`DEIXIS_CONTEXT_*`) is the deixis composition's (`DeixisServices.layerConfig`).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Option.Option<LlmConfig>> = Config.all({
  // An empty value (`LLM_BASE_URL=` in a compose file) means unset.
  baseUrl: Config.option(Config.string("LLM_BASE_URL")).pipe(Config.map(Option.filter((url) => url.trim() !== ""))),
  model: Config.option(Config.string("LLM_MODEL")),
  apiKey: Config.option(Config.redacted("LLM_API_KEY")),
  maxRounds: Config.integer("LLM_MAX_ROUNDS").pipe(
    Config.withDefault(defaults.maxRounds),
    Config.validate({ message: "LLM_MAX_ROUNDS must be at least 0", validation: (n) => n >= 0 })
  ),
  timeout: Config.duration("LLM_TIMEOUT").pipe(Config.withDefault(defaults.timeout)),
  aliases: Config.array(Config.string(), "LLM_ALIASES").pipe(
    Config.map((list) => list.map((a) => a.trim()).filter((a) => a !== "")),
    Config.withDefault(defaults.aliases)
  ),
  instructions: Config.string("LLM_INSTRUCTIONS").pipe(Config.withDefault(defaults.instructions)),
  budgets: DeixisToolkit.config,
  prompt: PromptAssembler.config,
  fetch: UrlReader.config
}).pipe(Config.mapOrFail(({ baseUrl, model, ...rest }) =>
  Option.isNone(baseUrl)
    ? Either.right(Option.none())
    : Option.isNone(model)
    ? Either.left(ConfigError.MissingData(["LLM_MODEL"], "LLM_MODEL is required when LLM_BASE_URL is set"))
    : Either.right(Option.some({ baseUrl: baseUrl.value.replace(/\/+$/, ""), model: model.value, ...rest }))
))

