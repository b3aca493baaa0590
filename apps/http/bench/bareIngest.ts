/**
 * The ingest floors of `pnpm bench`: a bare node:http server doing what POST
 * /v1/telegram/updates does for the bench's updates (a one-line text message, a fresh message id)
 * and nothing else — no Effect, no deixis package at run time. BARE_STORE picks the store:
 *
 * - `memory`: the update parsed and checked (update_id, message with chat, id and text), the
 *   context message and the history item built as the service builds them, kept in Maps with the
 *   same duplicate check (chat and message id), each chat's revision and history counter moved;
 *   answered with the service's answer.
 * - `sqlite:<file>`: the same, durably, in a file the service migrated (the bench starts the
 *   service on a fresh file once, then this floor on it: its tables, indexes and 1 KiB pages):
 *   WAL, `synchronous=NORMAL`, the service's own checkpoint rule. The reads before the write run on this thread on a read-only connection
 *   (the chat's row and revision, the message's row, its objects, its history item, the chat's
 *   history counter); the writes run in ONE worker thread on its own connection, group committed
 *   — every write already queued when the previous commit ends joins the next transaction — and
 *   each answer is sent after its write committed. Per update the writer runs four statements:
 *   the chat's revision moved (`WHERE revision =` what was read), the history counter moved the
 *   same way, the message row, the history row with its JSON body. Updates of one chat wait for
 *   that chat's write in flight (one process: nothing else moves a chat).
 * - `pg:<url>#<schema>`: the same, durably, on PostgreSQL, in a schema the service migrated (the
 *   bench starts the service on a fresh schema once, then this floor on it: the tables and the
 *   server functions are the service's own). Updates are recorded in groups, one group at a time,
 *   the updates that arrive meanwhile forming the next (at most 64), as the service's unit of
 *   work groups them; each group is two round trips, as the service's: one read statement (each
 *   update's chat row and revision, its message row, its objects, its chat's history counter,
 *   its history item by message id, through the tables' keys) and one call of the service's
 *   `deixis_unit` with the argument the service sends for these updates (the chats with the
 *   revisions read, the message rows, a title when it changed, each chat's revision bumped once;
 *   each chat's history counter as read and moved by one, one history row with its JSON body
 *   per update) — one transaction, one commit per group — and each answer is sent after its
 *   group committed. That is all the service writes for these updates on PostgreSQL: no
 *   update-inbox row (`deixis_updates`; the webhook records, it does not queue). A pool of 10
 *   connections, of which one group at a time uses one. An update already recorded is answered
 *   as a duplicate without a write (the service rewrites its history item; the bench sends
 *   none). Several groups at once (per-chat lanes, tried with 2 and 3) cost more CPU per update,
 *   the process's and the server's (more, smaller groups: more statements per update), for no
 *   steady gain in rate on the bench's 2 cores.
 *
 * better-sqlite3 is store-sql's own copy, node-postgres the one store-sql's `@effect/sql-pg`
 * resolves (apps/http depends on neither).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { openSync, readFileSync, readSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads"

interface Statement {
  run(...params: ReadonlyArray<unknown>): { changes: number }
  get(...params: ReadonlyArray<unknown>): unknown
  all(...params: ReadonlyArray<unknown>): Array<unknown>
  pluck(): Statement
}
interface Database {
  prepare(text: string): Statement
  pragma(text: string, options?: { simple: boolean }): unknown
  exec(text: string): void
  close(): void
}
type DatabaseClass = new (file: string, options?: { readonly?: boolean }) => Database

// From apps/http/bench or apps/http/.bench/bench: store-sql's package, whose better-sqlite3 the service loads.
const storeSqlDir = (): string => {
  for (const up of ["..", "../.."]) {
    const dir = join(import.meta.dirname, up, "node_modules", "@deixis", "store-sql")
    try {
      readFileSync(join(dir, "package.json"))
      return dir
    } catch {
      // Not from here.
    }
  }
  throw new Error("@deixis/store-sql not found")
}
const openDatabase = (file: string, readonly: boolean): Database => {
  const Sqlite = createRequire(join(storeSqlDir(), "package.json"))("better-sqlite3") as DatabaseClass
  return new Sqlite(file, { readonly })
}

/**
 * One write as the main thread sends it: [chat, revision read (-1: no row), counter read (-1: none),
 * now, title, message id, sender, sent at, topic, history body].
 */
