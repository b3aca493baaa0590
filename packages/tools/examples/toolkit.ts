import { ContextIngest, ConversationState, Deixis } from "@deixis/core"
import { ContextLoader, HistoryStore } from "@deixis/chathistory"
import { DeixisToolkit } from "@deixis/tools"
import { McpServer } from "@effect/ai"
import { Effect, Layer } from "effect"

const services = Layer.mergeAll(
  Deixis.layerMemory(),
  ConversationState.layer().pipe(Layer.provide(ConversationState.layerMemory)),
  ContextLoader.layer().pipe(Layer.provideMerge(HistoryStore.layerMemory()))
)
const handlers = DeixisToolkit.layerConfig().pipe(Layer.provideMerge(services))

// A tool loop: offer the definitions to the model, run what it asks for.
export const tools = DeixisToolkit.definitions.map((f) => ({ type: "function", function: f }))
const runCall = (name: DeixisToolkit.ToolName, args: unknown) =>
  Effect.flatMap(DeixisToolkit.toolkit, (toolkit) => toolkit.handle(name, args as never)).pipe(
    Effect.map((result) => JSON.stringify(result.encodedResult)), // the envelope, within budget
    Effect.catchAll((error) => Effect.succeed(JSON.stringify(DeixisToolkit.errorEnvelope(error))))
  )

// MCP: the same toolkit.
export const mcp = McpServer.toolkit(DeixisToolkit.toolkit).pipe(Layer.provideMerge(handlers))

const program = Effect.gen(function*() {
  const ingest = yield* ContextIngest.ContextIngest
  yield* ingest.ingest([
    { type: "message_observed", chat_id: -1001, topic_id: 5, message_id: 1, poll: { poll_id: "p1", question: "Lunch?" } },
    { type: "message_observed", chat_id: -1001, topic_id: 5, message_id: 2, reply_to_message_id: 1 }
  ])
  // The model asked: "close this poll" → resolve_reference_target with a kind hint.
  console.log(yield* runCall("resolve_reference_target", {
    chat_id: -1001, topic_id: 5, current_message_id: 2, reply_to_message_id: 1,
    normalized_reference_hints: { target_kind_hint: "poll" }
  }))
  // A bad call is an error envelope, never an exception.
  console.log(yield* runCall("update_conversation_state", { chat_id: -1001, patch: "not an object" }))
})

Effect.runPromise(program.pipe(Effect.provide(handlers)))
