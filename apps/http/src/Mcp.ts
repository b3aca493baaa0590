/**
 * The Model Context Protocol endpoint (streamable HTTP at /mcp): the same tools as the REST
 * API, for any MCP client.
 */
import { McpServer, Tool, Toolkit } from "@effect/ai"
import { ActiveContext, ContextStore, ConversationState, Errors, ReferenceResolver } from "@deixis/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

const ToolFailure = Schema.Union(
  ContextStore.StoreError,
  Errors.InvalidRequest,
  ConversationState.ConversationStateConflict,
  ConversationState.ConversationStateRejected,
  ConversationState.ConversationStateTooLarge,
  ConversationState.InvalidMergePatch
)

export const ResolveReferenceTarget = Tool.make("resolve_reference_target", {
  description:
    "Find the object a reference like \"this\", \"the poll\", \"my reminder\" points at, from metadata (reply chain, topic, recency) and normalized hints — never from the words. Returns resolved (one best_match), ambiguous (candidates to ask about) or not_found, with reason codes.",
  parameters: ReferenceResolver.ResolveRequest.fields,
  success: ReferenceResolver.ResolveResult,
  failure: ToolFailure
})

export const ListActiveContextObjects = Tool.make("list_active_context_objects", {
  description:
    "List the objects currently active in this reply chain, topic or chat (explicitly acted on and within their TTL), best first, with why_active codes. For awareness, not for choosing one target.",
  parameters: ActiveContext.ListRequest.fields,
  success: ActiveContext.ListResult,
  failure: ToolFailure
})

export const GetConversationState = Tool.make("get_conversation_state", {
  description: ConversationState.tools.get_conversation_state.description,
  parameters: ConversationState.GetConversationStateParams.fields,
  success: ConversationState.ConversationStateSnapshot,
  failure: ToolFailure
})

export const UpdateConversationState = Tool.make("update_conversation_state", {
  description: ConversationState.tools.update_conversation_state.description,
  parameters: ConversationState.UpdateConversationStateParams.fields,
  success: ConversationState.UpdateConversationStateResult,
  failure: ToolFailure
})

export const DeixisToolkit = Toolkit.make(
  ResolveReferenceTarget.annotate(Tool.Readonly, true),
  ListActiveContextObjects.annotate(Tool.Readonly, true),
  GetConversationState.annotate(Tool.Readonly, true),
  UpdateConversationState
)

const storeError = (error: { readonly message: string }) => new ContextStore.StoreError({ message: error.message })

export const ToolkitLive = DeixisToolkit.toLayer(Effect.gen(function*() {
  const resolver = yield* ReferenceResolver.ReferenceResolver
  const active = yield* ActiveContext.ActiveContext
  const state = yield* ConversationState.ConversationState
  return {
    resolve_reference_target: (params) => resolver.resolve(params),
    list_active_context_objects: (params) => active.list(params),
    get_conversation_state: (params) => Effect.mapError(state.get(params), storeError),
    update_conversation_state: (params) =>
      state.update({
        scope: { chat_id: params.chat_id, topic_id: params.topic_id },
        patch: params.patch,
        expected_revision: params.expected_revision,
        updated_by: params.updated_by
      }).pipe(Effect.catchTag("ConversationStateStoreError", (error) => Effect.fail(storeError(error))))
  }
}))

export const layer = (options: { readonly version: string }) =>
  McpServer.toolkit(DeixisToolkit).pipe(
    Layer.provideMerge(ToolkitLive),
    Layer.provide(McpServer.layerHttpRouter({ name: "deixis", version: options.version, path: "/mcp" }))
  )
