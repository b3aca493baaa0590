/**
 * Store selection: the one place that decides where deixis keeps its state.
 *
 * `DEIXIS_STORE=sqlite` (the default) is meant to use `SqlStore.layerSqlite({ filename })`
 * from `@deixis/store-sql`, which is not published yet; until it is, this module falls back
 * to the memory stores with a warning. When it lands, `sqlite` below becomes
 * `SqlStore.layerSqlite({ filename: config.sqliteFile })` and nothing else changes.
 *
 * @since 0.1.0
 */
import * as ContextStore from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import type { DeixisTelegraf } from "@deixis/telegraf"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

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
 * The stores the configuration names.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (settings: StoreConfig): Layer.Layer<DeixisTelegraf.Stores> =>
  settings.kind === "memory"
    ? layerMemory
    : Layer.merge(
      layerMemory,
      Layer.effectDiscard(
        Effect.logWarning("the SQLite store is not available yet; state is kept in memory and lost on restart").pipe(
          Effect.annotateLogs({ sqlite_file: settings.sqliteFile })
        )
      )
    )
