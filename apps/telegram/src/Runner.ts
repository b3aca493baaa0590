/**
 * Runs a built bot against Telegram for the lifetime of a scope:
 *
 * - **Intake** (`Intake.make`): every update is recorded in the `UpdateInbox` before it is
 *   acknowledged (the webhook answers 200, polling moves its offset), then handled through the
 *   dispatcher and settled; see the `Intake` module.
 * - **Long polling** never dies quietly: 409 Conflict (another instance polling, or a webhook
 *   still set) and network errors are logged and retried with back-off; a conflict lasting
 *   `BOT_POLL_CONFLICT_TIMEOUT`, or a refused token, fails {@link Running.wait}, and the
 *   process exits non-zero for its supervisor.
 * - **Webhook**: the secret is checked in constant time, the body bounded, and 200 is answered
 *   once the update is in the inbox (503 when the bot is full: Telegram retries later).
 * - The reminder sender, and `setMyCommands` for private chats and groups.
 *
 * @since 0.1.0
 */
import type * as Supervisor from "@deixis/core/Supervisor"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import type * as SubscriptionRef from "effect/SubscriptionRef"
import * as crypto from "node:crypto"
import * as http from "node:http"
import type { UserFromGetMe } from "telegraf/types"
import * as Bot from "./Bot.js"
import * as Commands from "./Commands.js"
import type { BotConfig } from "./BotConfig.js"
import type * as Dispatcher from "./Dispatcher.js"
import * as Intake from "./Intake.js"
import * as Reminders from "./Reminders.js"
import * as TelegramSend from "./TelegramSend.js"

/**
 * Long polling cannot go on: a 409 Conflict lasted too long, or Telegram refused the token.
 *
 * @since 0.1.0
 * @category errors
 */
export class PollingStopped extends Data.TaggedError("PollingStopped")<{ readonly reason: string }> {
  override get message() {
    return `long polling stopped: ${this.reason}`
  }
}

/**
 * A running bot.
 *
 * @since 0.1.0
 * @category models
 */
export interface Running {
  readonly me: UserFromGetMe
  /** The webhook server's port (null when polling). */
  readonly port: number | null
  readonly dispatcher: Dispatcher.Dispatcher
  readonly sender: Reminders.Sender
  /** Never succeeds; fails when polling cannot go on. */
  readonly wait: Effect.Effect<never, PollingStopped>
  /** Whether the bot is healthy now (polling not stuck in a conflict, not too far behind). */
  readonly healthy: () => boolean
  /** Whether intake can progress (false while its inbox writer is down). */
  readonly ready: SubscriptionRef.SubscriptionRef<boolean>
  /** The intake (the sink the transports hand updates to). */
  readonly intakeService: Intake.Intake
  /** Records an update and queues it (what both transports do); for tests and the bench. */
  readonly intake: (update: unknown, raw?: string) => Effect.Effect<IntakeResult>
}

/**
 * What intake did with an update (see `Intake`).
 *
 * @since 0.1.0
 * @category models
 */
export type IntakeResult = Intake.IntakeResult

/**
 * The settings launch uses.
 *
 * @since 0.1.0
 * @category models
 */
export type LaunchOptions = Pick<
  BotConfig,
  | "transport"
  | "send"
  | "polling"
  | "concurrency"
  | "recordingConcurrency"
  | "queueCapacity"
  | "updateLease"
  | "updateRetention"
  | "updateMaxAttempts"
  | "reminderLease"
  | "reminderRetryDelay"
  | "reminderPollInterval"
  | "shutdownTimeout"
> & {
  /** This process's name in claims (unique per process). */
  readonly owner: string
}



/**
 * Connects a built bot: `getMe`, `setMyCommands`, the dispatcher, the reminder sender, and
 * long polling (after `deleteWebhook`) or the webhook server plus `setWebhook`.
 *
 * @since 0.1.0
 * @category launching
 */
