/**
 * The core, composed: ingest, both tools, the scorer and the TTL policy over one store.
 *
 * @since 0.1.0
 */
import type * as ConfigError from "effect/ConfigError"
import * as Layer from "effect/Layer"
import * as ActiveContext from "./ActiveContext.js"
import * as ContextIngest from "./ContextIngest.js"
import * as ContextStore from "./ContextStore.js"
import * as ReferenceResolver from "./ReferenceResolver.js"
import * as Scoring from "./Scoring.js"
import * as TtlPolicy from "./TtlPolicy.js"

/**
 * The services the core provides.
 *
 * @since 0.1.0
 * @category models
 */
export type Services =
  | ContextIngest.ContextIngest
  | ReferenceResolver.ReferenceResolver
  | ActiveContext.ActiveContext
  | ContextStore.ContextStore
  | Scoring.Scoring
  | TtlPolicy.TtlPolicy

/**
 * Ingest and both tools over the services they read: a `ContextStore`, a `TtlPolicy` and a
 * `Scoring` (and the `KindRegistry`, the built-ins unless provided). Provide replaced
 * services here to change the rules.
 *
 * @since 0.2.0
 * @category layers
 */
export const tools: Layer.Layer<
  ContextIngest.ContextIngest | ReferenceResolver.ReferenceResolver | ActiveContext.ActiveContext,
  never,
  ContextStore.ContextStore | Scoring.Scoring | TtlPolicy.TtlPolicy
> = Layer.mergeAll(ContextIngest.layer, ReferenceResolver.layer, ActiveContext.layer)


/**
 * The core's services over any ContextStore layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = <E, R>(
  store: Layer.Layer<ContextStore.ContextStore, E, R>,
  options: { readonly ttl?: Partial<TtlPolicy.TtlSettings>; readonly scoring?: Scoring.ScoringOptions } = {}
): Layer.Layer<Services, E, R> =>
  tools.pipe(Layer.provideMerge(Layer.merge(store, Layer.provideMerge(Scoring.layer(options.scoring), TtlPolicy.layer(options.ttl)))))

/**
 * The core's services over the in-memory store.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (
  options: {
    readonly store?: Partial<ContextStore.MemoryStoreOptions>
    readonly ttl?: Partial<TtlPolicy.TtlSettings>
    readonly scoring?: Scoring.ScoringOptions
  } = {}
): Layer.Layer<Services> => layerWith(ContextStore.layerMemory(options.store), options)

/**
 * The core's services over any ContextStore layer, the TTL policy and the scorer read from
 * configuration.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWithConfig = <E, R>(
  store: Layer.Layer<ContextStore.ContextStore, E, R>
): Layer.Layer<Services, E | ConfigError.ConfigError, R> =>
  tools.pipe(Layer.provideMerge(Layer.merge(store, Layer.provideMerge(Scoring.layerConfig, TtlPolicy.layerConfig))))

/**
 * The core's services over the in-memory store, every setting read from configuration.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemoryConfig: Layer.Layer<Services, ConfigError.ConfigError> = layerWithConfig(
  ContextStore.layerMemoryConfig()
)
