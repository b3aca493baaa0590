/**
 * Whether the database can be used, told from the failures and successes of the statements the
 * stores run (no probe of its own): a driver failure is classified (`classify`) — the server
 * cannot be reached (PostgreSQL stopped, restarting, the network), the disk is full, the file is
 * locked by another program — and a store's port error carries that class (`storeError`).
 *
 * Per database — one tracker held by its engine (engine.ts), built with it by the client's layer —
 * a small state machine (`next`, pure) turns those observations into an
 * outage and its end, each logged once: the first failure of a class logs the outage, the first
 * success after it the recovery (a full disk ends only with a committed write, since reads keep
 * working while writes cannot), and nothing is logged per request in between.
 */
import { SqlError } from "@effect/sql/SqlError"
import { StoreError } from "@deixis/core/ContextStore"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import { StoreFull, StoreLocked, StoreUnavailable } from "../Availability.js"
import type { Reason } from "../Availability.js"

// PostgreSQL SQLSTATEs of a server that is going away or not there: class 08 (connection
// exception), 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now (starting or
// stopping), 53300 too_many_connections.
const pgUnavailable = /^(08...|57P0[123]|53300)$/
// Node's socket errors: nothing listens, the peer went away, no route, the name does not resolve.
const netUnavailable = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"])
// node-postgres says these without a code.
const pgMessages = /Connection terminated|connection timeout|Client has encountered a connection error|Client was closed|terminating connection|the database system is (starting up|shutting down)|Connection ended/i

const codeOf = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const code = (error as { readonly code?: unknown }).code
  return typeof code === "string" ? code : undefined
}

/** The class of one driver failure (or its cause chain), or undefined for any other failure. */
export const classify = (error: unknown, depth = 0): Reason | undefined => {
  if (depth > 4 || typeof error !== "object" || error === null) return undefined
  const code = codeOf(error)
  if (code !== undefined) {
    if (code === "SQLITE_FULL" || code === "SQLITE_IOERR_WRITE" && /disk|space/i.test(String((error as Error).message))) return "disk_full"
    if (code === "ENOSPC") return "disk_full"
    if (code === "SQLITE_BUSY" || code.startsWith("SQLITE_BUSY_") || code === "SQLITE_LOCKED") return "locked"
    if (pgUnavailable.test(code) || netUnavailable.has(code)) return "unavailable"
  }
  const message = error instanceof Error ? error.message : undefined
  if (message !== undefined) {
    if (pgMessages.test(message)) return "unavailable"
    if (/database or disk is full|no space left on device/i.test(message)) return "disk_full"
    if (/database is locked/i.test(message)) return "locked"
  }
  // An AggregateError (connecting to every address of a name failed) and wrapped causes.
  const errors = (error as { readonly errors?: unknown }).errors
  if (Array.isArray(errors)) {
    for (const e of errors) {
      const reason = classify(e, depth + 1)
      if (reason !== undefined) return reason
    }
  }
  const cause = (error as { readonly cause?: unknown }).cause
  return cause !== undefined && cause !== error ? classify(cause, depth + 1) : undefined
}

/** A short, secret-free description of a driver failure (no parameters, no URL). */
const detail = (error: unknown): string => {
  if (error instanceof SqlError) {
    const cause: unknown = error.cause
    const inner = cause instanceof Error ? cause.message : typeof cause === "string" ? cause : undefined
    return inner === undefined ? error.message : `${error.message}: ${inner}`
  }
  return error instanceof Error ? error.message : String(error)
}

/** The port error of a failed store operation: of its class when the failure is classified. */
export const storeError = (message: string, error: unknown): StoreError => {
  switch (classify(error)) {
    case "unavailable":
      return new StoreUnavailable({ message: `${message} (the database cannot be reached; retry later)` })
    case "disk_full":
      return new StoreFull({ message: `${message} (the disk is full; nothing was written)` })
    case "locked":
      return new StoreLocked({ message: `${message} (the database file is locked by another program)` })
    default:
      return new StoreError({ message })
  }
}

// -----------------------------------------------------------------------------
// The state machine (pure)
// -----------------------------------------------------------------------------

/** Whether the database can be used, as the last observations tell. */
export type Health =
  | {
    readonly _tag: "Up"
    /** The statement whose success ended the last outage: a failure of one started before it is of that outage. */
    readonly after: number
  }
  | {
    readonly _tag: "Down"
    readonly reason: Exclude<Reason, "locked">
    readonly since: number
    readonly failures: number
    /** The last statement started when a failure was last seen: only a success of a later one ends it. */
    readonly epoch: number
  }

