/**
 * The classification of driver failures and the outage state machine (pure), and what a store
 * fails with when its PostgreSQL server is not there.
 */
import { assert, describe, it } from "@effect/vitest"
import { SqlError } from "@effect/sql/SqlError"
import { StoreError } from "@deixis/core/ContextStore"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import { ContextEventBatch } from "@deixis/core/ContextEvent"
import { ContextStore } from "@deixis/core/ContextStore"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import { freePort } from "deixis-test-support/net"
import { startEmbeddedPg } from "deixis-test-support/pg"
import * as Availability from "../src/Availability.js"
import { classify, type Health, next, storeError, up } from "../src/internal/availability.js"
import * as Pg from "../src/Pg.js"

const coded = (code: string, message = "x") => Object.assign(new Error(message), { code })

describe("classify", () => {
  it("PostgreSQL going away or not there is unavailable, wrapped in SqlError or not", () => {
    for (const e of [
      coded("ECONNREFUSED"),
      coded("57P01", "terminating connection due to administrator command"),
      coded("57P03", "the database system is starting up"),
      coded("08006"),
      new Error("Connection terminated unexpectedly"),
      Object.assign(new AggregateError([coded("ECONNREFUSED"), coded("ECONNREFUSED")]), {}),
      new SqlError({ cause: coded("57P01"), message: "Failed to execute statement" })
    ]) assert.strictEqual(classify(e), "unavailable", String(e))
  })

  it("SQLite's full disk and lock are told apart; a constraint or a syntax error is none of them", () => {
    assert.strictEqual(classify(new SqlError({ cause: coded("SQLITE_FULL", "database or disk is full"), message: "m" })), "disk_full")
    assert.strictEqual(classify(coded("SQLITE_BUSY", "database is locked")), "locked")
    assert.isUndefined(classify(coded("SQLITE_CONSTRAINT_UNIQUE")))
    assert.isUndefined(classify(coded("42601", "syntax error")))
    assert.isUndefined(classify("a string"))
  })

  it("storeError gives each class its StoreError subclass (still a StoreError), others a plain StoreError", () => {
    const e = storeError("pool failed", coded("ECONNREFUSED"))
    assert.instanceOf(e, Availability.StoreUnavailable)
    assert.instanceOf(e, StoreError)
    assert.strictEqual(e._tag, "StoreError")
    assert.instanceOf(storeError("w", coded("SQLITE_FULL")), Availability.StoreFull)
    assert.instanceOf(storeError("w", coded("SQLITE_BUSY")), Availability.StoreLocked)
    const plain = storeError("w", coded("23505"))
    assert.isFalse(Availability.isRetryable(plain))
    assert.strictEqual(plain.constructor, StoreError)
  })
})

