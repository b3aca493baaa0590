/**
 * The one parser of a deployment's store choice, shared by every app (the HTTP service, the
 * Telegram bot): `DEIXIS_STORE` names where state lives, and {@link layer} builds every store
 * port there (chathistory's `DeixisServices.Stores`, which `DeixisServices.layerConfig`
 * composes deixis over).
 *
 * - unset or `sqlite` → a SQLite file: `DEIXIS_SQLITE_FILE`, or the app's default file;
 * - `sqlite:<file>` → that SQLite file;
 * - `memory` → in memory (lost on restart);
 * - `postgres://…` / `postgresql://…` → PostgreSQL, shared by any number of instances
 *   (`DEIXIS_PG_SCHEMA`, `DEIXIS_PG_MAX_CONNECTIONS` as in {@link SqlStore.pgConfig}).
 *
 * The value is read as a `Redacted` (a URL may hold a password). Retention, TTL and the other
 * settings of the stores come from their own `DEIXIS_*` keys.
 *
 * @since 0.1.0
 */
import type * as DeixisServices from "@deixis/chathistory/DeixisServices"
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import * as ContextStore from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import * as ReminderStore from "@deixis/core/ReminderStore"
import * as UpdateInbox from "@deixis/core/UpdateInbox"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { mkdirSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import * as SqlStore from "./SqlStore.js"

/**
 * Where state lives.
 *
 * @since 0.1.0
 * @category models
 */
export type StoreChoice =
  | { readonly _tag: "memory" }
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "postgres"; readonly url: Redacted.Redacted<string> }

/**
 * The parser, given the app's default SQLite file (used when `DEIXIS_STORE` names SQLite
 * without a file and `DEIXIS_SQLITE_FILE` is unset).
 *
 * @since 0.1.0
 * @category config
 */
export const configWith = (defaultFile: Config.Config<string>): Config.Config<StoreChoice> =>
  Config.all({
    store: Config.option(Config.redacted("DEIXIS_STORE")),
    file: Config.string("DEIXIS_SQLITE_FILE").pipe(Config.orElse(() => defaultFile))
  }).pipe(
    Config.mapOrFail(({ file, store }): Either.Either<StoreChoice, ConfigError.ConfigError> => {
      const value = store._tag === "None" ? "" : Redacted.value(store.value).trim()
      if (value === "" || value === "sqlite") return Either.right({ _tag: "sqlite", filename: file })
      if (value === "memory") return Either.right({ _tag: "memory" })
      if (value.startsWith("sqlite:") && value.length > "sqlite:".length) {
        return Either.right({ _tag: "sqlite", filename: value.slice("sqlite:".length) })
      }
      if (/^postgres(ql)?:\/\//.test(value)) return Either.right({ _tag: "postgres", url: Redacted.make(value) })
      return Either.left(ConfigError.InvalidData(
        ["DEIXIS_STORE"],
        "DEIXIS_STORE must be unset (a SQLite file), \"sqlite\", \"sqlite:<file>\", \"memory\" or a postgres:// URL"
      ))
    })
  )

/**
 * The parser with the HTTP service's default file: `.deixis/deixis.sqlite` under the directory
 * `pnpm start` was typed in (pnpm's `INIT_CWD`), or else under the working directory.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<StoreChoice> = configWith(
  Config.map(Config.string("INIT_CWD"), (dir) => join(dir, ".deixis", "deixis.sqlite")).pipe(
    Config.withDefault(join(".deixis", "deixis.sqlite"))
  )
)

const memoryStores = (sweep: { readonly sweep_interval?: number }) =>
  Layer.mergeAll(
    ContextStore.layerMemoryConfig(sweep),
    HistoryStore.layerMemoryConfig(sweep),
    ConversationState.layerMemory,
    ReminderStore.layerMemory,
    UpdateInbox.layerMemory
  )

/**
 * Every store in memory, with the memory adapters' `DEIXIS_*` settings.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<DeixisServices.Stores, ConfigError.ConfigError> = memoryStores({})

/**
 * Options of {@link layer}.
 *
 * @since 0.2.0
 * @category models
 */
export interface LayerOptions {
  /**
   * Whether the stores sweep on their schedule (`DEIXIS_STORE_SWEEP_INTERVAL`) while the layer
   * lives; default true. A short-lived command that is not a sweep (an import, an export) passes
   * false: what it reads or writes is never removed under it.
   */
  readonly scheduledSweep?: boolean | undefined
}

/**
 * The stores a choice names, configured from `DEIXIS_*` keys (retention, pool size, schema…).
 * A SQLite file's directory is created when missing.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  choice: StoreChoice,
  options: LayerOptions = {}
): Layer.Layer<DeixisServices.Stores, ConfigError.ConfigError | SqlStore.SqlStoreError> => {
  const sweep = options.scheduledSweep === false ? { sweep_interval: 0 } : {}
  switch (choice._tag) {
    case "memory":
      return memoryStores(sweep)
    case "sqlite":
      return Layer.unwrapEffect(
        Effect.as(
          Effect.try({
            try: () => mkdirSync(dirname(choice.filename), { recursive: true }),
            catch: (e) =>
              new SqlStore.SqlStoreError({
                message: `cannot create the directory of ${choice.filename}: ${e instanceof Error ? e.message : String(e)}`
              })
          }),
          SqlStore.layerSqliteConfig({ filename: choice.filename, ...sweep })
        )
      )
    case "postgres":
      return SqlStore.layerPgConfig({ url: choice.url, ...sweep })
  }
}

/**
 * A short, secret-free description of a choice, for a start log: the SQLite file's absolute
 * path, or PostgreSQL's host, port and database (no user, no password).
 *
 * @since 0.1.0
 * @category formatting
 */
export const describeChoice = (choice: StoreChoice): string => {
  switch (choice._tag) {
    case "memory":
      return "memory"
    case "sqlite":
      return `sqlite ${resolve(choice.filename)}`
    case "postgres": {
      try {
        const url = new URL(Redacted.value(choice.url))
        return `postgres ${url.hostname}${url.port === "" ? "" : `:${url.port}`}${url.pathname}`
      } catch {
        return "postgres"
      }
    }
  }
}

/**
 * The secrets a choice holds, for a logger to redact: a PostgreSQL URL's password (as written
 * and decoded).
 *
 * @since 0.3.0
 * @category formatting
 */
export const secretsOf = (choice: StoreChoice): ReadonlyArray<Redacted.Redacted<string>> => {
  if (choice._tag !== "postgres") return []
  try {
    const { password } = new URL(Redacted.value(choice.url))
    if (password === "") return []
    let decoded = password
    try {
      decoded = decodeURIComponent(password)
    } catch {
      // A malformed escape: the password as written is all there is.
    }
    return [...new Set([password, decoded])].map((value) => Redacted.make(value))
  } catch {
    return []
  }
}
