/**
 * The fake Bot API now lives in the package as `@deixis/telegraf/testing`; this path stays for
 * the tests that import it from here.
 */
export * from "../../src/testing.js"
