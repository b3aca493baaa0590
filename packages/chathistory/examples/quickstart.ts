// The README's example, type-checked and runnable:
// node --conditions=@deixis/source --import tsx examples/quickstart.ts
import { ContextLoader, HistoryItem, HistoryRenderer, HistoryStore, WritePolicy } from "@deixis/chathistory"
import { Effect, Layer } from "effect"

const chat = { chat_id: "-1001234567890", topic_id: "17" }
const bob = { user_id: "1002", username: "bob", first_name: "Bob" }
const alice = { user_id: "1001", username: "alice", first_name: "Alice" }

const onMessage = Effect.gen(function*() {
  // An earlier message, recorded when it arrived (talkative groups record everything).
  const earlier = yield* HistoryItem.make({
    ...chat, kind: "inbound_user", message_id: "40", sent_at: 1_770_998_800_000, sender: bob,
    text: "Poll: lunch at 1?"
  })
  yield* WritePolicy.record(earlier, { triggered_run: false, mode: "talkative" })

  // From a Telegram update, 20 minutes later: raw person data and entities in, an item out.
  const item = yield* HistoryItem.make({
    ...chat, kind: "inbound_user", message_id: "42", reply_to_message_id: "40",
    sent_at: 1_771_000_000_000, // message.date * 1000
    sender: alice,
    text: "@bob can you check the poll above?",
    entities: [{ type: "mention", offset: 0, length: 4 }]
  })
  yield* WritePolicy.record(item, { triggered_run: true, mode: "talkative" })

  // Every message: the recency window, the reply target and its chain, the gap since the last one.
  const context = yield* ContextLoader.load({ ...chat, message_id: "42", reply_to_message_id: "40", sent_at: item.sent_at })
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
Effect.runPromise(Effect.provide(onMessage, Live)).then((prompt) => console.log(JSON.stringify(prompt, null, 2)))
