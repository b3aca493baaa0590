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
import { raw, sql } from "./statement.js"

export interface Migration {
  readonly version: number
  readonly name: string
  readonly statements: (dialect: Dialect) => ReadonlyArray<string>
}

const types = (dialect: Dialect) => dialect.ddl

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
        ...dialect.pgOnly([`CREATE INDEX deixis_messages_position ON deixis_messages (chat_id, id_len, message_id${t.C})`]),
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
        ...dialect.pgOnly([`CREATE INDEX deixis_history_position ON deixis_history (chat_id, topic, anchor_len, anchor${t.C}, seq)`]),
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
  },
  {
    version: 4,
    name: "pg_pool_function",
    // PostgreSQL plans the pool's many-part query anew on every call (over a millisecond); a
    // PL/pgSQL function keeps its plans per connection. SQLite caches prepared statements itself.
    statements: (dialect) => dialect.pgOnly([poolFunction])
  },
  {
    version: 5,
    name: "lean_indexes",
    statements: (dialect) => [
      // Most objects are never activated: the two indexes of the pool's active part hold only those
      // that were, instead of every object (two fewer index entries written per object).
      `DROP INDEX deixis_objects_active`,
      `DROP INDEX deixis_objects_topic_active`,
      `CREATE INDEX deixis_objects_active ON deixis_objects (chat_id, active_until) WHERE active_until IS NOT NULL`,
      `CREATE INDEX deixis_objects_topic_active ON deixis_objects (chat_id, topic, active_until) WHERE active_until IS NOT NULL`,
      ...dialect.pgOnly([
          // Message ids compare by code point (COLLATE "C") in every column that holds one, so the
          // primary key orders by position too: one index fewer per message, and no second index on
          // (chat_id, id_len) that a plan without statistics can pick for an id lookup and then filter
          // a whole id length of rows. Equality is unchanged (both collations are deterministic).
          `ALTER TABLE deixis_messages ALTER COLUMN message_id TYPE TEXT COLLATE "C", ALTER COLUMN reply_to TYPE TEXT COLLATE "C"`,
          `ALTER TABLE deixis_objects ALTER COLUMN source_message_id TYPE TEXT COLLATE "C"`,
          `DROP INDEX deixis_messages_position`,
          poolFunctionC
        ])
    ]
  },
  {
    version: 6,
    name: "bot_schedules",
    statements: (dialect) => {
      const t = types(dialect)
      return [
        // The pending-reminder schedule (ReminderStore): `next_at` is when a reminder is next
        // claimable — its due time, the end of a claim's lease, or a retry time — so one index
        // answers "what is due now" whatever the reason.
        `CREATE TABLE deixis_reminders (
          chat_id TEXT NOT NULL,
          object_id TEXT${t.C} NOT NULL,
          topic TEXT NOT NULL,
          due_at ${t.big} NOT NULL,
          next_at ${t.big} NOT NULL,
          owner TEXT,
          attempts ${t.int} NOT NULL,
          body TEXT NOT NULL,
          PRIMARY KEY (chat_id, object_id)
        )`,
        `CREATE INDEX deixis_reminders_next ON deixis_reminders (next_at)`,
        `CREATE INDEX deixis_reminders_list ON deixis_reminders (chat_id, topic, due_at)`,
        // A bot's incoming updates (UpdateInbox): the payload is kept until the update is handled,
        // the id afterwards (until swept) so a redelivery is recognised.
        `CREATE TABLE deixis_updates (
          source TEXT NOT NULL,
          update_id ${t.big} NOT NULL,
          received_at ${t.big} NOT NULL,
          lease_until ${t.big},
          payload TEXT,
          PRIMARY KEY (source, update_id)
        )`,
        `CREATE INDEX deixis_updates_pending ON deixis_updates (source, lease_until) WHERE payload IS NOT NULL`,
        `CREATE INDEX deixis_updates_done ON deixis_updates (received_at) WHERE payload IS NULL`
      ]
    }
  },
  {
    version: 7,
    name: "telegram_traffic",
    statements: (dialect) => {
      const t = types(dialect)
      return [
        // Whether a chat is a forum: a message or request without a topic there is its General topic.
        `ALTER TABLE deixis_chats ADD COLUMN is_forum ${t.small} NOT NULL DEFAULT 0`,
        // A chat that migrated (a Telegram group upgraded to a supergroup): where to, once.
        `CREATE TABLE deixis_chat_migrations (
          chat_id TEXT NOT NULL PRIMARY KEY,
          to_chat_id TEXT NOT NULL,
          migrated_at ${t.big} NOT NULL
        )`,
        `CREATE INDEX deixis_polls_chat ON deixis_polls (chat_id)`,
        // The identity of a history item without a message id (a reaction), so a redelivery is stored once.
        `ALTER TABLE deixis_history ADD COLUMN event_id TEXT`,
        `CREATE UNIQUE INDEX deixis_history_event ON deixis_history (chat_id, event_id) WHERE event_id IS NOT NULL`
      ]
    }
  },
  {
    version: 8,
    name: "chat_revision",
    // Each chat's revision, bumped in the transaction of every write to its messages or objects
    // (by any process): a store serves its in-memory copy of a chat only at the revision it read.
    statements: (dialect) => [`ALTER TABLE deixis_chats ADD COLUMN revision ${types(dialect).big} NOT NULL DEFAULT 0`]
  },
  {
    version: 9,
    name: "update_attempts",
    // How many times each pending update was handed out to be handled (UpdateInbox's attempts),
    // so a bot gives up one that keeps failing. An update pending at the upgrade was received:
    // that is its first attempt.
    statements: (dialect) => [`ALTER TABLE deixis_updates ADD COLUMN attempts ${types(dialect).int} NOT NULL DEFAULT 1`]
  },
  {
    version: 10,
    name: "message_edited_at",
    // The `edited_at` of the newest edit applied to a message (null: none), so an older edit
    // arriving after it is recognised as superseded (core's reducer applies edits in time order).
    statements: (dialect) => [`ALTER TABLE deixis_messages ADD COLUMN edited_at ${types(dialect).big}`]
  },
  {
    version: 13,
    name: "chat_titles",
    // Each chat's title (the `chat_title` of the newest event that carried one) for the chat list,
    // and its search key (`ChatInfo.searchKey`, lower case as JavaScript folds it): both engines
    // then match a search the same way, whatever their own case folding.
    statements: () => [`ALTER TABLE deixis_chats ADD COLUMN title TEXT`, `ALTER TABLE deixis_chats ADD COLUMN title_key TEXT`]
  },
  {
    version: 14,
    name: "pg_apply_function",
    // A write batch in one round trip on PostgreSQL: the batch is read without locks, reduced in
    // the process, and written by one call that first compares the chats' revisions with the ones
    // it read (see `applyFunction`).
    statements: (dialect) => dialect.pgOnly([applyFunction])
  },
  {
    version: 15,
    name: "update_chat_claims",
    statements: (dialect) => {
      const t = types(dialect)
      return [
        // Each update's chat (UpdateInbox orders by it across processes); a pending update's
        // `lease_until` is null while it waits for its chat's holder, set once handed.
        `ALTER TABLE deixis_updates ADD COLUMN chat TEXT NOT NULL DEFAULT ''`,
        `DROP INDEX deixis_updates_pending`,
        `CREATE INDEX deixis_updates_chat ON deixis_updates (source, chat, update_id) WHERE payload IS NOT NULL`,
        // One process at a time handles a chat's updates: its claim, for a lease; `waiting`
        // when updates of the chat wait for the holder (received elsewhere, or given back).
        `CREATE TABLE deixis_update_chats (
          source TEXT NOT NULL,
          chat TEXT NOT NULL,
          owner TEXT NOT NULL,
          lease_until ${t.big} NOT NULL,
          waiting ${t.small} NOT NULL,
          PRIMARY KEY (source, chat)
        )`,
        `CREATE INDEX deixis_update_chats_lease ON deixis_update_chats (source, lease_until)`,
        // Updates pending at the upgrade (chat '') are taken over by the next claim of stale chats.
        `INSERT INTO deixis_update_chats (source, chat, owner, lease_until, waiting)
          SELECT DISTINCT source, '', '', 0, 1 FROM deixis_updates WHERE payload IS NOT NULL`
      ]
    }
  },
  {
    version: 16,
    name: "pg_unit_function",
    // An optimistic unit of work in one round trip on PostgreSQL: the context store's batch and
    // the history store's appends, read without locks, written by one call that first checks
    // what they read (see unit.ts).
    statements: (dialect) => dialect.pgOnly([unitFunction])
  },
  {
    version: 17,
    name: "history_partial_indexes",
    // Most items answer nothing and reply to nothing: only those that do are indexed, so a
    // recorded message writes two index pages fewer (lookups by a response or a reply name one,
    // which the partial index serves).
    statements: () => [
      `DROP INDEX deixis_history_response`,
      `CREATE INDEX deixis_history_response ON deixis_history (chat_id, response_id) WHERE response_id IS NOT NULL`,
      `DROP INDEX deixis_history_replies`,
      `CREATE INDEX deixis_history_replies ON deixis_history (chat_id, reply_to, topic) WHERE reply_to IS NOT NULL`
    ]
  },
  {
    version: 18,
    name: "pg_inbox_functions",
    // The update inbox's writes (receive, settle, claimStale: inbox.ts) in one round trip each on
    // PostgreSQL, where a transaction driven from the process took one per statement and two
    // more for BEGIN and COMMIT (see `inboxFunctions`).
    statements: (dialect) => dialect.pgOnly([...inboxFunctions, applyWriteFunction, applyFunction18, unitFunction18])
  },
  {
    version: 19,
    name: "topic_indexes_partial",
    // SQLite: the messages' topic index and the history's message-id index hold only the rows in
    // a topic (see `Dialect.topicIndexesPartial`). In a chat without topics both repeated its
    // primary key's order, one more b-tree leaf written per message and per item: a recorded
    // message now writes two per-chat b-trees (`deixis_messages`, `deixis_history`'s key)
    // instead of four. Rows in no topic are read by their primary keys; the message-id index
    // stays unique among the rows it holds, and a history append still finds an id in any topic
    // first (historyStore.ts). The update inbox's chat claims, rewritten by every receive and
    // settlement, become one b-tree keyed by (source, chat) instead of a row table and its key.
    // PostgreSQL keeps its schema.
    statements: (dialect) =>
      dialect.sqliteOnly([
        `DROP INDEX deixis_messages_topic`,
        `CREATE INDEX deixis_messages_topic ON deixis_messages (chat_id, topic, id_len, message_id) WHERE topic <> ''`,
        `DROP INDEX deixis_history_message`,
        `CREATE UNIQUE INDEX deixis_history_message ON deixis_history (chat_id, message_id) WHERE topic <> ''`,
        `CREATE TABLE deixis_update_chats_19 (
          source TEXT NOT NULL,
          chat TEXT NOT NULL,
          owner TEXT NOT NULL,
          lease_until INTEGER NOT NULL,
          waiting INTEGER NOT NULL,
          PRIMARY KEY (source, chat)
        ) WITHOUT ROWID`,
        `INSERT INTO deixis_update_chats_19 (source, chat, owner, lease_until, waiting)
          SELECT source, chat, owner, lease_until, waiting FROM deixis_update_chats`,
        `DROP TABLE deixis_update_chats`,
        `ALTER TABLE deixis_update_chats_19 RENAME TO deixis_update_chats`,
        `CREATE INDEX deixis_update_chats_lease ON deixis_update_chats (source, lease_until)`
      ])
  },
  {
    version: 20,
    name: "pg_unit_by_index",
    // PostgreSQL: the writes of a unit group (`deixis_unit`) and of a context batch
    // (`deixis_apply`) find the chats and history counters they lock, bump and advance through
    // their primary keys, where the statements of migration 18 joined the keys to a scan of the
    // whole table whenever the planner took it for small; a chat or counter is created only when
    // it was read without a row (see `unitFunction20`).
    statements: (dialect) => dialect.pgOnly([applyWriteFunction20, applyFunction20, unitFunction20])
  },
  {
    version: 21,
    name: "retention_indexes_on_demand",
    // Only the retention sweeps read messages and history items by `sent_at` and objects by
    // `since`, and those retentions are off by default: every recorded message wrote an entry
    // into each of these indexes for nothing (on SQLite, some 1.6 of the ~6.5 pages a
    // single-message update wrote). A store whose retention is on creates its index at start
    // (`retentionIndexes` in stores.ts).
    statements: () => [`DROP INDEX deixis_messages_sent`, `DROP INDEX deixis_history_sent`, `DROP INDEX deixis_objects_since`]
  }
]

