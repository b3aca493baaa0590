/**
 * Runs a built bot against Telegram for the lifetime of a scope:
 *
 * - **Intake**: every update is recorded in the `UpdateInbox` before it is acknowledged (the
 *   webhook answers 200, polling moves its offset); a redelivered `update_id` is skipped; the
 *   update is then handled through the {@link Dispatcher} (one chat's — topic's — updates in
 *   order, chats in parallel, bounded) and marked done. Updates whose handler died with its
 *   process, or whose recording failed in a store (then no handler ran), are handed out again
 *   when their lease ends (here or in another process), at most `BOT_UPDATE_MAX_ATTEMPTS`
 *   times in all; then they are given up (marked done, logged at Error, counted `abandoned`).
 *   A handler's own failure (a bug, a send Telegram refused) is logged and the update marked
 *   done: handling it again would repeat what it already sent.
 * - **Long polling** never dies quietly: 409 Conflict (another instance polling, or a webhook
 *   still set) and network errors are logged and retried with back-off; a conflict lasting
 *   `BOT_POLL_CONFLICT_TIMEOUT`, or a refused token, fails {@link Running.wait}, and the
 *   process exits non-zero for its supervisor.
 * - **Webhook**: the secret is checked in constant time, the body bounded, and 200 is answered
 *   once the update is in the inbox (503 when the bot is full: Telegram retries later).
 * - The reminder sender, `setMyCommands` for private chats and groups, and the inbox sweep.
 *
 * @since 0.1.0
 */
import { UpdateInbox } from "@deixis/core/UpdateInbox"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as crypto from "node:crypto"
import * as http from "node:http"
import type { UserFromGetMe } from "telegraf/types"
import * as Bot from "./Bot.js"
import type { BotConfig } from "./BotConfig.js"
import * as Dispatcher from "./Dispatcher.js"
import * as Metrics from "./Metrics.js"
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
  /** Records an update and queues it (what both transports do); for tests and the bench. */
  readonly intake: (update: unknown, raw?: string) => Effect.Effect<IntakeResult>
}

/**
 * What intake did with an update.
 *
 * @since 0.1.0
 * @category models
 */
export type IntakeResult = "queued" | "deferred" | "duplicate" | "malformed" | "busy" | "unrecorded"

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


