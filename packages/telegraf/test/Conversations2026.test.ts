/**
 * Where conversations live since Bot API 9.x–10.1: private-chat topics, a channel's
 * direct-messages topics, checklists, rich messages and guest messages — mapped, then recorded
 * through the recorder on every store (memory, SQLite, PostgreSQL) and read back the way the
 * bot reads them: resolution, listing, the history window, conversation state.
 */
import * as ContextStore from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as DeixisTelegraf from "../src/DeixisTelegraf.js"
import * as TelegramRecorder from "../src/TelegramRecorder.js"
import { destinationFor, directMessagesChatId, guestChatId, mapUpdate, type MessageScope } from "../src/UpdateMapper.js"
import { stores } from "./utils/Stores.js"

const D = 1_771_000_000
const now = (D + 60) * 1000
const options = { botId: "999", botUsername: "deixis_bot" }
const alice = { id: 11, is_bot: false, first_name: "Alice" }
const bob = { id: 22, is_bot: false, first_name: "Bob" }
const privateChat = { id: 11, type: "private", first_name: "Alice" }
const dmChat = { id: -1005000, type: "supergroup", title: "News DMs", is_direct_messages: true }
const photo = (id: string) => [{ file_id: `${id}-s`, width: 90, height: 90 }, { file_id: id, width: 1280, height: 960 }]

let updateId = 100
const update = (message: Record<string, unknown>, type = "message") => ({ update_id: ++updateId, [type]: message })
const at = (n: number) => D + n

// Private-chat topics (Bot API 9.3): two topics with the bot, a photo in each.
const privateTopic = (id: number, thread: number, rest: Record<string, unknown>) =>
  update({ message_id: id, date: at(id), chat: privateChat, from: alice, message_thread_id: thread, is_topic_message: true, ...rest })
const pPhoto1 = privateTopic(1, 100, { photo: photo("p-100"), caption: "beach" })
const pPhoto2 = privateTopic(2, 200, { photo: photo("p-200"), caption: "mountain" })
const pAsk1 = privateTopic(3, 100, { text: "what is on this photo?" })

// A channel's direct-messages chat (Bot API 9.2): Alice's topic 7001, Bob's topic 7002.
const dm = (id: number, user: typeof alice, topic: number, rest: Record<string, unknown>) =>
  update({ message_id: id, date: at(id), chat: dmChat, from: user, direct_messages_topic: { topic_id: topic, user }, ...rest })
const aPhoto = dm(10, alice, 7001, { photo: photo("alice-photo"), caption: "my passport" })
const aAsk = dm(11, alice, 7001, { text: "is this photo fine?" })
const bAsk = dm(12, bob, 7002, { text: "what about this photo?" })

// Checklists (Bot API 9.1).
const groupChat = { id: -1006000, type: "supergroup", title: "Team" }
const checklistMessage = {
  message_id: 20,
  date: at(20),
  chat: groupChat,
  from: alice,
  checklist: {
    title: "Trip",
    tasks: [
      { id: 1, text: "Book tickets", completion_date: at(19), completed_by_user: alice },
      { id: 2, text: "Pack", text_entities: [] }
    ]
  }
}
const checklist = update(checklistMessage)
const taskReply = update({
  message_id: 21,
  date: at(21),
  chat: groupChat,
  from: bob,
  text: "I'll do it",
  reply_to_message: checklistMessage,
  reply_to_checklist_task_id: 2
})
const tasksDone = update({
  message_id: 22,
  date: at(22),
  chat: groupChat,
  from: bob,
  checklist_tasks_done: { checklist_message: checklistMessage, marked_as_done_task_ids: [2], marked_as_not_done_task_ids: [1] }
})
const tasksAdded = update({
  message_id: 23,
  date: at(23),
  chat: groupChat,
  from: bob,
  checklist_tasks_added: { checklist_message: checklistMessage, tasks: [{ id: 3, text: "Buy snacks" }] }
})