/**
 * An observation: a statement failed (of a class), or one succeeded (a committed write or not).
 * `started` numbers the statement in the order statements started; `latest` is the number of
 * the last one started when the failure was seen.
 */
export type Observation =
  | { readonly _tag: "Failed"; readonly reason: Reason; readonly at: number; readonly started: number; readonly latest: number }
  | { readonly _tag: "Succeeded"; readonly write: boolean; readonly at: number; readonly started: number }

/** What to log on a transition: the outage's start, or its end after `ms`. */
export type Report =
  | { readonly _tag: "Outage"; readonly reason: Exclude<Reason, "locked"> }
  | { readonly _tag: "Recovery"; readonly reason: Exclude<Reason, "locked">; readonly ms: number; readonly failures: number }

/** The initial health: up (a store is built only after its migrations ran). */
export const up: Health = { _tag: "Up", after: 0 }

/**
 * The next health and what to report. A lock held by another program is a failure of one
 * request (bounded by the busy timeout), not an outage: it changes nothing. While down, more
 * failures are counted, not reported; a full disk ends with a committed write only. A statement
 * already under way when the outage was seen may still succeed (a server stopping answers what
 * it has, then refuses): only one started after the last failure ends the outage. Likewise a
 * statement that started before the success that ended an outage (a connection attempted while
 * the server was still starting) may fail after it: that failure is of the outage that ended,
 * not a new one. So an outage is reported once, and its end once, however statements interleave.
 */
export const next = (health: Health, observation: Observation): readonly [Health, Report | undefined] => {
  if (observation._tag === "Failed") {
    if (observation.reason === "locked") return [health, undefined]
    if (health._tag === "Down") {
      return [{ ...health, failures: health.failures + 1, epoch: Math.max(health.epoch, observation.latest) }, undefined]
    }
    if (observation.started < health.after) return [health, undefined]
    return [
      { _tag: "Down", reason: observation.reason, since: observation.at, failures: 1, epoch: observation.latest },
      { _tag: "Outage", reason: observation.reason }
    ]
  }
  if (health._tag === "Up" || observation.started <= health.epoch || (health.reason === "disk_full" && !observation.write)) {
    return [health, undefined]
  }
  return [
    { _tag: "Up", after: observation.started },
    { _tag: "Recovery", reason: health.reason, ms: observation.at - health.since, failures: health.failures }
  ]
}

// -----------------------------------------------------------------------------
// One tracker per database client
// -----------------------------------------------------------------------------

const describeReason = { unavailable: "the database cannot be reached", disk_full: "the disk is full" } as const

// The lines are the database's, not the request's that happened to see it first: no request annotations.
const log = (report: Report, error: unknown) =>
  Effect.locally(logOf(report, error), FiberRef.currentLogAnnotations, HashMap.empty())

const logOf = (report: Report, error: unknown) =>
  report._tag === "Outage"
    ? Effect.logError(report.reason === "disk_full" ? "store outage: writes fail until space is freed" : "store outage: requests that need the database fail until it is back").pipe(
      Effect.annotateLogs({ reason: describeReason[report.reason], error: detail(error) })
    )
    : Effect.logInfo("store recovered").pipe(
      Effect.annotateLogs({ reason: describeReason[report.reason], after_ms: report.ms, failed_requests: report.failures })
    )

/** Whether one database can be used: its health and its statements numbered (held by the database's engine). */
export interface Tracker {
  health: Health
  /** Statements started, numbered. */
  started: number
}

/** A new tracker: up, nothing started. */
export const tracker = (): Tracker => ({ health: up, started: 0 })

/**
 * `effect` (a statement, or a write transaction when `write`) observed for the health of the
 * database `tracker` follows: a
 * classified failure or a success after an outage moves the state machine, and its report is
 * logged. The state is a plain value changed synchronously, so concurrent statements report once.
 */
export const observed = <A, E, R>(tracker: Tracker, write: boolean, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const step = (observation: Observation, error: unknown = undefined) => {
    const [health, report] = next(tracker.health, observation)
    tracker.health = health
    return report === undefined ? Effect.void : log(report, error)
  }
  return Effect.suspend(() => {
    const started = ++tracker.started
    return Effect.tapBoth(effect, {
      onFailure: (error) => {
        const reason = classify(error)
        return reason === undefined
          ? Effect.void
          : Effect.flatMap(Clock.currentTimeMillis, (at) => step({ _tag: "Failed", reason, at, started, latest: tracker.started }, error))
      },
      // The common case (up) costs one comparison.
      onSuccess: () =>
        tracker.health._tag === "Up" ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (at) => step({ _tag: "Succeeded", write, at, started }))
    })
  })
}
