/** The service on the memory store, for the benchmark (port from PORT; DEIXIS_HTTP_FAST_PATH=false for the Effect stack alone). */
import { NodeRuntime } from "@effect/platform-node"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Server from "../src/Server.js"
import * as Store from "../src/Store.js"

const level = process.env["DEIXIS_LOG_LEVEL"] === "Info" ? LogLevel.Info : LogLevel.Warning
Server.layer(
  {
    ...Server.defaults,
    port: Number(process.env["PORT"]),
    host: "127.0.0.1",
    apiToken: Option.none(),
    telegram: {},
    fastPath: process.env["DEIXIS_HTTP_FAST_PATH"] !== "false"
  },
  Store.layerMemory
).pipe(Layer.provide(Logger.minimumLogLevel(level)), Layer.launch, NodeRuntime.runMain)
