import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as BotEvents from "../src/BotEvents.js"
import { ContextEvent } from "../src/ContextEvent.js"
import { ContextIngest } from "../src/ContextIngest.js"
import { ingest, list, message, T0, withCore } from "./fixtures.js"

const roundTrip = Schema.decodeUnknownSync(ContextEvent)

describe("BotEvents", () => {
  it("every constructor builds an event the core decodes unchanged", () => {
    const events = [
      BotEvents.pollCreated({ chat_id: "1", message_id: "10", poll_id: "p", question: "Lunch?", topic_id: "7" }),
      BotEvents.reminderCreated({ chat_id: "1", source_message_id: "11", due_at: T0 + 60_000, label: "standup", actor_user_id: "100" }),
      ...BotEvents.remindersListed({ chat_id: "1", object_ids: ["1/11/reminder"], listed_in: "12" }),
      BotEvents.reminderUpdated({ chat_id: "1", object_id: "1/11/reminder", because_of: "13", due_at: T0 + 120_000 }),
      BotEvents.reminderFired({ chat_id: "1", object_id: "1/11/reminder" }),
      BotEvents.reminderCancelled({ chat_id: "1", object_id: "1/11/reminder", actor_user_id: "100" }),
      BotEvents.summaryGenerated({ chat_id: "1", message_id: "14", label: "Summary" }),
      BotEvents.resolverTouch({ chat_id: "1", object_id: "1/10/poll", because_of: "cb:77" })
    ]
    for (const event of events) {
      assert.deepStrictEqual(roundTrip(Schema.encodeSync(ContextEvent)(event)), event)
    }
  })

  it.effect("a bot action recorded twice changes nothing the second time", () =>
    withCore(Effect.gen(function*() {
      yield* ingest(message(10, { topic_id: 7, direction: "outbound", poll: { poll_id: "p", question: "Lunch?" } }))
      const apply = Effect.flatMap(ContextIngest, (i) =>
        i.apply([
          BotEvents.pollCreated({ chat_id: "1", message_id: "10", poll_id: "p", question: "Lunch?" }),
          BotEvents.reminderCreated({ chat_id: "1", source_message_id: "10", due_at: T0 + 3_600_000, label: "vote", actor_user_id: "100" })
        ]))
      assert.strictEqual((yield* apply).applied, 2)
      assert.strictEqual((yield* apply).duplicates, 2)
      const listed = yield* list({ chat_id: 1, topic_id: 7, current_message_id: 11 })
      assert.deepStrictEqual(listed.objects.map((o) => [o.object_id, o.created_by_bot]).sort(), [["1/10/poll", true], ["1/10/reminder", false]])
    })))
})
