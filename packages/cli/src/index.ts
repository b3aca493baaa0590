/**
 * @since 0.1.0
 */
export * as Cli from "./Cli.js"
export * as Import from "./Import.js"
export * as TelegramExport from "./TelegramExport.js"