/**
 * One write batch of the context store (`apply` on PostgreSQL outside a caller's transaction),
 * as one statement: `p` holds the chats the batch read with the revision each was read at, and
 * the rows to write. The chats' rows are created if new and locked in a fixed order (as every
 * writer takes them); when a revision moved since the batch read it, nothing is written and the
 * result is false (the batch is read and reduced again). Otherwise every row is written, each
 * chat written to gets a new revision, and the result is true.
 */
const applyFunction = `CREATE OR REPLACE FUNCTION deixis_apply(p jsonb) RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  v_moved boolean;
BEGIN
  INSERT INTO deixis_chats (chat_id, next_seq, created_at)
    SELECT c.chat_id, 1, (p->>'now')::bigint FROM jsonb_to_recordset(p->'chats') AS c(chat_id text, revision bigint)
    ORDER BY c.chat_id COLLATE "C"
    ON CONFLICT (chat_id) DO NOTHING;
  SELECT bool_or(l.revision IS DISTINCT FROM c.revision) INTO v_moved
    FROM jsonb_to_recordset(p->'chats') AS c(chat_id text, revision bigint)
    LEFT JOIN (
      SELECT d.chat_id, d.revision FROM deixis_chats d
        WHERE d.chat_id IN (SELECT e->>'chat_id' FROM jsonb_array_elements(p->'chats') AS e)
        ORDER BY d.chat_id COLLATE "C" FOR UPDATE
    ) AS l ON l.chat_id = c.chat_id;
  IF v_moved THEN
    RETURN false;
  END IF;
  INSERT INTO deixis_messages (chat_id, id_len, message_id, topic, reply_len, reply_to, sender, from_bot, sent_at)
    SELECT * FROM jsonb_to_recordset(p->'messages') AS m(chat_id text, id_len integer, message_id text, topic text,
      reply_len integer, reply_to text, sender text, from_bot smallint, sent_at bigint)
    ON CONFLICT DO NOTHING;
  UPDATE deixis_messages m SET edited_at = e.edited_at
    FROM jsonb_to_recordset(p->'edits') AS e(chat_id text, id_len integer, message_id text, edited_at bigint)
    WHERE m.chat_id = e.chat_id AND m.id_len = e.id_len AND m.message_id = e.message_id;
  DELETE FROM deixis_objects o USING jsonb_to_recordset(p->'removed') AS r(chat_id text, object_id text)
    WHERE o.chat_id = r.chat_id AND o.object_id = r.object_id;
  UPDATE deixis_chats c SET is_forum = f.is_forum
    FROM jsonb_to_recordset(p->'forums') AS f(chat_id text, is_forum smallint) WHERE c.chat_id = f.chat_id;
  UPDATE deixis_chats c SET title = t.title, title_key = t.title_key
    FROM jsonb_to_recordset(p->'titles') AS t(chat_id text, title text, title_key text) WHERE c.chat_id = t.chat_id;
  INSERT INTO deixis_objects (chat_id, object_id, seq, kind, topic, source_message_id, created_by, active_until, since, body)
    SELECT * FROM jsonb_to_recordset(p->'objects') AS o(chat_id text, object_id text, seq bigint, kind text, topic text,
      source_message_id text, created_by text, active_until bigint, since bigint, body text)
    ON CONFLICT (chat_id, object_id) DO UPDATE SET
      seq = excluded.seq, kind = excluded.kind, topic = excluded.topic,
      source_message_id = excluded.source_message_id, created_by = excluded.created_by,
      active_until = excluded.active_until, since = excluded.since, body = excluded.body;
  INSERT INTO deixis_polls (poll_id, chat_id, object_id, stored_at)
    SELECT q.poll_id, q.chat_id, q.object_id, (p->>'now')::bigint
      FROM jsonb_to_recordset(p->'polls') AS q(poll_id text, chat_id text, object_id text)
    ON CONFLICT (poll_id) DO UPDATE SET chat_id = excluded.chat_id, object_id = excluded.object_id, stored_at = excluded.stored_at;
  DELETE FROM deixis_poll_closes WHERE poll_id IN (SELECT e #>> '{}' FROM jsonb_array_elements(p->'cleared') AS e);
  INSERT INTO deixis_poll_closes (poll_id, event_id, at, stored_at)
    SELECT q.poll_id, q.event_id, q.at, (p->>'now')::bigint
      FROM jsonb_to_recordset(p->'closes') AS q(poll_id text, event_id text, at bigint)
    ON CONFLICT (poll_id) DO UPDATE SET event_id = excluded.event_id, at = excluded.at, stored_at = excluded.stored_at;
  INSERT INTO deixis_events (chat_id, event_id, seen_at)
    SELECT e.chat_id, e.event_id, (p->>'now')::bigint FROM jsonb_to_recordset(p->'seen') AS e(chat_id text, event_id text)
    ON CONFLICT DO NOTHING;
  UPDATE deixis_chats c SET next_seq = s.next_seq
    FROM jsonb_to_recordset(p->'seqs') AS s(chat_id text, next_seq bigint) WHERE c.chat_id = s.chat_id;
  UPDATE deixis_chats SET revision = revision + 1
    WHERE chat_id IN (SELECT e #>> '{}' FROM jsonb_array_elements(p->'bump') AS e);
  RETURN true;
END
$fn$`

