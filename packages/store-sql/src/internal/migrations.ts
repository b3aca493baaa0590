/**
 * Versioned migrations, applied on start inside one write transaction that holds a lock
 * (`BEGIN IMMEDIATE` on SQLite, `pg_advisory_xact_lock` on PostgreSQL), so running them twice,
 * or from several processes at once, applies each version exactly once.
 *
 * Every table is keyed by `chat_id` first (except the poll-id lookup and the migration
 * ledger), which is what lets the schema be distributed by chat (see the README).
 */
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { type Db, type Dialect, num } from "./db.js"

export interface Migration {
  readonly version: number
  readonly name: string
  readonly statements: (dialect: Dialect) => ReadonlyArray<string>
}

const types = (dialect: Dialect) =>
  dialect === "pg"
    ? { big: "BIGINT", int: "INTEGER", small: "SMALLINT", C: ` COLLATE "C"`, noRowid: "" }
    : { big: "INTEGER", int: "INTEGER", small: "INTEGER", C: "", noRowid: " WITHOUT ROWID" }

export const migrations: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "context_store",
    statements: (dialect) => {
      const t = types(dialect)
      return [
        // One row per chat: the lock a batch takes on PostgreSQL, and the chat's object sequence.
        `CREATE TABLE deixis_chats (
          chat_id TEXT NOT NULL PRIMARY KEY,
          next_seq ${t.big} NOT NULL,
          created_at ${t.big} NOT NULL
        )`,
        // id_len + message_id is the message's position (core's compareMessageIds).
        `CREATE TABLE deixis_messages (
          chat_id TEXT NOT NULL,
          id_len ${t.int} NOT NULL,
          message_id TEXT NOT NULL,
          topic TEXT NOT NULL,
          reply_len ${t.int},
          reply_to TEXT,
          sender TEXT,
          from_bot ${t.small} NOT NULL,
          sent_at ${t.big} NOT NULL,
          PRIMARY KEY (chat_id, id_len, message_id)
        )${t.noRowid}`,
        // SQLite orders by the primary key itself; PostgreSQL needs the code-point collation.
        ...(dialect === "pg" ? [`CREATE INDEX deixis_messages_position ON deixis_messages (chat_id, id_len, message_id${t.C})`] : []),
        `CREATE INDEX deixis_messages_topic ON deixis_messages (chat_id, topic, id_len, message_id${t.C})`,
        `CREATE INDEX deixis_messages_sent ON deixis_messages (sent_at)`,
        // `seq` orders a chat's objects by when they were stored (a topic move stores anew);
        // `since` is when the object stopped (or, never activated, started) being interesting.
        `CREATE TABLE deixis_objects (
          chat_id TEXT NOT NULL,
          object_id TEXT NOT NULL,
          seq ${t.big} NOT NULL,
          kind TEXT NOT NULL,
          topic TEXT NOT NULL,
          source_message_id TEXT NOT NULL,
          created_by TEXT,
          active_until ${t.big},
          since ${t.big} NOT NULL,
          body TEXT NOT NULL,
          PRIMARY KEY (chat_id, object_id)
        )`,
        `CREATE INDEX deixis_objects_recent ON deixis_objects (chat_id, seq)`,
        `CREATE INDEX deixis_objects_topic ON deixis_objects (chat_id, topic, seq)`,
        `CREATE INDEX deixis_objects_kind ON deixis_objects (chat_id, kind, seq)`,
        `CREATE INDEX deixis_objects_topic_kind ON deixis_objects (chat_id, topic, kind, seq)`,
        `CREATE INDEX deixis_objects_owner ON deixis_objects (chat_id, created_by, seq)`,
        `CREATE INDEX deixis_objects_source ON deixis_objects (chat_id, source_message_id)`,
        `CREATE INDEX deixis_objects_active ON deixis_objects (chat_id, active_until)`,
        `CREATE INDEX deixis_objects_topic_active ON deixis_objects (chat_id, topic, active_until)`,
        `CREATE INDEX deixis_objects_since ON deixis_objects (since)`,
        // Poll updates carry no chat: poll id → chat and object, and closes seen before their poll.
        `CREATE TABLE deixis_polls (
          poll_id TEXT NOT NULL PRIMARY KEY,
          chat_id TEXT NOT NULL,
          object_id TEXT NOT NULL,
          stored_at ${t.big} NOT NULL
        )`,
        `CREATE INDEX deixis_polls_stored ON deixis_polls (stored_at)`,
        `CREATE TABLE deixis_poll_closes (
          poll_id TEXT NOT NULL PRIMARY KEY,
          event_id TEXT NOT NULL,
          at ${t.big} NOT NULL,
          stored_at ${t.big} NOT NULL
        )`,
        `CREATE INDEX deixis_poll_closes_stored ON deixis_poll_closes (stored_at)`,
        // Event ids already applied (or skipped): idempotency of replays.
        `CREATE TABLE deixis_events (
          chat_id TEXT NOT NULL,
          event_id TEXT NOT NULL,
          seen_at ${t.big} NOT NULL,
          PRIMARY KEY (chat_id, event_id)
        )${t.noRowid}`,
        `CREATE INDEX deixis_events_seen ON deixis_events (seen_at)`
      ]
    }
  },
  {
    version: 2,
    name: "history_store",
    statements: (dialect) => {
      const t = types(dialect)
      return [
        // The per-chat append counter (items without a message id), and the chat's lock.
        `CREATE TABLE deixis_history_chats (
          chat_id TEXT NOT NULL PRIMARY KEY,
          seq ${t.big} NOT NULL
        )`,
        // Position: (anchor_len, anchor, seq); `rev` counts replacements.
        `CREATE TABLE deixis_history (
          chat_id TEXT NOT NULL,
          topic TEXT NOT NULL,
          anchor_len ${t.int} NOT NULL,
          anchor TEXT NOT NULL,
          seq ${t.big} NOT NULL,
          message_id TEXT,
          reply_to TEXT,
          response_id TEXT,
          sent_at ${t.big} NOT NULL,
          rev ${t.int} NOT NULL,
          body TEXT NOT NULL,
          PRIMARY KEY (chat_id, topic, anchor_len, anchor, seq)
        )`,
        ...(dialect === "pg"
          ? [`CREATE INDEX deixis_history_position ON deixis_history (chat_id, topic, anchor_len, anchor${t.C}, seq)`]
          : []),
        `CREATE UNIQUE INDEX deixis_history_message ON deixis_history (chat_id, message_id)`,
        `CREATE INDEX deixis_history_response ON deixis_history (chat_id, response_id)`,
        `CREATE INDEX deixis_history_replies ON deixis_history (chat_id, reply_to, topic)`,
        `CREATE INDEX deixis_history_sent ON deixis_history (sent_at)`
      ]
    }
  },
  {
    version: 3,
    name: "conversation_state",
    statements: (dialect) => {
      const t = types(dialect)
      return [
        `CREATE TABLE deixis_conversation_state (
          chat_id TEXT NOT NULL,
          topic TEXT NOT NULL,
          revision ${t.big} NOT NULL,
          state TEXT NOT NULL,
          updated_at ${t.big},
          updated_by TEXT,
          PRIMARY KEY (chat_id, topic)
        )`
      ]
    }
  }
]

