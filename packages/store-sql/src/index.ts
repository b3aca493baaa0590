/**
 * Durable SQLite (embedded) and shared PostgreSQL adapters for every deixis store port.
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as SqlStore from "./SqlStore.js"

/**
 * The one parser of `DEIXIS_STORE` (SQLite, memory or PostgreSQL) shared by every app, and
 * the layer of every store port it names.
 *
 * @since 0.1.0
 */
export * as StoreConfig from "./StoreConfig.js"

/**
 * What the SQL stores measure (the context cache's counters), for an app's registry.
 *
 * @since 0.3.0
 */
export * as StoreMetrics from "./StoreMetrics.js"
