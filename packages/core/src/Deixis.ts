/**
 * The core, composed: ingest, both tools, the scorer and the TTL policy over one store. Every
 * layer here is the same composition with other settings. A deployment with the history side
 * too (conversation state, context loader, write policy, every store port) uses
 * `DeixisServices` of `@deixis/chathistory`, which builds on this.
 *
 * @since 0.1.0
 */
import type * as ConfigError from "effect/ConfigError"
import * as Layer from "effect/Layer"
import * as ActiveContext from "./ActiveContext.js"
import * as ContextIngest from "./ContextIngest.js"
import * as ContextStore from "./ContextStore.js"
import * as KindRegistry from "./KindRegistry.js"
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

// The one composition every variant below is: the tools over the store, the scorer and the
// policy (the scorer may read the policy).
const compose = <E, R, E1, E2>(
  store: Layer.Layer<ContextStore.ContextStore, E, R>,
  policy: Layer.Layer<TtlPolicy.TtlPolicy, E1>,
  scorer: Layer.Layer<Scoring.Scoring, E2, TtlPolicy.TtlPolicy>
): Layer.Layer<Services, E | E1 | E2, R> =>
  tools.pipe(Layer.provideMerge(Layer.merge(store, Layer.provideMerge(scorer, policy))))

/**
 * The core's services over any ContextStore layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = <E, R>(
  store: Layer.Layer<ContextStore.ContextStore, E, R>,
  options: { readonly ttl?: Partial<TtlPolicy.TtlSettings>; readonly scoring?: Scoring.ScoringOptions } = {}
): Layer.Layer<Services, E, R> => compose(store, TtlPolicy.layer(options.ttl), Scoring.layer(options.scoring))

/**
 * Replaced rules: a TTL policy layer, a scorer layer (it may read the policy), and custom
 * kinds. What is not given is today's.
 *
 * @since 0.2.0
 * @category models
 */
export interface Rules<E1 = never, E2 = never> {
  readonly policy?: Layer.Layer<TtlPolicy.TtlPolicy, E1>
  readonly scorer?: Layer.Layer<Scoring.Scoring, E2, TtlPolicy.TtlPolicy>
  readonly kinds?: ReadonlyArray<KindRegistry.KindDescriptor>
}

/**
 * The core's services over any ContextStore layer, with replaced rules: a team's own TTL
 * policy, scorer or kinds. The kind registry reaches every service, the store's writes too.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerWithRules = <E, R, E1 = never, E2 = never>(
  store: Layer.Layer<ContextStore.ContextStore, E, R>,
  rules: Rules<E1, E2>
): Layer.Layer<Services, E | E1 | E2 | KindRegistry.InvalidKindDescriptor, R> => {
  const policy: Layer.Layer<TtlPolicy.TtlPolicy, E1> = rules.policy ?? TtlPolicy.layer()
  const scorer: Layer.Layer<Scoring.Scoring, E2, TtlPolicy.TtlPolicy> = rules.scorer ?? Scoring.layer()
  return Layer.provide(compose(store, policy, scorer), KindRegistry.layer(rules.kinds ?? []))
}

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
): Layer.Layer<Services, E | ConfigError.ConfigError, R> => compose(store, TtlPolicy.layerConfig, Scoring.layerConfig)

/**
 * The core's services over the in-memory store, every setting read from configuration.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemoryConfig: Layer.Layer<Services, ConfigError.ConfigError> = layerWithConfig(
  ContextStore.layerMemoryConfig()
)