type Write = [string, number, number, number, string | null, string, string, number, string, string]

// ---------------------------------------------------------------------------------------------
// The writer thread.

const writer = () => {
  const { file } = workerData as { readonly file: string }
  const port = parentPort!
  const db = openDatabase(file, false)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  db.pragma("cache_size = -65536")
  db.pragma("temp_store = MEMORY")
  db.pragma("wal_autocheckpoint = 0")
  // The file is the service's, migrated: a start on another fails here, not at the first update.
  db.prepare("SELECT 1 FROM deixis_chats, deixis_messages, deixis_history_chats, deixis_history LIMIT 0").all()
  const s = {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    rollback: db.prepare("ROLLBACK"),
    newChat: db.prepare(
      "INSERT INTO deixis_chats (chat_id, next_seq, created_at, revision, title, title_key) VALUES (?, 1, ?, 1, ?, lower(?))"
    ),
    bump: db.prepare("UPDATE deixis_chats SET revision = revision + 1 WHERE chat_id = ? AND revision = ?"),
    title: db.prepare("UPDATE deixis_chats SET title = ?, title_key = lower(?) WHERE chat_id = ?"),
    newCounter: db.prepare("INSERT INTO deixis_history_chats (chat_id, seq) VALUES (?, 1)"),
    count: db.prepare("UPDATE deixis_history_chats SET seq = seq + 1 WHERE chat_id = ? AND seq = ?"),
    message: db.prepare(
      `INSERT INTO deixis_messages (chat_id, id_len, message_id, topic, reply_len, reply_to, sender, from_bot, sent_at)
       VALUES (?, ?, ?, ?, NULL, NULL, ?, 0, ?) ON CONFLICT DO NOTHING`
    ),
    item: db.prepare(
      `INSERT INTO deixis_history (chat_id, topic, anchor_len, anchor, seq, message_id, reply_to, response_id, event_id, sent_at, rev, body)
       VALUES (?, ?, ?, ?, 0, ?, NULL, NULL, NULL, ?, 0, ?)`
    )
  }
  const one = (w: Write) => {
    const [chat, revision, counter, now, title, id, sender, sentAt, topic, body] = w
    if (revision < 0) s.newChat.run(chat, now, title, title)
    else if (s.bump.run(chat, revision).changes !== 1) throw new Error(`chat ${chat} moved`)
    else if (title !== null) s.title.run(title, title, chat)
    if (counter < 0) s.newCounter.run(chat)
    else if (s.count.run(chat, counter).changes !== 1) throw new Error(`history of ${chat} moved`)
    s.message.run(chat, id.length, id, topic, sender, sentAt)
    s.item.run(chat, topic, id.length, id, id, sentAt, body)
  }

  // The service's checkpoint rule (store-sql's sqliteWorker.ts): SQLite's automatic one off, a
  // passive checkpoint every 32 MiB of WAL frames written, RESTART when the WAL holds twice that.
  const checkpointFrames = (32 * 1024 * 1024) / Number(db.pragma("page_size", { simple: true }))
  const header = Buffer.alloc(20)
  let shm: number | undefined
  let checkpointedAt = 0
  const walFrames = () => {
    shm ??= openSync(`${file}-shm`, "r")
    return readSync(shm, header, 0, 20, 0) === 20 && header[12] !== 0 ? header.readUInt32LE(16) : undefined
  }
  const checkpoint = (mode: string) => {
    try {
      db.pragma(`wal_checkpoint(${mode})`)
    } catch {
      // The next one does it.
    }
    checkpointedAt = walFrames() ?? 0
  }
  const afterCommit = () => {
    const frames = walFrames()
    if (frames === undefined) return
    const written = frames >= checkpointedAt ? frames - checkpointedAt : frames
    if (frames >= 2 * checkpointFrames) checkpoint("RESTART")
    else if (written >= checkpointFrames) checkpoint("PASSIVE")
  }

  let queue: Array<Write> = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    const batch = queue
    queue = []
    try {
      s.begin.run()
      for (const w of batch) one(w)
      s.commit.run()
      port.postMessage({ n: batch.length, ok: true })
    } catch (cause) {
      try {
        s.rollback.run()
      } catch {
        // Rolled back already.
      }
      port.postMessage({ n: batch.length, ok: false, error: String(cause) })
    }
    afterCommit()
  }
  port.on("message", (message: Array<Write> | "close") => {
    if (message === "close") {
      db.close()
      process.exit(0)
    }
    for (const w of message) queue.push(w)
    if (!scheduled) {
      scheduled = true
      // After every message already queued: they join this transaction.
      setImmediate(flush)
    }
  })
  port.postMessage("ready")
}