export const launch = (
  bot: Bot.Bot,
  options: LaunchOptions
): Effect.Effect<Running, TelegramSend.SendError, Scope.Scope | Bot.Services | Supervisor.Supervisor> =>
  Effect.gen(function*() {
    const me = yield* bot.api.identify

    yield* Effect.forEach(
      Commands.everywhere,
      (scope) => bot.api.call("setMyCommands", { commands: Commands.listedIn(bot.commands, scope), scope: { type: scope } }),
      { discard: true }
    ).pipe(Effect.catchAll((error) => Effect.logWarning("commands not registered", error)))

    const intakeService = Context.get(
      yield* Layer.build(Intake.layer(bot, { ...options, source: String(me.id) })),
      Intake.IntakeService
    )
    const { dispatcher, intake, ready } = intakeService

    const sender = yield* Reminders.start(dispatcher, {
      owner: options.owner,
      lease: options.reminderLease,
      retryDelay: options.reminderRetryDelay,
      pollInterval: options.reminderPollInterval,
      maxInFlight: Intake.reminderRoom,
      keyOf: (r) => (r.topic_id === null ? r.chat_id : `${r.chat_id}/${r.topic_id}`),
      send: bot.fireReminder
    })

    const stopped = yield* Deferred.make<never, PollingStopped>()
    let healthy = true

    if (options.transport._tag === "polling") {
      yield* bot.api.call("deleteWebhook", { drop_pending_updates: false })
      const loop = poll(bot, options, intakeService, dispatcher.hold, (h) => (healthy = h)).pipe(
        // Whatever ends the loop but shutdown — a failure or a bug — ends `wait` too: never a
        // process that stays up without polling.
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.void
            : Effect.logError("long polling stopped", cause).pipe(Effect.zipRight(Deferred.failCause(stopped, cause)))
        )
      )
      yield* Effect.forkScoped(loop)
      return { me, port: null, dispatcher, sender, wait: Deferred.await(stopped), healthy: () => healthy, intake, ready, intakeService }
    }

    const transport = options.transport
    const secret = Option.match(transport.secret, { onNone: () => crypto.randomBytes(32).toString("hex"), onSome: Redacted.value })
    const port = yield* webhookServer(intake, new URL(transport.url).pathname, secret, transport.port, transport.host)
    yield* bot.api.call("setWebhook", { url: transport.url, secret_token: secret, allowed_updates: [...Bot.allowedUpdates] })
    return { me, port, dispatcher, sender, wait: Deferred.await(stopped), healthy: () => healthy, intake, ready, intakeService }
  })

const poll = (
  bot: Bot.Bot,
  options: LaunchOptions,
  intake: Intake.Intake,
  hold: (held: boolean) => void,
  setHealthy: (healthy: boolean) => void
): Effect.Effect<never, PollingStopped> =>
  Effect.gen(function*() {
    let offset = 0
    let failures = 0
    let conflictSince: number | null = null
    const timeout = Math.max(0, Math.round(Duration.toSeconds(options.polling.timeout)))
    // Telegram's largest page.
    const maxPage = 100
    // The HTTP call may take the long poll's timeout, plus the usual per-call limit.
    const policy = { ...options.send, maxAttempts: 1, timeout: Duration.sum(options.polling.timeout, options.send.timeout) }
    // After a full page, the next is asked for without a long poll: Telegram answers at once,
    // empty when the backlog ended on that page — so recording, held while the backlog is read,
    // does not wait out a long poll (or the hold's timer) for a page that is not coming.
    let fullPage = false
    while (true) {
      // The source pulls what its sink has room for (grammY runner's supplier and sink): a page
      // never holds more updates than intake can queue now, and with no room it waits for some.
      const limit = Math.min(maxPage, yield* intake.room)
      const result = yield* bot.api.call<unknown>(
        "getUpdates",
        { timeout: fullPage ? 0 : timeout, offset, limit, allowed_updates: [...Bot.allowedUpdates] },
        policy
      ).pipe(Effect.either)
      const now = yield* Clock.currentTimeMillis
      // Recording waits (briefly) while a page is taken in and, after a full page (Telegram
      // likely holds more), while the next is read: the commands of a backlog are answered
      // without waiting for its recording, and the backlog is recorded in large runs. Not once
      // three quarters of the queue are taken: under sustained load (the queue stays near full),
      // recording must not idle through every getUpdates round trip.
      const page: number = result._tag === "Right" && Array.isArray(result.right) ? result.right.length : 0
      fullPage = page >= limit
      hold(page > 0 && intake.queued() < options.queueCapacity * 0.75)
      if (result._tag === "Left") {
        const error = result.left
        failures++
        if (error.code === 401 || error.code === 404) {
          return yield* new PollingStopped({ reason: `Telegram refused the bot token (${error.code} ${error.description})` })
        }
        if (error.code === 409) {
          conflictSince ??= now
          setHealthy(false)
          yield* Effect.logError(
            "409 Conflict from getUpdates: another instance is polling with this token, or a webhook is set; retrying"
          ).pipe(Effect.annotateLogs({ description: error.description, conflict_for_ms: now - conflictSince }))
          if (now - conflictSince >= Duration.toMillis(options.polling.conflictTimeout)) {
            return yield* new PollingStopped({ reason: `409 Conflict for ${Duration.format(options.polling.conflictTimeout)}: ${error.description}` })
          }
        } else {
          yield* Effect.logWarning("getUpdates failed; retrying").pipe(
            Effect.annotateLogs({ code: error.code ?? "network", description: error.description, failures })
          )
          if (failures >= 5) setHealthy(false)
        }
        const wait = error.code === 429 && error.retry_after !== null
          ? Duration.seconds(error.retry_after)
          : Duration.min(Duration.times(options.send.baseDelay, 2 ** Math.min(failures - 1, 10)), options.send.maxDelay)
        yield* Effect.sleep(wait)
        continue
      }
      failures = 0
      conflictSince = null
      setHealthy(true)
      const updates = (Array.isArray(result.right) ? (result.right as ReadonlyArray<unknown>) : []).filter((update) => {
        const id = Predicate.isRecord(update) ? update["update_id"] : undefined
        return !(typeof id === "number" && Number.isSafeInteger(id) && id < offset)
      })
      if (updates.length === 0) {
        hold(false)
        continue
      }
      const outcomes = yield* intake.intakeAll(updates.map((update) => ({ update })))
      if (page < limit) hold(false)
      if (outcomes.some((o) => o === "unrecorded" || o === "busy")) {
        hold(false)
        // The store is failing: do not confirm the batch; it comes again with the next poll.
        yield* Effect.sleep(options.send.baseDelay)
        continue
      }
      for (const update of updates) {
        const id = Predicate.isRecord(update) ? update["update_id"] : undefined
        if (typeof id === "number" && Number.isSafeInteger(id) && id >= offset) offset = id + 1
      }
    }
  }).pipe(Effect.ensuring(Effect.sync(() => hold(false))), Effect.annotateLogs({ component: "polling" }))

