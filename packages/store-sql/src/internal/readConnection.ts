/**
 * SQLite's read connection: a second, read-only connection to the same file, on which the
 * stores' reading statements outside a transaction run. In WAL mode a reader never waits for the
 * writer: a read is not queued behind a group-committed write transaction holding the write
 * connection (better-sqlite3 has one connection per client, taken by a transaction for its
 * whole length), and it sees every transaction committed before it started — this process's
 * acknowledged writes included, since a write is acknowledged after its `COMMIT`.
 *
 * Held by the SQLite engine of the file (sqliteEngine.ts); a database in memory has none (a
 * second connection would open another database).
 */
import type * as SqlClient from "@effect/sql/SqlClient"

/** Whether a statement only reads: a `SELECT`, or a `WITH` that names no write. Anything else runs on the writer. */
const readsOnly = (text: string): boolean =>
  /^\s*\(*\s*SELECT\b/i.test(text) || (/^\s*WITH\b/i.test(text) && !/\b(INSERT|UPDATE|DELETE|REPLACE)\b/i.test(text))

/**
 * Which client runs a statement outside a transaction: a statement that only reads runs on
 * `reader`, anything else on `writer` (decided once per text).
 */
export const router = (
  writer: SqlClient.SqlClient,
  reader: SqlClient.SqlClient
): (text: string) => SqlClient.SqlClient => {
  const known = new Map<string, SqlClient.SqlClient>()
  return (text) => {
    let client = known.get(text)
    if (client === undefined) {
      client = readsOnly(text) ? reader : writer
      if (known.size < 10_000) known.set(text, client)
    }
    return client
  }
}