// ---------------------------------------------------------------------------------------------
// The server.

interface Update {
  readonly chat: string
  readonly title: string | null
  readonly id: string
  readonly topic: string
  readonly sender: string
  readonly sentAt: number
  readonly item: Record<string, unknown>
}

/** The update checked and recorded as the service records it: its context message and history item, or undefined. */
const parse = (text: string): Update | undefined => {
  let u: any
  try {
    u = JSON.parse(text)
  } catch {
    return undefined
  }
  const m = u?.message
  if (typeof u?.update_id !== "number" || typeof m !== "object" || m === null) return undefined
  if (typeof m.chat?.id !== "number" || typeof m.message_id !== "number" || typeof m.text !== "string") return undefined
  const chat = String(m.chat.id)
  const id = String(m.message_id)
  const topic = m.is_topic_message === true && typeof m.message_thread_id === "number" ? String(m.message_thread_id) : ""
  const from = m.from ?? {}
  const sender = String(from.id)
  const sentAt = m.date * 1000
  const nickname = [from.first_name, from.last_name].filter((x) => typeof x === "string").join(" ")
  const item = {
    channel: "telegram", kind: "inbound_user", chat_id: chat, topic_id: topic === "" ? null : topic, chat_type: m.chat.type,
    message_id: id, reply_to_message_id: null, bot_response_id: null, sent_at: sentAt,
    sender: { user_id: sender, username: from.username ?? null, nickname, is_bot: from.is_bot === true, display_ref: nickname },
    text: m.text, quote: null, attachments: []
  }
  return { chat, title: typeof m.chat.title === "string" ? m.chat.title : null, id, topic, sender, sentAt, item }
}

const answer = (applied: boolean) =>
  JSON.stringify({ updates: 1, skipped: [], events: { applied: applied ? 1 : 0, duplicates: applied ? 0 : 1, skipped: [] }, history_items: 1 })

const send = (response: ServerResponse, status: number, body: string) => {
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  response.end(body)
}

type Record_ = (update: Update, response: ServerResponse) => void

/** The memory store: per chat its revision, history counter, messages and history items. */
const memoryStore = (): Record_ => {
  interface Chat {
    revision: number
    counter: number
    title: string | null
    readonly messages: Map<string, Record<string, unknown>>
    readonly items: Map<string, Record<string, unknown>>
    readonly order: Array<Record<string, unknown>>
  }
  const chats = new Map<string, Chat>()
  return (u, response) => {
    let chat = chats.get(u.chat)
    if (chat === undefined) {
      chats.set(u.chat, chat = { revision: 0, counter: 0, title: null, messages: new Map(), items: new Map(), order: [] })
    }
    if (chat.messages.has(u.id) && chat.items.has(u.id)) return send(response, 200, answer(false))
    if (u.title !== null && chat.title !== u.title) chat.title = u.title
    chat.messages.set(u.id, {
      chat_id: u.chat, message_id: u.id, topic_id: u.topic === "" ? null : u.topic, reply_to_message_id: null,
      sender_user_id: u.sender, from_bot: false, sent_at: u.sentAt
    })
    chat.items.set(u.id, u.item)
    chat.order.push(u.item)
    chat.revision++
    chat.counter++
    send(response, 200, answer(true))
  }
}

