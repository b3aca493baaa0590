/**
 * The SQLite writer thread's write bodies: plain synchronous functions on the raw better-sqlite3
 * handle, run inside the thread's transaction (sqliteWorker.ts). They are SQLite's spelling of
 * PostgreSQL's `deixis_apply` and `deixis_unit` (migrations 14 and 16), with the same argument
 * (plain data, built by contextWrite.ts and historyStore.ts from what the main thread read on
 * its read connection and reduced): each first checks that what was read has not moved — a
 * chat's revision, a history counter — and then writes, or writes nothing and answers false
 * (the caller reads and reduces again). The update inbox's bodies (inbox.ts) run here whole,
 * each statement they yield on the thread's prepared statements.
 */
import type Sqlite from "better-sqlite3"
import { sqlite } from "./dialect/sqlite.js"
import { type Body, bodies, type InboxBody } from "./inbox.js"
import { compile, type Row } from "./statement.js"

type Rows = ReadonlyArray<Record<string, unknown>>

/** `deixis_apply`'s argument (see `applyArgument` in contextWrite.ts). */
export interface ApplyArgument {
  readonly now: number
  readonly chats: ReadonlyArray<{ readonly chat_id: string; readonly revision: number }>
  readonly messages: Rows
  readonly edits: Rows
  readonly removed: Rows
  readonly forums: Rows
  readonly titles: Rows
  readonly objects: Rows
  readonly polls: Rows
  readonly cleared: ReadonlyArray<string>
  readonly closes: Rows
  readonly seen: Rows
  readonly seqs: Rows
  readonly bump: ReadonlyArray<string>
}

/** `deixis_unit`'s argument (see unit.ts): a context batch and the history store's appends. */
export interface UnitArgument {
  readonly context?: ApplyArgument | undefined
  readonly history?: {
    readonly chats: ReadonlyArray<{ readonly chat_id: string; readonly seq: number; readonly next: number }>
    readonly inserts: Rows
    readonly updates: Rows
    readonly events: Rows
  } | undefined
}

/** The procedures a caller may name. */
export type Procedure = "apply" | "unit" | InboxBody

/**
 * The procedures over `db`, their statements prepared on first use (the tables exist once
 * migrated); `prepared` gives the thread's cached statement of a text.
 */
