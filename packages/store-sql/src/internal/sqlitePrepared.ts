/**
 * A better-sqlite3 connection's prepared statements, kept by text and bounded (the oldest goes
 * first): shared by the main thread's connections and the writer thread's.
 *
 * @internal
 */
import type Sqlite from "better-sqlite3"

// Distinct statement texts are few (power-of-two VALUES chunks); the bound only guards memory.
const maxPrepared = 512

/**
 * `prepare(text)`: the connection's statement for `text`, prepared on first use; `clear()`
 * forgets them all (after loading an extension, which may change what a text means).
 */
export const preparedCache = (db: Sqlite.Database) => {
  const prepared = new Map<string, Sqlite.Statement>()
  return {
    prepare: (text: string): Sqlite.Statement => {
      let statement = prepared.get(text)
      if (statement === undefined) {
        statement = db.prepare(text)
        if (prepared.size >= maxPrepared) prepared.delete(prepared.keys().next().value!)
        prepared.set(text, statement)
      }
      return statement
    },
    clear: (): void => prepared.clear()
  }
}