// A rich message (Bot API 10).
const rich = update({
  message_id: 30,
  date: at(30),
  chat: groupChat,
  from: alice,
  rich_message: {
    blocks: [
      { type: "heading", size: 1, text: "Release" },
      { type: "paragraph", text: ["Read ", { type: "url", text: { type: "bold", text: "the notes" }, url: "https://example.com/notes" }, "."] },
      { type: "list", items: [{ label: "1.", blocks: [{ type: "paragraph", text: "fast" }] }, { label: "2.", blocks: [{ type: "paragraph", text: "small" }] }] },
      { type: "table", cells: [[{ text: "a", align: "left", valign: "top" }, { text: "b", align: "left", valign: "top" }]] },
      { type: "photo", photo: photo("rich-photo"), caption: { text: "the chart" } },
      { type: "divider" },
      { type: "paragraph", text: { type: "custom_emoji", custom_emoji_id: "5", alternative_text: "🙂" } }
    ]
  }
})

// A guest message (Bot API 10) in a chat whose id is also the bot's own private chat with Alice.
const guest = update({
  message_id: 1,
  date: at(40),
  chat: privateChat,
  from: alice,
  guest_query_id: "gq-1",
  photo: photo("guest-photo")
}, "guest_message")

const scope = (u: unknown): MessageScope => {
  const s = mapUpdate(u, options).scope
  if (s === undefined) throw new Error("no scope")
  return s
}
const imageHint = { normalized_reference_hints: { target_kind_hint: "image" } } as const

describe("Bot API 10.1 shapes: mapping", () => {
  it("a private-chat topic is a topic scope; the answer goes to its thread", () => {
    const s = scope(pAsk1)
    assert.deepStrictEqual([s.chat_id, s.topic_id, s.destination], ["11", "100", { chat_id: "11", message_thread_id: 100 }])
  })

  it("a direct-messages topic is its own chat and topic; the answer goes to direct_messages_topic_id", () => {
    const s = scope(bAsk)
    assert.deepStrictEqual(
      [s.chat_id, s.topic_id, s.destination],
      [directMessagesChatId("-1005000", "7002"), "7002", { chat_id: "-1005000", direct_messages_topic_id: 7002 }]
    )
    assert.isTrue(mapUpdate(bAsk, options).addressed)
    assert.strictEqual(mapUpdate(aPhoto, options).history[0]!.chat_id, "-1005000:dm:7001")
  })

  it("a replied message without a topic of its own is in its reply's direct-messages topic", () => {
    const replied = { message_id: 9, date: at(9), chat: dmChat, from: alice, text: "earlier" }
    const mapped = mapUpdate(dm(13, alice, 7001, { text: "this", reply_to_message: replied }), options)
    assert.deepStrictEqual(mapped.history.map((h) => [h.chat_id, h.message_id, h.seen_via ?? null]), [
      ["-1005000:dm:7001", "9", "reply"],
      ["-1005000:dm:7001", "13", null]
    ])
  })

  it("a checklist records its title and tasks as text", () => {
    const h = mapUpdate(checklist, options).history[0]!
    assert.strictEqual(h.text, "Trip\n[x] Book tickets\n[ ] Pack")
  })

  it("a reply to a checklist task replies to the checklist, quoting that task", () => {
    const mapped = mapUpdate(taskReply, options)
    assert.strictEqual(mapped.scope?.reply_to_message_id, "20")
    const event = mapped.events.at(-1)!
    assert.strictEqual(event.type, "message_observed")
    assert.deepStrictEqual(event.type === "message_observed" ? event.quote : undefined, { text: "Pack", position: 26 })
    assert.strictEqual(mapped.history.at(-1)!.quote?.text, "Pack")
  })

  it("checklist_tasks_done and checklist_tasks_added are text replies to the checklist", () => {
    const done = mapUpdate(tasksDone, options)
    assert.deepStrictEqual([done.history.at(-1)!.text, done.scope?.reply_to_message_id], ["[x] Pack\n[ ] Book tickets", "20"])
    const added = mapUpdate(tasksAdded, options)
    assert.deepStrictEqual([added.history.at(-1)!.text, added.scope?.reply_to_message_id], ["+ Buy snacks", "20"])
  })

  it("a rich message: blocks flattened in order, url spans as links, photos as media", () => {
    const mapped = mapUpdate(rich, options)
    const h = mapped.history[0]!
    assert.strictEqual(h.text, "Release\nRead the notes.\n1. fast\n2. small\na | b\nthe chart\n🙂")
    const event = mapped.events[0]!
    assert.strictEqual(event.type, "message_observed")
    if (event.type !== "message_observed") return
    assert.deepStrictEqual(event.links, [{ url: "https://example.com/notes", title: "the notes", span: { offset: 13, length: 9 } }])
    assert.deepStrictEqual(event.media.map((m) => [m.kind, m.file_id]), [["media.image", "rich-photo"]])
  })

  it("a guest message is in a scope of its own, never the bot's chat of the same id; answered by guest_query_id", () => {
    const mapped = mapUpdate(guest, options)
    assert.strictEqual(mapped.update_type, "guest_message")
    assert.deepStrictEqual([mapped.scope?.chat_id, mapped.scope?.destination], [guestChatId("11"), { chat_id: "11", guest_query_id: "gq-1" }])
    assert.isTrue(mapped.addressed)
    assert.notStrictEqual(mapped.scope?.chat_id, scope(pAsk1).chat_id)
  })

  it("managed_bot is skipped with its named reason", () => {
    assert.strictEqual(
      mapUpdate({ update_id: 1, managed_bot: { user: alice, bot: { id: 5, is_bot: true, first_name: "B" } } }).skipped,
      "managed_bot: a managed bot's creation, token or owner change is not conversation"
    )
  })
})

