/**
 * The Model Context Protocol endpoint (streamable HTTP at /mcp): the deixis toolkit from
 * `@deixis/tools` — the same six tools, the same result envelope and budgets, the same rules
 * for what an agent's actions make active (`record_context_action`, `ModelActions`) and
 * diagnostics only when asked for, as the bot's own LLM loop — for any MCP client. `@effect/ai`'s McpServer answers; the JSON-RPC edge in
 * `McpEdge.ts` checks every message before it does (see there for what is refused and how), and
 * the pipeline hands the edge each POST's parsed body.
 */
import * as McpServer from "@effect/ai/McpServer"
import { DeixisToolkit } from "@deixis/tools"
import * as Layer from "effect/Layer"
import * as McpEdge from "./McpEdge.js"

export const layer = (options: { readonly version: string }) =>
  McpServer.toolkit(DeixisToolkit.toolkit).pipe(
    Layer.provideMerge(DeixisToolkit.layerConfig()),
    Layer.provideMerge(McpServer.layer({ name: "deixis", version: options.version }).pipe(Layer.provideMerge(McpEdge.layer)))
  )
