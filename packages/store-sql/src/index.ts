/**
 * Durable SQLite (embedded) and shared PostgreSQL adapters for every deixis store port.
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as SqlStore from "./SqlStore.js"
