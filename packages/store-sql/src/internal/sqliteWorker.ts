/**
 * The SQLite writer thread: a `worker_threads` Worker that owns the write connection to one
 * database file and runs, synchronously, what the main thread sends it (see sqliteWriter.ts).
 * Every commit, fsync and WAL checkpoint runs here, never on the thread that answers reads and
 * requests. Messages are plain data both ways (see `Request` and `Reply` in sqliteProtocol.ts).
 *
 * Pages of 1 KiB in a new file. A recorded update changes a row or two in each of a handful of
 * b-trees keyed by chat (messages, their topic index, history, its message index): one leaf page
 * each, and SQLite writes a changed page whole — to the WAL at the commit, and again to the
 * database at the next checkpoint. At 4 KiB pages (SQLite's default) one single-message update
 * wrote some 30 KB; at 1 KiB about a third of it (see BENCHMARKS.md), for reads no slower here
 * (the page cache is sized in bytes). The page size of a file is fixed when it is created: a
 * file made with other pages keeps them.
 *
 * Checkpoints are the thread's own (SQLite's automatic one is off). SQLite's runs after every
 * commit once the WAL holds `wal_autocheckpoint` frames, and while the main thread reads — it
 * always does — it cannot finish and reset the WAL, so from then on every commit's pages were
 * copied to the database at once: each page written twice. Here a passive checkpoint runs once
 * `checkpointBytes` of frames were written since the last (read from the WAL index header in the
 * `-shm` file), so a hot page — the leaf a chat appends to — is copied back once per that many
 * bytes of updates, not once per commit; and when the thread has had nothing to do for a second
 * after a commit, if the WAL holds at least a sixteenth of that (a quiet bot's few updates are
 * not copied back one by one; with `synchronous=NORMAL` the WAL is then only synced to disk, as
 * the checkpoint did: what was written before a quiet second survives a power loss). A WAL that grows to twice the interval because checkpoints keep
 * meeting readers is checkpointed with RESTART (waiting for the readers of the moment, on this
 * thread) so it never grows without bound.
 *
 * Group commit of the write bodies (`call`, sqliteProcedures.ts): the calls that arrive
 * together — every message already queued when the thread picks up the first — run in one
 * `BEGIN IMMEDIATE … COMMIT`, each after the first in a savepoint of its own (a failing call
 * fails alone: the first one rolls back the transaction, which holds nothing else yet), and
 * are answered after that `COMMIT`, in one message. A statement sent by the main thread (its own transactions,
 * `group commit` there, migrations) first commits the calls' batch; calls that arrive while the
 * main thread holds a transaction wait for its end.
 */
import Sqlite from "better-sqlite3"
import * as fs from "node:fs"
import { parentPort, workerData } from "node:worker_threads"
import { preparedCache } from "./sqlitePrepared.js"
import * as procedures from "./sqliteProcedures.js"
import type { Reply, Request, WorkerOptions } from "./sqliteProtocol.js"

/** Idle time after a commit before the passive checkpoint, in milliseconds. */
const idleCheckpoint = 1000
/** The page size of a new file (see above). */
const newPageSize = 1024
/** The most calls one of the thread's transactions takes. */
const maxCalls = 256
/** The write connection's page cache, in KiB (see below). */
const cacheKiB = 8192

const options = workerData as WorkerOptions
const port = parentPort!

const db = new Sqlite(options.filename)
// Before WAL mode, which writes the file's header: only a file without pages takes a page size.
if (options.memory !== true && db.pragma("page_count", { simple: true }) === 0) db.pragma(`page_size = ${newPageSize}`)
if (options.memory !== true) db.pragma("journal_mode = WAL")
db.pragma(`busy_timeout = ${options.busyTimeout}`)
db.pragma(`synchronous = ${options.synchronous}`)
// 8 MiB of page cache (8,192 pages): the pages a write touches — the right-hand leaves of the
// chats being written and the interior pages above them — stay in it; a page it lacks comes from
// the OS's cache. Not more: SQLite scans the cache's whole hash table (a slot per page it ever
// held) at the end of any transaction in which a b-tree split renumbered pages (it parks a page
// at the locking page's number, page 1,048,577 at 1 KiB pages, and then drops every page past
// the end of the file). At 64 MiB that scan was a fifth of this thread's CPU in the bot's
// bursts; at 8 MiB a twentieth (BENCHMARKS.md in apps/telegram).
db.pragma(`cache_size = -${cacheKiB}`)
// Savepoints (one per write of a group commit) journal the pages they change for their rollback:
// in memory, not in a temporary file that wrote every changed page a second time.
db.pragma("temp_store = MEMORY")
const ownCheckpoints = options.memory !== true
/** WAL frames (pages) between two checkpoints. */
const checkpointFrames = Math.max(1000, Math.round(options.checkpointBytes / Number(db.pragma("page_size", { simple: true }))))
db.pragma(`wal_autocheckpoint = ${ownCheckpoints ? 0 : 1000}`)

