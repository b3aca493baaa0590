/**
 * SQLite group commit (internal/groupCommit.ts): writes that arrive together share one
 * transaction, a savepoint each; a failing write fails alone; every write is acknowledged only
 * once the shared COMMIT is on disk, seen from another connection to the same file. Reads
 * outside a transaction run on the read connection (internal/readConnection.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as path from "node:path"
import { dbOf } from "../src/internal/db.js"
import { groupCommitEnabled, maxBatch } from "../src/internal/groupCommit.js"
import { openFiles } from "../src/internal/sqliteEngine.js"
import * as Sqlite from "../src/Sqlite.js"
import { tempDir } from "./helpers.js"

/** A database file with a table `t(k)`: the writer's `Db`, and a second connection to read what is committed. */
const setup = Effect.gen(function*() {
  const filename = path.join(yield* tempDir, "group.db")
  const db = yield* Effect.provide(dbOf, yield* Layer.build(Sqlite.layerClient({ filename })))
  yield* db.run`CREATE TABLE t (k TEXT PRIMARY KEY)`
  const reader = yield* Effect.map(Layer.build(SqliteClient.layer({ filename })), Context.get(SqlClient.SqlClient))
  /** Whether the other connection sees `k` committed. */
  const committed = (k: string) =>
    Effect.map(reader.unsafe("SELECT k FROM t WHERE k = ?", [k]), (rows) => rows.length === 1).pipe(
      // Run on the other connection even from inside a transaction (@effect/sql would run it on the transaction's).
      Effect.mapInputContext((context: Context.Context<never>) => Context.omit(SqlClient.TransactionConnection)(context))
    )
  const insert = (k: string) => db.run`INSERT INTO t (k) VALUES (${k})`
  return { db, committed, insert }
})

class Refused {
  readonly _tag = "Refused"
}

