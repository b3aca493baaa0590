/**
 * The SQLite writer off the event loop: the write connection lives in a `worker_threads`
 * Worker (sqliteWorker.ts) and this module is its main-thread half — a `Connection` whose
 * statements are sent to the thread as plain data and answered in order, so a commit, an
 * `fsync` (`synchronous=FULL` included) or a WAL checkpoint never blocks the thread that
 * answers reads and requests. The group commit (groupCommit.ts) and the transaction code are
 * unchanged: they run their statements on this connection as on any other.
 *
 * **Supervised.** Should the thread die (a bug in it, memory), every statement it had not
 * answered fails with a typed `SqlError` whose cause is {@link SqliteWriterStopped}; a
 * transaction begun on the dead thread fails at its next statement (its writes went with the
 * thread, rolled back), and a new thread is started at once — with a log line. A thread that
 * dies {@link maxRestarts} times within a minute is not started again: every write then fails
 * at once with that error, loudly, never a silent stall — and, where the process has a
 * `Supervisor` (core's; both apps provide one to their stores), the process ends: its
 * supervisor fails with `FiberDied` (one Fatal line, a non-zero exit), never a live process that
 * cannot write.
 *
 * **Urgent calls first.** The thread answers in the order it is sent; so that a write someone
 * waits for (an answer's, `WritePriority`) does not queue behind a backlog of others, at most
 * {@link ordinaryInFlight} ordinary calls are sent ahead at a time — the rest wait here, and an
 * urgent call is sent at once, behind those few.
 */
import { SqlError } from "@effect/sql/SqlError"
import type { Connection } from "@effect/sql/SqlConnection"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Supervisor from "@deixis/core/Supervisor"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import type { SqliteConnection } from "./sqliteClient.js"
import type * as procedures from "./sqliteProcedures.js"
import type { Reply, Request, WorkerOptions } from "./sqliteProtocol.js"

export type { WorkerOptions } from "./sqliteProtocol.js"

/**
 * The writer thread stopped before it answered: what was committed before is on disk; a
 * statement it had not answered, or a transaction it had open, did not happen (a `COMMIT`
 * it had not answered may have).
 */
export class SqliteWriterStopped extends Data.TaggedError("SqliteWriterStopped")<{ readonly reason: string }> {}

/** Deaths of the thread within a minute after which it is not started again. */
export const maxRestarts = 5

/**
 * Ordinary (not urgent) calls the thread is sent at a time: enough that it never idles between
 * them (their group commit takes what is queued), few enough that an urgent call sent now waits
 * for no more than these.
 */
export const ordinaryInFlight = 4

/** How long closing waits for the thread to finish its last checkpoint before it is terminated. */
const closeTimeout = 10_000

// Built (`dist/internal/*.js`), the thread runs its compiled sibling. From source (vitest, tsx),
// it runs the TypeScript file through tsx's loader, registered inside the thread.
const fromSource = import.meta.url.endsWith(".ts")

