/**
 * The SQLite writer thread (internal/sqliteWriter.ts, sqliteEngine.ts): every write runs on a
 * `worker_threads` Worker, so this thread goes on while a write runs; a read after an
 * acknowledged write sees it; a thread that dies fails what it had not answered with a typed
 * error, is logged and started again; one that keeps dying stops, and writes fail at once.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import BetterSqlite from "better-sqlite3"
import * as path from "node:path"
import type { HistoryItem } from "@deixis/chathistory/HistoryItem"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import * as Supervisor from "@deixis/core/Supervisor"
import { UnitOfWork } from "@deixis/core/UnitOfWork"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { makeDb } from "../src/internal/db.js"
import * as Sqlite from "../src/Sqlite.js"
import * as SqlStore from "../src/SqlStore.js"
import * as SqliteEngine from "../src/internal/sqliteEngine.js"
import { maxRestarts, ordinaryInFlight, SqliteWriterStopped } from "../src/internal/sqliteWriter.js"
import { tempDir } from "./helpers.js"

const open = (synchronous = "NORMAL") =>
  Effect.gen(function*() {
    const filename = path.join(yield* tempDir, "writer.db")
    const engine = yield* SqliteEngine.make({ filename, busyTimeout: 5000, synchronous })
    const db = makeDb(engine.client, engine.engine)
    yield* db.run`CREATE TABLE t (k TEXT PRIMARY KEY)`
    return { engine, db }
  })

/**
 * The engine of a new file the stores migrated (for the scope): the unit procedure's statements
 * exist, and an empty unit writes nothing and answers true.
 */
const migrated = (name: string) =>
  Effect.gen(function*() {
    const filename = path.join(yield* tempDir, name)
    const context = yield* Layer.build(Sqlite.layerClient({ filename }).pipe(Layer.provide(Logger.replace(Logger.defaultLogger, Logger.none))))
    yield* UnitOfWork.pipe(Effect.provide(SqlStore.layerStores({ sweep_interval: 0 }).pipe(Layer.provide(Layer.succeedContext(context)))))
    return Context.unsafeGet(context as unknown as Context.Context<SqliteEngine.SqliteEngine>, SqliteEngine.SqliteEngine)
  })

/** Whether `exit` failed with the writer thread's typed error. */
const stopped = (exit: Exit.Exit<unknown, unknown>): boolean =>
  Exit.isFailure(exit) && Cause.failureOption(exit.cause).pipe((e) =>
    e._tag === "Some" && e.value instanceof SqlError && e.value.cause instanceof SqliteWriterStopped
  )

const item = (chat: string, id: number): HistoryItem => ({
  channel: "telegram",
  kind: "inbound_user",
  chat_id: chat,
  topic_id: null,
  chat_type: "supergroup",
  message_id: String(id),
  reply_to_message_id: null,
  bot_response_id: null,
  sent_at: 1_764_000_000_000 + id,
  sender: { user_id: "1", username: "a", nickname: "A", is_bot: false, display_ref: "A" },
  text: `message ${id}`,
  quote: null,
  attachments: []
})

