/**
 * The SQLite engine (`@deixis/store-sql/sqlite`): every store in one file, on
 * `@effect/sql-sqlite-node` — an optional peer dependency, installed by whoever imports this
 * entry point (a PostgreSQL deployment never needs it).
 *
 * @since 0.2.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { defaultsOf } from "@deixis/core/ConfigKeys"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Context from "effect/Context"
import { describe } from "./internal/db.js"
import * as SqliteEngine from "./internal/sqliteEngine.js"
import { layerStores, sqliteConfig, type SqliteOptions, SqlStoreError, type Stores } from "./internal/stores.js"

const defaults = defaultsOf(sqliteConfig)

/**
 * An `SqlClient` over a SQLite file: WAL mode, the busy timeout, the `synchronous` setting
 * and the page caches (8 MiB on the write connection, 64 MiB on the read connection) applied
 * before anything else runs. Its statements run on a writer
 * thread of its own (a `worker_threads` Worker holding the write connection, see
 * internal/sqliteWriter.ts), so no commit, `fsync` or checkpoint blocks this thread; the
 * stores built over it read outside their transactions on a second, read-only connection in
 * this thread, which never waits for a write transaction. Layers over the same file in one
 * process share its writer thread and read connection, so they share its settings too: one that
 * asks for another `synchronous` or busy timeout than the file is open with fails (its
 * `SqlStoreError` carries the `SettingsConflict`). The `SqliteClient` tag is provided as
 * `@effect/sql-sqlite-node` provides it.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerClient = (
  options: SqliteOptions
): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient, SqlStoreError> =>
  Layer.scopedContext(
    Effect.map(
      SqliteEngine.make({
        filename: options.filename,
        busyTimeout: Math.max(0, Math.round(options.busy_timeout ?? defaults.busy_timeout)),
        synchronous: (options.synchronous ?? defaults.synchronous).toUpperCase()
      }),
      // The engine service (internal) goes along for the stores built over this client.
      (engine) => SqliteEngine.context(engine) as Context.Context<SqlClient.SqlClient | SqliteClient.SqliteClient>
    )
  ).pipe(
    Layer.mapError((e) =>
      e instanceof SqlStoreError ? e : new SqlStoreError({ message: `cannot open SQLite database ${options.filename}: ${describe(e)}` })
    )
  )

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
