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

NodeRuntime.runMain(program)
