/**
 * The service's version, from its package.json: the one the start line, `/openapi.json`,
 * `/docs` and the MCP server report (core's `Lifecycle.versionOf`, read once).
 *
 * @since 0.3.0
 */
import { versionOf } from "@deixis/core/Lifecycle"

/**
 * @since 0.3.0
 * @category constants
 */
export const version: string = versionOf("@deixis/http", import.meta.url)
