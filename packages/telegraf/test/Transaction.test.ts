/**
 * A recorder call over the SQL stores is one unit of work (core's `UnitOfWork`, one SQLite
 * transaction): the whole corpus as one page leaves the state the memory stores leave, each
 * chat's revision moves once per page, an update the mapper cannot use is skipped without
 * losing the others, and a store failure keeps nothing of the page — recorded again, it is
 * recorded whole.
 */
import { SqlStore } from "@deixis/store-sql"
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as DeixisTelegraf from "../src/DeixisTelegraf.js"
import * as TelegramRecorder from "../src/TelegramRecorder.js"
import { chats, corpus, options, recordedState } from "../src/TelegramFixtures.js"
import { StoreError } from "@deixis/core/ContextStore"

const record = { ...options, mode: "talkative" as const }

/** Every store in a SQLite file of a fresh temp dir (removed with the layer), with its SqlClient. */
const sqlite = () =>
  Layer.unwrapScoped(Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "deixis-telegraf-tx-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    ),
    (dir) => {
      const client = SqlStore.layerSqliteClient({ filename: path.join(dir, "deixis.db") })
      const stores = SqlStore.layerStores({ sweep_interval: 0 }).pipe(Layer.provide(client))
      return Layer.merge(DeixisTelegraf.layerWith(stores), client)
    }
  ))

const revisions = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ chat_id: string; revision: unknown }>`SELECT chat_id, revision FROM deixis_chats ORDER BY chat_id`,
    (rows) => Object.fromEntries(rows.map((r) => [r.chat_id, Number(r.revision)]))
  ))

const chat = chats.supergroup
const text = (updateId: number, messageId: number, extra: Record<string, unknown> = {}) => ({
  update_id: updateId,
  message: {
    message_id: messageId,
    date: 1_771_000_000 + messageId,
    chat,
    from: { id: 1001, is_bot: false, first_name: "Alice", username: "alice" },
    text: `see https://example.com/${messageId}`,
    entities: [{ type: "url", offset: 4, length: `https://example.com/${messageId}`.length }],
    ...extra
  }
})
const page = [
  text(9001, 301),
  text(9002, 302, { reply_to_message: text(0, 301).message }),
  text(9003, 303)
]

describe("a recorder call over SQLite is one unit of work", () => {
  it.effect("the whole corpus as one page leaves the state the memory stores leave", () =>
    Effect.gen(function*() {
      const batch = TelegramRecorder.recordBatch(corpus.map((f) => f.update), record)
      const memory = yield* Effect.zipRight(batch, recordedState()).pipe(Effect.provide(DeixisTelegraf.layerMemory()))
      const onSqlite = yield* Effect.zipRight(batch, recordedState()).pipe(Effect.provide(sqlite()))
      assert.deepStrictEqual(onSqlite, memory)
    }))

  it.effect("each chat's revision moves once per page, however many updates of the chat it holds", () =>
    Effect.gen(function*() {
      const id = String(chat.id)
      const result = yield* TelegramRecorder.recordBatch(page, record)
      assert.strictEqual(result.updates.length, 3)
      const first = (yield* revisions)[id]!
      yield* TelegramRecorder.recordBatch([text(9004, 304), text(9005, 305), text(9006, 306)], record)
      assert.strictEqual((yield* revisions)[id], first + 1)
      // One update at a time: one unit each.
      yield* TelegramRecorder.record(text(9007, 307), record)
      yield* TelegramRecorder.record(text(9008, 308), record)
      assert.strictEqual((yield* revisions)[id], first + 3)
      const snapshot = yield* recordedState([id])
      assert.deepStrictEqual(
        snapshot[id]!.snapshot.messages.map((m) => m.message_id),
        ["301", "302", "303", "304", "305", "306", "307", "308"]
      )
    }).pipe(Effect.provide(sqlite())))

  it.effect("an update the mapper cannot use is skipped; the others of its page are recorded", () =>
    Effect.gen(function*() {
      const id = String(chat.id)
      const result = yield* TelegramRecorder.recordBatch([page[0], { update_id: 9010, message: "not a message" }, page[1], page[2]], record)
      assert.deepStrictEqual(result.updates.map((u) => u.mapped.skipped !== undefined), [false, true, false, false])
      const state = yield* recordedState([id])
      assert.deepStrictEqual(state[id]!.snapshot.messages.map((m) => m.message_id), ["301", "302", "303"])
      assert.deepStrictEqual(state[id]!.history["(none)"]!.map((i) => i.message_id), ["301", "302", "303"])
    }).pipe(Effect.provide(sqlite())))

  it.effect("a store that fails mid-page keeps nothing of the page; the page recorded again is recorded whole", () =>
    Effect.gen(function*() {
      const migration = corpus.find((f) => f.expected.migration !== undefined)!.update
      const from = String(chats.group.id)
      const id = String(chat.id)
      const before = yield* recordedState([id, from])
      const failing = TelegramRecorder.recordBatch([page[0], page[1], migration, page[2]], record).pipe(
        Effect.provideService(TelegramRecorder.ChatMigrators, [() => Effect.fail(new StoreError({ message: "reminders are down" }))])
      )
      const exit = yield* Effect.exit(failing)
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(yield* recordedState([id, from]), before, "nothing of the page is kept")
      const result = yield* TelegramRecorder.recordBatch([page[0], page[1], migration, page[2]], record)
      assert.deepStrictEqual(result.updates[2]!.migrated, { from_chat_id: from, to_chat_id: String(chats.upgraded.id), migrated: true })
      const state = yield* recordedState([id, from])
      assert.deepStrictEqual(state[id]!.snapshot.messages.map((m) => m.message_id), ["301", "302", "303"])
      assert.strictEqual(state[from]!.info.migrated_to, String(chats.upgraded.id))
    }).pipe(Effect.provide(sqlite())))
})
