/**
 * Starts the deixis HTTP service, configured from the environment (see README).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Logging } from "@deixis/core"
import * as Layer from "effect/Layer"
import * as Server from "./Server.js"

Layer.launch(Server.layerConfig.pipe(Layer.provide(Logging.layerConfig))).pipe(
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
