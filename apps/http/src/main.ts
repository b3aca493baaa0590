/**
 * Starts the deixis HTTP service, configured from the environment (see README).
 */
import { NodeRuntime } from "@effect/platform-node"
import * as Layer from "effect/Layer"
import * as Logs from "./Logs.js"
import * as Server from "./Server.js"

// Core's log format and level (DEIXIS_LOG_LEVEL, DEIXIS_LOG_FORMAT), written in batches (`Logs.ts`).
Layer.launch(Server.layerConfig.pipe(Layer.provide(Logs.layerConfig))).pipe(
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
