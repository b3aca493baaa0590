/**
 * The service, composed: every feature a layer, the store chosen by configuration. Nothing
 * starts on import; `main.ts` launches it.
 *
 * A request's path: the Node server (`Edge.ts`: connection bounds, the stop) → the pipeline
 * (`Pipeline.ts`: canonical target, header checks, the route from the one table, authorization,
 * the body read under its limits, the metric record, every answer written) → a fast route's
 * endpoint (`FastPath.ts`) or the Effect app (HttpApi and the routes outside it).
 */
import { HttpApiSwagger, HttpLayerRouter, HttpMiddleware, HttpServerResponse } from "@effect/platform"
import { ContextStore, ConversationState, Deixis } from "@deixis/core"
import { ContextLoader, HistoryStore, WritePolicy } from "@deixis/chathistory"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { ConfigKeys } from "@deixis/core"
import { createServer } from "node:http"
import { Api } from "./Api.js"
import * as Activity from "./Activity.js"
import * as Auth from "./Auth.js"
import * as Edge from "./Edge.js"
import * as FastPath from "./FastPath.js"
import * as Inspector from "./Inspector.js"
import { ApiLive, type TelegramOptions } from "./Handlers.js"
import * as Mcp from "./Mcp.js"
import * as Metrics from "./Metrics.js"
import * as Pipeline from "./Pipeline.js"
import * as Routes from "./Routes.js"
import * as Store from "./Store.js"

export const version = "0.1.0"

export interface ServerOptions extends Auth.CredentialsShape, Edge.EdgeOptions {
  readonly port: number
  readonly host: string
  readonly maxBodyBytes: number
  readonly telegram: TelegramOptions
  /** Answer the routes the route table flags fast from the Node listener (see `FastPath.ts`); default true. */
  readonly fastPath?: boolean | undefined
}

/** Whether an address is reachable from this machine only. */
export const isLoopback = Pipeline.isLoopback

const secret = (name: string, rule: RegExp, what: string) =>
  Config.option(Config.redacted(name)).pipe(
    Config.mapOrFail((value) =>
      Option.isNone(value) || rule.test(Redacted.value(value.value))
        ? Either.right(value)
        : Either.left(ConfigError.InvalidData([name], `${name} must be ${what}`))
    )
  )

/**
 * Every key of the service, with its default (see README, "Configuration"). Without
 * DEIXIS_API_TOKEN the service listens on 127.0.0.1 unless HOST says otherwise; a HOST that
 * is not a loopback address then needs DEIXIS_ALLOW_UNAUTHENTICATED=true, or it refuses to
 * start.
 */
export const config: Config.Config<ServerOptions> = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(8080)),
  host: Config.option(Config.string("HOST")),
  apiToken: secret("DEIXIS_API_TOKEN", /^\S+$/, "a non-empty token without spaces"),
  metricsToken: secret("DEIXIS_METRICS_TOKEN", /^\S+$/, "a non-empty token without spaces"),
  // Telegram's own rule for setWebhook's secret_token.
  telegramSecret: secret("DEIXIS_TELEGRAM_SECRET", /^[A-Za-z0-9_-]{1,256}$/, "1-256 characters A-Z, a-z, 0-9, _ and -"),
  allowUnauthenticated: Config.boolean("DEIXIS_ALLOW_UNAUTHENTICATED").pipe(Config.withDefault(false)),
  maxBodyBytes: ConfigKeys.positiveInt("DEIXIS_HTTP_MAX_BODY_BYTES", 1024 * 1024),
  fastPath: Config.boolean("DEIXIS_HTTP_FAST_PATH").pipe(Config.withDefault(true)),
  headersTimeoutMs: ConfigKeys.millis("DEIXIS_HTTP_HEADERS_TIMEOUT", "10 seconds"),
  requestTimeoutMs: ConfigKeys.millis("DEIXIS_HTTP_REQUEST_TIMEOUT", "30 seconds"),
  keepAliveTimeoutMs: ConfigKeys.millis("DEIXIS_HTTP_KEEP_ALIVE_TIMEOUT", "5 seconds"),
  maxConnections: ConfigKeys.positiveInt("DEIXIS_HTTP_MAX_CONNECTIONS", 1024),
  shutdownTimeoutMs: ConfigKeys.millis("DEIXIS_SHUTDOWN_TIMEOUT", "10 seconds"),
  telegram: Config.all({
    botId: Config.string("DEIXIS_TELEGRAM_BOT_ID").pipe(Config.option, Config.map(Option.getOrUndefined)),
    botUsername: Config.string("DEIXIS_TELEGRAM_BOT_USERNAME").pipe(Config.option, Config.map(Option.getOrUndefined))
  })
}).pipe(
  Config.mapOrFail(({ allowUnauthenticated, host, ...options }): Either.Either<ServerOptions, ConfigError.ConfigError> => {
    const open = Option.isNone(options.apiToken)
    const chosen = Option.getOrElse(host, () => (open ? "127.0.0.1" : "0.0.0.0"))
    if (open && !isLoopback(chosen) && !allowUnauthenticated) {
      return Either.left(ConfigError.InvalidData(
        ["HOST"],
        `refusing to listen on ${chosen} without authentication: set DEIXIS_API_TOKEN (clients then send ` +
          `Authorization: Bearer <token>), or set DEIXIS_ALLOW_UNAUTHENTICATED=true to serve anyone who can reach it`
      ))
    }
    if (options.headersTimeoutMs > options.requestTimeoutMs) {
      return Either.left(ConfigError.InvalidData(
        ["DEIXIS_HTTP_HEADERS_TIMEOUT"],
        "DEIXIS_HTTP_HEADERS_TIMEOUT must not exceed DEIXIS_HTTP_REQUEST_TIMEOUT"
      ))
    }
    return Either.right({ ...options, host: chosen })
  })
)