export const make = (
  db: Sqlite.Database,
  prepared: (text: string) => Sqlite.Statement
): ((name: Procedure, argument: unknown) => unknown) => {
  let s: ReturnType<typeof prepare> | undefined
  const prepare = () => ({
    chat: db.prepare("INSERT INTO deixis_chats (chat_id, next_seq, created_at) VALUES (?, 1, ?) ON CONFLICT (chat_id) DO NOTHING"),
    revision: db.prepare("SELECT revision FROM deixis_chats WHERE chat_id = ?").pluck(),
    message: db.prepare(
      `INSERT INTO deixis_messages (chat_id, id_len, message_id, topic, reply_len, reply_to, sender, from_bot, sent_at)
       VALUES (@chat_id, @id_len, @message_id, @topic, @reply_len, @reply_to, @sender, @from_bot, @sent_at) ON CONFLICT DO NOTHING`
    ),
    edit: db.prepare(
      "UPDATE deixis_messages SET edited_at = @edited_at WHERE chat_id = @chat_id AND id_len = @id_len AND message_id = @message_id"
    ),
    remove: db.prepare("DELETE FROM deixis_objects WHERE chat_id = @chat_id AND object_id = @object_id"),
    forum: db.prepare("UPDATE deixis_chats SET is_forum = @is_forum WHERE chat_id = @chat_id"),
    title: db.prepare("UPDATE deixis_chats SET title = @title, title_key = @title_key WHERE chat_id = @chat_id"),
    object: db.prepare(
      `INSERT INTO deixis_objects (chat_id, object_id, seq, kind, topic, source_message_id, created_by, active_until, since, body)
       VALUES (@chat_id, @object_id, @seq, @kind, @topic, @source_message_id, @created_by, @active_until, @since, @body)
       ON CONFLICT (chat_id, object_id) DO UPDATE SET
         seq = excluded.seq, kind = excluded.kind, topic = excluded.topic,
         source_message_id = excluded.source_message_id, created_by = excluded.created_by,
         active_until = excluded.active_until, since = excluded.since, body = excluded.body`
    ),
    poll: db.prepare(
      `INSERT INTO deixis_polls (poll_id, chat_id, object_id, stored_at) VALUES (@poll_id, @chat_id, @object_id, @now)
       ON CONFLICT (poll_id) DO UPDATE SET chat_id = excluded.chat_id, object_id = excluded.object_id, stored_at = excluded.stored_at`
    ),
    clear: db.prepare("DELETE FROM deixis_poll_closes WHERE poll_id = ?"),
    close: db.prepare(
      `INSERT INTO deixis_poll_closes (poll_id, event_id, at, stored_at) VALUES (@poll_id, @event_id, @at, @now)
       ON CONFLICT (poll_id) DO UPDATE SET event_id = excluded.event_id, at = excluded.at, stored_at = excluded.stored_at`
    ),
    seen: db.prepare("INSERT INTO deixis_events (chat_id, event_id, seen_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"),
    seq: db.prepare("UPDATE deixis_chats SET next_seq = @next_seq WHERE chat_id = @chat_id"),
    bump: db.prepare("UPDATE deixis_chats SET revision = revision + 1 WHERE chat_id = ?"),
    counter: db.prepare("INSERT INTO deixis_history_chats (chat_id, seq) VALUES (?, 0) ON CONFLICT (chat_id) DO NOTHING"),
    counted: db.prepare("SELECT seq FROM deixis_history_chats WHERE chat_id = ?").pluck(),
    count: db.prepare("UPDATE deixis_history_chats SET seq = ? WHERE chat_id = ?"),
    item: db.prepare(
      `INSERT INTO deixis_history (chat_id, topic, anchor_len, anchor, seq, message_id, reply_to, response_id, event_id, sent_at, rev, body)
       VALUES (@chat_id, @topic, @anchor_len, @anchor, @seq, @message_id, @reply_to, @response_id, @event_id, @sent_at, 0, @body)`
    ),
    byMessage: db.prepare(
      `UPDATE deixis_history SET reply_to = @reply_to, response_id = @response_id, sent_at = @sent_at, rev = rev + 1, body = @body
       WHERE chat_id = @chat_id AND topic = @topic AND anchor_len = @anchor_len AND anchor = @message_id AND seq = 0`
    ),
    byEvent: db.prepare(
      `UPDATE deixis_history SET reply_to = @reply_to, sent_at = @sent_at, rev = rev + 1, body = @body
       WHERE chat_id = @chat_id AND event_id = @event_id`
    )
  })
  const statements = () => (s ??= prepare())

  /**
   * A row's value read, the row made first when it is missing (the thread holds the write lock:
   * no other connection makes it meanwhile) — one statement for a row that exists, where an
   * insert-or-ignore before every read took two.
   */
  const readMaking = (read: Sqlite.Statement, make: () => unknown, key: string): number => {
    const found = read.get(key)
    if (found !== undefined) return Number(found)
    make()
    return Number(read.get(key))
  }

  /** The context batch's chats exist and are at the revisions read. */
  const contextHolds = (p: ApplyArgument): boolean => {
    const st = statements()
    for (const c of p.chats) {
      if (readMaking(st.revision, () => st.chat.run(c.chat_id, p.now), c.chat_id) !== c.revision) return false
    }
    return true
  }

  const writeContext = (p: ApplyArgument): void => {
    const st = statements()
    for (const m of p.messages) st.message.run(m)
    for (const e of p.edits) st.edit.run(e)
    for (const r of p.removed) st.remove.run(r)
    for (const f of p.forums) st.forum.run(f)
    for (const t of p.titles) st.title.run(t)
    for (const o of p.objects) st.object.run(o)
    for (const q of p.polls) st.poll.run({ ...q, now: p.now })
    for (const id of p.cleared) st.clear.run(id)
    for (const c of p.closes) st.close.run({ ...c, now: p.now })
    for (const e of p.seen) st.seen.run(e["chat_id"], e["event_id"], p.now)
    for (const q of p.seqs) st.seq.run(q)
    for (const chat of p.bump) st.bump.run(chat)
  }

  const apply = (p: ApplyArgument): boolean => {
    if (!contextHolds(p)) return false
    writeContext(p)
    return true
  }

  const unit = (p: UnitArgument): boolean => {
    const st = statements()
    if (p.context !== undefined && !contextHolds(p.context)) return false
    const h = p.history
    if (h !== undefined) {
      for (const c of h.chats) if (readMaking(st.counted, () => st.counter.run(c.chat_id), c.chat_id) !== c.seq) return false
    }
    if (p.context !== undefined) writeContext(p.context)
    if (h !== undefined) {
      for (const c of h.chats) st.count.run(c.next, c.chat_id)
      for (const r of h.inserts) st.item.run(r)
      for (const u of h.updates) st.byMessage.run(u)
      for (const e of h.events) st.byEvent.run(e)
    }
    return true
  }

  /** A body run to its end: each statement it yields run here, its rows given back. */
  const runBody = <A>(body: Body<A>): A => {
    let next = body.next()
    while (!next.done) {
      const { params, text } = compile(sqlite, next.value)
      const statement = prepared(text)
      let rows: ReadonlyArray<Row> = []
      if (statement.reader) rows = statement.all(...params) as ReadonlyArray<Row>
      else statement.run(...params)
      next = body.next(rows)
    }
    return next.value
  }

  return (name, argument) => {
    switch (name) {
      case "apply":
        return apply(argument as ApplyArgument)
      case "unit":
        return unit(argument as UnitArgument)
      default:
        return runBody<unknown>(bodies[name](sqlite, argument))
    }
  }
}
