#!/usr/bin/env node
/**
 * The `deixis` executable: a failure an operator can act on (a bad export, a store that does
 * not answer, a configuration error, an unknown chat) is one line on stderr and exit code 1,
 * not a stack trace. Stdout holds the command's output alone (logs go to stderr), and colour
 * only reaches a terminal (see `Cli.colourFor`).
 *
 * @since 0.1.0
 */
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Cli from "./Cli.js"

Cli.run(process.argv.slice(2)).pipe(
  Effect.catchAll((error) =>
    Effect.sync(() => {
      // @effect/cli has already shown a usage error with the help.
      if (!ValidationError.isValidationError(error)) process.stderr.write(`deixis: ${Cli.describeError(error)}\n`)
      process.exitCode = 1
    })
  ),
  Effect.provide(NodeContext.layer),
  // An export or a stats line is read by programs: log lines never mix into it. A log line is
  // one logfmt line on stderr (the default logger prints to stdout itself, and so does the
  // pretty logger runMain would add).
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
  NodeRuntime.runMain({ disableErrorReporting: true, disablePrettyLogger: true })
)
