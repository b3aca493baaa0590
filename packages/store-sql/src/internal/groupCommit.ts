/**
 * SQLite group commit: write transactions that arrive together share one
 * `BEGIN IMMEDIATE … COMMIT`, each inside a savepoint of its own.
 *
 * - **Together** means queued while the previous batch ran, or in the same tick as the first
 *   write of a batch (the leader yields once before it takes the queue), at most
 *   {@link maxBatch} writes per transaction. No write waits on a timer: one write alone
 *   commits at once.
 * - **One failing write fails alone.** A write whose effect fails is rolled back to its
 *   savepoint and fails at once; the batch goes on. Should SQLite have dropped the whole
 *   transaction (a savepoint can no longer be released or rolled back to), the writes before it
 *   fail too and the writes after it run in the next batch.
 * - **Acknowledged after the shared `COMMIT`.** A write succeeds only once the transaction that
 *   holds it committed; a failed `COMMIT` fails every write of the batch.
 *
 * Each write runs in its own caller's fiber (its context, spans and interruption are its own):
 * a leader fiber opens the transaction and hands the connection to the batch's writers one
 * after another, waits until each says it is finished, commits, then tells every writer the
 * commit's outcome (each hand-off a one-shot callback, see `Cell`). With `synchronous=FULL`
 * the batch costs one `fsync`, not one per write.
 *
 * **One writer per file in this process.** The connection is the file's writer thread
 * (sqliteWriter.ts), shared by every layer over the file (sqliteEngine.ts): one queue, one
 * transaction at a time, taken through the client's connection permit; SQLite's own busy wait
 * (in the writer thread) is only ever against other processes.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"

/** The most writes one transaction takes; the rest wait for the next. */
export const maxBatch = 64

/**
 * Whether writes of this fiber join a group commit (default true); false runs each write as
 * its own `BEGIN IMMEDIATE … COMMIT`, as before group commit (the bench compares the two).
 */
export const groupCommitEnabled: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(true)

/** What a writer tells the leader once its turn is over. */
type Finished =
  /** Its effect succeeded and its savepoint was released: it waits for the commit. */
  | "done"
  /** Its effect failed and was rolled back to its savepoint, or it never ran (interrupted). */
  | "out"
  /** The transaction is gone (a savepoint could not be released or rolled back to). */
  | { readonly broken: SqlError }

/**
 * A value set once (later sets are ignored) and awaited by one fiber: the hand-offs between the
 * leader and its writers. A plain callback, not a `Deferred`: a write goes through three of
 * them, and each `Deferred` step is several effect steps of its own.
 */
class Cell<A> {
  private done = false
  private value: A | undefined
  private waiter: ((value: A) => void) | undefined
  /** Sets the value (the first set wins) and wakes the fiber awaiting it. */
  set(value: A): void {
    if (this.done) return
    this.done = true
    this.value = value
    const waiter = this.waiter
    this.waiter = undefined
    waiter?.(value)
  }
  readonly await: Effect.Effect<A> = Effect.async<A>((resume) => {
    if (this.done) return resume(Effect.succeed(this.value as A))
    this.waiter = (value) => resume(Effect.succeed(value))
    // Interrupted while waiting: nobody is woken any more.
    return Effect.sync(() => {
      this.waiter = undefined
    })
  })
}

interface Job {
  readonly turn: Cell<Exit.Exit<Connection, SqlError>>
  readonly finished: Cell<Finished>
  readonly committed: Cell<Exit.Exit<void, SqlError>>
}

type Transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>

/** The statements of the shared transaction, prepared once each (from the connection's statement cache). */
const exec = (conn: Connection, text: string) => Effect.asVoid(conn.execute(text, [], undefined))