const { prepare, clear: forgetPrepared } = preparedCache(db)

/** The WAL's frame count (`mxFrame` of the wal-index header, native byte order), or undefined when it cannot be read. */
let shm: number | undefined
const header = Buffer.alloc(20)
const walFrames = (): number | undefined => {
  try {
    shm ??= fs.openSync(`${options.filename}-shm`, "r")
    if (fs.readSync(shm, header, 0, 20, 0) !== 20 || header[12] === 0) return undefined
    return header.readUInt32LE(16)
  } catch {
    return undefined
  }
}
let checkpointedAt = 0

const checkpoint = (mode: "PASSIVE" | "RESTART") => {
  try {
    db.pragma(`wal_checkpoint(${mode})`)
  } catch {
    // A reader or a writer elsewhere: the next one does it.
  }
  checkpointedAt = walFrames() ?? 0
}

/** `synchronous=FULL` (or EXTRA): every commit synced the WAL already. */
const synchronousFull = /^(FULL|EXTRA|2|3)$/i.test(options.synchronous)
let wal: number | undefined
/** Syncs the WAL file to disk (what a checkpoint does first), copying nothing. */
const syncWal = () => {
  try {
    wal ??= fs.openSync(`${options.filename}-wal`, "r")
    fs.fsyncSync(wal)
  } catch {
    // No WAL file (nothing written yet): nothing to sync.
  }
}

/** Frames written since the last checkpoint (a WAL that was reset counts from 0 again). */
const written = (frames: number) => frames >= checkpointedAt ? frames - checkpointedAt : frames

let checkpointTimer: ReturnType<typeof setTimeout> | undefined
const checkpointWhenIdle = () => {
  if (options.memory === true || db.inTransaction) return
  if (checkpointTimer !== undefined) clearTimeout(checkpointTimer)
  checkpointTimer = setTimeout(() => {
    checkpointTimer = undefined
    if (!db.open || db.inTransaction) return
    const frames = walFrames()
    if (frames === undefined || written(frames) >= checkpointFrames / 16) checkpoint("PASSIVE")
    else if (!synchronousFull) syncWal()
  }, idleCheckpoint)
  checkpointTimer.unref()
}

/** After a commit (or any statement outside a transaction): a checkpoint when the WAL has grown enough, else one when idle. */
const afterCommit = () => {
  if (!ownCheckpoints || db.inTransaction) return
  const frames = walFrames()
  if (frames !== undefined) {
    if (frames >= 2 * checkpointFrames) return checkpoint("RESTART")
    if (written(frames) >= checkpointFrames) return checkpoint("PASSIVE")
  }
  checkpointWhenIdle()
}

const failure = (id: number, cause: unknown, prepare: boolean): Reply => ({
  id,
  error: {
    message: cause instanceof Error ? cause.message : String(cause),
    code: typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : undefined,
    prepare
  }
})

/** Runs one statement: its rows (a reader), the run's result (`raw`), rows as arrays (`values`), or nothing. */
const run = (request: Extract<Request, { op: "run" }>): Reply => {
  let statement: Sqlite.Statement
  try {
    statement = request.unprepared ? db.prepare(request.text) : prepare(request.text)
  } catch (cause) {
    return failure(request.id, cause, true)
  }
  try {
    if (statement.reader) {
      statement.safeIntegers(request.safe)
      if (request.mode === "values") {
        statement.raw(true)
        try {
          return { id: request.id, rows: statement.all(...request.params) }
        } finally {
          statement.raw(false)
        }
      }
      return { id: request.id, rows: statement.all(...request.params) }
    }
    const result = statement.run(...request.params)
    return { id: request.id, rows: request.mode === "raw" ? result : [] }
  } catch (cause) {
    return failure(request.id, cause, false)
  }
}

