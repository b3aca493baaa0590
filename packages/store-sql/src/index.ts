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

/**
 * The store errors that say why the database could not be used (unreachable, disk full,
 * locked), each a core `StoreError`.
 *
 * @since 0.2.0
 */
export * as Availability from "./Availability.js"