/**
 * Migration 18's spelling of the context store's write (`deixis_apply`) and of a unit's
 * (`deixis_unit`): the rows written by `deixis_apply_write`, each table's statement run only
 * when the batch has rows for it (a recorded message writes two tables of the twelve, and an
 * empty statement costs the server as much as a small one), and the unit's context part written
 * under the lock it took without taking it again.
 */
const applyWriteFunction = `CREATE OR REPLACE FUNCTION deixis_apply_write(p jsonb) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  IF jsonb_array_length(p->'messages') > 0 THEN
    INSERT INTO deixis_messages (chat_id, id_len, message_id, topic, reply_len, reply_to, sender, from_bot, sent_at)
      SELECT * FROM jsonb_to_recordset(p->'messages') AS m(chat_id text, id_len integer, message_id text, topic text,
        reply_len integer, reply_to text, sender text, from_bot smallint, sent_at bigint)
      ON CONFLICT DO NOTHING;
  END IF;
  IF jsonb_array_length(p->'edits') > 0 THEN
    UPDATE deixis_messages m SET edited_at = e.edited_at
      FROM jsonb_to_recordset(p->'edits') AS e(chat_id text, id_len integer, message_id text, edited_at bigint)
      WHERE m.chat_id = e.chat_id AND m.id_len = e.id_len AND m.message_id = e.message_id;
  END IF;
  IF jsonb_array_length(p->'removed') > 0 THEN
    DELETE FROM deixis_objects o USING jsonb_to_recordset(p->'removed') AS r(chat_id text, object_id text)
      WHERE o.chat_id = r.chat_id AND o.object_id = r.object_id;
  END IF;
  IF jsonb_array_length(p->'forums') > 0 THEN
    UPDATE deixis_chats c SET is_forum = f.is_forum
      FROM jsonb_to_recordset(p->'forums') AS f(chat_id text, is_forum smallint) WHERE c.chat_id = f.chat_id;
  END IF;
  IF jsonb_array_length(p->'titles') > 0 THEN
    UPDATE deixis_chats c SET title = t.title, title_key = t.title_key
      FROM jsonb_to_recordset(p->'titles') AS t(chat_id text, title text, title_key text) WHERE c.chat_id = t.chat_id;
  END IF;
  IF jsonb_array_length(p->'objects') > 0 THEN
    INSERT INTO deixis_objects (chat_id, object_id, seq, kind, topic, source_message_id, created_by, active_until, since, body)
      SELECT * FROM jsonb_to_recordset(p->'objects') AS o(chat_id text, object_id text, seq bigint, kind text, topic text,
        source_message_id text, created_by text, active_until bigint, since bigint, body text)
      ON CONFLICT (chat_id, object_id) DO UPDATE SET
        seq = excluded.seq, kind = excluded.kind, topic = excluded.topic,
        source_message_id = excluded.source_message_id, created_by = excluded.created_by,
        active_until = excluded.active_until, since = excluded.since, body = excluded.body;
  END IF;
  IF jsonb_array_length(p->'polls') > 0 THEN
    INSERT INTO deixis_polls (poll_id, chat_id, object_id, stored_at)
      SELECT q.poll_id, q.chat_id, q.object_id, (p->>'now')::bigint
        FROM jsonb_to_recordset(p->'polls') AS q(poll_id text, chat_id text, object_id text)
      ON CONFLICT (poll_id) DO UPDATE SET chat_id = excluded.chat_id, object_id = excluded.object_id, stored_at = excluded.stored_at;
  END IF;
  IF jsonb_array_length(p->'cleared') > 0 THEN
    DELETE FROM deixis_poll_closes WHERE poll_id IN (SELECT e #>> '{}' FROM jsonb_array_elements(p->'cleared') AS e);
  END IF;
  IF jsonb_array_length(p->'closes') > 0 THEN
    INSERT INTO deixis_poll_closes (poll_id, event_id, at, stored_at)
      SELECT q.poll_id, q.event_id, q.at, (p->>'now')::bigint
        FROM jsonb_to_recordset(p->'closes') AS q(poll_id text, event_id text, at bigint)
      ON CONFLICT (poll_id) DO UPDATE SET event_id = excluded.event_id, at = excluded.at, stored_at = excluded.stored_at;
  END IF;
  IF jsonb_array_length(p->'seen') > 0 THEN
    INSERT INTO deixis_events (chat_id, event_id, seen_at)
      SELECT e.chat_id, e.event_id, (p->>'now')::bigint FROM jsonb_to_recordset(p->'seen') AS e(chat_id text, event_id text)
      ON CONFLICT DO NOTHING;
  END IF;
  IF jsonb_array_length(p->'seqs') > 0 THEN
    UPDATE deixis_chats c SET next_seq = s.next_seq
      FROM jsonb_to_recordset(p->'seqs') AS s(chat_id text, next_seq bigint) WHERE c.chat_id = s.chat_id;
  END IF;
  IF jsonb_array_length(p->'bump') > 0 THEN
    UPDATE deixis_chats SET revision = revision + 1
      WHERE chat_id IN (SELECT e #>> '{}' FROM jsonb_array_elements(p->'bump') AS e);
  END IF;
END
$fn$`