const secretHeader = "x-telegram-bot-api-secret-token"
const maxBody = 1024 * 1024

/**
 * The webhook server's bounds. Telegram opens at most 100 connections (setWebhook's
 * `max_connections`, 40 by default) and sends each update at once; anyone else who finds the
 * port gets no more than these: connections beyond the bound are closed on arrival, and a
 * client has a few seconds for its headers and its whole request.
 *
 * @since 0.1.0
 * @category constants
 */
export const webhookLimits = {
  maxConnections: 128,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000
} as const

// The secret's digest is computed once; a request's header is hashed to the same length and
// compared in constant time.
const digest = (text: string) => crypto.createHash("sha256").update(text).digest()
const sameSecret = (given: string | Array<string> | undefined, secretDigest: Buffer) =>
  typeof given === "string" && crypto.timingSafeEqual(digest(given), secretDigest)

const webhookServer = (
  intake: (update: unknown, raw?: string) => Effect.Effect<IntakeResult>,
  path: string,
  secret: string,
  port: number,
  host: string
) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const secretDigest = digest(secret)
    const server = http.createServer((req, res) => {
      if (req.method !== "POST" || (req.url ?? "").split("?")[0] !== path) return void res.writeHead(404).end()
      if (!sameSecret(req.headers[secretHeader], secretDigest)) return void res.writeHead(401).end()
      const chunks: Array<Buffer> = []
      let size = 0
      req.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size > maxBody) {
          res.writeHead(413, { connection: "close" }).end()
          req.destroy()
        } else chunks.push(chunk)
      })
      req.on("end", () => {
        if (size > maxBody) return
        const raw = Buffer.concat(chunks).toString("utf8")
        let update: unknown
        try {
          update = JSON.parse(raw)
        } catch {
          return void res.writeHead(400).end()
        }
        void Runtime.runPromise(runtime)(intake(update, raw)).then((outcome) => {
          // Telegram retries anything but 2xx: "busy" and "unrecorded" come back later.
          const status = outcome === "busy" || outcome === "unrecorded" ? 503 : 200
          res.writeHead(status, { "content-type": "application/json" }).end("{}")
        }, () => res.writeHead(500).end())
      })
    })
    server.maxConnections = webhookLimits.maxConnections
    server.headersTimeout = webhookLimits.headersTimeoutMs
    server.requestTimeout = webhookLimits.requestTimeoutMs
    server.keepAliveTimeout = webhookLimits.keepAliveTimeoutMs
    yield* Effect.acquireRelease(
      Effect.async<void, TelegramSend.SendError>((resume) => {
        server.once("error", (error) =>
          resume(Effect.fail(new TelegramSend.SendError({ method: "listen", code: null, description: error.message, retry_after: null }))))
        server.listen(port, host, () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeIdleConnections()
        })
    )
    const address = server.address()
    return typeof address === "object" && address !== null ? address.port : port
  })