const make = (sql: SqlClient.SqlClient, single: Transaction): Transaction => {
  const queue: Array<Job> = []
  let leading = false

  const runBatch = (batch: ReadonlyArray<Job>): Effect.Effect<void> =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const opened = yield* Effect.exit(Effect.tap(Scope.extend(sql.reserve, scope), (conn) => exec(conn, "BEGIN IMMEDIATE")))
      if (Exit.isFailure(opened)) {
        yield* Scope.close(scope, Exit.void)
        for (const job of batch) job.turn.set(opened)
        return
      }
      const conn = opened.value
      const given = Exit.succeed(conn)
      const waiting: Array<Job> = []
      let broken: SqlError | undefined
      let next = 0
      while (next < batch.length && broken === undefined) {
        const job = batch[next++]!
        job.turn.set(given)
        const finished = yield* job.finished.await
        if (finished === "done") waiting.push(job)
        else if (finished !== "out") broken = finished.broken
      }
      let outcome: Exit.Exit<void, SqlError>
      if (broken !== undefined) {
        outcome = Exit.fail(broken)
        // Not yet run: they go first into the next batch.
        queue.unshift(...batch.slice(next))
      } else {
        outcome = yield* Effect.exit(exec(conn, "COMMIT"))
      }
      if (Exit.isFailure(outcome)) yield* Effect.ignore(exec(conn, "ROLLBACK"))
      yield* Scope.close(scope, Exit.void)
      for (const job of waiting) job.committed.set(outcome)
    }).pipe(
      // Nothing above should fail; should it die, no writer is left waiting.
      Effect.catchAllCause((cause) =>
        Effect.sync(() => {
          for (const job of batch) {
            job.turn.set(Exit.failCause(cause))
            job.committed.set(Exit.failCause(cause))
          }
        })
      )
    )

  const lead: Effect.Effect<void> = Effect.gen(function*() {
    // The writes of the same tick join the first one.
    yield* Effect.yieldNow()
    while (queue.length > 0) yield* runBatch(queue.splice(0, maxBatch))
  }).pipe(Effect.ensuring(Effect.suspend(() => {
    leading = false
    return queue.length > 0 ? start() : Effect.void
  })))

  const start = (): Effect.Effect<void> => {
    if (leading) return Effect.void
    leading = true
    return Effect.asVoid(Effect.forkDaemon(lead))
  }

  const grouped: Transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.uninterruptibleMask((restore) => {
      const job: Job = { turn: new Cell(), finished: new Cell(), committed: new Cell() }
      queue.push(job)
      return Effect.zipRight(
        start(),
        Effect.gen(function*() {
          const conn = yield* Effect.flatten(restore(job.turn.await))
          const saved = yield* Effect.exit(exec(conn, "SAVEPOINT deixis_write"))
          if (Exit.isFailure(saved)) {
            job.finished.set(brokenBy(saved))
            return yield* Effect.failCause(saved.cause)
          }
          const exit = yield* Effect.exit(restore(Effect.provideService(effect, SqlClient.TransactionConnection, [conn, 0])))
          const closed = yield* Effect.exit(
            Exit.isSuccess(exit)
              ? exec(conn, "RELEASE deixis_write")
              : Effect.zipRight(exec(conn, "ROLLBACK TO deixis_write"), exec(conn, "RELEASE deixis_write"))
          )
          if (Exit.isFailure(closed)) {
            job.finished.set(brokenBy(closed))
            return yield* (Exit.isFailure(exit) ? Effect.failCause(exit.cause) : Effect.failCause(closed.cause))
          }
          job.finished.set(Exit.isSuccess(exit) ? "done" : "out")
          if (Exit.isFailure(exit)) return yield* exit
          yield* Effect.flatten(restore(job.committed.await))
          return exit.value
        }).pipe(
          // Interrupted before its turn (or failed to get one): the leader skips it.
          Effect.ensuring(Effect.sync(() => job.finished.set("out")))
        )
      )
    })

  return <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.withFiberRuntime<A, E | SqlError, R>((fiber) =>
      // Inside a transaction already: a savepoint of it, as @effect/sql nests.
      Option.isSome(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))
        ? single(effect)
        : fiber.getFiberRef(groupCommitEnabled)
        ? grouped(effect)
        : single(effect)
    )
}

/** A savepoint statement that failed, in any way: the transaction can no longer be trusted. */
const brokenBy = (exit: Exit.Exit<void, SqlError>): Finished =>
  Exit.isSuccess(exit) ? "out" : {
    broken: exit.cause._tag === "Fail"
      ? exit.cause.error
      : new SqlError({ cause: Cause.squash(exit.cause), message: "a savepoint of the shared transaction failed" })
  }

/**
 * A write transaction that takes the write lock up front (`BEGIN IMMEDIATE`), so two processes
 * never deadlock upgrading a read lock.
 */
export const immediate = (client: SqlClient.SqlClient): Transaction => {
  const run = SqlClient.makeWithTransaction({
    transactionTag: SqlClient.TransactionConnection,
    spanAttributes: [["db.system.name", "sqlite"]],
    acquireConnection: Effect.flatMap(
      Scope.make(),
      (scope) => Effect.map(Scope.extend(client.reserve, scope), (conn) => [scope, conn] as const)
    ),
    begin: (conn) => Effect.asVoid(conn.executeUnprepared("BEGIN IMMEDIATE", [], undefined)),
    savepoint: (conn, id) => Effect.asVoid(conn.executeUnprepared(`SAVEPOINT effect_sql_${id}`, [], undefined)),
    commit: (conn) => Effect.asVoid(conn.executeUnprepared("COMMIT", [], undefined)),
    rollback: (conn) => Effect.asVoid(conn.executeUnprepared("ROLLBACK", [], undefined)),
    rollbackSavepoint: (conn, id) =>
      Effect.asVoid(conn.executeUnprepared(`ROLLBACK TO SAVEPOINT effect_sql_${id}`, [], undefined))
  })
  return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
    run(effect).pipe(
      Effect.catchSomeDefect((defect) => defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none())
    )
}

/**
 * The write transaction of a SQLite `SqlClient` with group commit: one queue, held by the
 * engine of the client (sqliteEngine.ts), which every store over it shares. A write inside a
 * transaction nests as a savepoint of it; with {@link groupCommitEnabled} false each write is its
 * own `BEGIN IMMEDIATE … COMMIT`.
 */
export const groupCommit = (sql: SqlClient.SqlClient): Transaction => make(sql, immediate(sql))