describe("SQLite writer thread", () => {
  it.scoped("a write runs on the writer thread: this thread answers a read while a long write is still running", () =>
    Effect.gen(function*() {
      const { db } = yield* open("FULL")
      yield* db.run`INSERT INTO t (k) VALUES ('before')`
      // A write the writer thread is busy with for a while (a few million rows generated and summed).
      const started = yield* Deferred.make<void>()
      const long = yield* Effect.fork(db.transaction(Effect.zipRight(
        Deferred.succeed(started, undefined),
        db.run`INSERT INTO t (k)
        SELECT 'long-' || sum(x) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT x FROM c)`
      )))
      // Once the long statement is under way (on this thread it would run to its end before anything else ran):
      yield* Deferred.await(started)
      // On this thread, meanwhile: the read connection answers with what was committed before.
      const during = yield* db.run`SELECT k FROM t ORDER BY k`
      const stillRunning = (yield* Fiber.poll(long))._tag === "None"
      yield* Fiber.join(long)
      assert.deepStrictEqual(during, [{ k: "before" }])
      assert.isTrue(stillRunning, "the read was answered before the write finished")
      assert.strictEqual((yield* db.run`SELECT count(*) AS n FROM t`)[0]?.["n"], 2)
    }))

  it.scoped("the writer's connection is another thread's: PRAGMAs say WAL, the synchronous setting asked for, the busy timeout", () =>
    Effect.gen(function*() {
      const { engine } = yield* open("FULL")
      const sql = engine.client
      assert.deepStrictEqual(yield* sql.unsafe("PRAGMA journal_mode"), [{ journal_mode: "wal" }])
      assert.deepStrictEqual(yield* sql.unsafe("PRAGMA synchronous"), [{ synchronous: 2 }])
      assert.deepStrictEqual(yield* sql.unsafe("PRAGMA busy_timeout"), [{ timeout: 5000 }])
      assert.strictEqual(engine.writer.starts(), 1)
    }))

  it.scoped("a new file gets 1 KiB pages; a file made with other pages keeps them, its rows readable", () =>
    Effect.gen(function*() {
      const { engine } = yield* open()
      assert.deepStrictEqual(yield* engine.client.unsafe("PRAGMA page_size"), [{ page_size: 1024 }])
      const filename = path.join(yield* tempDir, "made-elsewhere.db")
      const made = new BetterSqlite(filename)
      made.pragma("journal_mode = WAL")
      made.exec("CREATE TABLE t (k TEXT PRIMARY KEY); INSERT INTO t (k) VALUES ('kept')")
      made.close()
      const other = yield* SqliteEngine.make({ filename, busyTimeout: 0, synchronous: "NORMAL" })
      assert.deepStrictEqual(yield* other.client.unsafe("PRAGMA page_size"), [{ page_size: 4096 }])
      yield* other.client.unsafe("INSERT INTO t (k) VALUES ('new')")
      const db = makeDb(other.client, other.engine)
      assert.deepStrictEqual(yield* db.run`SELECT k FROM t ORDER BY k`, [{ k: "kept" }, { k: "new" }])
    }))

  it.scoped("the write connection keeps an 8 MiB page cache, the read connection 64 MiB", () =>
    Effect.gen(function*() {
      const { engine } = yield* open()
      // A pragma runs on the writer thread; the read client is the read connection's own.
      assert.deepStrictEqual(yield* engine.client.unsafe("PRAGMA cache_size"), [{ cache_size: -8192 }])
      assert.deepStrictEqual(yield* engine.reader!.unsafe("PRAGMA cache_size"), [{ cache_size: -65536 }])
    }))

  it.scoped("every acknowledged write is seen by the next read on the read connection", () =>
    Effect.gen(function*() {
      const { db } = yield* open()
      const seen = yield* Effect.forEach(Array.from({ length: 200 }, (_, i) => `k${i}`), (k) =>
        Effect.zipRight(
          db.transaction(db.run`INSERT INTO t (k) VALUES (${k})`),
          Effect.map(db.run`SELECT k FROM t WHERE k = ${k}`, (rows) => rows.length === 1)
        ), { concurrency: 16 })
      assert.isTrue(seen.every((s) => s))
    }))

  it.scoped("a read outside a transaction runs on the read connection in place, anything else on the writer; a failing read fails typed", () =>
    Effect.gen(function*() {
      const { db, engine } = yield* open()
      const direct = engine.readConnection!
      assert.isDefined(direct("SELECT k FROM t"))
      assert.isDefined(direct("WITH x AS (SELECT 1 AS k) SELECT k FROM x"))
      assert.isUndefined(direct("INSERT INTO t (k) VALUES ('a')"))
      assert.isUndefined(direct("WITH x AS (SELECT 'b' AS k) INSERT INTO t (k) SELECT k FROM x"))
      assert.isUndefined(direct("PRAGMA user_version = 3"))
      // The read connection is read-only: these writes landing at all means they ran on the writer.
      yield* db.run`INSERT INTO t (k) VALUES ('a')`
      yield* db.run`WITH x AS (SELECT 'b' AS k) INSERT INTO t (k) SELECT k FROM x`
      assert.deepStrictEqual(yield* db.run`SELECT k FROM t ORDER BY k`, [{ k: "a" }, { k: "b" }])
      const failed = yield* Effect.flip(db.run`SELECT nope FROM t`)
      assert.instanceOf(failed, SqlError)
      // A database in memory has no read connection: every statement goes to its one client.
      const memory = yield* SqliteEngine.make({ filename: ":memory:", busyTimeout: 0, synchronous: "NORMAL" })
      assert.isUndefined(memory.readConnection)
      assert.isUndefined(memory.engine.execute)
    }))

  it.scoped("the thread dies: the transaction it held fails typed and is rolled back, a log line says so, the next write runs on a new thread", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const logger = Logger.make(({ message }) => {
        lines.push(String(Array.isArray(message) ? message[0] : message))
      })
      const { db, engine } = yield* open().pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      const inside = yield* Deferred.make<void>()
      const crashed = yield* Deferred.make<void>()
      const held = yield* Effect.fork(Effect.exit(db.transaction(Effect.gen(function*() {
        yield* db.run`INSERT INTO t (k) VALUES ('lost')`
        yield* Deferred.succeed(inside, undefined)
        yield* Deferred.await(crashed)
        yield* db.run`INSERT INTO t (k) VALUES ('lost-too')`
      }))))
      yield* Deferred.await(inside)
      yield* engine.writer.crash
      yield* Deferred.succeed(crashed, undefined)
      const exit = yield* Fiber.join(held)
      assert.isTrue(stopped(exit), `typed failure, got ${String(exit)}`)
      // A new thread, and the writes go on.
      yield* db.transaction(db.run`INSERT INTO t (k) VALUES ('after')`)
      assert.strictEqual(engine.writer.starts(), 2)
      assert.deepStrictEqual(yield* db.run`SELECT k FROM t ORDER BY k`, [{ k: "after" }])
      yield* Effect.promise(async () => {
        while (!lines.some((l) => l.includes("started again"))) await new Promise((r) => setTimeout(r, 5))
      })
      assert.isTrue(lines.some((l) => l.includes("SQLite writer thread") && l.includes("died")))
    }))

  it.scoped(`a thread that dies ${maxRestarts} times within a minute is not started again: every write fails at once, typed`, () =>
    Effect.gen(function*() {
      const { db, engine } = yield* open().pipe(Effect.provide(Logger.replace(Logger.defaultLogger, Logger.none)))
      for (let i = 0; i < maxRestarts; i++) {
        yield* engine.writer.crash
        // Each new thread must be up (it answers) before it is crashed again.
        if (i < maxRestarts - 1) yield* Effect.exit(engine.client.unsafe("SELECT 1"))
      }
      const exit = yield* Effect.exit(db.transaction(db.run`INSERT INTO t (k) VALUES ('never')`))
      assert.isTrue(stopped(exit))
      const outside = yield* Effect.exit(engine.client.unsafe("INSERT INTO t (k) VALUES ('never')"))
      assert.isTrue(stopped(outside))
      assert.strictEqual(engine.writer.starts(), maxRestarts)
    }))

  it.scoped("a thread that dies too often ends a process that has a supervisor: its supervisor fails with FiberDied naming the writer", () =>
    Effect.gen(function*() {
      const supervisor = yield* Supervisor.Supervisor
      const { engine } = yield* open().pipe(Effect.provide(Logger.replace(Logger.defaultLogger, Logger.none)))
      const failed = yield* Effect.fork(Effect.flip(supervisor.failed))
      for (let i = 0; i < maxRestarts; i++) {
        // Not yet: restarts below the bound keep the process.
        assert.isTrue(Option.isNone(yield* Fiber.poll(failed)))
        yield* engine.writer.crash
        if (i < maxRestarts - 1) yield* Effect.exit(engine.client.unsafe("SELECT 1"))
      }
      const died = yield* Fiber.join(failed)
      assert.strictEqual(died.fiber, "the SQLite writer thread")
      assert.strictEqual(died.restarts, maxRestarts - 1)
      assert.include(died.message, "not started again")
    }).pipe(Effect.provide(Supervisor.layer)))

  it.scoped("a database that cannot be opened fails the engine with a typed error; no thread is left running", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const exit = yield* Effect.exit(Effect.scoped(
        SqliteEngine.make({ filename: path.join(dir, "missing", "x.db"), busyTimeout: 0, synchronous: "NORMAL" })
      ))
      assert.isTrue(Exit.isFailure(exit) && Cause.failureOption(exit.cause)._tag === "Some")
      assert.deepStrictEqual(SqliteEngine.openFiles().filter((f) => f.startsWith(dir)), [])
    }))

  it.scoped("two layers over one file share its writer thread and its SqlClient", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "shared.db")
      const one = yield* SqliteEngine.make({ filename, busyTimeout: 0, synchronous: "NORMAL" })
      const two = yield* SqliteEngine.make({ filename, busyTimeout: 0, synchronous: "NORMAL" })
      assert.strictEqual(one.writer, two.writer)
      assert.strictEqual<SqlClient.SqlClient>(one.client, two.client)
    }))

  it.scoped("a second layer over an open file that asks for another synchronous or busy timeout fails with the conflict; the file keeps its setting", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "settings.db")
      const first = yield* Layer.build(Sqlite.layerClient({ filename, synchronous: "full", busy_timeout: 1000 }))
      const sql = Context.get(first, SqlClient.SqlClient)
      const asked = (options: Partial<Parameters<typeof Sqlite.layerClient>[0]>) =>
        Effect.flip(Effect.scoped(Layer.build(Sqlite.layerClient({ filename, synchronous: "full", busy_timeout: 1000, ...options }))))
      const normal = yield* asked({ synchronous: "normal" })
      assert.strictEqual(normal._tag, "SqlStoreError")
      assert.deepStrictEqual(
        normal.conflict,
        new SqlStore.SettingsConflict({ filename: path.resolve(filename), setting: "synchronous", open: "full", requested: "normal" })
      )
      assert.include(normal.message, "synchronous=full")
      const busy = yield* asked({ busy_timeout: 5 })
      assert.deepStrictEqual(busy.conflict?.setting, "busy_timeout")
      assert.deepStrictEqual([busy.conflict?.open, busy.conflict?.requested], ["1000", "5"])
      // The writer thread still runs with the first layer's setting (FULL is 2).
      const rows = yield* sql.unsafe<{ readonly synchronous: number }>("PRAGMA synchronous")
      assert.strictEqual(rows[0]?.synchronous, 2)
      // The same settings, spelled otherwise, share the file's engine.
      const same = yield* Layer.build(Sqlite.layerClient({ filename, synchronous: "FULL" as "full", busy_timeout: 1000 }))
      assert.strictEqual(Context.get(same, SqlClient.SqlClient), sql)
    }))

  it.scoped("once every layer over a file is closed, it opens again with other settings", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "reopen.db")
      yield* Effect.scoped(Layer.build(Sqlite.layerClient({ filename, synchronous: "full" })))
      const again = yield* Layer.build(Sqlite.layerClient({ filename, synchronous: "normal" }))
      const rows = yield* Context.get(again, SqlClient.SqlClient).unsafe<{ readonly synchronous: number }>("PRAGMA synchronous")
      assert.strictEqual(rows[0]?.synchronous, 1)
    }))

  it.scoped("units of work in flight when the thread dies: each either fails with the typed error or is committed, none acknowledged and lost", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "units.db")
      const context = yield* Layer.build(
        SqlStore.layerStores({ sweep_interval: 0 }).pipe(Layer.provideMerge(Sqlite.layerClient({ filename }))).pipe(
          Layer.provide(Logger.replace(Logger.defaultLogger, Logger.none))
        )
      )
      // The engine goes along with the client layer (internal, not in its type).
      const engine = Context.unsafeGet(context as unknown as Context.Context<SqliteEngine.SqliteEngine>, SqliteEngine.SqliteEngine)
      const units = yield* UnitOfWork.pipe(Effect.provide(context))
      const history = yield* HistoryStore.pipe(Effect.provide(context))
      const ids = Array.from({ length: 40 }, (_, i) => i + 1)
      const running = yield* Effect.fork(Effect.forEach(ids, (id) =>
        Effect.exit(units.run(history.appendAll([item(`c${id % 5}`, id)]))), { concurrency: "unbounded" }))
      yield* Effect.yieldNow()
      yield* engine.writer.crash
      const exits = yield* Fiber.join(running)
      for (const [i, exit] of exits.entries()) {
        const found = yield* history.lookup({ chat_id: `c${ids[i]! % 5}`, topic_id: null }, String(ids[i]))
        if (Exit.isSuccess(exit)) assert.isTrue(Option.isSome(found), `unit ${ids[i]} acknowledged but not stored`)
        else {
          assert.include(String(Cause.squash(exit.cause)), "writer thread stopped")
          assert.isTrue(Option.isNone(found), `unit ${ids[i]} failed but stored`)
        }
      }
      // And the writes go on, on a new thread.
      yield* units.run(history.appendAll([item("c0", 1000)]))
      assert.strictEqual(engine.writer.starts(), 2)
    }))

  it.scoped("an urgent call is sent at once, ahead of the ordinary calls waiting beyond the few the thread holds", () =>
    Effect.gen(function*() {
      const engine = yield* migrated("urgent.db")
      const order: Array<string> = []
      const ordinary = 4 * ordinaryInFlight
      const calls = yield* Effect.forEach(Array.from({ length: ordinary }, (_, i) => i), (i) =>
        Effect.fork(Effect.tap(engine.writer.call("unit", {}), () => Effect.sync(() => order.push(`ordinary ${i}`)))))
      // Every ordinary call has been sent or is waiting for its turn.
      yield* Effect.yieldNow()
      yield* engine.writer.call("unit", {}, true)
      order.push("urgent")
      yield* Fiber.joinAll(calls)
      const at = order.indexOf("urgent")
      assert.isAtMost(at, ordinaryInFlight, `the urgent call answered after ${at} ordinary ones: ${order.join(", ")}`)
      assert.strictEqual(order.length, ordinary + 1)
      // Ordinary calls keep their order.
      assert.deepStrictEqual(order.filter((o) => o !== "urgent"), Array.from({ length: ordinary }, (_, i) => `ordinary ${i}`))
    }))

  it.scoped("a call whose argument cannot be copied to the thread fails with a typed error, unsent; the thread goes on", () =>
    Effect.gen(function*() {
      const engine = yield* migrated("uncopyable.db")
      for (const urgent of [false, true]) {
        const exit = yield* Effect.exit(engine.writer.call("unit", { history: { chats: [], inserts: [], updates: [], events: [], hook: () => 1 } }, urgent))
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
        assert.isTrue(Option.isSome(error) && error.value instanceof SqlError, `a typed SqlError, got ${String(exit)}`)
        assert.include(Option.isSome(error) ? error.value.message : "", "cannot be sent")
      }
      // Nothing was sent, no slot is held: the thread answers the calls after it, ordinary and urgent alike.
      const after = yield* Effect.all(Array.from({ length: 2 * ordinaryInFlight }, () => engine.writer.call("unit", {})), { concurrency: "unbounded" })
      assert.deepStrictEqual(after, Array.from({ length: 2 * ordinaryInFlight }, () => true))
      assert.isTrue(yield* engine.writer.call("unit", {}, true))
      assert.strictEqual(engine.writer.starts(), 1)
    }))
})
