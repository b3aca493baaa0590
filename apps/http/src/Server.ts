/**
 * The service, composed: every feature a layer, the store chosen by configuration. Nothing
 * starts on import; `main.ts` launches it.
 */
import { HttpApiSwagger, HttpLayerRouter, HttpMiddleware, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { ContextStore, ConversationState, Deixis } from "@deixis/core"
import { ContextLoader, HistoryStore, WritePolicy } from "@deixis/chathistory"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { Api } from "./Api.js"
import * as FastPath from "./FastPath.js"
import * as Gate from "./Gate.js"
import { ApiLive, type TelegramOptions } from "./Handlers.js"
import * as Mcp from "./Mcp.js"
import * as Metrics from "./Metrics.js"
import * as Store from "./Store.js"

export const version = "0.1.0"

export interface ServerOptions {
  readonly port: number
  readonly host: string
  readonly apiToken: Option.Option<Redacted.Redacted<string>>
  readonly maxBodyBytes: number
  readonly telegram: TelegramOptions
  /** Serve the two tool routes from the Node listener (see `FastPath.ts`); default true. */
  readonly fastPath?: boolean | undefined
}

/**
 * PORT, HOST, DEIXIS_API_TOKEN, DEIXIS_HTTP_MAX_BODY_BYTES, DEIXIS_HTTP_FAST_PATH, and the
 * bot's identity for the Telegram mapper (DEIXIS_TELEGRAM_BOT_ID, DEIXIS_TELEGRAM_BOT_USERNAME),
 * with their defaults.
 */
export const config: Config.Config<ServerOptions> = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(8080)),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
  apiToken: Config.option(Config.redacted("DEIXIS_API_TOKEN")),
  maxBodyBytes: Config.integer("DEIXIS_HTTP_MAX_BODY_BYTES").pipe(
    Config.withDefault(1024 * 1024),
    Config.validate({ message: "DEIXIS_HTTP_MAX_BODY_BYTES must be positive", validation: (n) => n > 0 })
  ),
  fastPath: Config.boolean("DEIXIS_HTTP_FAST_PATH").pipe(Config.withDefault(true)),
  telegram: Config.all({
    botId: Config.string("DEIXIS_TELEGRAM_BOT_ID").pipe(Config.option, Config.map(Option.getOrUndefined)),
    botUsername: Config.string("DEIXIS_TELEGRAM_BOT_USERNAME").pipe(Config.option, Config.map(Option.getOrUndefined))
  })
})

/** The core's services and the history side, over the given stores (built once: layers memoize). */
export const services = <E, R>(stores: Layer.Layer<Store.Stores, E, R>) =>
  Layer.mergeAll(ConversationState.layerConfig(), ContextLoader.layerConfig(), WritePolicy.layerConfig).pipe(
    Layer.provideMerge(Layer.merge(Deixis.layerWithConfig(stores), stores))
  )

const health = HttpLayerRouter.add("GET", "/healthz", HttpServerResponse.unsafeJson({ status: "ok" }))

const ready = HttpLayerRouter.add(
  "GET",
  "/readyz",
  Effect.gen(function*() {
    const context = yield* ContextStore.ContextStore
    const history = yield* HistoryStore.HistoryStore
    return yield* Effect.all([context.stats, history.stats]).pipe(
      Effect.as(HttpServerResponse.unsafeJson({ status: "ready" })),
      Effect.catchAll((error) => Effect.succeed(HttpServerResponse.unsafeJson({ status: "unavailable", message: error.message }, { status: 503 })))
    )
  })
)

const metrics = HttpLayerRouter.add("GET", "/metrics", Metrics.handler)

/** Every route of the service. */
export const routes = (options: Pick<ServerOptions, "apiToken" | "maxBodyBytes" | "telegram">) =>
  Layer.mergeAll(
    HttpLayerRouter.addHttpApi(Api, { openapiPath: "/openapi.json" }).pipe(Layer.provide(ApiLive(options.telegram))),
    HttpApiSwagger.layerHttpLayerRouter({ api: Api, path: "/docs" }),
    Mcp.layer({ version }),
    health,
    ready,
    metrics,
    Gate.layer(options)
  )

/**
 * Answers requests that arrive once a stop has begun — after the Effect handler is detached
 * and before the server has closed — with a 503 and `connection: close`, instead of leaving
 * them (and so the server's close) hanging.
 */
const refuseWhileStopping = (server: Server) =>
  Layer.scopedDiscard(Effect.addFinalizer(() =>
    Effect.sync(() => {
      server.on("request", (_request: IncomingMessage, response: ServerResponse) => {
        // The service's own handler is still attached: it answers.
        if (server.listenerCount("request") > 1) return
        const body = JSON.stringify({ _tag: "ShuttingDown", message: "the service is stopping" })
        response.writeHead(503, { "content-type": "application/json", connection: "close" })
        response.end(body)
      })
      server.closeIdleConnections()
    })
  ))

/** The whole service on a Node HTTP server, over the given stores. */
export const layer = <E, R>(options: ServerOptions, stores: Layer.Layer<Store.Stores, E, R>) =>
  Layer.suspend(() => {
    const server = createServer()
    const listen = { port: options.port, host: options.host }
    // One value, so the service and the fast path share one build of it.
    const core = services(stores)
    const http = options.fastPath === false
      ? NodeHttpServer.layer(() => server, listen)
      : FastPath.layerServer(server, listen).pipe(Layer.provideMerge(FastPath.layer(options)), Layer.provide(core))
    // Acquired after the server and its handler, so released first: late requests get an answer.
    return refuseWhileStopping(server).pipe(
      Layer.provideMerge(
        HttpLayerRouter.serve(routes(options), { disableLogger: true, middleware: Gate.finishWrites }).pipe(
          // No tracer is exported by the service: a server span per request (URL parsing,
          // header redaction, a dozen attributes) would be built only to be dropped.
          HttpMiddleware.withTracerDisabledWhen(() => true),
          Layer.provide(core),
          Layer.provideMerge(http)
        )
      )
    )
  })

/** The service configured from the environment. */
export const layerConfig = Layer.unwrapEffect(
  Effect.gen(function*() {
    const options = yield* config
    const choice = yield* Store.config
    return layer(options, Store.layer(choice))
  })
)
