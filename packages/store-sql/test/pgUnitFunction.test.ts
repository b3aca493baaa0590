/**
 * PostgreSQL's one-call write of a unit group (`deixis_unit`) across migration 20, called as the
 * engine calls it: a group written at version 19 is followed by groups written after the
 * upgrade, into the same chats and new ones; a group whose chat revision or history counter
 * moved since it was read writes nothing and answers false.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { makeDb } from "../src/internal/db.js"
import { migrate, migrations } from "../src/internal/migrations.js"
import { sql } from "../src/internal/statement.js"
import * as SqlStore from "../src/SqlStore.js"
import { freshSchema, pgUrl, T0 } from "./helpers.js"

const allVersions = migrations.map((m) => m.version).sort((a, b) => a - b)

/** A group's argument: one message per chat, each chat read at `revision` and its history counter at `seq`. */
const group = (chats: ReadonlyArray<{ readonly chat: string; readonly id: number; readonly revision: number; readonly seq: number }>) => ({
  context: {
    now: T0,
    chats: chats.map((c) => ({ chat_id: c.chat, revision: c.revision })),
    messages: chats.map((c) => ({
      chat_id: c.chat, id_len: String(c.id).length, message_id: String(c.id), topic: "", reply_len: null, reply_to: null, sender: "7", from_bot: 0, sent_at: T0
    })),
    edits: [],
    removed: [],
    forums: [],
    titles: chats.filter((c) => c.revision === 0).map((c) => ({ chat_id: c.chat, title: `title ${c.chat}`, title_key: `title ${c.chat}` })),
    objects: [],
    polls: [],
    cleared: [],
    closes: [],
    seen: [],
    seqs: [],
    bump: chats.map((c) => c.chat)
  },
  history: {
    chats: chats.map((c) => ({ chat_id: c.chat, seq: c.seq, next: c.seq + 1 })),
    inserts: chats.map((c) => ({
      chat_id: c.chat, topic: "", anchor_len: String(c.id).length, anchor: String(c.id), seq: 0, message_id: String(c.id), reply_to: null,
      response_id: null, event_id: null, sent_at: T0, body: JSON.stringify({ text: `message ${c.id}` })
    })),
    updates: [],
    events: []
  }
})

const upgradeFrom19 = Effect.gen(function*() {
  const db = makeDb(yield* SqlClient.SqlClient)
  const unit = (argument: object) => db.call!("unit", argument)
  const state = (chat: string) =>
    Effect.map(
      db.query(sql`SELECT c.revision, c.title, h.seq,
        (SELECT count(*) FROM deixis_messages m WHERE m.chat_id = c.chat_id) AS messages,
        (SELECT count(*) FROM deixis_history i WHERE i.chat_id = c.chat_id) AS items
        FROM deixis_chats c LEFT JOIN deixis_history_chats h ON h.chat_id = c.chat_id WHERE c.chat_id = ${chat}`),
      (rows) => rows.map((r) => [Number(r["revision"]), r["title"], Number(r["seq"]), Number(r["messages"]), Number(r["items"])])
    )
  assert.deepStrictEqual(yield* migrate(db, undefined, 19), allVersions.filter((v) => v <= 19))
  assert.isTrue(yield* unit(group([{ chat: "a", id: 1, revision: 0, seq: 0 }, { chat: "b", id: 1, revision: 0, seq: 0 }])))
  assert.deepStrictEqual(yield* migrate(db, undefined), allVersions.filter((v) => v > 19))
  // Chats written before the upgrade, and a new one beside them.
  assert.isTrue(yield* unit(group([{ chat: "a", id: 2, revision: 1, seq: 1 }, { chat: "b", id: 2, revision: 1, seq: 1 }, { chat: "c", id: 1, revision: 0, seq: 0 }])))
  assert.deepStrictEqual(yield* state("a"), [[2, "title a", 2, 2, 2]])
  assert.deepStrictEqual(yield* state("c"), [[1, "title c", 1, 1, 1]])
  // A revision that moved since read (c as if new again): nothing of the group is written.
  assert.isFalse(yield* unit(group([{ chat: "a", id: 3, revision: 2, seq: 2 }, { chat: "c", id: 2, revision: 0, seq: 0 }])))
  // A history counter that moved since read: nothing is written either, its chats' revisions included.
  assert.isFalse(yield* unit(group([{ chat: "a", id: 3, revision: 2, seq: 1 }])))
  // A chat read without a row that another writer created meanwhile: it moved.
  assert.isFalse(yield* unit(group([{ chat: "b", id: 3, revision: 0, seq: 0 }])))
  assert.deepStrictEqual([yield* state("a"), yield* state("b"), yield* state("c")], [
    [[2, "title a", 2, 2, 2]],
    [[2, "title b", 2, 2, 2]],
    [[1, "title c", 1, 1, 1]]
  ])
  // Read again at their current revisions and counters, the same writes go through.
  assert.isTrue(yield* unit(group([{ chat: "a", id: 3, revision: 2, seq: 2 }, { chat: "c", id: 2, revision: 1, seq: 1 }])))
  assert.deepStrictEqual([yield* state("a"), yield* state("c")], [[[3, "title a", 3, 3, 3]], [[2, "title c", 2, 2, 2]]])
})

describe("migration 20 (PostgreSQL: a unit group's write by primary key)", () => {
  it.scoped("groups written before and after the upgrade into the same chats; a moved revision or counter writes nothing", () =>
    Effect.gen(function*() {
      const schema = freshSchema()
      const admin = SqlStore.layerPgClient({ url: pgUrl })
      yield* Effect.addFinalizer(() =>
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(Effect.provide(admin), Effect.orDie)
      )
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`CREATE SCHEMA "${schema}"`)).pipe(Effect.provide(admin))
      yield* upgradeFrom19.pipe(Effect.provide(SqlStore.layerPgClient({ url: pgUrl, schema, max_connections: 1 })))
    }))
})
