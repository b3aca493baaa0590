/**
 * The PostgreSQL engine (`@deixis/store-sql/pg`): every store in one database shared by any
 * number of bot instances, on `@effect/sql-pg` — an optional peer dependency, installed by
 * whoever imports this entry point (a SQLite deployment never needs it).
 *
 * @since 0.2.0
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as PgClient from "@effect/sql-pg/PgClient"
import { defaultsOf } from "@deixis/core/ConfigKeys"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { describe } from "./internal/db.js"
import { isIdentifier } from "./internal/migrations.js"
import * as pgClient from "./internal/pgClient.js"
import { layerStores, pgConfig, type PgOptions, SqlStoreError, type Stores } from "./internal/stores.js"

const defaults = defaultsOf(pgConfig)

/** The connection URL with `search_path` set at connection start, so every pooled connection uses the schema. */
const urlFor = (options: PgOptions): Redacted.Redacted => {
  const raw = typeof options.url === "string" ? options.url : Redacted.value(options.url)
  if (options.schema === undefined) return Redacted.make(raw)
  const url = new URL(raw)
  url.searchParams.set("options", `-c search_path=${options.schema}`)
  return Redacted.make(url.toString())
}

/**
 * An `SqlClient` over a PostgreSQL server (a pool of `max_connections`), its connections
 * using `schema` when one is given.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerClient = (
  options: PgOptions
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, SqlStoreError> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    if (options.schema !== undefined && !isIdentifier(options.schema)) {
      return yield* new SqlStoreError({ message: `invalid schema name "${options.schema}": use letters, digits and _` })
    }
    const url = yield* Effect.try({
      try: () => urlFor(options),
      catch: () => new SqlStoreError({ message: "invalid PostgreSQL URL" })
    })
    // The client's pool is made with the engine (internal/pgClient.ts), which runs its own
    // statements on it too (its transaction, its one-call writes, its prepared statements).
    return pgClient.layerClient({ url: Redacted.value(url), max: options.max_connections ?? defaults.max_connections }).pipe(
      // The message names the failure, never the URL (it may hold a password).
      Layer.mapError((e) => new SqlStoreError({ message: `cannot connect to PostgreSQL: ${describe(e)}` }))
    )
  }))

/**
 * Every store in a PostgreSQL database shared by any number of bot instances:
 * `ContextStore`, `HistoryStore`, `ConversationStateStore`, `ReminderStore`, `UpdateInbox`
 * and the `Retention` sweep, migrated on start.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: PgOptions): Layer.Layer<Stores, SqlStoreError> =>
  layerStores(options).pipe(Layer.provide(layerClient(options)))

/**
 * {@link layer} configured from `DEIXIS_*` keys (see `SqlStore.pgConfig`); `overrides` win.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  overrides: Partial<PgOptions> = {}
): Layer.Layer<Stores, SqlStoreError | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(pgConfig, (settings) => layer({ ...settings, ...overrides })))
