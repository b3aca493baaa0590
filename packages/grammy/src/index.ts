/**
 * @since 0.1.0
 */

/**
 * The grammY plugin (`ctx.deixis`, a context flavor) and the runner's `sequentialize` key.
 *
 * @since 0.1.0
 */
export * as DeixisGrammy from "./DeixisGrammy.js"
