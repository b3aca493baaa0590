/**
 * The Model Context Protocol endpoint (streamable HTTP at /mcp): the deixis toolkit from
 * `@deixis/tools` — the same five tools, the same result envelope and budgets as the bot's
 * own LLM loop — for any MCP client.
 */
import { McpServer } from "@effect/ai"
import { DeixisToolkit } from "@deixis/tools"
import * as Layer from "effect/Layer"

export const layer = (options: { readonly version: string; readonly path: `/${string}` }) =>
  McpServer.toolkit(DeixisToolkit.toolkit).pipe(
    Layer.provideMerge(DeixisToolkit.layerConfig()),
    Layer.provide(McpServer.layerHttpRouter({ name: "deixis", version: options.version, path: options.path }))
  )
