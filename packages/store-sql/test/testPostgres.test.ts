/**
 * The tests' own PostgreSQL (deixis-test-support/pg, vitest.shared.ts's global setup): when
 * DEIXIS_TEST_PG_URL is unset and nothing answers on the default address, the run starts an
 * embedded server from the npm binaries, and the stores run on it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import { createServer } from "node:net"
import { answers } from "deixis-test-support/pg"
import setup from "deixis-test-support/pgGlobalSetup"
import { freePort } from "deixis-test-support/net"
import * as SqlStore from "../src/SqlStore.js"

/** Runs `body` with the two variables set as given (undefined: unset), restoring them after. */
const withEnv = <A>(vars: Record<string, string | undefined>, body: () => Promise<A>): Promise<A> => {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]))
  const apply = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
  apply(vars)
  return body().finally(() => apply(saved))
}

describe("the tests' PostgreSQL", () => {
  it.effect("nothing on the default address: an embedded server is started, a client writes and reads on it, and it is gone after the run", () =>
    Effect.gen(function*() {
      const closed = `postgres://postgres@127.0.0.1:${yield* Effect.promise(freePort)}/test`
      const seen = yield* Effect.promise(() =>
        withEnv({ DEIXIS_TEST_PG_URL: undefined, DEIXIS_TEST_PG_DEFAULT_URL: closed, DEIXIS_TEST_PG_EMBEDDED: undefined }, async () => {
          const teardown = await setup()
          const url = process.env["DEIXIS_TEST_PG_URL"]
          const embedded = process.env["DEIXIS_TEST_PG_EMBEDDED"]
          try {
            assert.isDefined(url)
            const rows = await Effect.runPromise(Effect.gen(function*() {
              const sql = yield* SqlClient.SqlClient
              yield* sql`CREATE SCHEMA probe_schema`
              yield* sql`CREATE TABLE probe (id int PRIMARY KEY)`
              yield* sql`INSERT INTO probe VALUES (1), (2)`
              return yield* sql<{ n: string; dir: string }>`SELECT count(*)::text AS n, current_setting('data_directory') AS dir FROM probe`
            }).pipe(Effect.provide(SqlStore.layerPgClient({ url: url!, schema: "probe_schema" })), Effect.scoped))
            return { url: url!, embedded, rows }
          } finally {
            await teardown()
          }
        }))
      assert.notStrictEqual(seen.url, closed)
      assert.strictEqual(seen.embedded, "1")
      assert.strictEqual(seen.rows[0]?.n, "2")
      // The server stopped and its data directory (a temp dir of its own) was removed.
      assert.isFalse(yield* Effect.promise(() => answers(seen.url)))
      assert.isFalse(fs.existsSync(seen.rows[0]!.dir))
    }), 120_000)

  it.effect("something answers on the default address: the run uses it and starts nothing", () =>
    Effect.gen(function*() {
      const server = createServer((socket) => socket.destroy())
      const port = yield* Effect.promise(() => new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resolve(typeof address === "object" && address !== null ? address.port : 0)
      })))
      const listening = `postgres://postgres@127.0.0.1:${port}/test`
      const seen = yield* Effect.promise(() =>
        withEnv({ DEIXIS_TEST_PG_URL: undefined, DEIXIS_TEST_PG_DEFAULT_URL: listening, DEIXIS_TEST_PG_EMBEDDED: undefined }, async () => {
          const teardown = await setup()
          const result = { url: process.env["DEIXIS_TEST_PG_URL"], embedded: process.env["DEIXIS_TEST_PG_EMBEDDED"] }
          await teardown()
          return result
        }).finally(() => server.close()))
      assert.deepStrictEqual(seen, { url: listening, embedded: undefined })
    }))
})
