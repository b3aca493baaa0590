/**
 * What PostgreSQL is asked, counted at the pool (every statement the process sends, those of
 * transactions included): the update inbox's calls are one round trip each, a recorded update
 * in a unit of work costs two reads and one write — one read when its context batch and history
 * items are sent at once, as the Telegram recorder sends them —, a pool whose topic has nothing
 * active is one statement, and a statement text run again is bound to the connection's prepared
 * statement instead of being parsed again.
 */
import { assert, describe, it } from "@effect/vitest"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { ContextEventBatch } from "@deixis/core/ContextEvent"
import { ContextStore } from "@deixis/core/ContextStore"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import { UnitOfWork } from "@deixis/core/UnitOfWork"
import { UpdateInbox } from "@deixis/core/UpdateInbox"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { dbOf } from "../src/internal/db.js"
import { layerClient } from "../src/internal/pgClient.js"
import { namer, type PgPool } from "../src/internal/pgEngine.js"
import * as SqlStore from "../src/SqlStore.js"
import { freshSchema, item, pgUrl, poolQuery, T0 } from "./helpers.js"

/** Every statement text sent, in order: by every client the pool lends (its own `query` included). */
const counting = () => {
  const sent: Array<string> = []
  const note = (config: unknown) => {
    sent.push(typeof config === "string" ? config : String((config as { readonly text?: unknown }).text))
  }
  const wrapped = new WeakSet<object>()
  const observe = (pool: PgPool): PgPool =>
    new Proxy(pool, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver)
        // The pool's own `query` takes a client with `this.connect`: through this proxy, so counted there.
        if (property === "query") return (...args: Array<unknown>) => (value as (...a: Array<unknown>) => unknown).apply(receiver, args)
        if (property === "connect") {
          return (callback: (error: unknown, client: { query: (...args: Array<unknown>) => unknown }, release: unknown) => void) =>
            (value as (cb: typeof callback) => unknown).call(target, (error, client, release) => {
              if (client !== undefined && !wrapped.has(client)) {
                wrapped.add(client)
                const query = client.query.bind(client)
                client.query = (config: unknown, ...rest: Array<unknown>) => {
                  note(config)
                  return query(config, ...rest)
                }
              }
              callback(error, client, release)
            })
        }
        return typeof value === "function" ? value.bind(target) : value
      }
    })
  return { sent, observe }
}

const layerCounted = (observe: (pool: PgPool) => PgPool, max = 4) => {
  const schema = freshSchema()
  const url = new URL(pgUrl)
  url.searchParams.set("options", `-c search_path=${schema}`)
  const drop = Layer.scopedDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.addFinalizer(() => Effect.orDie(sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)))))
  return SqlStore.layerStores({ schema, sweep_interval: 0 }).pipe(
    Layer.provideMerge(Layer.provideMerge(drop, layerClient({ url: url.toString(), max }, observe)))
  )
}

const decode = Schema.decodeUnknownSync(ContextEventBatch)

const message = (chat: string, id: number) => ({
  type: "message_observed",
  chat_id: chat,
  message_id: id,
  topic_id: 1,
  sender_user_id: 7,
  text: `message ${id}`
})

/** The statements `effect` sends. */
const sentBy = <A, E, R>(sent: Array<string>, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const from = sent.length
    const result = yield* effect
    return { result, texts: sent.slice(from) }
  })