type CallApiSignal = NonNullable<NonNullable<Parameters<Bot.Bot["telegraf"]["telegram"]["callApi"]>[2]>["signal"]>

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
): Effect.Effect<Running, TelegramSend.SendError, Scope.Scope | Bot.Services> =>
  Effect.gen(function*() {
    const inbox = yield* UpdateInbox
    const me = yield* bot.call<UserFromGetMe>("getMe", {})
    bot.telegraf.botInfo = me
    const source = String(me.id)
    const lease = Duration.toMillis(options.updateLease)

    yield* Effect.forEach(
      [{ type: "all_private_chats" }, { type: "all_group_chats" }, { type: "default" }],
      (scope) => bot.call("setMyCommands", { commands: Bot.commands, scope }),
      { discard: true }
    ).pipe(Effect.catchAll((error) => Effect.logWarning("commands not registered", error)))

    // Handled ids are marked done in batches (one write per 50 ms, not one per update). An id
    // not yet written when the process dies is handled again after the next start.
    const handled: Array<number> = []
    const flushDone = Effect.suspend(() => {
      const ids = handled.splice(0, handled.length)
      return ids.length === 0 ? Effect.void : inbox.done(source, ids).pipe(
        Effect.catchAll((error) => Effect.logWarning("updates not marked done; they may be handled again", error))
      )
    })
    // Registered before the dispatcher, so it runs after the dispatcher has drained on shutdown.
    yield* Effect.addFinalizer(() => flushDone)
    yield* flushDone.pipe(Effect.repeat(Schedule.spaced(Duration.millis(50))), Effect.forkScoped)

    // Acquired before the transports, so it is released after them: on shutdown the
    // transports stop taking updates first, then the dispatcher drains (bounded).
    const dispatcher = yield* Dispatcher.make({
      concurrency: options.concurrency,
      capacity: options.queueCapacity,
      shutdownTimeout: options.shutdownTimeout
    })
    // One chat (or topic) holds at most a quarter of the queue: a chat whose calls hang or
    // are throttled, flooded with updates, must not fill it and stall every other chat.
    const perKey = Math.max(1, Math.floor(options.queueCapacity / 4))

    const task = (update: unknown, arrived: number) =>
      bot.handle(update).pipe(
        Effect.matchEffect({
          // Not recorded, so not handled: left unfinished, it is handed out again when its claim ends.
          onFailure: (error) =>
            Effect.logWarning("update not recorded, so not handled; it is handled again when its claim ends (BOT_UPDATE_LEASE)", error).pipe(
              Effect.annotateLogs({ update_id: (update as { update_id: number }).update_id }),
              Effect.zipRight(Effect.sync(() => Metrics.updates.inc({ outcome: "unrecorded" })))
            ),
          onSuccess: () =>
            Effect.sync(() => {
              handled.push((update as { update_id: number }).update_id)
              Metrics.updates.inc({ outcome: "handled" })
              Metrics.updateSeconds.observe((performance.now() - arrived) / 1000)
            })
        })
      )
    // Claimed updates with no room in their chat's share: their claim stands, and this
    // hand-out is not counted as an attempt.
    const defer = (ids: ReadonlyArray<number>) =>
      ids.length === 0 ? Effect.void : inbox.defer(source, ids).pipe(
        Effect.catchAll((error) => Effect.logWarning("deferred updates not given back their attempt", error))
      )

    const intakeAll = (items: ReadonlyArray<{ readonly update: unknown; readonly raw?: string | undefined }>) =>
      Effect.gen(function*() {
        const arrived = performance.now()
        const results: Array<IntakeResult> = items.map(() => "queued")
        const valid: Array<{ readonly index: number; readonly update: Record<string, unknown>; readonly id: number; readonly payload: string }> = []
        for (const [index, { raw, update }] of items.entries()) {
          const payload = Predicate.isRecord(update) && Number.isSafeInteger(update["update_id"]) ? raw ?? serialise(update) : undefined
          if (payload === undefined || !Predicate.isRecord(update)) {
            Metrics.updates.inc({ outcome: "malformed" })
            yield* Effect.logWarning("malformed update ignored")
            results[index] = "malformed"
          } else valid.push({ index, update, id: update["update_id"] as number, payload })
        }
        if (valid.length === 0) return results
        if (dispatcher.depth().queued + valid.length > options.queueCapacity) {
          for (const v of valid) results[v.index] = "busy"
          return results
        }
        const fresh = yield* inbox.receive({
          source,
          updates: valid.map((v) => ({ update_id: v.id, payload: v.payload })),
          owner: options.owner,
          now: yield* Clock.currentTimeMillis,
          lease
        }).pipe(Effect.either)
        if (fresh._tag === "Left") {
          yield* Effect.logError("updates not recorded", fresh.left).pipe(Effect.annotateLogs({ updates: valid.length }))
          for (const v of valid) results[v.index] = "unrecorded"
          return results
        }
        const recorded = new Set(fresh.right)
        const deferred: Array<number> = []
        for (const v of valid) {
          if (!recorded.has(v.id)) {
            Metrics.updates.inc({ outcome: "duplicate" })
            yield* Effect.logDebug("redelivered update skipped").pipe(Effect.annotateLogs({ update_id: v.id }))
            results[v.index] = "duplicate"
            continue
          }
          // An id repeated in one batch is handled once.
          recorded.delete(v.id)
          const key = Dispatcher.keyOf(v.update)
          if (dispatcher.depthOf(key) >= perKey) {
            // Held in the inbox, unfinished: handed out again when its claim ends.
            Metrics.updates.inc({ outcome: "deferred" })
            yield* Effect.logWarning("chat's share of the queue is full; update deferred until its claim ends").pipe(
              Effect.annotateLogs({ update_id: v.id, key })
            )
            results[v.index] = "deferred"
            deferred.push(v.id)
            continue
          }
          // Before it queues behind its chat: a newer message may cancel the sender's LLM turn.
          yield* bot.preempt(v.update)
          yield* dispatcher.submit(key, task(v.update, arrived))
        }
        yield* defer(deferred)
        return results
      })

    const intake = (update: unknown, raw?: string): Effect.Effect<IntakeResult> =>
      Effect.map(intakeAll([{ update, raw }]), (results) => results[0]!)

    // Updates received (here or by a process that died) but never marked done.
    yield* Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const stale = yield* inbox.claimStale({ source, now, owner: options.owner, lease, limit: 100 })
      const deferred: Array<number> = []
      for (const s of stale) {
        if (s.attempts > options.updateMaxAttempts) {
          // Handled (and failed) as often as allowed: given up, never handed out again.
          handled.push(s.update_id)
          Metrics.updates.inc({ outcome: "abandoned" })
          yield* Effect.logError("update given up after BOT_UPDATE_MAX_ATTEMPTS attempts; it is not handled").pipe(
            Effect.annotateLogs({ update_id: s.update_id, attempts: s.attempts - 1 })
          )
          continue
        }
        let update: unknown
        try {
          update = JSON.parse(s.payload)
        } catch {
          update = null
        }
        if (!Predicate.isRecord(update)) {
          yield* inbox.done(source, [s.update_id])
          continue
        }
        const key = Dispatcher.keyOf(update)
        // Still over its chat's share: claimed again, it comes back when this claim ends.
        if (dispatcher.depthOf(key) >= perKey) {
          deferred.push(s.update_id)
          continue
        }
        yield* Effect.logInfo("handling an update left unfinished").pipe(
          Effect.annotateLogs({ update_id: s.update_id, attempt: s.attempts })
        )
        yield* dispatcher.submit(key, task(update, performance.now()))
      }
      yield* defer(deferred)
    }).pipe(
      Effect.catchAll((error) => Effect.logWarning("unfinished updates not claimed", error)),
      Effect.repeat(Schedule.spaced(Duration.millis(Math.max(1000, lease / 2)))),
      Effect.forkScoped
    )

    // Handled ids are remembered for the retention, then forgotten in batches.
    yield* Effect.gen(function*() {
      const before = (yield* Clock.currentTimeMillis) - Duration.toMillis(options.updateRetention)
      while ((yield* inbox.sweep(before, 1000)) === 1000) yield* Effect.yieldNow()
    }).pipe(
      Effect.catchAll((error) => Effect.logWarning("update inbox sweep failed", error)),
      Effect.repeat(Schedule.spaced(Duration.minutes(10))),
      Effect.forkScoped
    )

    const sender = yield* Reminders.start(dispatcher, {
      owner: options.owner,
      lease: options.reminderLease,
      retryDelay: options.reminderRetryDelay,
      pollInterval: options.reminderPollInterval,
      maxInFlight: 256,
      keyOf: (r) => (r.topic_id === null ? r.chat_id : `${r.chat_id}/${r.topic_id}`),
      send: bot.fireReminder
    })
    bot.onReminderAdded.current = sender.wake

    const stopped = yield* Deferred.make<never, PollingStopped>()
    let healthy = true

    if (options.transport._tag === "polling") {
      yield* bot.call("deleteWebhook", { drop_pending_updates: false })
      const loop = poll(bot, options, intakeAll, dispatcher.depth, (h) => (healthy = h)).pipe(
        // Whatever ends the loop but shutdown — a failure or a bug — ends `wait` too: never a
        // process that stays up without polling.
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.void
            : Effect.logError("long polling stopped", cause).pipe(Effect.zipRight(Deferred.failCause(stopped, cause)))
        )
      )
      yield* Effect.forkScoped(loop)
      return { me, port: null, dispatcher, sender, wait: Deferred.await(stopped), healthy: () => healthy, intake }
    }

    const transport = options.transport
    const secret = Option.match(transport.secret, { onNone: () => crypto.randomBytes(32).toString("hex"), onSome: Redacted.value })
    const port = yield* webhookServer(intake, new URL(transport.url).pathname, secret, transport.port, transport.host)
    yield* bot.call("setWebhook", { url: transport.url, secret_token: secret, allowed_updates: [...Bot.allowedUpdates] })
    return { me, port, dispatcher, sender, wait: Deferred.await(stopped), healthy: () => healthy, intake }
  })