const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Whether `name` is a plain PostgreSQL identifier (letters, digits, `_`), safe to splice. */
export const isIdentifier = (name: string): boolean => identifier.test(name)

/**
 * Applies every migration not yet recorded, in version order, under the lock. Returns the
 * versions this call applied (empty when another process, or an earlier start, did).
 */
export const migrate = (db: Db, schema: string | undefined): Effect.Effect<ReadonlyArray<number>, SqlError> =>
  db.transaction(Effect.gen(function*() {
    if (db.dialect === "pg") {
      yield* db.query(`SELECT pg_advisory_xact_lock(hashtext(?))`, [`deixis/migrations/${schema ?? ""}`])
      if (schema !== undefined) yield* db.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`)
    }
    yield* db.query(
      `CREATE TABLE IF NOT EXISTS deixis_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at ${
        db.dialect === "pg" ? "BIGINT" : "INTEGER"
      } NOT NULL)`
    )
    const rows = yield* db.query(`SELECT version FROM deixis_migrations`)
    const applied = new Set(rows.map((r) => num(r["version"])))
    const now = yield* Clock.currentTimeMillis
    const done: Array<number> = []
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue
      for (const statement of migration.statements(db.dialect)) yield* db.query(statement)
      yield* db.query(`INSERT INTO deixis_migrations (version, name, applied_at) VALUES (?, ?, ?)`, [
        migration.version,
        migration.name,
        now
      ])
      done.push(migration.version)
    }
    return done
  }))
