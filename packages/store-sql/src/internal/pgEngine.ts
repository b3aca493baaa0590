/**
 * The PostgreSQL engine (see engine.ts): `BEGIN` transactions retried on deadlock or
 * serialization failure, every statement on the pool, and the write bodies as one call of the
 * server functions `deixis_apply` / `deixis_unit` (migrations 14 and 16).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { isRetryable } from "./dialect/pg.js"
import { tracker } from "./availability.js"
import { type EngineShape, SqlEngine } from "./engine.js"

const retry = { while: isRetryable, schedule: Schedule.exponential("5 millis"), times: 8 } as const

/** The PostgreSQL engine over `client`. */
export const make = (client: SqlClient.SqlClient): EngineShape => ({
  client,
  availability: tracker(),
  transaction: (effect) =>
    client.withTransaction(effect).pipe(
      // A failed COMMIT is a defect in @effect/sql; here it is a failure like any other.
      Effect.catchSomeDefect((defect) => defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none()),
      Effect.retry(retry)
    ),
  clientFor: () => client,
  call: (name, argument) =>
    client.unsafe<{ readonly ok: unknown }>(`SELECT deixis_${name}(CAST($1 AS jsonb)) AS ok`, [JSON.stringify(argument)]).pipe(
      Effect.retry(retry),
      Effect.map((rows) => rows[0]?.ok === true || rows[0]?.ok === "t")
    ),
  body: undefined
})

/** The engine of the `SqlClient` in context, as a layer. */
export const layer: Layer.Layer<SqlEngine, never, SqlClient.SqlClient> = Layer.effect(SqlEngine, Effect.map(SqlClient.SqlClient, make))
