/**
 * The deployable deixis Telegram bot. Importing starts nothing; `src/main.ts` runs it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as App from "./App.js"
/** @since 0.1.0 */
export * as Bot from "./Bot.js"
/** @since 0.3.0 */
export * as BotApi from "./BotApi.js"
/** @since 0.1.0 */
export * as BotConfig from "./BotConfig.js"
/** @since 0.3.0 */
export * as Buttons from "./Buttons.js"
/** @since 0.1.0 */
export * as ChatSettings from "./ChatSettings.js"
/** @since 0.3.0 */
export * as Commands from "./Commands.js"
/** @since 0.1.0 */
export * as Dispatcher from "./Dispatcher.js"
/** @since 0.3.0 */
export * as Intake from "./Intake.js"
/** @since 0.3.0 */
export * as Ledger from "./Ledger.js"
/** @since 0.1.0 */
export * as Llm from "./Llm.js"
export * as LlmClient from "./LlmClient.js"
export * as LlmConfig from "./LlmConfig.js"
export * as LlmTurns from "./LlmTurns.js"
/** @since 0.1.0 */
export * as Metrics from "./Metrics.js"
/** @since 0.1.0 */
export * as Ops from "./Ops.js"
/** @since 0.1.0 */
export * as Reminders from "./Reminders.js"
/** @since 0.1.0 */
export * as Replies from "./Replies.js"
/** @since 0.1.0 */
export * as Runner from "./Runner.js"
/** @since 0.1.0 */
export * as TelegramSend from "./TelegramSend.js"
/** @since 0.1.0 */
export * as Times from "./Times.js"