/** The chats of `c` (a context batch) created if new, locked in a fixed order, and whether a revision moved since read. */
const lockChats = (c: string) => `
    INSERT INTO deixis_chats (chat_id, next_seq, created_at)
      SELECT c.chat_id, 1, (${c}->>'now')::bigint FROM jsonb_to_recordset(${c}->'chats') AS c(chat_id text, revision bigint)
      ORDER BY c.chat_id COLLATE "C"
      ON CONFLICT (chat_id) DO NOTHING;
    SELECT bool_or(l.revision IS DISTINCT FROM c.revision) INTO v_moved
      FROM jsonb_to_recordset(${c}->'chats') AS c(chat_id text, revision bigint)
      LEFT JOIN (
        SELECT d.chat_id, d.revision FROM deixis_chats d
          WHERE d.chat_id IN (SELECT e->>'chat_id' FROM jsonb_array_elements(${c}->'chats') AS e)
          ORDER BY d.chat_id COLLATE "C" FOR UPDATE
      ) AS l ON l.chat_id = c.chat_id;
    IF v_moved THEN
      RETURN false;
    END IF;`

const applyFunction18 = `CREATE OR REPLACE FUNCTION deixis_apply(p jsonb) RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  v_moved boolean;
BEGIN${lockChats("p")}
  PERFORM deixis_apply_write(p);
  RETURN true;
END
$fn$`

/**
 * A unit's history rows (`h`: `deixis_unit`'s history part) written: the inserts, then the items
 * replaced by message id and by event id. Migrations 18 and 20 write them alike.
 */
const historyRowsWrite = `    IF jsonb_array_length(h->'inserts') > 0 THEN
      INSERT INTO deixis_history (chat_id, topic, anchor_len, anchor, seq, message_id, reply_to, response_id, event_id, sent_at, rev, body)
        SELECT r.chat_id, r.topic, r.anchor_len, r.anchor, r.seq, r.message_id, r.reply_to, r.response_id, r.event_id, r.sent_at, 0, r.body
        FROM jsonb_to_recordset(h->'inserts') AS r(chat_id text, topic text, anchor_len integer, anchor text, seq bigint,
          message_id text, reply_to text, response_id text, event_id text, sent_at bigint, body text);
    END IF;
    IF jsonb_array_length(h->'updates') > 0 THEN
      UPDATE deixis_history d SET reply_to = u.reply_to, response_id = u.response_id, sent_at = u.sent_at, rev = d.rev + 1, body = u.body
        FROM jsonb_to_recordset(h->'updates') AS u(chat_id text, message_id text, reply_to text, response_id text, sent_at bigint, body text)
        WHERE d.chat_id = u.chat_id AND d.message_id = u.message_id;
    END IF;
    IF jsonb_array_length(h->'events') > 0 THEN
      UPDATE deixis_history d SET reply_to = u.reply_to, sent_at = u.sent_at, rev = d.rev + 1, body = u.body
        FROM jsonb_to_recordset(h->'events') AS u(chat_id text, event_id text, reply_to text, sent_at bigint, body text)
        WHERE d.chat_id = u.chat_id AND d.event_id = u.event_id;
    END IF;
`

const unitFunction18 = `CREATE OR REPLACE FUNCTION deixis_unit(p jsonb) RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  v_moved boolean;
  h jsonb := p->'history';
BEGIN
  IF p ? 'context' THEN${lockChats("(p->'context')")}
  END IF;
  IF h IS NOT NULL THEN
    INSERT INTO deixis_history_chats (chat_id, seq)
      SELECT c.chat_id, 0 FROM jsonb_to_recordset(h->'chats') AS c(chat_id text)
      ORDER BY c.chat_id COLLATE "C"
      ON CONFLICT (chat_id) DO NOTHING;
    SELECT bool_or(l.seq IS DISTINCT FROM c.seq) INTO v_moved
      FROM jsonb_to_recordset(h->'chats') AS c(chat_id text, seq bigint)
      LEFT JOIN (
        SELECT d.chat_id, d.seq FROM deixis_history_chats d
          WHERE d.chat_id IN (SELECT e->>'chat_id' FROM jsonb_array_elements(h->'chats') AS e)
          ORDER BY d.chat_id COLLATE "C" FOR UPDATE
      ) AS l ON l.chat_id = c.chat_id;
    IF v_moved THEN
      RETURN false;
    END IF;
  END IF;
  -- Under the locks taken above, the batch's own check holds: its rows are written.
  IF p ? 'context' THEN
    PERFORM deixis_apply_write(p->'context');
  END IF;
  IF h IS NOT NULL THEN
    UPDATE deixis_history_chats d SET seq = c.next
      FROM jsonb_to_recordset(h->'chats') AS c(chat_id text, next bigint) WHERE d.chat_id = c.chat_id;
${historyRowsWrite}  END IF;
  RETURN true;
END
$fn$`


/**
 * The writes of an optimistic unit of work (unit.ts), as one statement: `p.context` is one
 * batch of the context store (`deixis_apply`'s argument), `p.history` the history store's
 * appends: each chat's counter as read (`seq`, 0 when it had no row) and as it becomes
 * (`next`), the rows to insert, the items replaced by message id (`updates`) and by event id
 * (`events`). The context store's chats are locked first, then the history counters, each in a
 * fixed order (as the locked writers take them); when a revision or a counter moved since the
 * unit read it, nothing is written and the result is false (the unit runs again). Otherwise
 * everything is written and the result is true.
 */