const handle = async (request: Request): Promise<Reply> => {
  switch (request.op) {
    case "run":
    case "call":
      // Handled as they arrive (see the message handler).
      return { id: request.id, rows: [] }
    case "export":
      try {
        return { id: request.id, rows: db.serialize() }
      } catch (cause) {
        return failure(request.id, cause, false)
      }
    case "backup":
      try {
        await db.backup(request.destination)
        return { id: request.id, rows: [] }
      } catch (cause) {
        return failure(request.id, cause, false)
      }
    case "loadExtension":
      try {
        db.loadExtension(request.path)
        forgetPrepared()
        return { id: request.id, rows: [] }
      } catch (cause) {
        return failure(request.id, cause, false)
      }
    case "crash":
      return { id: request.id, rows: [] }
    case "close":
      if (checkpointTimer !== undefined) clearTimeout(checkpointTimer)
      if (shm !== undefined) fs.closeSync(shm)
      if (wal !== undefined) fs.closeSync(wal)
      db.close()
      return { id: request.id, rows: [] }
  }
}

const call = procedures.make(db, prepare)
const control = (text: string) => {
  const statement = db.prepare(text)
  return () => statement.run()
}
const begin = control("BEGIN IMMEDIATE")
const commit = control("COMMIT")
const rollback = control("ROLLBACK")
const savepoint = control("SAVEPOINT deixis_call")
const release = control("RELEASE deixis_call")
const rollbackTo = control("ROLLBACK TO deixis_call")

/** The calls of the thread's open transaction, answered after its COMMIT. */
let batch: Array<Reply> | undefined
/** Calls that arrived while the main thread held a transaction. */
const waiting: Array<Extract<Request, { op: "call" }>> = []
let flushing = false

const flush = () => {
  flushing = false
  if (batch === undefined) return
  const held = batch
  batch = undefined
  try {
    commit()
    // One message for the whole batch: one wake-up of the main thread, not one per call.
    port.postMessage(held.length === 1 ? held[0] : held)
  } catch (cause) {
    try {
      if (db.inTransaction) rollback()
    } catch {
      // The connection rolled back already.
    }
    for (const reply of held) port.postMessage(reply.error === undefined ? failure(reply.id, cause, false) : reply)
  }
  afterCommit()
}

const runCall = (request: Extract<Request, { op: "call" }>) => {
  if (batch === undefined && db.inTransaction) {
    waiting.push(request)
    return
  }
  // The transaction's first call runs without a savepoint (a savepoint copies every page it
  // changes first, for its rollback): when it fails, the whole transaction rolls back, and holds
  // nothing else yet. Each later call has its savepoint, so it fails alone.
  let first = false
  try {
    if (batch === undefined) {
      begin()
      batch = []
      first = true
    } else {
      savepoint()
    }
  } catch (cause) {
    port.postMessage(failure(request.id, cause, false))
    return
  }
  try {
    const ok = call(request.name, request.argument)
    if (!first) release()
    batch.push({ id: request.id, rows: ok })
  } catch (cause) {
    if (first) {
      try {
        if (db.inTransaction) rollback()
      } catch {
        // The connection rolled back already.
      }
      batch = undefined
      port.postMessage(failure(request.id, cause, false))
      return
    }
    try {
      rollbackTo()
      release()
    } catch {
      // Handled below: the transaction is gone.
    }
    port.postMessage(failure(request.id, cause, false))
    if (!db.inTransaction) {
      // SQLite dropped the whole transaction (a full disk, an I/O error): the calls before this
      // one went with it.
      const lost = batch
      batch = undefined
      for (const reply of lost) port.postMessage(failure(reply.id, cause, false))
      return
    }
  }
  if (batch.length >= maxCalls) flush()
  else if (!flushing) {
    flushing = true
    // After every message already queued: they join this transaction.
    setImmediate(flush)
  }
}

port.on("message", (request: Request) => {
  if (request.op === "call") return runCall(request)
  if (batch !== undefined) flush()
  if (request.op === "run") {
    // The hot path stays synchronous: one message in, one out, nothing awaited.
    const reply = run(request)
    port.postMessage(reply)
    if (!db.inTransaction) {
      afterCommit()
      // The main thread's transaction is over: the calls that waited for it run now.
      if (waiting.length > 0) for (const waited of waiting.splice(0)) runCall(waited)
    }
    return
  }
  // For the supervision tests: the thread dies as a bug in it would.
  if (request.op === "crash") throw new Error("the SQLite writer thread was told to crash")
  void handle(request).then((reply) => {
    port.postMessage(reply)
    if (request.op === "close") port.close()
  })
})
port.postMessage({ id: 0, rows: [] } satisfies Reply)