/** The SQLite store: reads here on a read-only connection, the writes in the writer thread. */
const sqliteStore = async (file: string): Promise<{ readonly record: Record_; readonly close: () => void }> => {
  const worker = new Worker(new URL(import.meta.url), { workerData: { file } })
  // The writer ready: the read connection opens the file.
  await new Promise<void>((resolve, reject) => {
    worker.once("message", () => resolve())
    worker.once("error", reject)
  })
  const db = openDatabase(file, true)
  db.pragma("cache_size = -65536")
  const r = {
    chat: db.prepare("SELECT revision, title FROM deixis_chats WHERE chat_id = ?"),
    message: db.prepare("SELECT sent_at, edited_at FROM deixis_messages WHERE chat_id = ? AND id_len = ? AND message_id = ?"),
    objects: db.prepare("SELECT body, seq FROM deixis_objects WHERE chat_id = ? AND source_message_id = ?"),
    item: db.prepare("SELECT body FROM deixis_history WHERE chat_id = ? AND topic = ? AND anchor_len = ? AND anchor = ? AND seq = 0"),
    counter: db.prepare("SELECT seq FROM deixis_history_chats WHERE chat_id = ?").pluck()
  }
  /** Writes sent and not yet committed, in order, with their answers. */
  const inFlight: Array<{ readonly chat: string; readonly response: ServerResponse }> = []
  /** Per chat with a write in flight, the updates waiting for it. */
  const lanes = new Map<string, Array<[Update, ServerResponse]>>()
  let outbox: Array<Write> = []
  const post = () => {
    const writes = outbox
    outbox = []
    worker.postMessage(writes)
  }

  const record = (u: Update, response: ServerResponse) => {
    const lane = lanes.get(u.chat)
    if (lane !== undefined) {
      lane.push([u, response])
      return
    }
    const chat = r.chat.get(u.chat) as { revision: number; title: string | null } | undefined
    const message = r.message.get(u.chat, u.id.length, u.id)
    r.objects.all(u.chat, u.id)
    const item = r.item.get(u.chat, u.topic, u.id.length, u.id)
    if (message !== undefined && item !== undefined) return send(response, 200, answer(false))
    const counter = r.counter.get(u.chat) as number | undefined
    lanes.set(u.chat, [])
    if (outbox.length === 0) setImmediate(post)
    outbox.push([
      u.chat, chat?.revision ?? -1, counter ?? -1, Date.now(), chat === undefined || chat.title !== u.title ? u.title : null,
      u.id, u.sender, u.sentAt, u.topic, JSON.stringify(u.item)
    ])
    inFlight.push({ chat: u.chat, response })
  }

  worker.on("message", (m: { n: number; ok: boolean; error?: string }) => {
    const done = inFlight.splice(0, m.n)
    for (const { chat, response } of done) {
      if (m.ok) send(response, 200, answer(true))
      else send(response, 500, JSON.stringify({ error: m.error }))
      const waiting = lanes.get(chat)!
      lanes.delete(chat)
      for (const [u, res] of waiting) record(u, res)
    }
  })
  worker.on("error", (error) => {
    console.error(error)
    process.exit(1)
  })
  return {
    record, close: () => {
      db.close()
      worker.postMessage("close")
    }
  }
}

/** What the floor uses of a `pg` pool (node-postgres' `Pool`). */
interface PgPool {
  query(config: { readonly name?: string; readonly text: string; readonly values: ReadonlyArray<unknown> }): Promise<{ readonly rows: Array<Record<string, any>> }>
  on(event: "error", listener: (error: Error) => void): unknown
  end(): Promise<void>
}

/** node-postgres as store-sql loads it: `@effect/sql-pg`'s dependency, resolved from its real directory. */
const pgDriver = (): { readonly Pool: new(config: object) => PgPool } => {
  const sqlPg = createRequire(join(storeSqlDir(), "package.json")).resolve("@effect/sql-pg/package.json")
  return createRequire(sqlPg)("pg")
}

/**
 * A group's reads, as the service reads a recorded update's (one statement, each part through its
 * table's key): the chats' rows, the messages' rows, their objects, the history counters, the
 * history items by message id. Each array parameter is read through a subquery, as the
 * service's are: the statement's plan then does not depend on the values, and the server keeps
 * one plan per connection instead of planning the statement again on every call.
 */