const unitFunction = `CREATE OR REPLACE FUNCTION deixis_unit(p jsonb) RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  v_moved boolean;
  h jsonb := p->'history';
BEGIN
  IF p ? 'context' THEN
    INSERT INTO deixis_chats (chat_id, next_seq, created_at)
      SELECT c.chat_id, 1, (p->'context'->>'now')::bigint FROM jsonb_to_recordset(p->'context'->'chats') AS c(chat_id text, revision bigint)
      ORDER BY c.chat_id COLLATE "C"
      ON CONFLICT (chat_id) DO NOTHING;
    SELECT bool_or(l.revision IS DISTINCT FROM c.revision) INTO v_moved
      FROM jsonb_to_recordset(p->'context'->'chats') AS c(chat_id text, revision bigint)
      LEFT JOIN (
        SELECT d.chat_id, d.revision FROM deixis_chats d
          WHERE d.chat_id IN (SELECT e->>'chat_id' FROM jsonb_array_elements(p->'context'->'chats') AS e)
          ORDER BY d.chat_id COLLATE "C" FOR UPDATE
      ) AS l ON l.chat_id = c.chat_id;
    IF v_moved THEN
      RETURN false;
    END IF;
  END IF;
  IF h IS NOT NULL THEN
    INSERT INTO deixis_history_chats (chat_id, seq)
      SELECT c.chat_id, 0 FROM jsonb_to_recordset(h->'chats') AS c(chat_id text)
      ORDER BY c.chat_id COLLATE "C"
      ON CONFLICT (chat_id) DO NOTHING;
    SELECT bool_or(l.seq IS DISTINCT FROM c.seq) INTO v_moved
      FROM jsonb_to_recordset(h->'chats') AS c(chat_id text, seq bigint)
      LEFT JOIN (
        SELECT d.chat_id, d.seq FROM deixis_history_chats d
          WHERE d.chat_id IN (SELECT e->>'chat_id' FROM jsonb_array_elements(h->'chats') AS e)
          ORDER BY d.chat_id COLLATE "C" FOR UPDATE
      ) AS l ON l.chat_id = c.chat_id;
    IF v_moved THEN
      RETURN false;
    END IF;
  END IF;
  -- Under the locks taken above, the batch's own check holds: it writes.
  IF p ? 'context' AND NOT deixis_apply(p->'context') THEN
    RAISE EXCEPTION 'deixis_unit: a revision moved under its lock';
  END IF;
  IF h IS NOT NULL THEN
    UPDATE deixis_history_chats d SET seq = c.next
      FROM jsonb_to_recordset(h->'chats') AS c(chat_id text, next bigint) WHERE d.chat_id = c.chat_id;
    INSERT INTO deixis_history (chat_id, topic, anchor_len, anchor, seq, message_id, reply_to, response_id, event_id, sent_at, rev, body)
      SELECT r.chat_id, r.topic, r.anchor_len, r.anchor, r.seq, r.message_id, r.reply_to, r.response_id, r.event_id, r.sent_at, 0, r.body
      FROM jsonb_to_recordset(h->'inserts') AS r(chat_id text, topic text, anchor_len integer, anchor text, seq bigint,
        message_id text, reply_to text, response_id text, event_id text, sent_at bigint, body text);
    UPDATE deixis_history d SET reply_to = u.reply_to, response_id = u.response_id, sent_at = u.sent_at, rev = d.rev + 1, body = u.body
      FROM jsonb_to_recordset(h->'updates') AS u(chat_id text, message_id text, reply_to text, response_id text, sent_at bigint, body text)
      WHERE d.chat_id = u.chat_id AND d.message_id = u.message_id;
    UPDATE deixis_history d SET reply_to = u.reply_to, sent_at = u.sent_at, rev = d.rev + 1, body = u.body
      FROM jsonb_to_recordset(h->'events') AS u(chat_id text, event_id text, reply_to text, sent_at bigint, body text)
      WHERE d.chat_id = u.chat_id AND d.event_id = u.event_id;
  END IF;
  RETURN true;
END
$fn$`

/** `text` with `from` replaced by `to`; `from` must be in it. */
const replaced = (text: string, from: string, to: string): string => {
  if (!text.includes(from)) throw new Error(`migrations: no "${from.slice(0, 40)}…" to replace`)
  return text.replace(from, to)
}

/**
 * Migration 20's spelling of a context batch's rows (`deixis_apply_write`): as migration 18's,
 * with the written chats' revisions bumped through the chats' primary key.
 */
const applyWriteFunction20 = replaced(
  applyWriteFunction,
  `    UPDATE deixis_chats SET revision = revision + 1
      WHERE chat_id IN (SELECT e #>> '{}' FROM jsonb_array_elements(p->'bump') AS e);`,
  `    UPDATE deixis_chats SET revision = revision + 1
      WHERE chat_id = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'bump')));`
)

/**
 * Migration 20's lock of a context batch's chats (`c`): the chats and the revisions they were
 * read at, as arrays in the chats' fixed order (`v_chats`, `v_read`); the chats read without a
 * row (revision 0) created; every chat locked in that order through its primary key; false
 * returned when a revision moved since read.
 */
const lockChats20 = (c: string) => `
    SELECT array_agg(k.chat_id ORDER BY k.chat_id COLLATE "C"), array_agg(k.revision ORDER BY k.chat_id COLLATE "C")
      INTO v_chats, v_read FROM jsonb_to_recordset(${c}->'chats') AS k(chat_id text, revision bigint);
    IF 0 = ANY(v_read) THEN
      INSERT INTO deixis_chats (chat_id, next_seq, created_at)
        SELECT k.chat_id, 1, (${c}->>'now')::bigint FROM unnest(v_chats, v_read) AS k(chat_id, revision)
        WHERE k.revision = 0 ORDER BY k.chat_id COLLATE "C"
        ON CONFLICT (chat_id) DO NOTHING;
    END IF;
    SELECT bool_or(l.revision IS DISTINCT FROM k.revision) INTO v_moved
      FROM unnest(v_chats, v_read) AS k(chat_id, revision)
      LEFT JOIN (
        SELECT d.chat_id, d.revision FROM deixis_chats d WHERE d.chat_id = ANY(v_chats)
          ORDER BY d.chat_id COLLATE "C" FOR UPDATE
      ) AS l ON l.chat_id = k.chat_id;
    IF v_moved THEN
      RETURN false;
    END IF;`

const applyFunction20 = `CREATE OR REPLACE FUNCTION deixis_apply(p jsonb) RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  v_moved boolean;
  v_chats text[];
  v_read bigint[];
BEGIN${lockChats20("p")}
  PERFORM deixis_apply_write(p);
  RETURN true;
END
$fn$`

/**
 * Migration 20's `deixis_unit`: what migration 18's does, by primary key. The context part's
 * chats are locked as `deixis_apply` locks them; then the history counters likewise (as arrays
 * in their fixed order, created when read without a row, locked, compared); then the context
 * part's rows are written (`deixis_apply_write`), each counter advanced to its `next` and the
 * history rows written.
 */
const unitFunction20 = `CREATE OR REPLACE FUNCTION deixis_unit(p jsonb) RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  v_moved boolean;
  c jsonb := p->'context';
  h jsonb := p->'history';
  v_chats text[];
  v_read bigint[];
  v_next bigint[];
BEGIN
  IF c IS NOT NULL THEN${lockChats20("c")}
  END IF;
  IF h IS NOT NULL THEN
    SELECT array_agg(k.chat_id ORDER BY k.chat_id COLLATE "C"), array_agg(k.seq ORDER BY k.chat_id COLLATE "C"),
        array_agg(k.next ORDER BY k.chat_id COLLATE "C")
      INTO v_chats, v_read, v_next FROM jsonb_to_recordset(h->'chats') AS k(chat_id text, seq bigint, next bigint);
    IF 0 = ANY(v_read) THEN
      INSERT INTO deixis_history_chats (chat_id, seq)
        SELECT k.chat_id, 0 FROM unnest(v_chats, v_read) AS k(chat_id, seq)
        WHERE k.seq = 0 ORDER BY k.chat_id COLLATE "C"
        ON CONFLICT (chat_id) DO NOTHING;
    END IF;
    SELECT bool_or(l.seq IS DISTINCT FROM k.seq) INTO v_moved
      FROM unnest(v_chats, v_read) AS k(chat_id, seq)
      LEFT JOIN (
        SELECT d.chat_id, d.seq FROM deixis_history_chats d WHERE d.chat_id = ANY(v_chats)
          ORDER BY d.chat_id COLLATE "C" FOR UPDATE
      ) AS l ON l.chat_id = k.chat_id;
    IF v_moved THEN
      RETURN false;
    END IF;
  END IF;
  -- Under the locks taken above, the batch's own check holds: its rows are written.
  IF c IS NOT NULL THEN
    PERFORM deixis_apply_write(c);
  END IF;
  IF h IS NOT NULL THEN
    UPDATE deixis_history_chats d SET seq = v_next[array_position(v_chats, d.chat_id)] WHERE d.chat_id = ANY(v_chats);
${historyRowsWrite}  END IF;
  RETURN true;
END
$fn$`

/**
 * The update inbox's bodies (inbox.ts: `receive`, `settle`, `claimStale`) as server functions,
 * each what its body does statement by statement, in one statement of the caller: `p` is the
 * body's argument, the answer its result as JSON. Claims are locked in sorted order as the
 * bodies take them; a deadlock or serialization failure fails the call whole, which the engine
 * runs again.
 */
