/**
 * The service for the benchmark (port from PORT) on the store DEIXIS_STORE names — `memory` (the default here), `sqlite:<file>` or
 * a postgres:// URL (with DEIXIS_PG_SCHEMA) — through the same parser the service uses.
 */
import { NodeRuntime } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Logs from "../src/Logs.js"
import * as Server from "../src/Server.js"
import * as Store from "../src/Store.js"

// The service's own logger (logfmt, batched, as `main.ts` runs it), at Warning unless
// DEIXIS_LOG_LEVEL=Info (the service's default level: a line per tool call).
const level = process.env["DEIXIS_LOG_LEVEL"] === "Info" ? LogLevel.Info : LogLevel.Warning
Server.layer(
  {
    ...Server.defaults,
    port: Number(process.env["PORT"]),
    host: "127.0.0.1",
    apiToken: Option.none(),
    telegram: {}
  },
  Layer.unwrapEffect(Effect.map(Store.config, Store.layer))
).pipe(Layer.provide(Logs.layer({ level, format: "logfmt" })), Layer.launch, NodeRuntime.runMain({ disablePrettyLogger: true }))
