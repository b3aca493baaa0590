/**
 * @since 0.1.0
 */
export * as Ids from "./Ids.js"
