/**
 * Starts the deixis HTTP service, configured from the environment (see README). It logs why it
 * cannot start or why it stopped on its own (one Fatal line) and exits 1 then; a SIGINT or
 * SIGTERM stops it within DEIXIS_SHUTDOWN_TIMEOUT, exit 0.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Server from "./Server.js"

let failed = false

NodeRuntime.runMain(
  Server.program(Server.layerConfig).pipe(
    // Reported by the program; it ends here without a failure, so the runtime adds no line of
    // its own (with the cause's stack trace) to the one already written.
    Effect.catchAllCause(() => Effect.sync(() => (failed = true)))
  ),
  {
    disablePrettyLogger: true,
    disableErrorReporting: true,
    teardown: (_exit, onExit) => onExit(failed ? 1 : 0)
  }
)
