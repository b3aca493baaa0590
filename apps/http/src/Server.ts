/**
 * The service, composed: every feature a layer, the store chosen by configuration. Nothing
 * starts on import; `main.ts` launches it.
 *
 * A request's path: the Node server (`Edge.ts`: connection bounds, the stop) → the pipeline
 * (`Pipeline.ts`: canonical target, header checks, the route from the one table, authorization,
 * the body read once under its limits and parsed once, the metric record) → the endpoint's
 * executor (`Executor.ts`), the MCP edge, or the Effect router for the routes outside the API.
 */
import * as HttpApiSwagger from "@effect/platform/HttpApiSwagger"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { ContextStore } from "@deixis/core"
import { DeixisServices, HistoryStore } from "@deixis/chathistory"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { ConfigKeys, Lifecycle, Logging, Supervisor } from "@deixis/core"
import { StoreConfig } from "@deixis/store-sql"
import { createServer } from "node:http"
import { Api } from "./Api.js"
import * as Activity from "./Activity.js"
import * as Auth from "./Auth.js"
import * as Document from "./Document.js"
import * as Edge from "./Edge.js"
import * as Logs from "./Logs.js"
import * as Inspector from "./Inspector.js"
import { ApiLive, type TelegramOptions } from "./Handlers.js"
import * as Mcp from "./Mcp.js"
import * as Metrics from "./Metrics.js"
import * as Pipeline from "./Pipeline.js"
import * as Routes from "./Routes.js"
import * as Store from "./Store.js"
import { version } from "./Version.js"

export interface ServerOptions extends Auth.CredentialsShape, Edge.EdgeOptions {
  readonly port: number
  readonly host: string
  readonly maxBodyBytes: number
  readonly telegram: TelegramOptions
}

/** Whether an address is reachable from this machine only. */
export const isLoopback = Pipeline.isLoopback

// The keys holding secrets: trimmed, checked, never logged (see `secrets`).
const secretKeys = ["DEIXIS_API_TOKEN", "DEIXIS_METRICS_TOKEN", "DEIXIS_TELEGRAM_SECRET"] as const
const token = { pattern: /^\S+$/, description: "a token without spaces" }

/**
 * Every key of the service, with its default (see README, "Configuration"). Without
 * DEIXIS_API_TOKEN the service listens on 127.0.0.1 unless HOST says otherwise; a HOST that
 * is not a loopback address then needs DEIXIS_ALLOW_UNAUTHENTICATED=true, or it refuses to
 * start.
 */
export const config: Config.Config<ServerOptions> = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(8080)),
  host: Config.option(Config.string("HOST")),
  apiToken: ConfigKeys.secret("DEIXIS_API_TOKEN", token),
  metricsToken: ConfigKeys.secret("DEIXIS_METRICS_TOKEN", token),
  // Telegram's own rule for setWebhook's secret_token.
  telegramSecret: ConfigKeys.secret("DEIXIS_TELEGRAM_SECRET", {
    pattern: /^[A-Za-z0-9_-]{1,256}$/,
    description: "1-256 characters A-Z, a-z, 0-9, _ and -"
  }),
  allowUnauthenticated: Config.boolean("DEIXIS_ALLOW_UNAUTHENTICATED").pipe(Config.withDefault(false)),
  maxBodyBytes: ConfigKeys.positiveInt("DEIXIS_HTTP_MAX_BODY_BYTES", 1024 * 1024),
  headersTimeoutMs: ConfigKeys.millis("DEIXIS_HTTP_HEADERS_TIMEOUT", "10 seconds"),
  requestTimeoutMs: ConfigKeys.millis("DEIXIS_HTTP_REQUEST_TIMEOUT", "30 seconds"),
  keepAliveTimeoutMs: ConfigKeys.millis("DEIXIS_HTTP_KEEP_ALIVE_TIMEOUT", "5 seconds"),
  maxConnections: ConfigKeys.positiveInt("DEIXIS_HTTP_MAX_CONNECTIONS", 1024),
  // The whole stop, under Docker's default grace of 10 s before it kills.
  shutdownTimeoutMs: ConfigKeys.millis("DEIXIS_SHUTDOWN_TIMEOUT", "8 seconds"),
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