const inboxFunctions = [
  // The updates of `p_chats` not done (`p_waiting_only`: those not handed), handed to the caller:
  // each hand-out one more attempt. Oldest first.
  `CREATE OR REPLACE FUNCTION deixis_inbox_hand(p_source TEXT, p_chats TEXT[], p_waiting_only BOOLEAN, p_until BIGINT) RETURNS jsonb
LANGUAGE sql AS $fn$
  WITH h AS (
    UPDATE deixis_updates d SET lease_until = p_until, attempts = d.attempts + 1
      WHERE d.source = p_source AND d.chat = ANY(p_chats) AND d.payload IS NOT NULL AND (NOT p_waiting_only OR d.lease_until IS NULL)
      RETURNING d.update_id, d.chat, d.payload, d.attempts
  )
  SELECT COALESCE(jsonb_agg(jsonb_build_object('update_id', h.update_id, 'chat', h.chat, 'payload', h.payload, 'attempts', h.attempts)
    ORDER BY h.update_id), '[]'::jsonb) FROM h
$fn$`,
  `CREATE OR REPLACE FUNCTION deixis_inbox_receive(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  v_source TEXT := p->>'source';
  v_owner TEXT := p->>'owner';
  v_now BIGINT := (p->>'now')::bigint;
  v_until BIGINT := (p->>'now')::bigint + (p->>'lease')::bigint;
  v_fresh BIGINT[];
  v_chats TEXT[];
  v_candidates TEXT[];
  v_claimed TEXT[];
  v_waiting TEXT[];
  v_taken TEXT[];
  v_with TEXT[];
  v_plain jsonb;
BEGIN
  -- Waiting (lease_until null, no attempt yet) until handed below.
  WITH ins AS (
    INSERT INTO deixis_updates (source, update_id, chat, received_at, lease_until, attempts, payload)
      SELECT v_source, u.update_id, u.chat, v_now, NULL, 0, u.payload
        FROM jsonb_to_recordset(p->'updates') AS u(update_id BIGINT, chat TEXT, payload TEXT)
      ON CONFLICT (source, update_id) DO NOTHING RETURNING update_id
  )
  SELECT COALESCE(array_agg(e.id ORDER BY e.n), '{}') INTO v_fresh
    FROM (SELECT (u->>'update_id')::bigint AS id, n FROM jsonb_array_elements(p->'updates') WITH ORDINALITY AS t(u, n)) AS e
    WHERE e.id IN (SELECT ins.update_id FROM ins);
  IF cardinality(v_fresh) = 0 THEN
    RETURN jsonb_build_object('fresh', '[]'::jsonb, 'handed', '[]'::jsonb, 'waiting', '[]'::jsonb);
  END IF;
  SELECT array_agg(f.chat ORDER BY f.chat COLLATE "C") INTO v_chats FROM (
    SELECT DISTINCT u.chat FROM jsonb_to_recordset(p->'updates') AS u(update_id BIGINT, chat TEXT) WHERE u.update_id = ANY(v_fresh)
  ) AS f;
  -- The claims as they stand, locked in sorted order. Not held by another owner: candidates;
  -- taken over from another owner: every update not done is handed; held with updates
  -- waiting: those; otherwise only the fresh ones.
  SELECT COALESCE(array_agg(c) FILTER (WHERE NOT held), '{}'),
         COALESCE(array_agg(c) FILTER (WHERE known AND NOT held AND owner <> v_owner), '{}'),
         COALESCE(array_agg(c) FILTER (WHERE known AND NOT held AND owner = v_owner AND waiting <> 0), '{}')
    INTO v_candidates, v_taken, v_with
    FROM (
      SELECT k.c, b.chat IS NOT NULL AS known, b.owner, b.waiting,
          b.chat IS NOT NULL AND b.owner <> v_owner AND b.lease_until > v_now AS held
        FROM unnest(v_chats) AS k(c)
        LEFT JOIN (
          SELECT d.chat, d.owner, d.lease_until, d.waiting FROM deixis_update_chats d
            WHERE d.source = v_source AND d.chat = ANY(v_chats) ORDER BY d.chat COLLATE "C" FOR UPDATE
        ) AS b ON b.chat = k.c
    ) AS s;
  -- A claim inserted meanwhile by another process (unseen above) stays theirs.
  WITH up AS (
    INSERT INTO deixis_update_chats (source, chat, owner, lease_until, waiting)
      SELECT v_source, k.c, v_owner, v_until, 0 FROM unnest(v_candidates) AS k(c) ORDER BY k.c COLLATE "C"
      ON CONFLICT (source, chat) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until, waiting = 0
        WHERE deixis_update_chats.owner = excluded.owner OR deixis_update_chats.lease_until <= v_now
      RETURNING chat
  )
  SELECT COALESCE(array_agg(up.chat), '{}') INTO v_claimed FROM up;
  SELECT COALESCE(array_agg(k.c ORDER BY k.c COLLATE "C"), '{}') INTO v_waiting FROM unnest(v_chats) AS k(c) WHERE NOT (k.c = ANY(v_claimed));
  IF cardinality(v_waiting) > 0 THEN
    UPDATE deixis_update_chats SET waiting = 1 WHERE source = v_source AND chat = ANY(v_waiting);
  END IF;
  v_taken := ARRAY(SELECT x FROM unnest(v_taken) AS x WHERE x = ANY(v_claimed));
  v_with := ARRAY(SELECT x FROM unnest(v_with) AS x WHERE x = ANY(v_claimed));
  WITH h AS (
    UPDATE deixis_updates d SET lease_until = v_until, attempts = d.attempts + 1
      WHERE d.source = v_source AND d.update_id = ANY(v_fresh) AND d.chat = ANY(v_claimed)
        AND NOT (d.chat = ANY(v_taken)) AND NOT (d.chat = ANY(v_with))
      RETURNING d.update_id, d.chat, d.payload, d.attempts
  )
  SELECT COALESCE(jsonb_agg(jsonb_build_object('update_id', h.update_id, 'chat', h.chat, 'payload', h.payload, 'attempts', h.attempts)), '[]'::jsonb)
    INTO v_plain FROM h;
  RETURN jsonb_build_object(
    'fresh', to_jsonb(v_fresh),
    'handed', (
      SELECT COALESCE(jsonb_agg(x ORDER BY (x->>'update_id')::bigint), '[]'::jsonb) FROM (
        SELECT jsonb_array_elements(deixis_inbox_hand(v_source, v_taken, false, v_until)) AS x
        UNION ALL SELECT jsonb_array_elements(deixis_inbox_hand(v_source, v_with, true, v_until))
        UNION ALL SELECT jsonb_array_elements(v_plain)
      ) AS a
    ),
    'waiting', to_jsonb(v_waiting)
  );
END
$fn$`,
  `CREATE OR REPLACE FUNCTION deixis_inbox_settle(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  v_source TEXT := p->>'source';
  v_owner TEXT := p->>'owner';
  v_until BIGINT := (p->>'now')::bigint + (p->>'lease')::bigint;
  v_given TEXT[];
  v_kept TEXT[];
  v_handed jsonb;
BEGIN
  UPDATE deixis_updates SET payload = NULL, lease_until = NULL
    WHERE source = v_source AND update_id = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'done')::bigint));
  WITH back AS (
    UPDATE deixis_updates SET lease_until = NULL, attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END
      WHERE source = v_source AND update_id = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'returned')::bigint))
        AND payload IS NOT NULL AND lease_until IS NOT NULL
      RETURNING chat
  )
  SELECT COALESCE(array_agg(g.chat ORDER BY g.chat COLLATE "C"), '{}') INTO v_given FROM (SELECT DISTINCT back.chat FROM back) AS g;
  -- Claims are locked in sorted order (as receive takes them): no two writers deadlock.
  IF cardinality(v_given) > 0 THEN
    UPDATE deixis_update_chats SET waiting = 1 WHERE source = v_source AND chat = ANY(v_given);
  END IF;
  UPDATE deixis_update_chats SET lease_until = v_until
    WHERE source = v_source AND owner = v_owner AND chat = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'hold')));
  UPDATE deixis_update_chats SET owner = '', lease_until = v_until, waiting = 1
    WHERE source = v_source AND owner = v_owner AND chat = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'stall')));
  -- Given up: released when nothing of the chat is left to do; otherwise no one's, the claim
  -- ended now — the next claimant takes every update not done.
  DELETE FROM deixis_update_chats d
    WHERE d.source = v_source AND d.owner = v_owner AND d.chat = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'surrender')))
      AND NOT EXISTS (SELECT 1 FROM deixis_updates u WHERE u.source = d.source AND u.chat = d.chat AND u.payload IS NOT NULL);
  UPDATE deixis_update_chats SET owner = '', lease_until = (p->>'now')::bigint, waiting = 1
    WHERE source = v_source AND owner = v_owner AND chat = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'surrender')));
  DELETE FROM deixis_update_chats
    WHERE source = v_source AND owner = v_owner AND waiting = 0 AND chat = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'release')));
  WITH kept AS (
    UPDATE deixis_update_chats SET waiting = 0, lease_until = v_until
      WHERE source = v_source AND owner = v_owner AND waiting = 1 AND chat = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'release')))
      RETURNING chat
  )
  SELECT COALESCE(array_agg(kept.chat ORDER BY kept.chat COLLATE "C"), '{}') INTO v_kept FROM kept;
  IF cardinality(v_kept) = 0 THEN
    RETURN '[]'::jsonb;
  END IF;
  v_handed := deixis_inbox_hand(v_source, v_kept, true, v_until);
  -- Chats kept with nothing to hand over (their updates were done meanwhile) are released at once.
  DELETE FROM deixis_update_chats WHERE source = v_source AND owner = v_owner AND waiting = 0
    AND chat = ANY(ARRAY(SELECT k FROM unnest(v_kept) AS k WHERE k NOT IN (SELECT x->>'chat' FROM jsonb_array_elements(v_handed) AS x)));
  RETURN v_handed;
END
$fn$`,
  `CREATE OR REPLACE FUNCTION deixis_inbox_claimStale(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  v_source TEXT := p->>'source';
  v_owner TEXT := p->>'owner';
  v_now BIGINT := (p->>'now')::bigint;
  v_until BIGINT := (p->>'now')::bigint + (p->>'lease')::bigint;
  v_chats TEXT[];
  v_handed jsonb;
BEGIN
  SELECT COALESCE(array_agg(s.chat), '{}') INTO v_chats FROM (
    SELECT d.chat FROM deixis_update_chats d WHERE d.source = v_source AND d.lease_until <= v_now
      ORDER BY d.lease_until, d.chat COLLATE "C" LIMIT greatest(0, floor((p->>'limit')::numeric))::bigint FOR UPDATE SKIP LOCKED
  ) AS s;
  IF cardinality(v_chats) = 0 THEN
    RETURN '[]'::jsonb;
  END IF;
  UPDATE deixis_update_chats SET owner = v_owner, lease_until = v_until, waiting = 0 WHERE source = v_source AND chat = ANY(v_chats);
  v_handed := deixis_inbox_hand(v_source, v_chats, false, v_until);
  DELETE FROM deixis_update_chats WHERE source = v_source AND owner = v_owner AND waiting = 0
    AND chat = ANY(ARRAY(SELECT k FROM unnest(v_chats) AS k WHERE k NOT IN (SELECT x->>'chat' FROM jsonb_array_elements(v_handed) AS x)));
  RETURN v_handed;
END
$fn$`
]

