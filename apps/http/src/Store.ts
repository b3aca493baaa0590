/**
 * DEIXIS_STORE picks where state lives: unset → a SQLite file (the embedded default);
 * `memory`; or a postgres:// URL (shared by many instances).
 */
import { ContextStore, ConversationState } from "@deixis/core"
import { HistoryStore } from "@deixis/chathistory"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"

export type StoreChoice =
  | { readonly _tag: "memory" }
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "postgres"; readonly url: Redacted.Redacted<string> }

export type Stores = ContextStore.ContextStore | HistoryStore.HistoryStore | ConversationState.ConversationStateStore

/** Reads DEIXIS_STORE (and DEIXIS_SQLITE_FILE for the default). */
export const config: Config.Config<StoreChoice> = Config.all({
  store: Config.option(Config.redacted("DEIXIS_STORE")),
  file: Config.string("DEIXIS_SQLITE_FILE").pipe(Config.withDefault(".deixis/deixis.db"))
}).pipe(
  Config.mapOrFail(({ file, store }): Either.Either<StoreChoice, ConfigError.ConfigError> => {
    const value = store._tag === "None" ? "" : Redacted.value(store.value)
    if (value === "" || value === "sqlite") return Either.right({ _tag: "sqlite", filename: file })
    if (value === "memory") return Either.right({ _tag: "memory" })
    if (value.startsWith("sqlite:")) return Either.right({ _tag: "sqlite", filename: value.slice("sqlite:".length) })
    if (/^postgres(ql)?:\/\//.test(value)) return Either.right({ _tag: "postgres", url: Redacted.make(value) })
    return Either.left(ConfigError.InvalidData(
      ["DEIXIS_STORE"],
      "DEIXIS_STORE must be unset (a SQLite file), \"memory\", \"sqlite:<file>\" or a postgres:// URL"
    ))
  })
)

export const layerMemory: Layer.Layer<Stores, ConfigError.ConfigError> = Layer.mergeAll(
  ContextStore.layerMemoryConfig(),
  HistoryStore.layerMemoryConfig(),
  ConversationState.layerMemory
)

/** The stores a choice names. */
export const layer = (choice: StoreChoice): Layer.Layer<Stores, ConfigError.ConfigError> => {
  switch (choice._tag) {
    case "memory":
      return layerMemory
    case "sqlite":
    case "postgres":
      return Layer.fail(ConfigError.Unsupported(["DEIXIS_STORE"], `the ${choice._tag} store needs @deixis/store-sql`))
  }
}
