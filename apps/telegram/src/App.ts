/**
 * Composition: the stores the configuration names (`StoreConfig`, the same parser as the HTTP
 * service) → the deixis services with the same core settings as the HTTP service (TTL,
 * scoring, retention, conversation state, history policy) → the bot, its operations server and
 * its connection to Telegram, for as long as the program runs.
 *
 * @since 0.1.0
 */
import * as DeixisServices from "@deixis/chathistory/DeixisServices"
import * as Logging from "@deixis/core/Logging"
import { StoreConfig } from "@deixis/store-sql"
import { ReminderStore } from "@deixis/core/ReminderStore"
import * as ConfigKeys from "@deixis/core/ConfigKeys"
import * as Lifecycle from "@deixis/core/Lifecycle"
import * as Supervisor from "@deixis/core/Supervisor"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as crypto from "node:crypto"
import * as os from "node:os"
import * as Bot from "./Bot.js"
import * as BotConfig from "./BotConfig.js"
import * as Metrics from "./Metrics.js"
import * as Ops from "./Ops.js"
import * as Reminders from "./Reminders.js"
import * as Runner from "./Runner.js"

/**
 * The bot's services over the given stores (one store instance feeds all of them), configured
 * from the core's `DEIXIS_*` keys: chathistory's `DeixisServices.layerConfig`, the composition
 * every entrance uses — the reminder sender's wake-up call (`Reminders.layerWakeup`), the
 * process's supervisor (`Supervisor.layer`) and its metrics registry (`Metrics.layer`).
 *
 * @since 0.1.0
 * @category layers
 */
export const services = <E, R>(stores: Layer.Layer<DeixisServices.Stores, E, R>) =>
  // The supervisor is the stores' too: a SQLite writer thread that keeps dying ends the process.
  Layer.mergeAll(DeixisServices.layerConfig(stores), Reminders.layerWakeup, Metrics.layer).pipe(Layer.provideMerge(Supervisor.layer))

/**
 * The bot's version, from its package.json, as its start line reports it (core's
 * `Lifecycle.versionOf`, read once).
 *
 * @since 0.1.0
 * @category constants
 */
export const version: string = Lifecycle.versionOf("@deixis/telegram-bot", import.meta.url)

/**
 * A name for this process in claims: unique even for two processes on one host.
 *
 * @since 0.1.0
 * @category constructors
 */
export const processOwner = (): string => `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString("hex")}`

/**
 * The secrets the bot's logs must never show: its token, the webhook secret, the LLM API key
 * and a PostgreSQL password.
 *
 * @since 0.3.0
 * @category config
 */
export const secretsOf = (config: BotConfig.BotConfig, choice: StoreConfig.StoreChoice): ReadonlyArray<Redacted.Redacted<string>> => [
  config.token,
  ...(config.transport._tag === "webhook" ? Option.toArray(config.transport.secret) : []),
  ...Option.toArray(Option.flatMap(config.llm, (llm) => llm.apiKey)),
  ...StoreConfig.secretsOf(choice)
]

/**
 * Why the bot could not start or stopped on its own, as one Fatal line: a configuration error
 * names its keys; anything else is logged with its cause (its stack trace at Debug). Nothing
 * for an interruption (a signal): that is a stop, told by `bot stopped`.
 *
 * @since 0.3.0
 * @category logging
 */
export const reportFailure = (cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  const error = Cause.failureOption(cause)
  return Option.isSome(error) && ConfigError.isConfigError(error.value)
    ? Effect.logFatal(`the bot cannot run: ${ConfigKeys.describeError(error.value)}`)
    : Effect.logFatal("the bot cannot run", cause)
}

/**
 * Runs the bot with the given configuration until interrupted (SIGINT / SIGTERM through
 * `NodeRuntime.runMain`), or until polling cannot go on (a failure: reported, then the process
 * exits non-zero). The whole stop takes at most `DEIXIS_SHUTDOWN_TIMEOUT` from the signal:
 * updates being handled get all of it but a reserve for closing the stores (core's `Lifecycle`), then
 * they are interrupted (an LLM turn included) and handled after the next start. The last line
 * says why it stopped and how long that took.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (config: BotConfig.BotConfig, choice: StoreConfig.StoreChoice, padded: ReadonlyArray<string> = []) =>
  runWith(config, StoreConfig.layer(choice), { store: StoreConfig.describeChoice(choice), secrets: secretsOf(config, choice), padded })

/**
 * {@link run} over the given stores (`run` builds them from the configuration): for a test that
 * runs the whole bot in a process of its own over stores it made (a fault injected in one).
 *
 * @since 0.3.0
 * @category running
 */
