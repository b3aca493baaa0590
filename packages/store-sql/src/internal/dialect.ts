/**
 * What differs between the engines, in one interface: each engine's spelling lives in one
 * module (`dialect/sqlite.ts`, `dialect/pg.ts`), and the stores write their statements once
 * with the builder (`statement.ts`), splicing in these fragments where the engines differ.
 */
import type { Fragment, Placeholders, Scalar } from "./statement.js"

/** The SQL type of a column of rows passed in bulk (see {@link Dialect.rowsTables}). */
export type ColumnType = "TEXT" | "INTEGER" | "BIGINT"

export interface Dialect extends Placeholders {
  readonly name: "sqlite" | "pg"
  /** ` COLLATE "C"` on PostgreSQL, so text orders by code point as SQLite's BINARY does. */
  readonly C: Fragment
  /** ` FOR UPDATE` where rows are locked one by one (PostgreSQL); SQLite's writer holds the database. */
  readonly forUpdate: Fragment
  /** ` FOR UPDATE SKIP LOCKED` on PostgreSQL: a claim skips rows another process is claiming. */
  readonly skipLocked: Fragment
  /** A join taken in the order written: SQLite's `CROSS JOIN` (its planner honours it), PostgreSQL's `JOIN`. */
  readonly orderedJoin: Fragment
  /** SQLite's ` INDEXED BY index` where the planner must not pick another index; nothing on PostgreSQL. */
  readonly indexedBy: (index: string) => Fragment
  /**
   * The keys `k` joined to the rows of `table` matching `on`, one index probe per key: on SQLite a
   * CROSS JOIN fixes that order; on PostgreSQL a LATERAL subquery (OFFSET 0 keeps the planner from
   * flattening it), since without statistics it may hash-join the whole table instead.
   */
  readonly probe: (table: string, alias: string, on: string) => Fragment
  /**
   * `rows` as tables `k(columns…)` to read from: on PostgreSQL one (one typed array per column,
   * `unnest`); on SQLite multi-row `VALUES` in chunks of 256, 128, …, 1 rows, so a table is
   * written with a few statement texts whatever the batch size.
   */
  readonly rowsTables: (
    columns: ReadonlyArray<readonly [name: string, type: ColumnType]>,
    rows: ReadonlyArray<ReadonlyArray<Scalar>>
  ) => ReadonlyArray<Fragment>
  /** Whether `needle` occurs in the text of the column `haystack`. */
  readonly contains: (haystack: string, needle: string) => Fragment
  /** A lock on `key` held until the transaction ends (PostgreSQL), or `undefined`: SQLite's `BEGIN IMMEDIATE` holds the database. */
  readonly transactionLock: (key: string) => Fragment | undefined
  /**
   * The statements that start the migrations' transaction: on PostgreSQL a lock on the schema's
   * migrations and the schema created; nothing on SQLite (`BEGIN IMMEDIATE` holds the database).
   */
  readonly migrationLock: (schema: string | undefined) => ReadonlyArray<Fragment>
  /** A statement that returns one row when the index `name` exists (in the schema in use). */
  readonly indexExists: (name: string) => Fragment
  /** The JSON text of the column `json` with its string member `member` replaced by `value` of the member's current text. */
  readonly jsonSetString: (json: string, member: string, value: (current: Fragment) => Fragment) => Fragment
  /**
   * Whether independent reads run at once on a pool of connections (PostgreSQL); SQLite's driver
   * is synchronous, so what one request needs is read in one statement instead.
   */
  readonly pooled: boolean
  /** Whether tables have SQLite's `rowid`, so a window can read an index alone and fetch the bodies it picks after. */
  readonly rowid: boolean
  /**
   * Several reads as one statement (one round trip), each read's rows as the JSON array in the
   * column `r0`, `r1`, … of its one row; `undefined` where reads run in the process (SQLite).
   */
  readonly readTogether: ((reads: ReadonlyArray<Fragment>) => Fragment) | undefined
  /**
   * Whether the pool is read through the `deixis_pool` server function (PostgreSQL) instead of one
   * UNION statement; a pool the cache lacks the scope of then reads the chat's revision in the
   * same statement as the scope (`headAndScope` in contextPool.ts).
   */
  readonly poolFunction: boolean
  /**
   * Whether the indexes that order a chat's rows by topic or find them by message id hold only
   * the rows in a topic (`topic <> ''`): SQLite since migration 19, so a message or history item
   * of a chat without topics writes one b-tree (its primary key) instead of two. A row in no
   * topic is then read by its primary key: `deixis_messages` by position, `deixis_history` by
   * its position `('', anchor_len, anchor, 0)`, which for a message is its id's.
   */
  readonly topicIndexesPartial: boolean
  /** Column types and table options of the schema. */
  readonly ddl: {
    readonly big: string
    readonly int: string
    readonly small: string
    /** ` COLLATE "C"` on PostgreSQL (see {@link Dialect.C}). */
    readonly C: string
    /** ` WITHOUT ROWID` on SQLite. */
    readonly noRowid: string
  }
  /** `statements` where they apply: PostgreSQL only (its functions, its collations and indexes). */
  readonly pgOnly: (statements: ReadonlyArray<string>) => ReadonlyArray<string>
  /** `statements` where they apply: SQLite only (its partial indexes, see {@link Dialect.topicIndexesPartial}). */
  readonly sqliteOnly: (statements: ReadonlyArray<string>) => ReadonlyArray<string>
}