/**
 * The candidate pool's rows for one scope (the request's topic, or with `p_fallback` the rest
 * of the chat), tagged by part as the portable query tags them: `c` chain messages, `co`
 * their objects, `e` the scope exists, `a` active, `r` recent, `k<i>` per preferred kind,
 * `o` owned, `m` plain messages.
 */
const poolFunction = `CREATE OR REPLACE FUNCTION deixis_pool(
  p_chat TEXT, p_topic TEXT, p_fallback BOOLEAN, p_current TEXT, p_reply TEXT, p_reply_len INTEGER, p_chain_depth INTEGER,
  p_sender TEXT, p_kinds TEXT[], p_prefer TEXT[], p_owned BOOLEAN, p_active_only BOOLEAN, p_now BIGINT,
  p_recent_objects INTEGER, p_recent_per_kind INTEGER, p_recent_messages INTEGER, p_owned_limit INTEGER
) RETURNS TABLE (part TEXT, body TEXT, mid TEXT, topic TEXT, reply_to TEXT, sender TEXT, from_bot INTEGER, sent_at BIGINT, depth INTEGER, has_objects INTEGER)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
  k TEXT;
  i INTEGER := 0;
  want_messages BOOLEAN := p_kinds IS NULL OR 'message' = ANY(p_kinds) OR 'bot_message' = ANY(p_kinds);
BEGIN
  IF NOT p_fallback AND p_reply IS NOT NULL AND p_chain_depth > 0 THEN
    RETURN QUERY
      WITH RECURSIVE chain(depth, id_len, message_id) AS (
        SELECT 1, p_reply_len, p_reply
        UNION ALL
        SELECT c.depth + 1, m.reply_len, m.reply_to FROM chain c
          JOIN deixis_messages m ON m.chat_id = p_chat AND m.id_len = c.id_len AND m.message_id = c.message_id
        WHERE c.depth < p_chain_depth AND m.reply_to IS NOT NULL
      ), found AS (
        SELECT c.depth, m.* FROM chain c
          JOIN deixis_messages m ON m.chat_id = p_chat AND m.id_len = c.id_len AND m.message_id = c.message_id
      )
      SELECT 'c', NULL::TEXT, f.message_id, f.topic, f.reply_to, f.sender, f.from_bot::INTEGER, f.sent_at, f.depth,
        CASE WHEN EXISTS (SELECT 1 FROM deixis_objects o WHERE o.chat_id = p_chat AND o.source_message_id = f.message_id) THEN 1 ELSE 0 END
      FROM found f
      UNION ALL
      SELECT 'co', o.body, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::BIGINT, NULL::INTEGER, NULL::INTEGER FROM deixis_objects o
        WHERE o.chat_id = p_chat AND o.source_message_id IN (SELECT f.message_id FROM found f);
  END IF;
  IF NOT p_fallback THEN
    RETURN QUERY SELECT 'e', NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::BIGINT, NULL::INTEGER, NULL::INTEGER
      WHERE EXISTS (SELECT 1 FROM deixis_messages m WHERE m.chat_id = p_chat AND m.topic = p_topic)
         OR EXISTS (SELECT 1 FROM deixis_objects o WHERE o.chat_id = p_chat AND o.topic = p_topic);
    RETURN QUERY SELECT 'a', o.body, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::BIGINT, NULL::INTEGER, NULL::INTEGER FROM deixis_objects o
      WHERE o.chat_id = p_chat AND o.topic = p_topic AND o.active_until > p_now AND (p_kinds IS NULL OR o.kind = ANY(p_kinds))
      ORDER BY o.active_until DESC LIMIT 64;
  ELSE
    RETURN QUERY SELECT 'a', o.body, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::BIGINT, NULL::INTEGER, NULL::INTEGER FROM deixis_objects o
      WHERE o.chat_id = p_chat AND o.active_until > p_now AND o.topic <> p_topic AND (p_kinds IS NULL OR o.kind = ANY(p_kinds))
      ORDER BY o.active_until DESC LIMIT 64;
  END IF;
  IF p_active_only THEN
    RETURN;
  END IF;
  IF NOT p_fallback THEN
    RETURN QUERY SELECT 'r', w.body, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::BIGINT, NULL::INTEGER, NULL::INTEGER FROM (
        SELECT o.body, o.seq, o.kind FROM deixis_objects o WHERE o.chat_id = p_chat AND o.topic = p_topic ORDER BY o.seq DESC LIMIT p_recent_objects * 8
      ) w WHERE (p_kinds IS NULL OR w.kind = ANY(p_kinds)) ORDER BY w.seq DESC LIMIT p_recent_objects;
  ELSE
    RETURN QUERY SELECT 'r', w.body, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::BIGINT, NULL::INTEGER, NULL::INTEGER FROM (
        SELECT o.body, o.seq, o.kind, o.topic FROM deixis_objects o WHERE o.chat_id = p_chat ORDER BY o.seq DESC LIMIT p_recent_objects * 8
      ) w WHERE w.topic <> p_topic AND (p_kinds IS NULL OR w.kind = ANY(p_kinds)) ORDER BY w.seq DESC LIMIT p_recent_objects;
  END IF;
  FOREACH k IN ARRAY p_prefer LOOP
    IF p_kinds IS NULL OR k = ANY(p_kinds) THEN
      IF NOT p_fallback THEN
        RETURN QUERY SELECT 'k' || i, w.body, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::BIGINT, NULL::INTEGER, NULL::INTEGER FROM (
            SELECT o.body, o.seq FROM deixis_objects o WHERE o.chat_id = p_chat AND o.topic = p_topic AND o.kind = k
            ORDER BY o.seq DESC LIMIT p_recent_per_kind
          ) w;
      ELSE
        RETURN QUERY SELECT 'k' || i, w.body, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::BIGINT, NULL::INTEGER, NULL::INTEGER FROM (
            SELECT o.body, o.seq, o.topic FROM deixis_objects o WHERE o.chat_id = p_chat AND o.kind = k
            ORDER BY o.seq DESC LIMIT p_recent_per_kind * 8
          ) w WHERE w.topic <> p_topic ORDER BY w.seq DESC LIMIT p_recent_per_kind;
      END IF;
    END IF;
    i := i + 1;
  END LOOP;
  IF p_owned AND p_sender IS NOT NULL THEN
    RETURN QUERY SELECT 'o', w.body, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::BIGINT, NULL::INTEGER, NULL::INTEGER FROM (
        SELECT o.body, o.seq, o.kind, o.topic FROM deixis_objects o WHERE o.chat_id = p_chat AND o.created_by = p_sender
        ORDER BY o.seq DESC LIMIT p_owned_limit * 8
      ) w WHERE (CASE WHEN p_fallback THEN w.topic <> p_topic ELSE w.topic = p_topic END) AND (p_kinds IS NULL OR w.kind = ANY(p_kinds))
      ORDER BY w.seq DESC LIMIT p_owned_limit;
  END IF;
  IF want_messages AND p_recent_messages > 0 THEN
    IF NOT p_fallback THEN
      RETURN QUERY SELECT 'm', NULL::TEXT, w.message_id, w.topic, w.reply_to, w.sender, w.from_bot::INTEGER, w.sent_at, NULL::INTEGER, NULL::INTEGER FROM (
          SELECT m.message_id, m.id_len, m.topic, m.reply_to, m.sender, m.from_bot, m.sent_at FROM deixis_messages m
          WHERE m.chat_id = p_chat AND m.topic = p_topic ORDER BY m.id_len DESC, m.message_id COLLATE "C" DESC LIMIT 64
        ) w
        WHERE w.message_id <> p_current
          AND (p_kinds IS NULL OR (CASE WHEN w.from_bot = 1 THEN 'bot_message' ELSE 'message' END) = ANY(p_kinds))
          AND NOT EXISTS (SELECT 1 FROM deixis_objects o WHERE o.chat_id = p_chat AND o.source_message_id = w.message_id)
        ORDER BY w.id_len DESC, w.message_id COLLATE "C" DESC LIMIT p_recent_messages;
    ELSE
      RETURN QUERY SELECT 'm', NULL::TEXT, w.message_id, w.topic, w.reply_to, w.sender, w.from_bot::INTEGER, w.sent_at, NULL::INTEGER, NULL::INTEGER FROM (
          SELECT m.message_id, m.id_len, m.topic, m.reply_to, m.sender, m.from_bot, m.sent_at FROM deixis_messages m
          WHERE m.chat_id = p_chat ORDER BY m.id_len DESC, m.message_id COLLATE "C" DESC LIMIT 64
        ) w
        WHERE w.topic <> p_topic AND w.message_id <> p_current
          AND (p_kinds IS NULL OR (CASE WHEN w.from_bot = 1 THEN 'bot_message' ELSE 'message' END) = ANY(p_kinds))
          AND NOT EXISTS (SELECT 1 FROM deixis_objects o WHERE o.chat_id = p_chat AND o.source_message_id = w.message_id)
        ORDER BY w.id_len DESC, w.message_id COLLATE "C" DESC LIMIT p_recent_messages;
    END IF;
  END IF;
END
$fn$`

