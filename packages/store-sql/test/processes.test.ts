/**
 * Many instances and durability, with real OS processes: two bot processes ingesting into the
 * same chats through one database, and a process killed with SIGKILL in the middle of ingest
 * (SQLite with `synchronous=NORMAL`, the default, and `FULL`). Both engines; each run in a
 * fresh SQLite file or PostgreSQL schema.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import * as SqlStore from "../src/SqlStore.js"
import { freshSchema, pgUrl, tempDir } from "./helpers.js"
import { scopedWorker } from "./fixtures/processes.js"
import type { ChatReport, WorkerConfig } from "./fixtures/worker.js"

interface Engine {
  readonly name: string
  /** A fresh database for one test, removed when the scope closes. */
  readonly fresh: Effect.Effect<Pick<WorkerConfig, "engine" | "filename" | "url" | "schema">, never, import("effect/Scope").Scope>
  /** The `synchronous` settings the durability test runs with (SQLite: both; PostgreSQL: none). */
  readonly synchronous: ReadonlyArray<WorkerConfig["synchronous"]>
}

const dropSchema = (schema: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  }).pipe(Effect.provide(SqlStore.layerPgClient({ url: pgUrl })), Effect.orDie)

const engines: ReadonlyArray<Engine> = [
  {
    name: "sqlite",
    fresh: Effect.map(tempDir, (dir) => ({ engine: "sqlite" as const, filename: path.join(dir, "shared.db") })),
    synchronous: ["normal", "full"]
  },
  {
    name: "postgres",
    fresh: Effect.acquireRelease(
      Effect.sync(() => ({ engine: "pg" as const, url: pgUrl, schema: freshSchema() })),
      (c) => dropSchema(c.schema)
    ),
    synchronous: [undefined]
  }
]

const MESSAGES = 120
const WORKERS = 2

/** Worker w's message i has id 1 + i·2 + w, and a link when i is a multiple of 3. */
const allIds = Array.from({ length: MESSAGES * WORKERS }, (_, n) => String(n + 1))
const carriesLink = (id: number) => Math.floor((id - 1) / WORKERS) % 3 === 0

for (const engine of engines) {
  describe(`${engine.name}: processes`, () => {
    it.scoped("two processes ingesting into the same chats lose no event, see each other's writes, and order by position", () =>
      Effect.gen(function*() {
        const db = yield* engine.fresh
        const chats = [`shared-${engine.name}-a`, `shared-${engine.name}-b`]
        // Both start at once on a fresh database: their migrations race too.
        const workers = yield* Effect.forEach([0, 1], (worker) =>
          scopedWorker({ ...db, mode: "ingest", worker, workers: WORKERS, chats, messages: MESSAGES, batch: 15 }))
        yield* Effect.forEach(workers, (w) => w.next("done"), { concurrency: "unbounded" })
        yield* Effect.forEach(workers, (w) => w.send({ type: "verify" }))
        const reports = yield* Effect.forEach(workers, (w) => w.next("report"), { concurrency: "unbounded" })

        const newestPlain = [...allIds].reverse().filter((id) => !carriesLink(Number(id))).slice(0, 3).reverse()
        for (const report of reports) {
          assert.deepStrictEqual(report.chats.map((c: ChatReport) => c.chat), chats)
          for (const chat of report.chats) {
            // Every message of both processes, in position order (9 before 10), whatever the arrival.
            assert.deepStrictEqual(chat.messages, allIds)
            assert.deepStrictEqual(chat.history, allIds)
            // Each link was activated by the other process, whether its message or the activation landed first.
            const links = allIds.filter((id) => carriesLink(Number(id)))
            assert.deepStrictEqual(chat.links.map((l) => l.source).sort(), [...links].sort())
            assert.isTrue(chat.links.every((l) => l.reasons.length === 1 && l.reasons[0] === "summarized"))
            // The pool's recent plain messages are the newest by position.
            assert.sameMembers([...chat.recent], newestPlain)
          }
        }
      }), { timeout: 180_000 })

    for (const synchronous of engine.synchronous) {
      const setting = synchronous === undefined ? "" : ` (synchronous=${synchronous})`
      it.scoped(`a process killed with SIGKILL mid-ingest keeps every batch it acknowledged after a restart${setting}`, () =>
        Effect.gen(function*() {
          const db = yield* engine.fresh
          // Four writers at once, one per chat: on SQLite their transactions are committed in groups.
          const chats = [0, 1, 2, 3].map((n) => `durable-${engine.name}-${n}`)
          const base = { ...db, synchronous, worker: 0, workers: 1, chats, messages: 0, batch: 20 }
          const writer = yield* scopedWorker({ ...base, mode: "durable" })
          const acked = yield* writer.acks(24)
          writer.child.kill("SIGKILL")
          assert.strictEqual(yield* writer.exited, "SIGKILL")

          const restarted = yield* scopedWorker({ ...base, mode: "report" })
          const report = (yield* restarted.next("report")).chats
          // Acknowledgements that arrived before the kill took effect count too.
          const lost = acked.flatMap((a) => {
            const chat = report.find((c) => c.chat === a.chat)!
            const stored = new Set(chat.messages)
            const history = new Set(chat.history)
            return [
              ...a.ids.filter((id) => !stored.has(id)).map((id) => `${a.chat} message ${id}`),
              ...(history.has(a.ids[a.ids.length - 1]!) ? [] : [`${a.chat} history item of batch ${a.batch}`])
            ]
          })
          assert.deepStrictEqual(lost, [])
        }), { timeout: 120_000 })
    }
  })
}