export const runWith = <E, R>(
  config: BotConfig.BotConfig,
  stores: Layer.Layer<DeixisServices.Stores, E, R>,
  about: { readonly store: string; readonly secrets: ReadonlyArray<Redacted.Redacted<string>>; readonly padded?: ReadonlyArray<string> }
) =>
  Effect.scoped(Effect.gen(function*() {
    yield* Effect.forEach(about.padded ?? [], (key) => Effect.logWarning(`${key} had leading or trailing whitespace, which was ignored; remove it from the configuration`))
    const bot = yield* Bot.make(config)
    const supervisor = yield* Supervisor.Supervisor
    // Ready once connected, and while intake can progress.
    const ready = yield* SubscriptionRef.make(false)
    let running: Runner.Running | undefined
    const opsPort = yield* Ops.serve(config.ops, {
      ready: SubscriptionRef.get(ready),
      healthy: Effect.sync(() => running?.healthy() ?? true)
    })
    running = yield* Runner.launch(bot, {
      ...config,
      shutdownTimeout: Duration.millis(Lifecycle.drainBudget(Duration.toMillis(config.shutdownTimeout))),
      owner: processOwner()
    })
    const live = running
    // Readiness follows the intake's from now on (false the moment its writer is down).
    // Supervised: a relay that died would leave readiness frozen at its last value.
    yield* Supervisor.fork("the readiness relay", live.ready.changes.pipe(Stream.runForEach((up) => SubscriptionRef.set(ready, up))), Supervisor.restart())
    const reminders = yield* ReminderStore
    const runtime = yield* Effect.runtime<never>()
    const metrics = yield* Metrics.Registry
    yield* metrics.probe({
      queue: () => {
        const depth = live.dispatcher.depth()
        return { queued: live.intakeService.queued(), chats: depth.chats, deepest: depth.deepest[0]?.[1] ?? 0 }
      },
      // Read at scrape time; a failing store shows as no value rather than failing the scrape.
      reminders: () =>
        Runtime.runPromise(runtime)(
          Clock.currentTimeMillis.pipe(Effect.flatMap(reminders.stats), Effect.orElseSucceed(() => null))
        )
    })
    yield* Effect.logInfo("bot started").pipe(Effect.annotateLogs({
      version,
      username: `@${live.me.username}`,
      privacy_mode: live.me.can_read_all_group_messages === true
        ? "off (sees every group message)"
        : "on (in groups sees commands, mentions and replies to it only)",
      transport: config.transport._tag === "polling" ? "long polling" : `webhook ${config.transport.url} on port ${live.port}`,
      store: about.store,
      llm: Option.match(config.llm, { onNone: () => "off", onSome: (llm) => `on (${llm.model})` }),
      health: `:${opsPort}/healthz, /metrics`,
      concurrency: config.concurrency,
      recording_concurrency: config.recordingConcurrency,
      default_time_zone: config.timeZone
    }))
    yield* Lifecycle.starts
    // Runs until polling cannot go on, or a supervised fiber fails for good.
    return yield* Effect.raceFirst(live.wait, supervisor.failed)
  })).pipe(
    Effect.provide(services(stores)),
    Effect.tapErrorCause(reportFailure),
    // Watched from before the bot starts; its line comes after everything above is closed.
    (self) => Effect.scoped(Effect.zipRight(Lifecycle.watch("bot", Duration.toMillis(config.shutdownTimeout)), self)),
    Effect.provide(Logging.layer({ ...config.logging, secrets: about.secrets }))
  )

/**
 * The whole program from the environment (`BotConfig.config` and `BotConfig.storeConfig`). It
 * never fails: a failure is reported (one Fatal line, by {@link reportFailure}) and the
 * returned flag says whether there was one, for the exit code. A wrong logging key or another
 * configuration error is reported with the default logger options; none of their messages
 * shows a value.
 *
 * @since 0.1.0
 * @category running
 */
export const program: Effect.Effect<{ readonly failed: boolean }> = Effect.gen(function*() {
  const read = yield* Effect.either(Effect.all([BotConfig.config, BotConfig.storeConfig, BotConfig.paddedKeys]))
  if (Either.isLeft(read)) {
    const logging = yield* Effect.orElseSucceed(Logging.config, () => BotConfig.defaults.logging)
    return yield* reportFailure(Cause.fail(read.left)).pipe(Effect.provide(Logging.layer(logging)), Effect.as({ failed: true }))
  }
  const [config, choice, padded] = read.right
  return yield* run(config, choice, padded).pipe(
    Effect.as({ failed: false }),
    // Reported by `run`: nothing more is logged, so the runtime adds no line of its own.
    Effect.catchAllCause((cause) => Effect.succeed({ failed: !Cause.isInterruptedOnly(cause) }))
  )
})