/** Every default, as the service reads them with no keys set (for tests and embedders). */
export const defaults: ServerOptions = ConfigKeys.defaultsOf(config)

/** The core's services and the history side, over the given stores (built once: layers memoize). */
export const services = <E, R>(stores: Layer.Layer<Store.Stores, E, R>) =>
  Layer.mergeAll(ConversationState.layerConfig(), ContextLoader.layerConfig(), WritePolicy.layerConfig).pipe(
    Layer.provideMerge(Layer.merge(Deixis.layerWithConfig(stores), stores))
  )

const { healthz, metrics, readyz } = Routes.service

const health = HttpLayerRouter.add(healthz.method, healthz.path, HttpServerResponse.unsafeJson({ status: "ok" }))

const ready = HttpLayerRouter.add(
  readyz.method,
  readyz.path,
  Effect.gen(function*() {
    const context = yield* ContextStore.ContextStore
    const history = yield* HistoryStore.HistoryStore
    return yield* Effect.all([context.stats, history.stats]).pipe(
      Effect.as(HttpServerResponse.unsafeJson({ status: "ready" })),
      Effect.catchAll((error) => Effect.succeed(HttpServerResponse.unsafeJson({ status: "unavailable", message: error.message }, { status: 503 })))
    )
  })
)

const metricsRoute = HttpLayerRouter.add(metrics.method, metrics.path, Metrics.handler)

/** Every route of the Effect app (the route table's, `Routes.ts`), which the pipeline feeds. */
export const routes = (options: Pick<ServerOptions, "telegram">) =>
  Layer.mergeAll(
    HttpLayerRouter.addHttpApi(Api, { openapiPath: Routes.service.openapi.path }).pipe(
      Layer.provide(ApiLive(options.telegram)),
      Layer.provide(Auth.layer)
    ),
    HttpApiSwagger.layerHttpLayerRouter({ api: Api, path: Routes.service.docs.path }),
    Mcp.layer({ version }),
    health,
    ready,
    metricsRoute,
    Inspector.layer(),
    Pipeline.layerDefects
  )

/** The whole service on a Node HTTP server, over the given stores. */
export const layer = <E, R>(options: ServerOptions, stores: Layer.Layer<Store.Stores, E, R>) =>
  Layer.suspend(() => {
    // Timeouts are checked every second rather than Node's default 30 (slow clients go sooner).
    const server = createServer({ connectionsCheckingInterval: 1_000 })
    const listen = { port: options.port, host: options.host }
    const credentials = Layer.succeed(Auth.Credentials, options)
    // One value, so the service and the fast path share one build of it.
    const core = Layer.mergeAll(services(stores), credentials, Activity.layer)
    const pipeline = Pipeline.layer({
      maxBodyBytes: options.maxBodyBytes,
      unauthenticated: Option.isNone(options.apiToken) ? { loopback: isLoopback(options.host) } : undefined
    })
    const http = Edge.layerServer(server, listen, options).pipe(
      Layer.provideMerge(options.fastPath === false ? pipeline : pipeline.pipe(Layer.provideMerge(FastPath.layer(options.telegram)))),
      Layer.provideMerge(core)
    )
    return HttpLayerRouter.serve(routes(options), {
      disableLogger: true,
      // The service announces itself, with how it is protected (layerConfig).
      disableListenLog: true,
      routerConfig: Routes.routerConfig
    }).pipe(
      // No tracer is exported by the service: a server span per request (URL parsing,
      // header redaction, a dozen attributes) would be built only to be dropped.
      HttpMiddleware.withTracerDisabledWhen(() => true),
      Layer.provideMerge(core),
      Layer.provideMerge(http)
    )
  })

/** The service configured from the environment, saying where it listens and how it is protected. */
export const layerConfig = Layer.unwrapEffect(
  Effect.gen(function*() {
    const options = yield* config
    const choice = yield* Store.config
    const protection = Option.isSome(options.apiToken)
      ? "bearer token required"
      : isLoopback(options.host)
      ? "no authentication (DEIXIS_API_TOKEN unset): reachable from this machine only"
      : "NO AUTHENTICATION (DEIXIS_ALLOW_UNAUTHENTICATED=true): anyone who can reach this address can read and write"
    const address = `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${options.port}`
    const announce = Layer.effectDiscard(
      (Option.isNone(options.apiToken) && !isLoopback(options.host) ? Effect.logWarning : Effect.logInfo)(
        `deixis ${version} listening on ${address}`
      ).pipe(Effect.annotateLogs({ store: choice._tag, auth: protection, docs: Routes.service.docs.path }))
    )
    // Started last, so stopped first: if the stop itself hangs (a store that never closes),
    // the process still exits, a little after the drain's own bound.
    const backstop = Layer.scopedDiscard(Effect.addFinalizer(() =>
      Effect.sync(() => {
        setTimeout(() => {
          process.stderr.write(`deixis: the stop did not finish within ${options.shutdownTimeoutMs + 5_000} ms; exiting\n`)
          process.exit(1)
        }, options.shutdownTimeoutMs + 5_000).unref()
      })
    ))
    // Built in this order: the service, then the announcement, then the backstop.
    return backstop.pipe(Layer.provideMerge(announce.pipe(Layer.provideMerge(layer(options, Store.layer(choice))))))
  })
)
