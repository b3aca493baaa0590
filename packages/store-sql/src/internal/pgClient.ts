/**
 * The client layer of the PostgreSQL entry point (Pg.ts): a `pg` pool made here, the
 * `@effect/sql-pg` client over it, and the engine (pgEngine.ts) over the same pool. Imported by
 * Pg.ts only, so that nothing else in the package needs `@effect/sql-pg`.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createRequire } from "node:module"
import type { SqlEngine } from "./engine.js"
import { acquirePool, layerWithPool, type PgPool } from "./pgEngine.js"

/**
 * node-postgres, as `@effect/sql-pg` resolves it (its dependency, not this package's): the one
 * module instance the client's pool and its type parsers come from.
 */
const pgDriver = (): { readonly Pool: new(config: object) => PgPool } =>
  createRequire(createRequire(import.meta.url).resolve("@effect/sql-pg/package.json"))("pg")

/**
 * An `SqlClient` over a pool of `max` connections to `url`, with this engine over the same pool
 * (`observe` sees the pool first: tests count its round trips).
 */
export const layerClient = (
  options: { readonly url: string; readonly max: number },
  observe: (pool: PgPool) => PgPool = (pool) => pool
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient | SqlEngine, SqlError> =>
  Layer.unwrapScoped(Effect.map(
    acquirePool(() => observe(new (pgDriver().Pool)({ connectionString: options.url, max: options.max, application_name: "deixis" }))),
    (pool) =>
      Layer.provideMerge(
        layerWithPool(pool),
        // The client's own statements (transactions, a client used directly) on the same pool.
        PgClient.layerFromPool({ acquire: Effect.succeed(pool as never), applicationName: "deixis" })
      )
  ))