/** Deixis over the given stores, configured from `DEIXIS_*` keys: the composition every entrance uses. */
export const services = DeixisServices.layerConfig

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

/**
 * The OpenAPI document, as this configuration enforces it (`Document.ts`), naming the server
 * as the client reached it.
 */
const openapi = (credentials: Auth.CredentialsShape) =>
  HttpLayerRouter.add(
    Routes.service.openapi.method,
    Routes.service.openapi.path,
    Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
      HttpServerResponse.unsafeJson(Document.make(credentials, { host: request.headers["host"] })))
  )

/** The routes outside the API, served by the Effect router (the API's endpoints have their executors). */
export const routes = (options: Auth.CredentialsShape) =>
  Layer.mergeAll(
    openapi(options),
    HttpApiSwagger.layerHttpLayerRouter({ api: Api, path: Routes.service.docs.path }),
    health,
    ready,
    metricsRoute,
    Inspector.layer(),
    Pipeline.layerDefects
  )

/** The whole service on a Node HTTP server, over the given stores. */
export const layer = <E, R>(options: ServerOptions, stores: Layer.Layer<DeixisServices.Stores, E, R>) =>
  Layer.suspend(() => {
    // Timeouts are checked every second rather than Node's default 30 (slow clients go sooner).
    const server = createServer({ connectionsCheckingInterval: 1_000 })
    const listen = { port: options.port, host: options.host }
    const credentials = Layer.succeed(Auth.Credentials, options)
    // One value, so every part shares one build of it.
    const core = Layer.mergeAll(services(stores), credentials, Activity.layer)
    // Every endpoint's executor (its security middleware the one check), and the MCP edge.
    const api = Layer.mergeAll(ApiLive(options.telegram).pipe(Layer.provide(Auth.layer)), Mcp.layer({ version })).pipe(
      Layer.provideMerge(core)
    )
    const pipeline = Pipeline.layer({
      maxBodyBytes: options.maxBodyBytes,
      unauthenticated: Option.isNone(options.apiToken) ? { loopback: isLoopback(options.host) } : undefined
    }, routes(options)).pipe(
      // No tracer is exported by the service: a server span per request (URL parsing,
      // header redaction, a dozen attributes) would be built only to be dropped.
      HttpMiddleware.withTracerDisabledWhen(() => true),
      Layer.provideMerge(api)
    )
    // The rest of DEIXIS_SHUTDOWN_TIMEOUT is for closing the stores after the requests.
    return Edge.layerServer(server, listen, { ...options, shutdownTimeoutMs: Lifecycle.drainBudget(options.shutdownTimeoutMs) }).pipe(
      Layer.provideMerge(pipeline)
    )
  })

/**
 * The secrets the logs must never show: the tokens and the PostgreSQL password.
 *
 * @since 0.3.0
 * @category config
 */
export const secrets: Config.Config<ReadonlyArray<Redacted.Redacted<string>>> = Config.all([config, Store.config]).pipe(
  Config.map(([options, choice]) => [
    ...[options.apiToken, options.metricsToken, options.telegramSecret].flatMap(Option.toArray),
    ...StoreConfig.secretsOf(choice)
  ])
)

