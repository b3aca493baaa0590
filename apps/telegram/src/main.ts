/**
 * The entry point: `node --conditions=@deixis/source --import tsx src/main.ts`. Runs until
 * SIGINT / SIGTERM, then stops the bot gracefully (runMain interrupts the layer).
 *
 * @since 0.1.0
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Layer from "effect/Layer"
import { Main } from "./App.js"

Layer.launch(Main).pipe(NodeRuntime.runMain)
