/**
 * Whether anything was committed to the database since a moment, told without a query. A SQLite
 * database in WAL mode keeps its wal-index in the `-shm` file beside it, every process mapping
 * the same pages; the index's header (https://www.sqlite.org/walformat.html, "The WAL-Index
 * Header") changes with every commit, by any connection of any process (`iChange`, `mxFrame`,
 * the frame checksums; new salts when the WAL restarts) and is written before the commit can be
 * seen by a reader. Two equal reads of it, with no read in between that saw it differently,
 * mean nothing was committed between them. Reading its 96 bytes is a `pread` of a page the
 * kernel holds in memory: a microsecond or two, against tens for a statement through the
 * driver.
 *
 * The header is kept twice; a writer fills the second copy, then the first. Copies that differ
 * are a header being written: no token (the caller reads the database).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"

export interface ChangeProbe {
  /**
   * A token of the database's committed state: equal tokens read at two moments mean no commit
   * came between them; undefined when that cannot be told now (a header being written).
   */
  readonly token: () => string | undefined
}

/** The wal-index header: two copies of 48 bytes. */
const headerBytes = 48

/** The SQLite file an `SqlClient` of `@effect/sql-sqlite-node` opened, if `sql` is one over a file. */
const sqliteFile = (sql: SqlClient.SqlClient): string | undefined => {
  const config: unknown = (sql as { readonly config?: unknown }).config
  if (typeof config !== "object" || config === null || !("filename" in config)) return undefined
  const filename = config.filename
  // ":memory:" and "" are private to their connection: nothing else writes them, and they have no -shm.
  return typeof filename === "string" && filename !== "" && filename !== ":memory:" && !filename.startsWith("file:")
    ? path.resolve(filename)
    : undefined
}

/**
 * The probe of a SQLite `SqlClient`'s file for the scope's lifetime (its `-shm` file held
 * open), or undefined — PostgreSQL, a database in memory, a file not in WAL mode — and then
 * the caller reads the database each time.
 */
export const sqliteChanges = (sql: SqlClient.SqlClient): Effect.Effect<ChangeProbe | undefined, never, Scope.Scope> => {
  const file = sqliteFile(sql)
  if (file === undefined) return Effect.succeed(undefined)
  return Effect.acquireRelease(
    Effect.sync(() => {
      try {
        return fs.openSync(`${file}-shm`, "r")
      } catch {
        return undefined
      }
    }),
    (fd) => Effect.sync(() => fd !== undefined && fs.closeSync(fd))
  ).pipe(Effect.map((fd) => {
    if (fd === undefined) return undefined
    const buffer = Buffer.alloc(2 * headerBytes)
    return {
      token: () => {
        try {
          if (fs.readSync(fd, buffer, 0, buffer.length, 0) !== buffer.length) return undefined
        } catch {
          return undefined
        }
        // isInit (byte 12) is 0 until a connection built the index: nothing to tell by yet.
        if (buffer[12] === 0 || buffer.compare(buffer, 0, headerBytes, headerBytes, 2 * headerBytes) !== 0) return undefined
        return buffer.toString("latin1", 0, headerBytes)
      }
    }
  }))
}