describe("SQLite group commit", () => {
  it.scoped("a file's engine (its writer thread) lives as long as a client of the file: two clients share it, the last one closed ends it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const [one, other] = [path.join(dir, "one.db"), path.join(dir, "other.db")]
      const open = (filename: string, scope: Scope.Scope) => Layer.buildWithScope(Sqlite.layerClient({ filename }), scope)
      const first = yield* Scope.make()
      const second = yield* Scope.make()
      yield* open(one, first)
      yield* open(one, second)
      yield* open(other, second)
      assert.deepStrictEqual(openFiles().filter((f) => f.startsWith(dir)).sort(), [one, other])
      // `one` is still open in the second scope.
      yield* Scope.close(first, Exit.void)
      assert.deepStrictEqual(openFiles().filter((f) => f.startsWith(dir)).sort(), [one, other])
      yield* Scope.close(second, Exit.void)
      assert.deepStrictEqual(openFiles().filter((f) => f.startsWith(dir)), [])
    }))

  it.scoped("writes of the same tick share one transaction: each sees the earlier ones, the file sees none before the COMMIT", () =>
    Effect.gen(function*() {
      const { committed, db, insert } = yield* setup
      const seen: Array<readonly [string, boolean, boolean]> = []
      const write = (k: string) =>
        db.transaction(Effect.gen(function*() {
          yield* insert(k)
          // In the shared transaction, the first write's row; on the other connection, nothing yet.
          const mine = yield* db.run`SELECT k FROM t WHERE k = 'w0'`
          seen.push([k, mine.length === 1, yield* committed("w0")])
        }))
      yield* Effect.all(Array.from({ length: 8 }, (_, i) => write(`w${i}`)), { concurrency: "unbounded", discard: true })
      assert.deepStrictEqual(seen, Array.from({ length: 8 }, (_, i) => [`w${i}`, true, false] as const))
      // Acknowledged: every row is on the file for any connection.
      for (let i = 0; i < 8; i++) assert.isTrue(yield* committed(`w${i}`))
    }))

  it.scoped("a write is acknowledged only after the shared COMMIT: another connection sees it when its caller resumes", () =>
    Effect.gen(function*() {
      const { committed, db, insert } = yield* setup
      const keys = Array.from({ length: maxBatch * 2 + 5 }, (_, i) => `k${i}`)
      const visibleAtAck = yield* Effect.forEach(keys, (k) => Effect.zipRight(db.transaction(insert(k)), committed(k)), {
        concurrency: "unbounded"
      })
      assert.deepStrictEqual(visibleAtAck, keys.map(() => true))
    }))

  it.scoped("one failing write fails alone: rolled back to its savepoint, the others of its batch committed", () =>
    Effect.gen(function*() {
      const { committed, db, insert } = yield* setup
      const results = yield* Effect.all(
        ["a", "b", "bad", "c", "dup", "d"].map((k) =>
          Effect.exit(db.transaction(
            k === "bad"
              ? Effect.zipRight(insert("bad"), Effect.fail(new Refused()))
              : k === "dup"
              // A constraint failure of the driver, after a row of its own: both undone.
              ? Effect.zipRight(insert("dup-first"), insert("a"))
              : insert(k)
          ))
        ),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(results.map(Exit.isSuccess), [true, true, false, true, false, true])
      const failed = results[2]!
      assert.isTrue(Exit.isFailure(failed) && failed.cause._tag === "Fail" && failed.cause.error instanceof Refused)
      for (const k of ["a", "b", "c", "d"]) assert.isTrue(yield* committed(k), k)
      for (const k of ["bad", "dup-first"]) assert.isFalse(yield* committed(k), k)
    }))

  it.scoped("a write that ends the transaction under the batch: the writes before it fail unacknowledged, the ones after it run in the next batch", () =>
    Effect.gen(function*() {
      const { committed, db, insert } = yield* setup
      const results = yield* Effect.all(
        [
          db.transaction(insert("before")),
          // A statement that ends the shared transaction: its savepoint cannot be released.
          db.transaction(Effect.zipRight(insert("breaker"), db.run`ROLLBACK`)),
          db.transaction(insert("after"))
        ].map(Effect.exit),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(results.map(Exit.isSuccess), [false, false, true])
      assert.isFalse(yield* committed("before"))
      assert.isFalse(yield* committed("breaker"))
      assert.isTrue(yield* committed("after"))
    }))

  it.scoped("a writer interrupted while it waits for its turn is skipped; the batch commits the rest", () =>
    Effect.gen(function*() {
      const { committed, db, insert } = yield* setup
      // The first write holds the batch until the second writer was interrupted.
      const gate = yield* Deferred.make<void>()
      const holding = yield* Effect.fork(db.transaction(Effect.zipRight(insert("first"), Deferred.await(gate))))
      yield* Effect.yieldNow()
      const waiting = yield* Effect.fork(db.transaction(insert("interrupted")))
      const third = yield* Effect.fork(db.transaction(insert("third")))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(waiting)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(holding)
      yield* Fiber.join(third)
      assert.isTrue(yield* committed("first"))
      assert.isFalse(yield* committed("interrupted"))
      assert.isTrue(yield* committed("third"))
    }))

  it.scoped("a write inside a transaction nests as its savepoint; with group commit off each write is its own transaction", () =>
    Effect.gen(function*() {
      const { committed, db, insert } = yield* setup
      const outer = yield* Effect.exit(db.transaction(Effect.gen(function*() {
        yield* insert("outer")
        yield* Effect.exit(db.transaction(Effect.zipRight(insert("inner"), Effect.fail(new Refused()))))
        yield* db.transaction(insert("inner-kept"))
      })))
      assert.isTrue(Exit.isSuccess(outer))
      assert.isTrue(yield* committed("outer"))
      assert.isFalse(yield* committed("inner"))
      assert.isTrue(yield* committed("inner-kept"))

      const alone = yield* Effect.all(["x", "y", "z"].map((k) => Effect.zipRight(db.transaction(insert(k)), committed(k))), {
        concurrency: "unbounded"
      }).pipe(Effect.locally(groupCommitEnabled, false))
      assert.deepStrictEqual(alone, [true, true, true])
    }))

  it.scoped("a read outside a transaction runs on the read connection: it does not wait for an open write transaction, nor see it", () =>
    Effect.gen(function*() {
      const { committed, db, insert } = yield* setup
      const gate = yield* Deferred.make<void>()
      const inserted = yield* Deferred.make<void>()
      const write = yield* Effect.fork(db.transaction(Effect.gen(function*() {
        yield* insert("open")
        yield* Deferred.succeed(inserted, undefined)
        yield* Deferred.await(gate)
      })))
      yield* Deferred.await(inserted)
      // The write transaction holds the write connection until the gate opens: this read would wait for it.
      const during = yield* db.run`SELECT k FROM t`
      assert.deepStrictEqual(during, [])
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(write)
      assert.isTrue(yield* committed("open"))
      assert.deepStrictEqual(yield* db.run`SELECT k FROM t`, [{ k: "open" }])
    }))
})
