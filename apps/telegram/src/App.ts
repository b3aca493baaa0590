/**
 * Composition: the stores the configuration names (`StoreConfig`, the same parser as the HTTP
 * service) → the deixis services with the same core settings as the HTTP service (TTL,
 * scoring, retention, conversation state, history policy) → the bot, its operations server and
 * its connection to Telegram, for as long as the program runs.
 *
 * @since 0.1.0
 */
import * as WritePolicy from "@deixis/chathistory/WritePolicy"
import * as ConversationState from "@deixis/core/ConversationState"
import * as Deixis from "@deixis/core/Deixis"
import * as Logging from "@deixis/core/Logging"
import { StoreConfig } from "@deixis/store-sql"
import { ReminderStore } from "@deixis/core/ReminderStore"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as crypto from "node:crypto"
import * as os from "node:os"
import * as Bot from "./Bot.js"
import * as BotConfig from "./BotConfig.js"
import * as Metrics from "./Metrics.js"
import * as Ops from "./Ops.js"
import * as Runner from "./Runner.js"

/**
 * The bot's services over the given stores (one store instance feeds all of them), configured
 * from the core's `DEIXIS_*` keys.
 *
 * @since 0.1.0
 * @category layers
 */
export const services = <E, R>(stores: Layer.Layer<StoreConfig.Stores, E, R>) =>
  Layer.mergeAll(ConversationState.layerConfig(), WritePolicy.layerConfig).pipe(
    Layer.provideMerge(Layer.merge(Deixis.layerWithConfig(stores), stores))
  )

/**
 * A name for this process in claims: unique even for two processes on one host.
 *
 * @since 0.1.0
 * @category constructors
 */
export const processOwner = (): string => `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString("hex")}`

/**
 * Runs the bot with the given configuration until interrupted (SIGINT / SIGTERM through
 * `NodeRuntime.runMain`), or until polling cannot go on (a failure: the process exits non-zero).
 * Shutdown stops taking updates, gives those being handled `DEIXIS_SHUTDOWN_TIMEOUT`, then
 * interrupts them (an LLM turn included); unfinished ones are handled after the next start.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (config: BotConfig.BotConfig, choice: StoreConfig.StoreChoice) =>
  Effect.scoped(Effect.gen(function*() {
    const bot = yield* Bot.make(config)
    let running: Runner.Running | undefined
    const opsPort = yield* Ops.serve(config.ops, { ready: () => running !== undefined, healthy: () => running?.healthy() ?? true })
    running = yield* Runner.launch(bot, { ...config, owner: processOwner() })
    const live = running
    const reminders = yield* ReminderStore
    const runtime = yield* Effect.runtime<never>()
    Metrics.setProbes({
      queue: () => live.dispatcher.depth(),
      // Read at scrape time; a failing store shows as no value rather than failing the scrape.
      reminders: () =>
        Runtime.runPromise(runtime)(
          Clock.currentTimeMillis.pipe(Effect.flatMap(reminders.stats), Effect.orElseSucceed(() => null))
        )
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => Metrics.setProbes(null)).pipe(Effect.zipRight(Effect.logInfo("bot stopped"))))
    yield* Effect.logInfo("bot started").pipe(Effect.annotateLogs({
      username: `@${live.me.username}`,
      privacy_mode: live.me.can_read_all_group_messages === true
        ? "off (sees every group message)"
        : "on (in groups sees commands, mentions and replies to it only)",
      transport: config.transport._tag === "polling" ? "long polling" : `webhook ${config.transport.url} on port ${live.port}`,
      store: StoreConfig.describeChoice(choice),
      llm: Option.match(config.llm, { onNone: () => "off", onSome: (llm) => `on (${llm.model})` }),
      health: `:${opsPort}/healthz, /metrics`,
      concurrency: config.concurrency,
      default_time_zone: config.timeZone
    }))
    return yield* live.wait
  })).pipe(
    Effect.provide(services(StoreConfig.layer(choice))),
    Effect.provide(Logging.layer(config.logging))
  )

/**
 * The whole program from the environment: `BotConfig.config` and `BotConfig.storeConfig`.
 *
 * @since 0.1.0
 * @category running
 */
export const program = Effect.flatMap(
  Effect.all([BotConfig.config, BotConfig.storeConfig]),
  ([config, choice]) => run(config, choice)
).pipe(
  // A configuration error is reported on one line, as logfmt, before the non-zero exit.
  Effect.tapErrorCause((cause) =>
    Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logFatal("the bot cannot run", cause).pipe(Effect.provide(Logger.logFmt))
  )
)
