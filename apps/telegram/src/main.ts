/**
 * The entry point: `node dist/main.js` (compiled) or `node --conditions=@deixis/source
 * --import tsx src/main.ts`. Runs until SIGINT / SIGTERM, then stops within
 * `DEIXIS_SHUTDOWN_TIMEOUT` and exits 0; exits 1 when the configuration is invalid or polling
 * cannot go on, after one Fatal line saying why.
 *
 * @since 0.1.0
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import { program } from "./App.js"

let failed = false

// The log format is the bot's own choice (DEIXIS_LOG_FORMAT); `program` reports its own failure.
NodeRuntime.runMain(Effect.map(program, (outcome) => void (failed = outcome.failed)), {
  disablePrettyLogger: true,
  disableErrorReporting: true,
  teardown: (_exit, onExit) => onExit(failed ? 1 : 0)
})
