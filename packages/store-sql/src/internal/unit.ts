/**
 * The SQL unit of work (core's `UnitOfWork`): everything the caller runs is committed together,
 * or not at all. While it runs, the context store bumps each chat's revision once (the first
 * write to the chat) and notes what it wrote; the caches follow those writes once, after the
 * commit — a unit that fails leaves them as they were.
 *
 * Locked (SQLite; PostgreSQL when the optimistic attempt cannot do): one transaction around the
 * caller's effect, every store call inside it a savepoint of that transaction.
 *
 * Optimistic (PostgreSQL first): units that arrive together run as a group, each in its own
 * fiber and without a transaction; their `apply` calls are read with one statement and reduced
 * in order, then their `appendAll` calls likewise, and the group writes everything with one call
 * of `deixis_unit` (migration 16), which locks the chats and history counters read, checks that
 * none moved, and writes in its one statement (see unitState.ts). A recorded Telegram update
 * costs its group one read and one write (two reads where `apply` and `appendAll` come one after
 * the other, not at once), where a locked unit holds its chat's lock over a dozen round trips.
 * When a chat moved, the group runs again; a member that meets anything the group cannot take (a
 * migration, a second write to a store, a read its group's writes could change) runs again
 * alone, locked. One group runs at a time; the units that arrive meanwhile
 * form the next — one such queue for ordinary units and one for urgent ones (`WritePriority`).
 */
import { StoreError } from "@deixis/core/ContextStore"
import type { UnitOfWorkShape } from "@deixis/core/UnitOfWork"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as WritePriority from "../WritePriority.js"
import { type Db, describe, queryTogether } from "./db.js"
import { storeError } from "./availability.js"
import { currentUnit, Group, Once, type ReadJointly, type UnitState } from "./unitState.js"

export { currentUnit, type Pending, type UnitState } from "./unitState.js"

/** The unit of `db` this fiber runs in, when it runs in one. */
export const unitOf = (db: Db): Effect.Effect<UnitState | undefined> =>
  Effect.map(FiberRef.get(currentUnit), (unit) => unit !== undefined && unit.sql === db.sql ? unit : undefined)

/** After the commit: each written chat's cache entry moves from `from` to `from + 1`, keeping what the unit did not touch. */
const followCaches = (written: UnitState["written"]) => {
  for (const [cache, chats] of written) {
    for (const [chatId, pending] of chats) cache.wrote(chatId, pending.from, pending.touched)
  }
}

/** The most members a group takes (others wait for the next group). */
const maxGroup = 64

