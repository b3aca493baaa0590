/**
 * Deixis over a deployment's stores, composed once: core's ingest and tools with their TTL
 * policy and scorer (`Deixis` of `@deixis/core`), the conversation state, the context loader
 * and the history write policy, over one instance of every store port ({@link Stores}). Every
 * entrance uses this one composition — the HTTP service, the Telegram bot, the `deixis` CLI
 * and the Telegraf adapter — so they run the same services over the same stores.
 *
 * The stores come from elsewhere: {@link storesMemory} here, `StoreConfig.layer(choice)` or
 * `SqlStore.layerSqlite` / `layerPg` of `@deixis/store-sql`. It lives in chathistory because
 * this is the first package that sees every port (core's and the history store).
 *
 * @since 0.1.0
 */
import * as ConversationState from "@deixis/core/ConversationState"
import * as ContextStore from "@deixis/core/ContextStore"
import * as Deixis from "@deixis/core/Deixis"
import * as ReminderStore from "@deixis/core/ReminderStore"
import type * as Scoring from "@deixis/core/Scoring"
import type * as TtlPolicy from "@deixis/core/TtlPolicy"
import * as UpdateInbox from "@deixis/core/UpdateInbox"
import type * as ConfigError from "effect/ConfigError"
import * as Layer from "effect/Layer"
import * as ContextLoader from "./ContextLoader.js"
import * as HistoryStore from "./HistoryStore.js"
import * as WritePolicy from "./WritePolicy.js"

/**
 * Every store port a deployment provides, one instance each: what a store configuration
 * builds (`StoreConfig.layer`, the SQL engines' layers, {@link storesMemory}).
 *
 * @since 0.1.0
 * @category models
 */
export type Stores =
  | ContextStore.ContextStore
  | HistoryStore.HistoryStore
  | ConversationState.ConversationStateStore
  | ReminderStore.ReminderStore
  | UpdateInbox.UpdateInbox

/**
 * What {@link layer} provides besides the stores: core's services, the conversation state,
 * the context loader and the write policy.
 *
 * @since 0.1.0
 * @category models
 */
export type Services =
  | Deixis.Services
  | ConversationState.ConversationState
  | ContextLoader.ContextLoader
  | WritePolicy.WritePolicy

/**
 * Settings of {@link layer}, each over its defaults.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly ttl?: Partial<TtlPolicy.TtlSettings> | undefined
  readonly scoring?: Scoring.ScoringOptions | undefined
  readonly state?: ConversationState.Options | undefined
  readonly context?: Partial<ContextLoader.ContextLoaderSettings> | undefined
  readonly writePolicy?: Partial<WritePolicy.WritePolicySettings> | undefined
}

/** The settings' layers: from options or from configuration. */
interface Parts<E> {
  readonly core: <E1, R>(stores: Layer.Layer<ContextStore.ContextStore, E1, R>) => Layer.Layer<Deixis.Services, E | E1, R>
  readonly state: Layer.Layer<ConversationState.ConversationState, E, ConversationState.ConversationStateStore>
  readonly loader: Layer.Layer<ContextLoader.ContextLoader, E, HistoryStore.HistoryStore>
  readonly writePolicy: Layer.Layer<WritePolicy.WritePolicy, E>
}

// The one composition. `stores` appears twice; layers are memoised by reference, so it is
// built once and every service shares its instances.
const compose = <E, R, E2>(stores: Layer.Layer<Stores, E, R>, parts: Parts<E2>): Layer.Layer<Services | Stores, E | E2, R> =>
  Layer.mergeAll(parts.state, parts.loader, parts.writePolicy).pipe(
    Layer.provideMerge(Layer.merge(parts.core(stores), stores))
  )

/**
 * Deixis over the given stores, with settings given in code (the defaults for what is not
 * given). Whatever else the stores layer provides (a SQL engine's `UnitOfWork`, whose
 * transactions the recorder then uses) is provided too.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E, R>(
  stores: Layer.Layer<Stores, E, R>,
  options: Options = {}
): Layer.Layer<Services | Stores, E, R> =>
  compose(stores, {
    core: (stores) =>
      Deixis.layerWith(stores, {
        ...(options.ttl === undefined ? {} : { ttl: options.ttl }),
        ...(options.scoring === undefined ? {} : { scoring: options.scoring })
      }),
    state: ConversationState.layer(options.state),
    loader: ContextLoader.layer(options.context),
    writePolicy: WritePolicy.layer(options.writePolicy)
  })

/**
 * Deixis over the given stores, every setting read from its `DEIXIS_*` key (TTL, scoring,
 * conversation state, context loader, write policy): what the apps and the CLI run.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = <E, R>(
  stores: Layer.Layer<Stores, E, R>
): Layer.Layer<Services | Stores, E | ConfigError.ConfigError, R> =>
  compose(stores, {
    core: Deixis.layerWithConfig,
    state: ConversationState.layerConfig(),
    loader: ContextLoader.layerConfig(),
    writePolicy: WritePolicy.layerConfig
  })

/**
 * Every store in memory with its defaults (lost on restart). `StoreConfig.layerMemory` of
 * `@deixis/store-sql` is the same, its settings read from `DEIXIS_*` keys.
 *
 * @since 0.1.0
 * @category layers
 */
export const storesMemory: Layer.Layer<Stores> = Layer.mergeAll(
  ContextStore.layerMemory(),
  HistoryStore.layerMemory(),
  ConversationState.layerMemory,
  ReminderStore.layerMemory,
  UpdateInbox.layerMemory
)
