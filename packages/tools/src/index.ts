/**
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Envelope from "./Envelope.js"
/** @since 0.1.0 */
export * as DeixisToolkit from "./DeixisToolkit.js"
/** @since 0.1.0 */
export * as ModelActions from "./ModelActions.js"
/** @since 0.3.0 */
export * as UrlReader from "./UrlReader.js"