/** Version 5's pool function: the chain starts from the request's id in the collation of the ids it walks (a recursive query has one). */
const poolFunctionC = poolFunction.replace("SELECT 1, p_reply_len, p_reply\n", `SELECT 1, p_reply_len, p_reply COLLATE "C"\n`)

const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Whether `name` is a plain PostgreSQL identifier (letters, digits, `_`), safe to splice. */
export const isIdentifier = (name: string): boolean => identifier.test(name)

/**
 * `body` in one write transaction holding the migrations' lock (`BEGIN IMMEDIATE` on SQLite,
 * the schema's advisory lock on PostgreSQL): what {@link migrate} runs in, and every other
 * change of the schema at start.
 */
export const underMigrationLock = <A, E, R>(db: Db, schema: string | undefined, body: Effect.Effect<A, E, R>) =>
  db.transaction(Effect.zipRight(Effect.forEach(db.dialect.migrationLock(schema), (statement) => db.query(statement), { discard: true }), body))

/**
 * Applies every migration not yet recorded (up to version `upTo`, all by default), in version
 * order, under the lock. Returns the versions this call applied (empty when another process, or
 * an earlier start, did).
 */
export const migrate = (
  db: Db,
  schema: string | undefined,
  upTo = Number.POSITIVE_INFINITY
): Effect.Effect<ReadonlyArray<number>, SqlError> =>
  underMigrationLock(db, schema, Effect.gen(function*() {
    yield* db.query(
      sql`CREATE TABLE IF NOT EXISTS deixis_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at ${
        raw(db.dialect.ddl.big)
      } NOT NULL)`
    )
    const rows = yield* db.query(sql`SELECT version FROM deixis_migrations`)
    const applied = new Set(rows.map((r) => num(r["version"])))
    const now = yield* Clock.currentTimeMillis
    const done: Array<number> = []
    for (const migration of migrations) {
      if (applied.has(migration.version) || migration.version > upTo) continue
      for (const statement of migration.statements(db.dialect)) yield* db.query(raw(statement))
      yield* db.query(sql`INSERT INTO deixis_migrations (version, name, applied_at) VALUES (${migration.version}, ${migration.name}, ${now})`)
      done.push(migration.version)
    }
    return done
  }))
