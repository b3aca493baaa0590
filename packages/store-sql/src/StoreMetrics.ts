/**
 * What the SQL stores measure, as Effect metrics (the process's registry holds them): lookups
 * the context store's cache served, those that read the database, and chats evicted from the
 * cache. An app lists them on its `/metrics` from the start ({@link register}), not only once
 * first counted.
 *
 * @since 0.3.0
 */
import * as Effect from "effect/Effect"
import type * as Metric from "effect/Metric"
import { cacheEvictions, cacheHits, cacheMisses } from "./internal/contextCache.js"

/**
 * The store's counters (`deixis_store_cache_hits_total`, `…_misses_total`, `…_evictions_total`).
 *
 * @since 0.3.0
 * @category metrics
 */
export const all: ReadonlyArray<Metric.Metric.Counter<number>> = [cacheHits, cacheMisses, cacheEvictions]

/**
 * Puts the store's counters in the process's metric registry (at 0 until counted).
 *
 * @since 0.3.0
 * @category metrics
 */
export const register: Effect.Effect<void> = Effect.sync(() => {
  for (const metric of all) metric.unsafeValue([])
})