export const makeUnitOfWork = (db: Db): UnitOfWorkShape => {
  const newState = (mode: UnitState["mode"], group?: Group, index = 0): UnitState => ({
    sql: db.sql,
    written: new Map(),
    mode,
    escalated: false,
    group,
    index
  })

  const locked = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    db.transaction(Effect.suspend(() => {
      // A new state for every attempt: PostgreSQL runs the transaction again after a deadlock.
      const state = newState("locked")
      return Effect.map(Effect.locally(effect, currentUnit, state), (a) => [a, state] as const)
    })).pipe(
      Effect.map(([a, state]) => {
        followCaches(state.written)
        return a
      }),
      // No stack trace captured for the span: it would cost more than the unit's own bookkeeping.
      Effect.withSpan("SqlStore.unitOfWork", { captureStackTrace: false })
    )

  /**
   * A group's writes in one call; false when a chat or counter it read has moved. The group's
   * one span: a member of a group has none of its own (a span per recorded update — its clock
   * reads, its context copy and the fiber refs set and restored around it — cost the main
   * thread about a tenth of the update).
   */
  const write = (writes: Partial<Record<"context" | "history", object>>, members: number) =>
    db.call!("unit", writes).pipe(
      Effect.withSpan("SqlStore.unitOfWork", { captureStackTrace: false, attributes: { "deixis.unit.members": members } })
    )

  /** Where the dialect reads several statements as one (PostgreSQL): a group's two windows read in one round trip. */
  const together = db.dialect.readTogether
  const readJointly: ReadJointly | undefined = together === undefined ? undefined : (reads) => queryTogether(db, together, reads)

  // Per lane, the group running now and the units waiting for the next one. Urgent units
  // (`WritePriority`: an answer's) form groups of their own, beside the ordinary ones: they never
  // wait for a group of other chats' recording, nor join one. Two groups at once are safe as
  // two processes' are: each group's write checks that nothing it read has moved.
  interface Lane {
    current: Group | undefined
    readonly waiting: Array<Once<readonly [Group, number]>>
  }
  const lanes: Record<"ordinary" | "urgent", Lane> = { ordinary: { current: undefined, waiting: [] }, urgent: { current: undefined, waiting: [] } }
  const startNext = (lane: Lane) => () => {
    lane.current = undefined
    if (lane.waiting.length === 0) return
    const members = lane.waiting.splice(0, maxGroup)
    const group = lane.current = new Group(members.length, write, followCaches, startNext(lane), readJointly)
    members.forEach((d, i) => d.done(Exit.succeed([group, i] as const)))
  }
  const join: Effect.Effect<readonly [Group, number]> = Effect.withFiberRuntime((fiber) => {
    const lane = lanes[fiber.getFiberRef(WritePriority.urgent) ? "urgent" : "ordinary"]
    if (lane.current === undefined) {
      lane.current = new Group(1, write, followCaches, startNext(lane), readJointly)
      return Effect.succeed([lane.current, 0] as const)
    }
    const waiting = lane.waiting
    const place = new Once<readonly [Group, number]>()
    waiting.push(place)
    return place.wait().pipe(Effect.onInterrupt(() =>
      Effect.suspend(() => {
        const at = waiting.indexOf(place)
        if (at >= 0) {
          waiting.splice(at, 1)
          return Effect.void
        }
        // Placed in a group just as it was interrupted: it leaves it.
        const placed = place.poll()
        return placed === undefined || Exit.isFailure(placed) ? Effect.void : placed.value[0].leave(placed.value[1])
      })
    ))
  })

  /** A unit as a member of a group: its effect run again for every attempt, then alone and locked when it must. */
  const optimistic = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
    Effect.flatMap(join, ([group, index]) =>
      Effect.gen(function*() {
        for (;;) {
          const state = newState("optimistic", group, index)
          const exit = yield* Effect.exit(Effect.locally(effect, currentUnit, state))
          const outcome = yield* group.finish(index, exit, state.escalated)
          switch (outcome._tag) {
            case "commit":
              return yield* exit
            case "again":
              continue
            case "locked":
              return yield* locked(effect)
            case "fail":
              return yield* Effect.fail(outcome.error)
          }
        }
      }).pipe(Effect.onInterrupt(() => group.leave(index))))

  return {
    // A group reads a member's two windows in one statement when it sends both at once.
    callsAtOnce: db.call !== undefined && readJointly !== undefined,
    run: <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreError, R> =>
      Effect.withFiberRuntime<A, E | StoreError, R>((fiber) => {
        // Inside a transaction already (a unit of this store, or the caller's own), or inside an
        // optimistic unit of this store: join it. A caller's transaction is not ours to commit,
        // so the stores inside treat it as they would any caller's transaction.
        if (Option.isSome(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))) return effect
        const outer = fiber.getFiberRef(currentUnit)
        if (outer !== undefined && outer.sql === db.sql) return effect
        // The span: a locked unit's own, an optimistic group's around its one write (see `write`).
        return Effect.mapError(
          db.call !== undefined ? optimistic(effect) : locked(effect),
          (e): E | StoreError => e instanceof SqlError ? storeError(`unit of work failed: ${describe(e)}`, e) : e as E
        )
      })
  }
}
