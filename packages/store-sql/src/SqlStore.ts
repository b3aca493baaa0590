/**
 * Durable storage for every deixis store port, on `@effect/sql`: SQLite (a file, the embedded
 * default) and PostgreSQL (one server shared by many bot instances).
 *
 * `layerSqlite` / `layerPg` provide core's `ContextStore` and `ConversationStateStore` and
 * chathistory's `HistoryStore` together, after running the versioned migrations (safe twice,
 * and from several processes at once), with a scheduled retention sweep while the layer lives.
 *
 * The engines are loaded when a layer over them is built: the entry points `./sqlite` and
 * `./pg` build on the shared code (`internal/stores.ts`, re-exported here) and never import
 * this module.
 *
 * @since 0.1.0
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { pgConfig, type PgOptions, sqliteConfig, type SqliteOptions, SqlStoreError, type Stores } from "./internal/stores.js"

export * from "./internal/stores.js"

// -----------------------------------------------------------------------------
// Engines
// -----------------------------------------------------------------------------

/**
 * An engine's module, imported when a layer over it is built: the root entry point never loads
 * a driver, so a deployment installs only the one it uses.
 */
const engine = <A>(name: string, driver: string, load: () => Promise<A>): Effect.Effect<A, SqlStoreError> =>
  Effect.tryPromise({
    try: load,
    catch: (e) =>
      new SqlStoreError({
        message: `the ${name} engine needs ${driver} installed (an optional peer dependency of @deixis/store-sql): ${
          e instanceof Error ? e.message : String(e)
        }`
      })
  })

const sqliteEngine = engine("SQLite", "@effect/sql-sqlite-node", () => import("./Sqlite.js"))
const pgEngine = engine("PostgreSQL", "@effect/sql-pg", () => import("./Pg.js"))

/**
 * An `SqlClient` over a SQLite file (see `layerClient` of `@deixis/store-sql/sqlite`, which
 * also provides the `SqliteClient` tag); loads the engine when built.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSqliteClient = (options: SqliteOptions): Layer.Layer<SqlClient.SqlClient, SqlStoreError> =>
  Layer.unwrapEffect(Effect.map(sqliteEngine, (sqlite) => sqlite.layerClient(options)))

/**
 * Every store in a SQLite file: `ContextStore`, `HistoryStore`, `ConversationStateStore`,
 * `ReminderStore`, `UpdateInbox` and the `Retention` sweep, migrated on start (the `layer`
 * of `@deixis/store-sql/sqlite`, loaded when built).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSqlite = (options: SqliteOptions): Layer.Layer<Stores, SqlStoreError> =>
  Layer.unwrapEffect(Effect.map(sqliteEngine, (sqlite) => sqlite.layer(options)))

/**
 * {@link layerSqlite} configured from `DEIXIS_*` keys (see {@link sqliteConfig}); `overrides` win.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSqliteConfig = (
  overrides: Partial<SqliteOptions> = {}
): Layer.Layer<Stores, SqlStoreError | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(sqliteConfig, (settings) => layerSqlite({ ...settings, ...overrides })))

/**
 * An `SqlClient` over a PostgreSQL server (see `layerClient` of `@deixis/store-sql/pg`, which
 * also provides the `PgClient` tag); loads the engine when built.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPgClient = (options: PgOptions): Layer.Layer<SqlClient.SqlClient, SqlStoreError> =>
  Layer.unwrapEffect(Effect.map(pgEngine, (pg) => pg.layerClient(options)))

/**
 * Every store in a PostgreSQL database shared by any number of bot instances (the `layer` of
 * `@deixis/store-sql/pg`, loaded when built).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPg = (options: PgOptions): Layer.Layer<Stores, SqlStoreError> =>
  Layer.unwrapEffect(Effect.map(pgEngine, (pg) => pg.layer(options)))

/**
 * {@link layerPg} configured from `DEIXIS_*` keys (see {@link pgConfig}); `overrides` win.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPgConfig = (
  overrides: Partial<PgOptions> = {}
): Layer.Layer<Stores, SqlStoreError | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(pgConfig, (settings) => layerPg({ ...settings, ...overrides })))