const pgRead = `SELECT
  (SELECT COALESCE(json_agg(x), '[]') FROM (SELECT c.chat_id, c.revision, c.title FROM unnest((SELECT CAST($1 AS TEXT[]))) AS k(chat_id)
    CROSS JOIN LATERAL (SELECT * FROM deixis_chats c WHERE c.chat_id = k.chat_id OFFSET 0) AS c) AS x) AS chats,
  (SELECT COALESCE(json_agg(x), '[]') FROM (SELECT m.chat_id, m.message_id, m.sent_at, m.edited_at
    FROM unnest((SELECT CAST($2 AS TEXT[])), (SELECT CAST($3 AS INTEGER[])), (SELECT CAST($4 AS TEXT[]))) AS k(chat_id, id_len, message_id)
    CROSS JOIN LATERAL (SELECT * FROM deixis_messages m WHERE m.chat_id = k.chat_id AND m.id_len = k.id_len AND m.message_id = k.message_id OFFSET 0) AS m) AS x) AS messages,
  (SELECT COALESCE(json_agg(x), '[]') FROM (SELECT o.body, o.seq FROM unnest((SELECT CAST($2 AS TEXT[])), (SELECT CAST($4 AS TEXT[]))) AS k(chat_id, message_id)
    CROSS JOIN LATERAL (SELECT * FROM deixis_objects o WHERE o.chat_id = k.chat_id AND o.source_message_id = k.message_id OFFSET 0) AS o) AS x) AS objects,
  (SELECT COALESCE(json_agg(x), '[]') FROM (SELECT c.chat_id, c.seq FROM unnest((SELECT CAST($1 AS TEXT[]))) AS k(chat_id)
    CROSS JOIN LATERAL (SELECT * FROM deixis_history_chats c WHERE c.chat_id = k.chat_id OFFSET 0) AS c) AS x) AS counters,
  (SELECT COALESCE(json_agg(x), '[]') FROM (SELECT h.chat_id, h.message_id FROM unnest((SELECT CAST($2 AS TEXT[])), (SELECT CAST($4 AS TEXT[]))) AS k(chat_id, message_id)
    CROSS JOIN LATERAL (SELECT * FROM deixis_history h WHERE h.chat_id = k.chat_id AND h.message_id = k.message_id OFFSET 0) AS h) AS x) AS items`

/** The most updates a group takes (the service's `maxGroup`). */
const maxGroup = 64

/**
 * The PostgreSQL store, on a schema the service migrated (`url#schema`): a pool of 10
 * connections, updates recorded in groups — one group at a time, the updates that arrive
 * meanwhile forming the next — each group one read and one call of the service's `deixis_unit`.
 */
