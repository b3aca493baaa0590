/**
 * The entry point: `node dist/main.js` (compiled) or `node --conditions=@deixis/source
 * --import tsx src/main.ts`. Runs until SIGINT / SIGTERM, then stops gracefully within
 * `DEIXIS_SHUTDOWN_TIMEOUT`; exits non-zero when the configuration is invalid or polling cannot
 * go on.
 *
 * @since 0.1.0
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { program } from "./App.js"

// The log format is the bot's own choice (DEIXIS_LOG_FORMAT); runMain still reports a failure and sets the exit code.
NodeRuntime.runMain(program, { disablePrettyLogger: true, disableErrorReporting: true })