/**
 * The service configured from the environment: it says where it listens, on which store, in
 * which version and how it is protected; and at the end, why it stopped and how long that
 * took. The whole stop takes at most DEIXIS_SHUTDOWN_TIMEOUT from the signal.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = Layer.unwrapEffect(
  Effect.gen(function*() {
    const options = yield* config
    const choice = yield* Store.config
    const padded = yield* ConfigKeys.padded(secretKeys)
    const protection = Option.isSome(options.apiToken)
      ? "bearer token required"
      : isLoopback(options.host)
      ? "no authentication (DEIXIS_API_TOKEN unset): reachable from this machine only"
      : "NO AUTHENTICATION (DEIXIS_ALLOW_UNAUTHENTICATED=true): anyone who can reach this address can read and write"
    const address = `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${options.port}`
    const announce = Layer.effectDiscard(Effect.zipRight(
      Effect.forEach(padded, (key) => Effect.logWarning(`${key} had leading or trailing whitespace, which was ignored; remove it from the configuration`)),
      (Option.isNone(options.apiToken) && !isLoopback(options.host) ? Effect.logWarning : Effect.logInfo)(
        `deixis ${version} listening on ${address}`
      ).pipe(Effect.annotateLogs({ store: StoreConfig.describeChoice(choice), auth: protection, docs: Routes.service.docs.path }))
    ))
    // Built in this order: the stop's watch (its line comes last), the service, the
    // announcement, the stop's clock (started first when nothing else started it).
    // The process's supervisor under everything (the stores' long-lived fibers report to it).
    return Layer.scopedDiscard(Lifecycle.starts).pipe(
      Layer.provideMerge(announce.pipe(Layer.provideMerge(layer(options, Store.layer(choice))))),
      Layer.provideMerge(Layer.scopedDiscard(Lifecycle.watch("deixis", options.shutdownTimeoutMs))),
      Layer.provideMerge(Supervisor.layer)
    )
  })
)

/**
 * Runs the service built by `service` (`layerConfig`, or it with a fault injected by a test)
 * until it is interrupted (a signal) — or until one of its long-lived fibers fails for good
 * (core's `Supervisor`: a SQLite writer thread that keeps dying, a supervised fiber out of
 * restarts), when it fails with that `FiberDied` (one Fatal line, exit 1: never a live process
 * that cannot work).
 *
 * @since 0.3.0
 * @category running
 */
export const serve = <E, R>(service: Layer.Layer<Supervisor.Supervisor, E, R>): Effect.Effect<never, E | Supervisor.FiberDied, R> =>
  Effect.scoped(Effect.flatMap(Layer.build(service), (context) => Context.get(context, Supervisor.Supervisor).failed))

/**
 * What `main.ts` runs: the service built by `service` (`layerConfig`; a test's fixture injects
 * a fault into it) with the process's logger, which knows the secrets it must never write — a
 * wrong logging key is reported through the default logger options, a wrong secret by the
 * service's own reading of it. Fails (after one Fatal line) when the service could not start or
 * stopped on its own.
 *
 * @since 0.3.0
 * @category running
 */
export const program = <E>(service: Layer.Layer<Supervisor.Supervisor, E>): Effect.Effect<never, unknown> =>
  Effect.gen(function*() {
    const logging = yield* Effect.either(Logging.config)
    const keys = yield* Effect.orElseSucceed(secrets, () => [])
    return yield* Effect.zipRight(logging, serve(service)).pipe(
      Effect.tapErrorCause(reportFailure),
      Effect.provide(Logs.layer({ ...Either.getOrElse(logging, () => ConfigKeys.defaultsOf(Logging.config)), secrets: keys }))
    )
  })

/**
 * Why the service could not start or stopped on its own, as one Fatal line: a configuration
 * error names its keys; anything else is logged with its cause (its stack trace at Debug).
 * Nothing for an interruption (a signal): that is a stop, told by `deixis stopped`.
 *
 * @since 0.3.0
 * @category logging
 */
export const reportFailure = (cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  const error = Cause.failureOption(cause)
  if (Option.isSome(error) && error.value instanceof Supervisor.FiberDied) return Effect.logFatal(`deixis stopped: ${error.value.message}`)
  return Option.isSome(error) && ConfigError.isConfigError(error.value)
    ? Effect.logFatal(`deixis cannot start: ${ConfigKeys.describeError(error.value)}`)
    : Effect.logFatal("deixis stopped on a failure", cause)
}