const pgStore = async (target: string): Promise<{ readonly record: Record_; readonly close: () => void }> => {
  const at = target.lastIndexOf("#")
  const url = new URL(target.slice(0, at))
  url.searchParams.set("options", `-c search_path=${target.slice(at + 1)}`)
  const pool = new (pgDriver().Pool)({ connectionString: url.toString(), max: 10, application_name: "deixis-bare" })
  pool.on("error", () => {})
  // The schema is the service's, migrated: a start on another fails here, not at the first update.
  await pool.query({ text: "SELECT CAST('deixis_unit(jsonb)' AS regprocedure)", values: [] })
  let waiting: Array<[Update, ServerResponse]> = []
  let running = false

  /** The group's writes, as the service's unit of work sends them for these updates; undefined when all were recorded already. */
  const writesOf = async (group: ReadonlyArray<[Update, ServerResponse]>) => {
    const chatIds = [...new Set(group.map(([u]) => u.chat))]
    const { rows: [read] } = await pool.query({
      name: "bare_read", text: pgRead,
      values: [chatIds, group.map(([u]) => u.chat), group.map(([u]) => u.id.length), group.map(([u]) => u.id)]
    })
    const key = (chat: string, id: string) => `${chat} ${id}`
    const stored = new Set<string>((read!["messages"] as Array<{ chat_id: string; message_id: string }>).map((m) => key(m.chat_id, m.message_id)))
    const items = new Set<string>((read!["items"] as Array<{ chat_id: string; message_id: string }>).map((h) => key(h.chat_id, h.message_id)))
    const chats = new Map((read!["chats"] as Array<{ chat_id: string; revision: number; title: string | null }>).map((c) => [c.chat_id, c]))
    const counters = new Map((read!["counters"] as Array<{ chat_id: string; seq: number }>).map((c) => [c.chat_id, c.seq]))
    const now = Date.now()
    const applied: Array<boolean> = []
    const messages: Array<object> = []
    const inserts: Array<object> = []
    const titles = new Map<string, string>()
    const written = new Set<string>()
    for (const [u] of group) {
      const k = key(u.chat, u.id)
      if (stored.has(k) && items.has(k)) {
        applied.push(false)
        continue
      }
      applied.push(true)
      stored.add(k)
      items.add(k)
      if (u.title !== null && (chats.get(u.chat)?.title ?? null) !== u.title) titles.set(u.chat, u.title)
      messages.push({
        chat_id: u.chat, id_len: u.id.length, message_id: u.id, topic: u.topic, reply_len: null, reply_to: null, sender: u.sender,
        from_bot: 0, sent_at: u.sentAt
      })
      inserts.push({
        chat_id: u.chat, topic: u.topic, anchor_len: u.id.length, anchor: u.id, seq: 0, message_id: u.id, reply_to: null,
        response_id: null, event_id: null, sent_at: u.sentAt, body: JSON.stringify(u.item)
      })
      written.add(u.chat)
    }
    if (messages.length === 0) return { applied, unit: undefined }
    const unit = {
      context: {
        now, chats: [...written].map((chat_id) => ({ chat_id, revision: chats.get(chat_id)?.revision ?? 0 })), messages,
        edits: [], removed: [], forums: [], titles: [...titles].map(([chat_id, title]) => ({ chat_id, title, title_key: title.toLowerCase() })),
        objects: [], polls: [], cleared: [], closes: [], seen: [], seqs: [], bump: [...written]
      },
      history: {
        // Each chat's counter moves once per group (it numbers items without a message id; these have one).
        chats: [...written].map((chat_id) => ({ chat_id, seq: counters.get(chat_id) ?? 0, next: (counters.get(chat_id) ?? 0) + 1 })),
        inserts, updates: [], events: []
      }
    }
    return { applied, unit }
  }

  const run = async (group: ReadonlyArray<[Update, ServerResponse]>) => {
    try {
      // Read again when a chat or counter moved meanwhile (another process's write; none in the bench).
      for (let attempt = 0;; attempt++) {
        const { applied, unit } = await writesOf(group)
        if (unit !== undefined) {
          const { rows: [written] } = await pool.query({ name: "bare_unit", text: "SELECT deixis_unit(CAST($1 AS jsonb)) AS ok", values: [JSON.stringify(unit)] })
          if (written!["ok"] !== true) {
            if (attempt < 8) continue
            throw new Error("a chat kept moving")
          }
        }
        group.forEach(([, response], i) => send(response, 200, answer(applied[i]!)))
        return
      }
    } catch (cause) {
      for (const [, response] of group) send(response, 500, JSON.stringify({ error: String(cause) }))
    }
  }

  const next = () => {
    if (running || waiting.length === 0) return
    running = true
    const group = waiting.splice(0, maxGroup)
    void run(group).then(() => {
      running = false
      next()
    })
  }
  return {
    record: (u, response) => {
      waiting.push([u, response])
      next()
    },
    close: () => {
      void pool.end().then(() => process.exit(0), () => process.exit(0))
    }
  }
}

const main = async () => {
  const store = process.env["BARE_STORE"] ?? "memory"
  const durable = store.startsWith("sqlite:")
    ? await sqliteStore(store.slice("sqlite:".length))
    : store.startsWith("pg:")
    ? await pgStore(store.slice("pg:".length))
    : undefined
  const record = durable?.record ?? memoryStore()
  const server = createServer((request: IncomingMessage, response) => {
    if (request.method === "GET") return send(response, 200, "{}")
    let text = ""
    request.setEncoding("utf8")
    request.on("data", (chunk: string) => (text += chunk))
    request.on("end", () => {
      const update = request.url === "/v1/telegram/updates" ? parse(text) : undefined
      if (update === undefined) return send(response, 400, "{}")
      record(update, response)
    })
  }).listen(Number(process.env["PORT"]), "127.0.0.1")
  const stop = () => {
    server.close()
    server.closeAllConnections()
    if (durable === undefined) process.exit(0)
    durable.close()
  }
  process.once("SIGTERM", stop)
  process.once("SIGINT", stop)
}

if (isMainThread) void main()
else writer()
