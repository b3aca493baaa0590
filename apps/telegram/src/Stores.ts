/**
 * Store selection: the one place that decides where deixis keeps its state —
 * `SqlStore.layerSqlite` from `@deixis/store-sql` (the default), or memory.
 *
 * @since 0.1.0
 */
import * as ContextStore from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import { SqlStore } from "@deixis/store-sql"
import type { DeixisTelegraf } from "@deixis/telegraf"
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * @since 0.1.0
 * @category models
 */
export interface StoreConfig {
  readonly kind: "sqlite" | "memory"
  readonly sqliteFile: string
}

/**
 * `DEIXIS_STORE` (`sqlite` | `memory`, default `sqlite`) and `DEIXIS_SQLITE_FILE` (default
 * `./.deixis/deixis.sqlite`).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<StoreConfig> = Config.all({
  kind: Config.literal("sqlite", "memory")("DEIXIS_STORE").pipe(Config.withDefault("sqlite" as const)),
  sqliteFile: Config.string("DEIXIS_SQLITE_FILE").pipe(Config.withDefault("./.deixis/deixis.sqlite"))
})

/**
 * The three stores in memory (lost on restart).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<DeixisTelegraf.Stores> = Layer.mergeAll(
  ContextStore.layerMemory(),
  HistoryStore.layerMemory(),
  ConversationState.layerMemory
)

/**
 * The SQLite file's directory could not be created.
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreDirectoryError extends Data.TaggedError("StoreDirectoryError")<{ readonly path: string; readonly cause: unknown }> {}

/**
 * The stores in one SQLite file (its directory created when missing).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSqlite = (
  filename: string
): Layer.Layer<DeixisTelegraf.Stores, SqlStore.SqlStoreError | StoreDirectoryError> =>
  SqlStore.layerSqlite({ filename }).pipe(
    Layer.provide(Layer.effectDiscard(Effect.try({
      try: () => void fs.mkdirSync(path.dirname(filename), { recursive: true }),
      catch: (cause) => new StoreDirectoryError({ path: path.dirname(filename), cause })
    })))
  )

/**
 * The stores the configuration names.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  settings: StoreConfig
): Layer.Layer<DeixisTelegraf.Stores, SqlStore.SqlStoreError | StoreDirectoryError> =>
  settings.kind === "memory" ? layerMemory : layerSqlite(settings.sqliteFile)
