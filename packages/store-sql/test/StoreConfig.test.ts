import { ContextIngest } from "@deixis/core/ContextIngest"
import * as Deixis from "@deixis/core/Deixis"
import * as ReminderStore from "@deixis/core/ReminderStore"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as path from "node:path"
import * as SqlStore from "../src/SqlStore.js"
import * as StoreConfig from "../src/StoreConfig.js"
import { freshSchema, makeTempDir, pgUrl } from "./helpers.js"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(StoreConfig.config, ConfigProvider.fromMap(new Map(Object.entries(env))))))

describe("StoreConfig: the one DEIXIS_STORE parser", () => {
  it("reads every accepted form", () => {
    const cases: ReadonlyArray<readonly [Record<string, string>, unknown]> = [
      [{}, { _tag: "sqlite", filename: path.join(".deixis", "deixis.sqlite") }],
      [{ INIT_CWD: "/srv/app" }, { _tag: "sqlite", filename: "/srv/app/.deixis/deixis.sqlite" }],
      [{ DEIXIS_STORE: "sqlite", DEIXIS_SQLITE_FILE: "/data/x.db", INIT_CWD: "/srv" }, { _tag: "sqlite", filename: "/data/x.db" }],
      [{ DEIXIS_STORE: "sqlite:/tmp/y.db" }, { _tag: "sqlite", filename: "/tmp/y.db" }],
      [{ DEIXIS_STORE: "memory" }, { _tag: "memory" }]
    ]
    for (const [env, expected] of cases) {
      assert.deepStrictEqual(Either.getOrThrow(read(env)), expected, JSON.stringify(env))
    }
    const pg = Either.getOrThrow(read({ DEIXIS_STORE: "postgresql://u:secret@db:5432/deixis" }))
    assert.strictEqual(pg._tag, "postgres")
    if (pg._tag === "postgres") assert.strictEqual(Redacted.value(pg.url), "postgresql://u:secret@db:5432/deixis")
    assert.strictEqual(StoreConfig.describeChoice(pg), "postgres db:5432/deixis")
  })

  it("describes a SQLite file by its absolute path, and names a PostgreSQL password, as written and decoded, as the choice's secret", () => {
    assert.strictEqual(StoreConfig.describeChoice({ _tag: "sqlite", filename: "rel/x.db" }), `sqlite ${path.resolve("rel/x.db")}`)
    const pg = Either.getOrThrow(read({ DEIXIS_STORE: "postgres://deixis:p%40ss%20word@db:5432/deixis" }))
    assert.deepStrictEqual(StoreConfig.secretsOf(pg).map(Redacted.value), ["p%40ss%20word", "p@ss word"])
    assert.notInclude(StoreConfig.describeChoice(pg), "p%40ss")
    assert.deepStrictEqual(StoreConfig.secretsOf(Either.getOrThrow(read({ DEIXIS_STORE: "postgres://db/deixis" }))), [])
    assert.deepStrictEqual(StoreConfig.secretsOf({ _tag: "memory" }), [])
  })

  it("refuses anything else with a message naming DEIXIS_STORE, and never echoes the value", () => {
    for (const value of ["mysql://u:hunter2@h/db", "sqlite:", "postgres:/x", "Memory"]) {
      const result = read({ DEIXIS_STORE: value })
      assert.isTrue(Either.isLeft(result), value)
      if (Either.isLeft(result)) {
        assert.include(String(result.left), "DEIXIS_STORE")
        assert.notInclude(String(result.left), "hunter2")
      }
    }
  })

  it("an app passes its own default file", () => {
    const choice = Effect.runSync(Effect.withConfigProvider(
      StoreConfig.configWith(Config.succeed("/var/lib/bot/deixis.sqlite")),
      ConfigProvider.fromMap(new Map())
    ))
    assert.deepStrictEqual(choice, { _tag: "sqlite", filename: "/var/lib/bot/deixis.sqlite" })
  })

  const provide = <A, E, R>(choice: StoreConfig.StoreChoice, effect: Effect.Effect<A, E, R>, env: Record<string, string>) =>
    effect.pipe(
      Effect.provide(Deixis.layerWith(StoreConfig.layer(choice)).pipe(Layer.provideMerge(StoreConfig.layer(choice)))),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries({ DEIXIS_STORE_SWEEP_INTERVAL: "0 millis", ...env })), { pathDelim: "_" }))
    )
  const roundTrip = (choice: StoreConfig.StoreChoice, env: Record<string, string> = {}) =>
    provide(
      choice,
      Effect.gen(function*() {
        const ingest = yield* ContextIngest
        const applied = yield* ingest.ingest([{ type: "message_observed", chat_id: -1, message_id: 1 }])
        const reminders = yield* ReminderStore.ReminderStore
        yield* reminders.add({
          object_id: "-1/1/reminder",
          chat_id: "-1",
          topic_id: null,
          source_message_id: "1",
          created_by_user_id: null,
          text: "x",
          due_at: 1,
          created_at: 0
        })
        return [applied.applied, Option.isSome(yield* reminders.get("-1", "-1/1/reminder"))] as const
      }),
      env
    )

  it.effect("each choice builds every store port: memory, a SQLite file in a directory it creates, PostgreSQL", () =>
    Effect.gen(function*() {
      const dir = makeTempDir()
      try {
        assert.deepStrictEqual(yield* roundTrip({ _tag: "memory" }), [1, true])
        const filename = path.join(dir, "nested", "deeper", "deixis.sqlite")
        assert.deepStrictEqual(yield* roundTrip({ _tag: "sqlite", filename }), [1, true])
        assert.isTrue(fs.existsSync(filename))
        const schema = freshSchema()
        const pg = yield* roundTrip({ _tag: "postgres", url: Redacted.make(pgUrl) }, { DEIXIS_PG_SCHEMA: schema })
        assert.deepStrictEqual(pg, [1, true])
        const tables = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = ${schema}`
          yield* sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
          return rows[0]!.n
        }).pipe(Effect.provide(SqlStore.layerPgClient({ url: pgUrl, max_connections: 1 })))
        assert.isAbove(tables, 5)
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }), 60_000)
})