describe("PostgreSQL round trips", () => {
  const { observe, sent } = counting()

  it.effect("the inbox receives an update, and settles it, in one round trip each; a duplicate costs one too", () =>
    Effect.gen(function*() {
      const inbox = yield* UpdateInbox
      const at = { source: "rt", owner: "a", now: T0, lease: 60_000 }
      const received = yield* sentBy(sent, inbox.receive({ ...at, updates: [{ update_id: 1, chat: "c1", payload: "{}" }] }))
      assert.deepStrictEqual(received.texts.length, 1)
      assert.match(received.texts[0]!, /deixis_inbox_receive/)
      assert.deepStrictEqual(received.result.fresh, [1])
      assert.deepStrictEqual(received.result.handed.map((h) => [h.update_id, h.attempts]), [[1, 1]])
      const settled = yield* sentBy(sent, inbox.settle({ ...at, done: [1], returned: [], hold: [], release: ["c1"], stall: [] }))
      assert.deepStrictEqual(settled.texts.length, 1)
      assert.match(settled.texts[0]!, /deixis_inbox_settle/)
      assert.deepStrictEqual(settled.result, [])
      const again = yield* sentBy(sent, inbox.receive({ ...at, updates: [{ update_id: 1, chat: "c1", payload: "{}" }] }))
      assert.deepStrictEqual(again.texts.length, 1)
      assert.deepStrictEqual(again.result, { fresh: [], handed: [], waiting: [] })
    }).pipe(Effect.provide(layerCounted(observe))))

  it.effect("a unit of work recording one update reads the context and the history once each and writes with one call", () =>
    Effect.gen(function*() {
      const unit = yield* UnitOfWork
      const store = yield* ContextStore
      const history = yield* HistoryStore
      const record = (id: number) =>
        unit.run(Effect.gen(function*() {
          yield* store.apply(decode([message("u1", id)]), { now: T0, ttl: TtlPolicy.defaultPolicy })
          yield* history.appendAll([item("u1", id)])
        }))
      yield* record(1)
      const second = yield* sentBy(sent, record(2))
      assert.deepStrictEqual(second.texts.length, 3)
      assert.match(second.texts[2]!, /deixis_unit/)
      assert.isFalse(second.texts.some((text) => /^(BEGIN|COMMIT)/.test(text)))
      // Written: the message and its history item.
      assert.strictEqual(Option.getOrNull(yield* store.message("u1", "2"))?.message_id, "2")
      assert.strictEqual(Option.getOrNull(yield* history.lookup({ chat_id: "u1", topic_id: "1" }, "2"))?.item.text, "message 2")
    }).pipe(Effect.provide(layerCounted(observe))))

  it.effect("a unit of work sending its context batch and its history items at once reads both in one statement", () =>
    Effect.gen(function*() {
      const unit = yield* UnitOfWork
      const store = yield* ContextStore
      const history = yield* HistoryStore
      // As the Telegram recorder sends them where the unit says it reads for both at once.
      assert.isTrue(unit.callsAtOnce)
      const record = (id: number) =>
        unit.run(Effect.all([
          store.apply(decode([message("j1", id)]), { now: T0, ttl: TtlPolicy.defaultPolicy }),
          history.appendAll([item("j1", id)])
        ], { concurrency: 2 }))
      yield* record(1)
      const second = yield* sentBy(sent, record(2))
      assert.deepStrictEqual(second.texts.length, 2)
      assert.match(second.texts[1]!, /deixis_unit/)
      const [applied, appended] = second.result
      assert.strictEqual(applied.applied, 1)
      assert.deepStrictEqual(appended.length, 1)
      assert.strictEqual(Option.getOrNull(yield* store.message("j1", "2"))?.message_id, "2")
      assert.strictEqual(Option.getOrNull(yield* history.lookup({ chat_id: "j1", topic_id: "1" }, "2"))?.item.text, "message 2")
      // Three units at once, each sending both: the first runs alone, the two that came while it
      // ran form the next group — each group one read and one write.
      const many = yield* sentBy(sent, Effect.all([3, 4, 5].map(record), { concurrency: "unbounded" }))
      assert.deepStrictEqual(many.texts.map((text) => /deixis_unit/.test(text)), [false, true, false, true])
      assert.isTrue(many.texts.every((text) => !/^(BEGIN|COMMIT)/.test(text)))
      for (const id of ["3", "4", "5"]) {
        assert.strictEqual(Option.getOrNull(yield* history.lookup({ chat_id: "j1", topic_id: "1" }, id))?.item.text, `message ${id}`)
      }
    }).pipe(Effect.provide(layerCounted(observe))))

  it.effect("a pool whose topic has nothing active reads the rest of the chat in the same statement as the topic", () =>
    Effect.gen(function*() {
      const store = yield* ContextStore
      yield* store.apply(decode([message("p1", 1), { ...message("p1", 2), topic_id: 2 }]), { now: T0, ttl: TtlPolicy.defaultPolicy })
      // Asked for active objects only (a list), and for every object (its inactive debug list).
      for (const active_only of [true, false]) {
        const read = yield* sentBy(sent, store.pool(poolQuery("p1", { current_message_id: "1", active_only, now: T0 + 1 })))
        assert.deepStrictEqual(read.texts.length, 1)
        assert.isTrue(read.result.fallback)
      }
    }).pipe(Effect.provide(layerCounted(observe))))

  it.effect("a statement text run again is prepared on the connection, once", () =>
    Effect.gen(function*() {
      const db = yield* dbOf
      const read = (n: number) => db.run`SELECT CAST(${n} AS integer) + 1 AS x`
      assert.deepStrictEqual(yield* read(1), [{ x: 2 }])
      assert.deepStrictEqual(yield* read(2), [{ x: 3 }])
      assert.deepStrictEqual(yield* read(3), [{ x: 4 }])
      // One connection: the view lists what this connection prepared.
      const prepared = yield* db.run`SELECT statement FROM pg_prepared_statements WHERE statement LIKE ${"%AS integer) + 1 AS x"}`
      assert.deepStrictEqual(prepared.length, 1)
    }).pipe(Effect.provide(layerCounted(observe, 1))))
})

describe("prepared statement names", () => {
  it("a text is named from its second run, with the same name after; at most `max` texts are kept", () => {
    const { forget, nameOf } = namer(2)
    assert.isUndefined(nameOf("a"))
    const a = nameOf("a")
    assert.isString(a)
    assert.strictEqual(nameOf("a"), a)
    assert.isUndefined(nameOf("b"))
    const b = nameOf("b")
    assert.isString(b)
    assert.notStrictEqual(a, b)
    // Past the cap: never named.
    assert.isUndefined(nameOf("c"))
    assert.isUndefined(nameOf("c"))
    // A text whose plan the server refused runs unnamed from then on.
    forget("a")
    assert.isUndefined(nameOf("a"))
    assert.isUndefined(nameOf("a"))
  })
})