const spawn = (options: WorkerOptions): Worker => {
  if (!fromSource) return new Worker(new URL("./sqliteWorker.js", import.meta.url), { workerData: options })
  const tsx = pathToFileURL(
    path.join(path.dirname(createRequire(import.meta.url).resolve("tsx/package.json")), "dist/esm/api/index.mjs")
  ).href
  const script = new URL("./sqliteWorker.ts", import.meta.url).href
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((tsx) => tsx.register()).then(() => import(${JSON.stringify(script)}))`,
    { eval: true, workerData: options }
  )
}

const stoppedError = (reason: string) =>
  new SqlError({ cause: new SqliteWriterStopped({ reason }), message: `the SQLite writer thread stopped: ${reason}` })

const statementError = (error: NonNullable<Reply["error"]>) =>
  new SqlError({
    // The driver's error as it would be in this thread: its message and SQLite's code (SQLITE_BUSY, SQLITE_FULL, …).
    cause: Object.assign(new Error(error.message), { name: "SqliteError", code: error.code }),
    message: error.prepare ? "Failed to prepare statement" : "Failed to execute statement"
  })

const begins = /^\s*BEGIN\b/i
const ends = /^\s*(COMMIT|END|ROLLBACK)\s*(TRANSACTION)?\s*;?\s*$/i
const rollsBack = /^\s*ROLLBACK\s*(TRANSACTION)?\s*;?\s*$/i

/** One run of the thread. */
interface Thread {
  readonly worker: Worker
  readonly generation: number
  readonly pending: Map<number, (reply: Reply) => void>
  exited: boolean
}

/** The writer thread of one database, as a connection. */
export interface Writer extends SqliteConnection {
  /**
   * Runs a write body of the thread (sqliteProcedures.ts) over `argument` (plain data, copied to
   * the thread; anything `postMessage` cannot copy fails the call, unsent), in the thread's own
   * group commit: its result once committed (`apply`, `unit`: false when what it checks had
   * moved, nothing written). An `urgent` call is sent at once; an ordinary one waits while
   * {@link ordinaryInFlight} others are with the thread.
   */
  readonly call: (name: procedures.Procedure, argument: unknown, urgent?: boolean) => Effect.Effect<unknown, SqlError>
  /** Kills the thread as a bug in it would (tests of the supervision). */
  readonly crash: Effect.Effect<void>
  /** How many times the thread was started (1 until it dies). */
  readonly starts: () => number
}

/**
 * Starts the writer thread of `options.filename` for the scope (closed with it: the thread
 * closes its connection, which checkpoints the WAL); fails when the database does not open.
 */
export const make = (options: WorkerOptions): Effect.Effect<Writer, SqlError, Scope.Scope> =>
  Effect.gen(function*() {
    // What happened to the thread, for the supervising fiber to log (bounded: the newest kept).
    const events = yield* Queue.sliding<string>(16)
    let nextId = 0
    let generation = 0
    let closing = false
    /** The first thread opened the database (before, its death fails the layer instead). */
    let ready = false
    /** Set once the thread died too often: every request fails with it. */
    let stopped: string | undefined
    const deaths: Array<number> = []
    const supervisor = yield* Effect.serviceOption(Supervisor.Supervisor)

    const start = (): Thread => {
      const thread: Thread = { worker: spawn(options), generation: ++generation, pending: new Map(), exited: false }
      thread.worker.unref()
      const answer = (reply: Reply) => {
        const resume = thread.pending.get(reply.id)
        if (resume === undefined) return
        thread.pending.delete(reply.id)
        if (thread.pending.size === 0) thread.worker.unref()
        resume(reply)
      }
      thread.worker.on("message", (message: Reply | ReadonlyArray<Reply>) => {
        if (Array.isArray(message)) for (const reply of message) answer(reply)
        else answer(message as Reply)
      })
      let reason = "it exited"
      thread.worker.on("error", (error) => {
        reason = error instanceof Error ? error.message : String(error)
      })
      thread.worker.on("exit", (code) => {
        thread.exited = true
        const answers = [...thread.pending.values()]
        thread.pending.clear()
        for (const answer of answers) answer({ id: -1, error: { message: reason, code: "DEIXIS_WRITER_STOPPED", prepare: false } })
        if (closing || !ready || current !== thread) return
        died(`${reason} (exit code ${code})`)
      })
      return thread
    }

    const died = (reason: string) => {
      const now = Date.now()
      deaths.push(now)
      while (deaths.length > 0 && deaths[0]! < now - 60_000) deaths.shift()
      if (deaths.length >= maxRestarts) {
        stopped = `${reason}; it died ${deaths.length} times within a minute and is not started again`
        Queue.unsafeOffer(events, `SQLite writer thread of ${options.filename} stopped: ${stopped}`)
        if (Option.isSome(supervisor)) {
          Effect.runFork(supervisor.value.fatal(
            new Supervisor.FiberDied({ fiber: "the SQLite writer thread", restarts: deaths.length - 1, cause: Cause.die(new Error(stopped)) })
          ))
        }
        return
      }
      current = start()
      Queue.unsafeOffer(events, `SQLite writer thread of ${options.filename} died (${reason}); started again`)
    }

    let current = start()

    /** Sends a request to the thread now running; its answer (an error reply as a typed failure). */
    const send = (build: (id: number) => Request, thread?: Thread): Effect.Effect<unknown, SqlError> =>
      Effect.uninterruptible(Effect.async<unknown, SqlError>((resume) => {
        if (stopped !== undefined) return resume(Effect.fail(stoppedError(stopped)))
        const target = thread ?? current
        if (target.exited) return resume(Effect.fail(stoppedError("it exited")))
        const id = ++nextId
        if (target.pending.size === 0) target.worker.ref()
        target.pending.set(id, (reply) => {
          if (reply.error === undefined) resume(Effect.succeed(reply.rows))
          else if (reply.error.code === "DEIXIS_WRITER_STOPPED") resume(Effect.fail(stoppedError(reply.error.message)))
          else resume(Effect.fail(statementError(reply.error)))
        })
        try {
          target.worker.postMessage(build(id))
        } catch (cause) {
          // Not sent: an argument `postMessage` cannot copy (a function, say). Nothing ran.
          target.pending.delete(id)
          if (target.pending.size === 0) target.worker.unref()
          resume(Effect.fail(new SqlError({ cause, message: `a request the SQLite writer thread cannot be sent: ${cause instanceof Error ? cause.message : String(cause)}` })))
        }
      }))

    // The first thread must open the database: its ready message (id 0), or the error it died of.
    const opened = yield* Effect.async<void, SqlError>((resume) => {
      const thread = current
      let failed: unknown
      const onError = (error: unknown) => {
        failed = error
      }
      thread.worker.on("error", onError)
      thread.worker.once("exit", () =>
        resume(Effect.fail(new SqlError({ cause: failed, message: failed instanceof Error ? failed.message : "the SQLite writer thread exited" }))))
      thread.worker.once("message", () => {
        thread.worker.off("error", onError)
        resume(Effect.void)
      })
    }).pipe(Effect.either)
    if (opened._tag === "Left") {
      closing = true
      return yield* Effect.fail(opened.left)
    }
    ready = true

    // The supervisor's log: every death, with the application's logger.
    yield* Effect.forkScoped(Effect.interruptible(Effect.forever(Effect.flatMap(Queue.take(events), (event) => Effect.logError(event)))))

    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closing = true
        const thread = current
        if (thread.exited) return Effect.void
        const exited = Effect.async<void>((resume) => {
          if (thread.exited) return resume(Effect.void)
          thread.worker.once("exit", () => resume(Effect.void))
        })
        return send((id) => ({ op: "close", id }), thread).pipe(
          Effect.ignore,
          Effect.zipRight(exited),
          Effect.timeoutTo({
            duration: closeTimeout,
            onSuccess: (): Effect.Effect<void> => Effect.void,
            onTimeout: (): Effect.Effect<void> => Effect.asVoid(Effect.promise(() => thread.worker.terminate()))
          }),
          Effect.flatten
        )
      })
    )

    // Ordinary calls with the thread, and those waiting for their turn (in order).
    let ordinary = 0
    const turns: Array<() => void> = []
    const turn = Effect.async<void>((resume) => {
      if (ordinary < ordinaryInFlight) {
        ordinary++
        return resume(Effect.void)
      }
      turns.push(() => resume(Effect.void))
    })
    // The slot passes to the next waiting call, or is given back.
    const done = Effect.sync(() => {
      const next = turns.shift()
      if (next === undefined) ordinary--
      else next()
    })
    // Uninterruptible as `send` is: once waiting, a call is sent (its slot always handed on).
    const call = (name: procedures.Procedure, argument: unknown, urgent = false) => {
      const sent = send((id) => ({ op: "call", id, name, argument }))
      return urgent ? sent : Effect.uninterruptible(Effect.zipRight(turn, Effect.ensuring(sent, done)))
    }

    // A transaction belongs to the thread it began on: after a restart its statements fail
    // (the dead thread's connection rolled it back) until the transaction's ROLLBACK.
    let transactionOf: number | undefined
    const run = (text: string, params: ReadonlyArray<unknown>, mode: "rows" | "raw" | "values", unprepared: boolean) =>
      Effect.withFiberRuntime<ReadonlyArray<any>, SqlError>((fiber) => {
        if (transactionOf !== undefined && (current.generation !== transactionOf || current.exited)) {
          if (rollsBack.test(text)) {
            transactionOf = undefined
            return Effect.succeed([])
          }
          return Effect.fail(stoppedError("the transaction was lost with the thread it began on"))
        }
        const thread = current
        const safe = Context.get(fiber.currentContext, SqlClient.SafeIntegers)
        return send((id) => ({ op: "run", id, text, params, mode, unprepared, safe }), thread).pipe(
          Effect.map((rows) => {
            if (begins.test(text)) transactionOf = thread.generation
            else if (ends.test(text)) transactionOf = undefined
            return rows as ReadonlyArray<any>
          }),
          Effect.tapError(() => {
            // A failed ROLLBACK leaves no transaction to follow.
            if (rollsBack.test(text)) transactionOf = undefined
            return Effect.void
          })
        )
      })

    const connection: Connection = {
      execute: (text, params, transformRows) => {
        const rows = run(text, params, "rows", false)
        return transformRows ? Effect.map(rows, transformRows) : rows
      },
      executeRaw: (text, params) => run(text, params, "raw", false),
      executeValues: (text, params) => run(text, params, "values", false) as Effect.Effect<ReadonlyArray<any>, SqlError>,
      executeUnprepared: (text, params, transformRows) => {
        const rows = run(text, params ?? [], "rows", true)
        return transformRows ? Effect.map(rows, transformRows) : rows
      },
      executeStream: () => Effect.dieMessage("executeStream not implemented") as any
    }

    return {
      connection,
      export: Effect.map(send((id) => ({ op: "export", id })), (bytes) => bytes as Uint8Array),
      backup: (destination: string) => Effect.asVoid(send((id) => ({ op: "backup", id, destination }))),
      loadExtension: (path: string) => Effect.asVoid(send((id) => ({ op: "loadExtension", id, path }))),
      call,
      crash: Effect.asVoid(Effect.either(send((id) => ({ op: "crash", id })))),
      starts: () => generation
    }
  })
