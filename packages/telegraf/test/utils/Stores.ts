/**
 * The deixis services over every store — memory, a SQLite file, a PostgreSQL schema of its own
 * (dropped after) — for tests that hold each to the same expectations.
 */
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import * as ContextStore from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import * as ReminderStore from "@deixis/core/ReminderStore"
import * as UpdateInbox from "@deixis/core/UpdateInbox"
import * as Pg from "@deixis/store-sql/Pg"
import * as Sqlite from "@deixis/store-sql/Sqlite"
import * as SqlStore from "@deixis/store-sql/SqlStore"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as DeixisTelegraf from "../../src/DeixisTelegraf.js"

const pgUrl = process.env["DEIXIS_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

const sqlite = (name: string) =>
  Layer.unwrapScoped(Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), `deixis-telegraf-${name}-`))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    ),
    (dir) => Sqlite.layer({ filename: path.join(dir, "deixis.db"), sweep_interval: 0 })
  ))

const postgres = (name: string) =>
  Layer.suspend(() => {
    const schema = `deixis_${name}_${Date.now().toString(36)}_${process.pid}_${Math.random().toString(36).slice(2, 6)}`
    const drop = Layer.scopedDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.addFinalizer(() => Effect.orDie(sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)))))
    return SqlStore.layerStores({ schema, sweep_interval: 0 }).pipe(
      Layer.provide(Layer.provideMerge(drop, Pg.layerClient({ url: pgUrl, schema, max_connections: 4 })))
    )
  })

// No scheduled sweep: the test clock jumps, and a sweep a minute would run for every minute since 1970.
const memory = () =>
  Layer.mergeAll(
    ContextStore.layerMemory({ sweep_interval: 0 }),
    HistoryStore.layerMemory({ sweep_interval: 0 }),
    ConversationState.layerMemory,
    ReminderStore.layerMemory,
    UpdateInbox.layerMemory
  )

/** Every store, by name: the deixis services over each (`name` keeps their files and schemas apart). */
export const stores = (name: string) =>
  [
    ["memory", DeixisTelegraf.layerWith(memory())],
    ["sqlite", DeixisTelegraf.layerWith(sqlite(name))],
    ["postgres", DeixisTelegraf.layerWith(postgres(name))]
  ] as const
