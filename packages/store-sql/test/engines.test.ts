/**
 * One package, engines as modules: `@deixis/store-sql/sqlite` and `@deixis/store-sql/pg` are
 * separate entry points whose drivers are optional peer dependencies, and the root entry point
 * loads a driver only when a layer over its engine is built.
 */
import { assert, describe, it } from "@effect/vitest"
import { ContextEventBatch } from "@deixis/core/ContextEvent"
import { ContextStore } from "@deixis/core/ContextStore"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Pg from "../src/Pg.js"
import * as Sqlite from "../src/Sqlite.js"
import * as SqlStore from "../src/SqlStore.js"
import { freshSchema, pgUrl, tempDir } from "./helpers.js"

const src = new URL("../src/", import.meta.url)
const manifest = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  readonly exports: Record<string, unknown>
  readonly dependencies: Record<string, string>
  readonly peerDependencies: Record<string, string>
  readonly peerDependenciesMeta: Record<string, { readonly optional?: boolean }>
}
const drivers = ["@effect/sql-sqlite-node", "@effect/sql-pg"]

/** Every bare module a source file reaches through static imports (`import … from`, `export … from`). */
const staticImports = (entry: string): Set<string> => reach(entry).bare

/** The bare modules and the source files (relative to src/) a source file reaches through static imports. */
const reach = (entry: string) => {
  const seen = new Set<string>()
  const bare = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    const text = fs.readFileSync(file, "utf8")
    for (const match of text.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+"([^"]+)"/gms)) {
      const specifier = match[1]!
      if (specifier.startsWith(".")) visit(path.resolve(path.dirname(file), specifier.replace(/\.js$/, ".ts")))
      else bare.add(specifier)
    }
  }
  visit(new URL(entry, src).pathname)
  const files = new Set([...seen].map((file) => path.relative(new URL(src).pathname, file)))
  return { bare, files }
}

const T0 = Date.parse("2026-11-25T10:00:00Z")
const decode = Schema.decodeUnknownSync(ContextEventBatch)

describe("engines as entry points", () => {
  it("the root entry point imports no database driver: a SQLite user does not install a PostgreSQL driver", () => {
    const reached = [...staticImports("index.ts")]
    assert.deepStrictEqual(reached.filter((s) => drivers.some((d) => s.startsWith(d))), [])
    // The walk itself is not vacuous: each engine's module does import its driver.
    assert.isTrue([...staticImports("Sqlite.ts")].some((s) => s.startsWith("@effect/sql-sqlite-node")))
    assert.isTrue([...staticImports("Pg.ts")].some((s) => s.startsWith("@effect/sql-pg")))
    assert.isFalse([...staticImports("Sqlite.ts")].some((s) => s.startsWith("@effect/sql-pg")))
    assert.isFalse([...staticImports("Pg.ts")].some((s) => s.startsWith("@effect/sql-sqlite-node")))
  })

  it("the engines build on the shared code and never on the root module, which alone loads them (when a layer is built)", () => {
    for (const engine of ["Sqlite.ts", "Pg.ts"]) {
      const files = reach(engine).files
      assert.isTrue(files.has("internal/stores.ts"), engine)
      assert.isFalse(files.has("SqlStore.ts"), `${engine} reaches SqlStore.ts`)
      assert.isFalse(files.has("index.ts"), `${engine} reaches index.ts`)
    }
    const loaders = fs.readdirSync(new URL(src).pathname, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts"))
      .filter((file) => /import\(\s*"\.\/(Sqlite|Pg)\.js"\s*\)|from\s+"[./]*(Sqlite|Pg)\.js"/.test(fs.readFileSync(new URL(file, src), "utf8")))
    assert.deepStrictEqual(loaders, ["SqlStore.ts"])
  })

  it("drivers are optional peer dependencies, and each engine has its own export", () => {
    for (const driver of drivers) {
      assert.isUndefined(manifest.dependencies[driver], driver)
      assert.isString(manifest.peerDependencies[driver], driver)
      assert.isTrue(manifest.peerDependenciesMeta[driver]?.optional === true, driver)
    }
    assert.deepInclude(manifest.exports, { "./sqlite": { "@deixis/source": "./src/Sqlite.ts", types: "./dist/Sqlite.d.ts", default: "./dist/Sqlite.js" } })
    assert.deepInclude(manifest.exports, { "./pg": { "@deixis/source": "./src/Pg.ts", types: "./dist/Pg.d.ts", default: "./dist/Pg.js" } })
  })

  it.scoped("@deixis/store-sql/sqlite stores what the root's layerSqlite reads back from the same file", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "engine.db")
      yield* Effect.gen(function*() {
        const store = yield* ContextStore
        yield* store.apply(decode([{ type: "message_observed", chat_id: "e", message_id: 7 }]), { now: T0, ttl: TtlPolicy.defaultPolicy })
      }).pipe(Effect.provide(Sqlite.layer({ filename, sweep_interval: 0 })))
      const found = yield* Effect.flatMap(ContextStore, (store) => store.message("e", "7")).pipe(
        Effect.provide(SqlStore.layerSqlite({ filename, sweep_interval: 0 }))
      )
      assert.strictEqual(Option.getOrThrow(found).message_id, "7")
    }))

  it.scoped("@deixis/store-sql/pg provides every store over PostgreSQL; a bad schema name is a typed error naming it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(Pg.layer({ url: pgUrl, schema: "no-dashes" })))
      assert.strictEqual(error._tag, "SqlStoreError")
      assert.include(error.message, `invalid schema name "no-dashes"`)
      const schema = freshSchema()
      yield* Effect.addFinalizer(() =>
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(
          Effect.provide(Pg.layerClient({ url: pgUrl, max_connections: 1 })),
          Effect.orDie
        )
      )
      const found = yield* Effect.gen(function*() {
        const store = yield* ContextStore
        yield* store.apply(decode([{ type: "message_observed", chat_id: "e", message_id: 8 }]), { now: T0, ttl: TtlPolicy.defaultPolicy })
        return yield* store.message("e", "8")
      }).pipe(Effect.provide(Pg.layer({ url: pgUrl, schema, max_connections: 1, sweep_interval: 0 })))
      assert.strictEqual(Option.getOrThrow(found).message_id, "8")
    }))
})
