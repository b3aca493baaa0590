/**
 * An engine: what a database does beyond SQL spelling (the dialect, dialect/*.ts) — how a write
 * transaction runs, which connection runs a statement outside one, and whether a unit of work's
 * writes go to the database as one call. Each engine builds its own (sqliteEngine.ts,
 * pgEngine.ts) and its client layer provides it beside the `SqlClient`, as `@effect/sql` keeps
 * `sql-sqlite-node` and `sql-pg` apart from `sql`; the stores read it from the context they
 * are built in (see `dbOf` in db.ts), never from a registry keyed by client.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { Tracker } from "./availability.js"
import type { Bodies, InboxBody } from "./inbox.js"
import type { Param, Row } from "./statement.js"

/** A write transaction (see `Db.transaction`). */
export type Transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>

/** The write bodies an engine runs as one call: a context batch (`apply`), a unit of work's writes (`unit`). */
export type Procedure = "apply" | "unit"

export interface EngineShape {
  /** The write client this engine belongs to (a store over another client does not use it). */
  readonly client: SqlClient.SqlClient
  /**
   * Whether the database can be used, as its statements tell (availability.ts): one per engine,
   * so an outage is logged once for every store over it.
   */
  readonly availability: Tracker
  /** The engine's write transaction: SQLite's group commit, PostgreSQL's retried `BEGIN`. */
  readonly transaction: Transaction
  /** Which client runs a statement outside a transaction (SQLite: reads on the read connection). */
  readonly clientFor: (text: string) => SqlClient.SqlClient
  /**
   * Runs one statement outside a transaction, where the engine has its own way (PostgreSQL over
   * its own pool: a named prepared statement; SQLite: a read on the read connection in place,
   * without the client's span and permit); undefined: through `clientFor(text)`.
   */
  readonly execute?: ((text: string, params: ReadonlyArray<Param>) => Effect.Effect<ReadonlyArray<Row>, SqlError>) | undefined
  /**
   * Runs reading statements outside a transaction in one step, on one snapshot (SQLite: its read
   * connection, in place); each one's rows. Undefined: one after the other.
   */
  readonly readAll?: ((statements: ReadonlyArray<{ readonly text: string; readonly params: ReadonlyArray<Param> }>) => Effect.Effect<ReadonlyArray<ReadonlyArray<Row>>, SqlError>) | undefined
  /**
   * Runs a write body over what the caller read and reduced (PostgreSQL: `deixis_apply` /
   * `deixis_unit`; SQLite: the writer thread's procedures): true once written, false when what
   * it read has moved (nothing written). Undefined: the engine cannot, units run locked.
   */
  readonly call: ((name: Procedure, argument: object) => Effect.Effect<boolean, SqlError>) | undefined
  /**
   * Runs a write body of the update inbox (inbox.ts) whole, in a transaction of its own (SQLite:
   * in the writer thread, one message there and back; PostgreSQL: one call of its server
   * function). Undefined: the main thread drives it statement by statement in a transaction.
   */
  readonly body: (<N extends InboxBody>(name: N, argument: Bodies[N]["argument"]) => Effect.Effect<Bodies[N]["result"], SqlError>) | undefined
}

/** The engine of the `SqlClient` in context (internal: provided by the engines' client layers). */
export class SqlEngine extends Context.Tag("@deixis/store-sql/internal/SqlEngine")<SqlEngine, EngineShape>() {}
