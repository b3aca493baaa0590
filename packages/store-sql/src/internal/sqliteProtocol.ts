/**
 * The messages between the main thread and the SQLite writer thread (sqliteWorker.ts): plain
 * data, copied by `postMessage` (the structured clone algorithm), answered in the order sent.
 */

import type { Procedure } from "./sqliteProcedures.js"

/** What the writer thread is started with. */
export interface WorkerOptions {
  readonly filename: string
  /** A database in memory: no WAL, no checkpoint. */
  readonly memory: boolean
  readonly busyTimeout: number
  /** `NORMAL` or `FULL`. */
  readonly synchronous: string
  /** Bytes of WAL frames written between two of the thread's checkpoints (see sqliteWorker.ts). */
  readonly checkpointBytes: number
}

export type Request =
  | {
    readonly op: "run"
    readonly id: number
    readonly text: string
    readonly params: ReadonlyArray<unknown>
    /** `rows`: a reader's rows, nothing for a write; `raw`: a write's `RunResult`; `values`: rows as arrays. */
    readonly mode: "rows" | "raw" | "values"
    /** Prepared for this run only, not kept (texts that vary, such as numbered savepoints). */
    readonly unprepared: boolean
    /** Integers as bigints (`SqlClient.SafeIntegers`). */
    readonly safe: boolean
  }
  | {
    /**
     * A write body of the thread (sqliteProcedures.ts) over its argument, group-committed by the
     * thread. The argument is plain data (objects, arrays, strings, numbers, null), copied as it
     * is: JSON text cost both threads its encoding and decoding, and escaped again every JSON
     * text it carried (a raw update, a stored body).
     */
    readonly op: "call"
    readonly id: number
    readonly name: Procedure
    readonly argument: unknown
  }
  | { readonly op: "export"; readonly id: number }
  | { readonly op: "backup"; readonly id: number; readonly destination: string }
  | { readonly op: "loadExtension"; readonly id: number; readonly path: string }
  | { readonly op: "close"; readonly id: number }
  | { readonly op: "crash"; readonly id: number }

/** The answer to request `id` (id 0: the thread is open and ready); a group commit's answers come as one array. */
export type Reply =
  | { readonly id: number; readonly rows: unknown; readonly error?: undefined }
  | {
    readonly id: number
    readonly rows?: undefined
    readonly error: { readonly message: string; readonly code: string | undefined; readonly prepare: boolean }
  }
