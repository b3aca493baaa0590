// The README's example, type-checked and runnable:
// node --conditions=@deixis/source --import tsx examples/quickstart.ts
import { ContextLoader, HistoryItem, HistoryRenderer, HistoryStore, WritePolicy } from "@deixis/chathistory"
import { Effect, Layer } from "effect"

const onMessage = Effect.gen(function*() {
  // From a Telegram update: raw person data and entities in, a normalised item out.
  const item = yield* HistoryItem.make({
    kind: "inbound_user",
    chat_id: "-1001234567890",
    topic_id: "17",
    message_id: "42",
    reply_to_message_id: "40",
    sent_at: 1_771_000_000_000, // message.date * 1000
    sender: { user_id: "1001", username: "alice", first_name: "Alice" },
    text: "@bob can you check the poll above?",
    entities: [{ type: "mention", offset: 0, length: 4 }]
  })
  yield* WritePolicy.record(item, { triggered_run: true, mode: "talkative" })

  const context = yield* ContextLoader.load({
    chat_id: item.chat_id,
    topic_id: item.topic_id,
    message_id: "42",
    reply_to_message_id: "40",
    sent_at: item.sent_at
  })
  // system lines (the gap note) + history turns + the current message
  return HistoryRenderer.renderPrompt({
    history: context.messages,
    current: item,
    gap_note: context.gap_note,
    role_split: true
  })
})

const Live = ContextLoader.layer().pipe(
  Layer.provideMerge(Layer.merge(HistoryStore.layerMemory(), WritePolicy.layer()))
)
Effect.runPromise(Effect.provide(onMessage, Live)).then(console.log)
