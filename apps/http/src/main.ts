/**
 * Starts the deixis HTTP service, configured from the environment (see README).
 */
import { NodeRuntime } from "@effect/platform-node"
import * as Layer from "effect/Layer"
import * as Server from "./Server.js"

Layer.launch(Server.layerConfig).pipe(NodeRuntime.runMain)