const all = [pPhoto1, pPhoto2, pAsk1, aPhoto, aAsk, bAsk, checklist, taskReply, tasksDone, tasksAdded, rich, guest]
const recorded = Layer.effectDiscard(Effect.gen(function*() {
  yield* TestClock.setTime(now)
  for (const u of all) yield* TelegramRecorder.record(u, { ...options, mode: "talkative" })
}))

for (const [store, services] of stores("tg2026")) {
  describe(`Bot API 10.1 conversations recorded, ${store}`, () => {
    layer(Layer.provideMerge(recorded, services), { timeout: "120 seconds" })((it) => {
      it.effect("a private-chat topic resolves to its own photo, not the other topic's", () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(now)
          const result = yield* DeixisTelegraf.resolve(scope(pAsk1), imageHint)
          assert.strictEqual(result.status, "resolved")
          assert.strictEqual(result.best_match?.object_id, "11/1/media.image")
        }))

      it.effect("a direct-messages topic finds its user's own photo", () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(now)
          const result = yield* DeixisTelegraf.resolve(scope(aAsk), imageHint)
          assert.strictEqual(result.status, "resolved")
          assert.strictEqual(result.best_match?.object_id, "-1005000:dm:7001/10/media.image")
        }))

      it.effect("user A's photo never answers user B in another direct-messages topic", () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(now)
          const b = scope(bAsk)
          const result = yield* DeixisTelegraf.resolve(b, imageHint)
          const named = [result.best_match?.object_id, ...result.candidates.map((c) => c.object_id)].filter((x) => x !== undefined)
          assert.strictEqual(result.status, "not_found")
          assert.isFalse(named.some((id) => id!.includes("7001")), named.join(", "))
          const listed = yield* DeixisTelegraf.listActive(b)
          assert.isFalse(listed.objects.some((o) => o.object_id.includes("7001")))
          const window = yield* Effect.flatMap(HistoryStore.HistoryStore, (h) => h.recent({ chat_id: b.chat_id, topic_id: b.topic_id }, 50))
          assert.deepStrictEqual(window.map((e) => e.item.message_id), ["12"])
        }))

      it.effect("conversation state is per direct-messages topic", () =>
        Effect.gen(function*() {
          const state = yield* ConversationState.ConversationState
          const a = scope(aAsk)
          const b = scope(bAsk)
          yield* state.update({ scope: { chat_id: a.chat_id, topic_id: a.topic_id }, patch: { goal: "passport" }, updated_by: "11" })
          const other = yield* state.get({ chat_id: b.chat_id, topic_id: b.topic_id })
          assert.strictEqual(other.revision, 0)
          const own = yield* state.get({ chat_id: a.chat_id, topic_id: a.topic_id })
          assert.deepStrictEqual(own.state, { goal: "passport" })
        }))

      it.effect("checklists and their changes are in the history as text, the task reply pointing at the checklist", () =>
        Effect.gen(function*() {
          const window = yield* Effect.flatMap(HistoryStore.HistoryStore, (h) => h.recent({ chat_id: "-1006000", topic_id: null }, 50))
          const byId = new Map(window.map((e) => [e.item.message_id, e.item]))
          assert.strictEqual(byId.get("20")?.text, "Trip\n[x] Book tickets\n[ ] Pack")
          assert.strictEqual(byId.get("21")?.reply_to_message_id, "20")
          assert.strictEqual(byId.get("22")?.text, "[x] Pack\n[ ] Book tickets")
          assert.strictEqual(byId.get("23")?.text, "+ Buy snacks")
        }))

      it.effect("a reply to a checklist task resolves to the checklist's message", () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(now)
          const result = yield* DeixisTelegraf.resolve(scope(taskReply))
          assert.strictEqual(result.status, "resolved")
          assert.strictEqual(result.best_match?.source_message_id, "20")
        }))

      it.effect("a rich message's link and photo are objects of the chat", () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(now)
          const link = yield* DeixisTelegraf.resolve({ ...scope(rich), message_id: "31", reply_to_message_id: "30" }, {
            normalized_reference_hints: { target_kind_hint: "link" }
          })
          assert.strictEqual(link.best_match?.object_id, "-1006000/30/link")
          const image = yield* DeixisTelegraf.resolve({ ...scope(rich), message_id: "31", reply_to_message_id: "30" }, imageHint)
          assert.strictEqual(image.best_match?.object_id, "-1006000/30/media.image")
        }))

      it.effect("a guest message is recorded in the guest scope only", () =>
        Effect.gen(function*() {
          const history = yield* HistoryStore.HistoryStore
          const inGuest = yield* history.recent({ chat_id: guestChatId("11"), topic_id: null }, 10)
          assert.deepStrictEqual(inGuest.map((e) => e.item.message_id), ["1"])
          // The bot's own chat 11 has a message 1 too (the topic's photo): the guest's never replaces it.
          const own = yield* Effect.flatMap(ContextStore.ContextStore, (s) => s.object("11", "11/1/media.image"))
          assert.strictEqual(Option.getOrUndefined(own)?.ref, "p-100")
          const guestPhoto = yield* Effect.flatMap(ContextStore.ContextStore, (s) => s.object(guestChatId("11"), `${guestChatId("11")}/1/media.image`))
          assert.strictEqual(Option.getOrUndefined(guestPhoto)?.ref, "guest-photo")
        }))
    })
  })
}

describe("destinationFor", () => {
  it("gives back where each place's answer goes, from its deixis chat and topic", () => {
    for (const u of [pAsk1, bAsk, rich]) {
      const s = scope(u)
      assert.deepStrictEqual(destinationFor(s.chat_id, s.topic_id), s.destination)
    }
    assert.isUndefined(destinationFor(scope(guest).chat_id, null))
  })
})
