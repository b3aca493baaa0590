/**
 * The SQL unit of work (core's `UnitOfWork`): one transaction around everything the caller
 * runs, every store call inside it a savepoint of that transaction. While it runs, the context
 * store bumps each chat's revision once (the first write to the chat) and notes what it wrote;
 * the caches follow those writes once, after the commit — a rolled-back unit leaves them as
 * they were.
 */
import { StoreError } from "@deixis/core/ContextStore"
import type { UnitOfWorkShape } from "@deixis/core/UnitOfWork"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ContextCache, Touched } from "./contextCache.js"
import { type Db, describe } from "./db.js"

/** A chat this unit wrote: its revision before the unit (bumped once, to `from + 1`) and what the unit touched in it. */
export interface Pending {
  readonly from: number
  readonly touched: Touched
}

export interface UnitState {
  /** The client whose transaction this is: a store over another database does not join it. */
  readonly sql: SqlClient.SqlClient
  /** Per cache (one per context store), the chats written in this unit. */
  readonly written: Map<ContextCache, Map<string, Pending>>
}

/** The unit of work running in this fiber, if any (internal: stores look for it to join it). */
export class Unit extends Context.Tag("@deixis/store-sql/internal/Unit")<Unit, UnitState>() {}

/** The unit of `db` this fiber runs in, when it runs in one. */
export const unitOf = (db: Db): Effect.Effect<UnitState | undefined> =>
  Effect.map(Effect.serviceOption(Unit), (unit) =>
    Option.isSome(unit) && unit.value.sql === db.sql ? unit.value : undefined)

/** After the commit: each written chat's cache entry moves from `from` to `from + 1`, keeping what the unit did not touch. */
const followCaches = (state: UnitState) => {
  for (const [cache, chats] of state.written) {
    for (const [chatId, pending] of chats) cache.wrote(chatId, pending.from, pending.touched)
  }
}

export const makeUnitOfWork = (db: Db): UnitOfWorkShape => ({
  run: <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreError, R> =>
    Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (outer) => {
      // Inside a transaction already (a unit of this store, or the caller's own): join it. A
      // caller's transaction is not ours to commit, so the stores inside treat it as they would
      // any caller's transaction.
      if (Option.isSome(outer)) return effect
      return db.transaction(Effect.suspend(() => {
        // A new state for every attempt: PostgreSQL runs the transaction again after a deadlock.
        const state: UnitState = { sql: db.sql, written: new Map() }
        return Effect.map(Effect.provideService(effect, Unit, state), (a) => [a, state] as const)
      })).pipe(
        Effect.map(([a, state]) => {
          followCaches(state)
          return a
        }),
        Effect.mapError((e): E | StoreError =>
          e instanceof SqlError ? new StoreError({ message: `unit of work failed: ${describe(e)}` }) : e as E
        ),
        Effect.withSpan("SqlStore.unitOfWork")
      )
    })
})