// An update's JSON for the inbox, or undefined when it has none: nested deeper than
// JSON.stringify's stack allows (a throw here would end polling, and the unconfirmed update
// would come back to end it again after every restart).
const serialise = (update: Record<string, unknown>): string | undefined => {
  try {
    return JSON.stringify(update)
  } catch {
    return undefined
  }
}

const poll = (
  bot: Bot.Bot,
  options: LaunchOptions,
  intakeAll: (items: ReadonlyArray<{ readonly update: unknown }>) => Effect.Effect<ReadonlyArray<IntakeResult>>,
  dispatcher: () => { readonly queued: number },
  setHealthy: (healthy: boolean) => void
): Effect.Effect<never, PollingStopped> =>
  Effect.gen(function*() {
    let offset = 0
    let failures = 0
    let conflictSince: number | null = null
    const timeout = Math.max(0, Math.round(Duration.toSeconds(options.polling.timeout)))
    // A batch always fits in an empty dispatcher.
    const limit = Math.max(1, Math.min(100, options.queueCapacity))
    // The HTTP call may take the long poll's timeout, plus the usual per-call limit.
    const policy = { ...options.send, maxAttempts: 1, timeout: Duration.sum(options.polling.timeout, options.send.timeout) }
    while (true) {
      const result = yield* TelegramSend.send(
        "getUpdates",
        (signal) =>
          bot.telegraf.telegram.callApi("getUpdates", { timeout, offset, limit, allowed_updates: [...Bot.allowedUpdates] }, {
            signal: signal as unknown as CallApiSignal
          }),
        policy
      ).pipe(Effect.either)
      const now = yield* Clock.currentTimeMillis
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
      if (updates.length === 0) continue
      // Full: wait for room rather than drop anything (the offset is not moved past the batch).
      while (dispatcher().queued + updates.length > options.queueCapacity) yield* Effect.sleep(Duration.millis(50))
      const outcomes = yield* intakeAll(updates.map((update) => ({ update })))
      if (outcomes.some((o) => o === "unrecorded" || o === "busy")) {
        // The store is failing: do not confirm the batch; it comes again with the next poll.
        yield* Effect.sleep(options.send.baseDelay)
        continue
      }
      for (const update of updates) {
        const id = Predicate.isRecord(update) ? update["update_id"] : undefined
        if (typeof id === "number" && Number.isSafeInteger(id) && id >= offset) offset = id + 1
      }
    }
  }).pipe(Effect.annotateLogs({ component: "polling" }))

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

const sameSecret = (given: string | Array<string> | undefined, secret: string) => {
  if (typeof given !== "string") return false
  const a = crypto.createHash("sha256").update(given).digest()
  const b = crypto.createHash("sha256").update(secret).digest()
  return crypto.timingSafeEqual(a, b)
}

const webhookServer = (
  intake: (update: unknown, raw?: string) => Effect.Effect<IntakeResult>,
  path: string,
  secret: string,
  port: number,
  host: string
) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const server = http.createServer((req, res) => {
      if (req.method !== "POST" || (req.url ?? "").split("?")[0] !== path) return void res.writeHead(404).end()
      if (!sameSecret(req.headers[secretHeader], secret)) return void res.writeHead(401).end()
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