describe("the outage state machine", () => {
  // Statements numbered by time here: one started at `at` is the `at`-th.
  const failed = (at: number, reason: Availability.Reason = "unavailable", started = at) => ({ _tag: "Failed", reason, at, started, latest: at }) as const
  const succeeded = (at: number, write = false, started = at) => ({ _tag: "Succeeded", write, at, started }) as const
  const run = (observations: ReadonlyArray<Parameters<typeof next>[1]>) => {
    let health: Health = up
    const reports = []
    for (const o of observations) {
      const [h, report] = next(health, o)
      health = h
      if (report !== undefined) reports.push(report)
    }
    return { health, reports }
  }

  it("many failures and many successes report the outage once and the recovery once", () => {
    const { health, reports } = run([succeeded(0), failed(10), failed(11), failed(12), succeeded(40), succeeded(41), failed(50), succeeded(60)])
    assert.deepStrictEqual(reports, [
      { _tag: "Outage", reason: "unavailable" },
      { _tag: "Recovery", reason: "unavailable", ms: 30, failures: 3 },
      { _tag: "Outage", reason: "unavailable" },
      { _tag: "Recovery", reason: "unavailable", ms: 10, failures: 1 }
    ])
    assert.deepStrictEqual(health, { _tag: "Up", after: 60 })
  })

  it("a full disk ends with a committed write, not with a read", () => {
    const { reports } = run([failed(0, "disk_full"), succeeded(5), succeeded(6), failed(7, "disk_full"), succeeded(9, true)])
    assert.deepStrictEqual(reports, [{ _tag: "Outage", reason: "disk_full" }, { _tag: "Recovery", reason: "disk_full", ms: 9, failures: 2 }])
  })

  it("a statement under way when the outage was seen succeeds: no recovery (nor a second outage) is reported", () => {
    const { health, reports } = run([failed(10), succeeded(11, false, 9), failed(12), succeeded(20, false, 15)])
    assert.deepStrictEqual(reports, [{ _tag: "Outage", reason: "unavailable" }, { _tag: "Recovery", reason: "unavailable", ms: 10, failures: 2 }])
    assert.deepStrictEqual(health, { _tag: "Up", after: 15 })
  })

  it("a statement started before the recovery that fails after it (the server still starting for it) starts no second outage", () => {
    const { reports } = run([failed(10), succeeded(20, false, 15), failed(21, "unavailable", 14), succeeded(22)])
    assert.deepStrictEqual(reports, [{ _tag: "Outage", reason: "unavailable" }, { _tag: "Recovery", reason: "unavailable", ms: 10, failures: 1 }])
    // A failure of a statement started after the recovery is a new outage.
    assert.strictEqual(run([failed(10), succeeded(20, false, 15), failed(21, "unavailable", 16)]).reports.length, 3)
  })

  it("a lock held by another program is no outage", () => {
    assert.deepStrictEqual(run([failed(0, "locked"), failed(1, "locked")]), { health: up, reports: [] })
  })
})

describe("a store whose PostgreSQL is not there", () => {
  it.effect("building it fails with a message naming the connection, not a defect", () =>
    Effect.gen(function*() {
      const url = `postgres://postgres@127.0.0.1:${yield* Effect.promise(freePort)}/test`
      const exit = yield* Effect.exit(Effect.scoped(Effect.asVoid(Effect.provide(Effect.void, Pg.layer({ url, schema: "absent", sweep_interval: 0 })))))
      assert.isTrue(Exit.isFailure(exit))
      assert.match(String(Exit.isFailure(exit) ? exit.cause : ""), /cannot connect to PostgreSQL/)
    }))
})

describe("a PostgreSQL stopped and started again under a store", () => {
  const decode = Schema.decodeUnknownSync(ContextEventBatch)
  const write = (id: number) =>
    Effect.flatMap(ContextStore, (store) =>
      store.apply(decode([{ type: "message_observed", chat_id: 1, message_id: id, topic_id: 1 }]), { now: Date.parse("2026-11-29T10:00:00Z"), ttl: TtlPolicy.defaultPolicy }))

  it.live("writes fail with StoreUnavailable while it is down and succeed once it is back, on the same store", () =>
    Effect.gen(function*() {
      const pg = yield* Effect.acquireRelease(Effect.promise(() => startEmbeddedPg()), (pg) => Effect.promise(() => pg.destroy()))
      const result = yield* Effect.gen(function*() {
        const first = yield* write(1)
        yield* Effect.promise(() => pg.stop())
        const down = yield* Effect.flip(write(2))
        const downAgain = yield* Effect.flip(write(3))
        yield* Effect.promise(() => pg.start())
        // The pool's connections were ended by the stop: the first statements after it reconnect.
        const back = yield* write(4).pipe(Effect.retry({ times: 20, while: Availability.isRetryable }))
        const again = yield* write(1)
        return { first: first.applied, down, downAgain, back: back.applied, again: again.duplicates }
      }).pipe(Effect.provide(Pg.layer({ url: pg.url, schema: "outage", sweep_interval: 0 })))
      assert.instanceOf(result.down, Availability.StoreUnavailable)
      assert.instanceOf(result.downAgain, Availability.StoreUnavailable)
      assert.deepStrictEqual([result.first, result.back, result.again], [1, 1, 1])
    }).pipe(Effect.scoped), 60_000)
})
