/**
 * The PostgreSQL engine (see engine.ts): `BEGIN` transactions retried on deadlock or
 * serialization failure, every statement on the pool, and the write bodies as one call of the
 * server functions `deixis_apply` / `deixis_unit` (migrations 14 and 16) and the update inbox's
 * `deixis_inbox_*` (migration 18).
 *
 * Over a client built by `layerClient` (Pg.ts) the engine holds the client's `pg` pool too, and
 * runs every statement outside a transaction on it directly as a named prepared statement: the
 * server parses and plans a statement text once per connection, not on every call, and the
 * process skips @effect/sql's statement layer (a span and an acquirer per statement). Over a
 * client built elsewhere, statements go through the client as they are.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { isRetryable } from "./dialect/pg.js"
import { tracker } from "./availability.js"
import { type EngineShape, type Procedure, SqlEngine } from "./engine.js"
import type { Bodies, InboxBody } from "./inbox.js"
import type { Param, Row } from "./statement.js"

const retry = { while: isRetryable, schedule: Schedule.exponential("5 millis"), times: 8 } as const

/** What the engine uses of a `pg` pool (node-postgres' `Pool`). */
export interface PgPool {
  readonly query: (
    config: { readonly text: string; readonly values: ReadonlyArray<Param>; readonly name?: string | undefined },
    callback: (error: Error | undefined, result: { readonly rows: ReadonlyArray<Row> }) => void
  ) => void
  readonly on: (event: "error", listener: (error: Error) => void) => unknown
  readonly end: () => Promise<void>
}

/** The most statement texts prepared by name; texts past it run unnamed (each parsed again). */
export const maxPrepared = 512

/**
 * Names of the statement texts run more than once: the first run of a text is unnamed (a text
 * seen once, a migration's DDL, is never kept on the server), later runs are named. A text's
 * name is the same on every connection; node-postgres parses it on a connection the first time
 * it meets it there and only binds it after. At most `max` texts are remembered; others run
 * unnamed.
 */
export const namer = (max = maxPrepared) => {
  // undefined: unseen; null: seen once; false: never named (its plan was refused); else its name.
  const names = new Map<string, string | null | false>()
  let next = 0
  const nameOf = (text: string): string | undefined => {
    const name = names.get(text)
    if (typeof name === "string") return name
    if (name === false) return undefined
    if (name === undefined) {
      if (names.size < max) names.set(text, null)
      return undefined
    }
    const given = `deixis_${(next++).toString(36)}`
    names.set(text, given)
    return given
  }
  /** A text whose prepared plan the server refused (its table changed shape): unnamed from now on. */
  const forget = (text: string) => {
    names.set(text, false)
  }
  return { nameOf, forget }
}

/** `cached plan must not change result type`: a prepared text whose table changed shape under it. */
const planChanged = (error: unknown) =>
  typeof error === "object" && error !== null && (error as { readonly code?: unknown }).code === "0A000"

/** One statement on the pool, as a named prepared statement when its text has been seen before. */
const onPool = (pool: PgPool) => {
  const { forget, nameOf } = namer()
  const once = (text: string, params: ReadonlyArray<Param>, name: string | undefined) =>
    Effect.async<ReadonlyArray<Row>, unknown>((resume) => {
      // A fresh config per call: node-postgres writes the values into it.
      pool.query({ name, text, values: params }, (error, result) => {
        resume(error === undefined || error === null ? Effect.succeed(result.rows) : Effect.fail(error))
      })
    })
  return (text: string, params: ReadonlyArray<Param>): Effect.Effect<ReadonlyArray<Row>, SqlError> => {
    const name = nameOf(text)
    const run = name === undefined ? once(text, params, undefined) : once(text, params, name).pipe(
      Effect.catchIf(planChanged, () => {
        forget(text)
        return once(text, params, undefined)
      })
    )
    return Effect.mapError(run, (cause) => new SqlError({ cause, message: "Failed to execute statement" }))
  }
}

/**
 * The PostgreSQL engine over `client`; with `pool` (the client's own pool), statements outside
 * a transaction run on it directly, prepared by name.
 */
export const make = (client: SqlClient.SqlClient, pool?: PgPool): EngineShape => {
  const execute = pool === undefined ? undefined : onPool(pool)
  const run = (text: string, params: ReadonlyArray<Param>) =>
    execute === undefined ? client.unsafe<Row>(text, params) : execute(text, params)
  const call = (name: Procedure | `inbox_${InboxBody}`, argument: object) =>
    run(`SELECT deixis_${name}(CAST($1 AS jsonb)) AS ok`, [JSON.stringify(argument)]).pipe(
      Effect.retry(retry),
      Effect.map((rows) => rows[0]?.["ok"])
    )
  return {
    client,
    availability: tracker(),
    transaction: (effect) =>
      client.withTransaction(effect).pipe(
        // A failed COMMIT is a defect in @effect/sql; here it is a failure like any other.
        Effect.catchSomeDefect((defect) => defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none()),
        Effect.retry(retry)
      ),
    clientFor: () => client,
    execute,
    call: (name, argument) => Effect.map(call(name, argument), (ok) => ok === true || ok === "t"),
    // The inbox's bodies are the server functions of migration 18, each one round trip; their
    // answer is the body's result as JSON.
    body: <N extends InboxBody>(name: N, argument: Bodies[N]["argument"]) =>
      Effect.map(call(`inbox_${name}`, argument), (result) => (typeof result === "string" ? JSON.parse(result) : result) as Bodies[N]["result"])
  }
}

/** The engine of the `SqlClient` in context, as a layer (statements through the client). */
export const layer: Layer.Layer<SqlEngine, never, SqlClient.SqlClient> = Layer.effect(SqlEngine, Effect.map(SqlClient.SqlClient, (client) => make(client)))

/** The engine of the `SqlClient` in context over its own `pool`, as a layer. */
export const layerWithPool = (pool: PgPool): Layer.Layer<SqlEngine, never, SqlClient.SqlClient> =>
  Layer.effect(SqlEngine, Effect.map(SqlClient.SqlClient, (client) => make(client, pool)))

/**
 * A pool made by `create`, checked with one statement (as `@effect/sql-pg` checks its own: a
 * server that cannot be reached fails the layer) and ended with the scope.
 */
export const acquirePool = <P extends PgPool>(create: () => P, connectTimeout: Duration.DurationInput = "5 seconds"): Effect.Effect<P, SqlError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pool = create()
      // An idle connection that fails is dropped by the pool; the next statement reports.
      pool.on("error", () => {})
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  ).pipe(
    Effect.tap((pool) =>
      Effect.async<void, SqlError>((resume) => {
        pool.query({ text: "SELECT 1", values: [] }, (error) => {
          resume(error === undefined || error === null ? Effect.void : Effect.fail(new SqlError({ cause: error, message: "PgClient: Failed to connect" })))
        })
      }).pipe(
        Effect.timeoutFail({
          duration: connectTimeout,
          onTimeout: () => new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
        })
      )
    )
  )
