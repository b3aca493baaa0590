/**
 * Starts the deixis HTTP service, configured from the environment (see README). It logs why it
 * cannot start or why it stopped on its own (one Fatal line) and exits 1 then; a SIGINT or
 * SIGTERM stops it within DEIXIS_SHUTDOWN_TIMEOUT, exit 0.
 */
import { ConfigKeys, Logging } from "@deixis/core"
import { NodeRuntime } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Logs from "./Logs.js"
import * as Server from "./Server.js"

let failed = false

const program = Effect.gen(function*() {
  // The logger first, knowing the secrets it must never write. A wrong logging key is reported
  // through the default logger options; a wrong secret, by the service's own reading of it.
  const logging = yield* Effect.either(Logging.config)
  const secrets = yield* Effect.orElseSucceed(Server.secrets, () => [])
  return yield* Effect.zipRight(logging, Layer.launch(Server.layerConfig)).pipe(
    Effect.tapErrorCause(Server.reportFailure),
    Effect.provide(Logs.layer({ ...Either.getOrElse(logging, () => ConfigKeys.defaultsOf(Logging.config)), secrets }))
  )
}).pipe(
  // Reported above; the program itself ends without a failure, so the runtime adds no line of
  // its own (with the cause's stack trace) to the one already written.
  Effect.catchAllCause(() => Effect.sync(() => (failed = true)))
)

NodeRuntime.runMain(program, {
  disablePrettyLogger: true,
  disableErrorReporting: true,
  teardown: (_exit, onExit) => onExit(failed ? 1 : 0)
})
