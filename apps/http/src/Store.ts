/**
 * DEIXIS_STORE picks where state lives: unset → a SQLite file (the embedded default);
 * `memory`; or a postgres:// URL (shared by many instances).
 */
import { ContextStore, ConversationState } from "@deixis/core"
import { HistoryStore } from "@deixis/chathistory"
import { SqlStore } from "@deixis/store-sql"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { mkdirSync } from "node:fs"
import { dirname, join } from "node:path"

export type StoreChoice =
  | { readonly _tag: "memory" }
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "postgres"; readonly url: Redacted.Redacted<string> }

export type Stores = ContextStore.ContextStore | HistoryStore.HistoryStore | ConversationState.ConversationStateStore

/**
 * Reads DEIXIS_STORE, and DEIXIS_SQLITE_FILE for the default (`.deixis/deixis.sqlite`, relative
 * to the directory `pnpm start` was typed in — pnpm's INIT_CWD — or else the working directory).
 */
export const config: Config.Config<StoreChoice> = Config.all({
  store: Config.option(Config.redacted("DEIXIS_STORE")),
  file: Config.string("DEIXIS_SQLITE_FILE").pipe(
    Config.orElse(() => Config.map(Config.string("INIT_CWD"), (dir) => join(dir, ".deixis", "deixis.sqlite"))),
    Config.withDefault(join(".deixis", "deixis.sqlite"))
  )
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
export const layer = (choice: StoreChoice): Layer.Layer<Stores, ConfigError.ConfigError | SqlStore.SqlStoreError> => {
  switch (choice._tag) {
    case "memory":
      return layerMemory
    case "sqlite":
      // The embedded default must work on a fresh checkout: create the file's directory.
      return Layer.unwrapEffect(
        Effect.as(
          Effect.orDie(Effect.try(() => mkdirSync(dirname(choice.filename), { recursive: true }))),
          SqlStore.layerSqliteConfig({ filename: choice.filename })
        )
      )
    case "postgres":
      return SqlStore.layerPgConfig({ url: choice.url })
  }
}
