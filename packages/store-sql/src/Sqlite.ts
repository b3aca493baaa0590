/**
 * The SQLite engine (`@deixis/store-sql/sqlite`): every store in one file, on
 * `@effect/sql-sqlite-node` — an optional peer dependency, installed by whoever imports this
 * entry point (a PostgreSQL deployment never needs it).
 *
 * @since 0.2.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Reactivity from "@effect/experimental/Reactivity"
import { defaultsOf } from "@deixis/core/ConfigKeys"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as path from "node:path"
import { describe } from "./internal/db.js"
import { registerFile } from "./internal/groupCommit.js"
import { registerReader } from "./internal/readConnection.js"
import * as sqliteClient from "./internal/sqliteClient.js"
import { layerStores, sqliteConfig, type SqliteOptions, SqlStoreError, type Stores } from "./internal/stores.js"

const defaults = defaultsOf(sqliteConfig)

/**
 * An `SqlClient` over a SQLite file: WAL mode, the busy timeout, the `synchronous` setting
 * and a 64 MiB page cache applied before anything else runs; the stores built over it read
 * outside their transactions on a second, read-only connection to the file, which never
 * waits for a write transaction. Both connections are `@effect/sql-sqlite-node`'s client with
 * a one-step statement path (see internal/sqliteClient.ts); the `SqliteClient` tag is provided
 * as that package provides it.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerClient = (
  options: SqliteOptions
): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient, SqlStoreError> => {
  const busy = Math.max(0, Math.round(options.busy_timeout ?? defaults.busy_timeout))
  const synchronous = (options.synchronous ?? defaults.synchronous).toUpperCase()
  const tuned = Layer.effectDiscard(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.all([
        sql.unsafe(`PRAGMA busy_timeout = ${busy}`),
        sql.unsafe(`PRAGMA synchronous = ${synchronous}`),
        // 64 MiB of page cache: the indexes of a million messages stay in memory.
        sql.unsafe(`PRAGMA cache_size = -65536`),
        sql.unsafe(`PRAGMA journal_mode = WAL`)
      ], { discard: true }))
  )
  // The read connection (see internal/readConnection.ts), opened once the file is in WAL mode,
  // and the file's write lock in this process (see internal/groupCommit.ts).
  const reader = Layer.scopedDiscard(Effect.flatMap(SqlClient.SqlClient, (writer) => {
    const file = options.filename
    if (file === "" || file === ":memory:" || file.startsWith("file:")) return Effect.void
    return registerFile(writer, path.resolve(file)).pipe(
      Effect.zipRight(sqliteClient.make({ filename: file, readonly: true, disableWAL: true })),
      Effect.tap((client) =>
        Effect.all([client.unsafe(`PRAGMA busy_timeout = ${busy}`), client.unsafe(`PRAGMA cache_size = -65536`)], { discard: true })
      ),
      Effect.map((client) => registerReader(writer, client)),
      Effect.provide(Reactivity.layer)
    )
  }))
  return Layer.provideMerge(reader, tuned).pipe(
    Layer.provideMerge(sqliteClient.layer({ filename: options.filename })),
    Layer.mapError((e) => new SqlStoreError({ message: `cannot open SQLite database ${options.filename}: ${describe(e)}` }))
  )
}

/**
 * Every store in a SQLite file: `ContextStore`, `HistoryStore`, `ConversationStateStore`,
 * `ReminderStore`, `UpdateInbox` and the `Retention` sweep, migrated on start.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: SqliteOptions): Layer.Layer<Stores, SqlStoreError> =>
  layerStores(options).pipe(Layer.provide(layerClient(options)))

/**
 * {@link layer} configured from `DEIXIS_*` keys (see `SqlStore.sqliteConfig`); `overrides` win.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  overrides: Partial<SqliteOptions> = {}
): Layer.Layer<Stores, SqlStoreError | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(sqliteConfig, (settings) => layer({ ...settings, ...overrides })))
