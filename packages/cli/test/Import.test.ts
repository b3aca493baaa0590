import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { ContextStore } from "@deixis/core/ContextStore"
import type * as StoreConfig from "@deixis/store-sql/StoreConfig"
import * as TelegramRecorder from "@deixis/telegraf/TelegramRecorder"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Cli from "../src/Cli.js"
import * as Import from "../src/Import.js"
import * as TelegramExport from "../src/TelegramExport.js"

const fixture = (name: string) => path.join(__dirname, "fixtures", name)
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "deixis-cli-"))
const sqlite = (): StoreConfig.StoreChoice => ({ _tag: "sqlite", filename: path.join(tmp(), "deixis.sqlite") })

// Everything a chat holds: its history items by topic (oldest first) and its core snapshot.
const chatState = (chatId: string) =>
  Effect.gen(function*() {
    const snapshot = yield* Effect.flatMap(ContextStore, (s) => s.snapshot(chatId))
    const history = yield* HistoryStore
    const topics = [...new Set(snapshot.messages.map((m) => m.topic_id))].sort()
    const items = []
    for (const topic of topics) {
      items.push(...(yield* history.recent({ chat_id: chatId, topic_id: topic }, 1000)).map((e) => e.item))
    }
    return { snapshot, items }
  })

const byId = <A extends { readonly message_id: string | null }>(items: ReadonlyArray<A>, id: string): A => {
  const found = items.find((i) => i.message_id === id)
  assert.isDefined(found, `message ${id}`)
  return found!
}

const run = <A, E>(choice: StoreConfig.StoreChoice, effect: Effect.Effect<A, E, TelegramRecorder.Services>) =>
  effect.pipe(Effect.provide(Cli.services(choice)), Effect.scoped)

const write = (content: string) => {
  const file = path.join(tmp(), "result.json")
  fs.writeFileSync(file, content)
  return file
}

describe("deixis import: Telegram Desktop fixtures", () => {
  it.effect("private chat: text, a link entity, an edit, a reply, a forward, a document and a voice message, the pin skipped", () =>
    Effect.gen(function*() {
      const choice = sqlite()
      const { state, summary } = yield* run(choice, Effect.all({ summary: Import.importFile(fixture("private.json")), state: chatState("5550001") }))
      assert.deepStrictEqual([summary.chat_id, summary.messages, summary.service, summary.chat_type], ["5550001", 6, 1, "personal_chat"])
      assert.deepStrictEqual(state.items.map((i) => i.message_id), ["101", "102", "103", "104", "105"])
      const reply = byId(state.items, "102")
      assert.strictEqual(reply.reply_to_message_id, "101")
      assert.strictEqual(reply.edited_at, 1740819900_000)
      assert.deepStrictEqual([reply.sender.user_id, reply.sender.nickname], ["5550002", "Bob Jones"])
      const doc = byId(state.items, "103")
      assert.strictEqual(doc.text, "and the budget")
      assert.deepStrictEqual(doc.attachments, [{ kind: "document", name: "budget.pdf" }])
      assert.strictEqual(byId(state.items, "104").forward?.origin, "hidden_user")
      assert.deepStrictEqual(byId(state.items, "105").attachments, [{ kind: "voice" }])
      // Core saw every message and made objects of the link and the PDF.
      assert.deepStrictEqual(state.snapshot.messages.map((m) => m.message_id), ["101", "102", "103", "104", "105"])
      const kinds = state.snapshot.objects.map((o) => `${o.kind}@${o.source_message_id}`).sort()
      assert.includeMembers(kinds, ["link@101", "media.pdf@103"])
    }))

  it.effect("group (supergroup): albums, a reply with mention and text link, a channel forward, a poll, a sticker, service messages", () =>
    Effect.gen(function*() {
      const choice = sqlite()
      const chat = String(-(1_000_000_000_000 + 1700000001))
      const { state, summary } = yield* run(choice, Effect.all({ summary: Import.importFile(fixture("group.json")), state: chatState(chat) }))
      assert.deepStrictEqual([summary.chat_id, summary.messages, summary.service], [chat, 10, 3])
      assert.deepStrictEqual(state.items.map((i) => i.message_id), ["3", "4", "5", "6", "7", "8", "9"])
      // The album: three photos of one sender in one second.
      const albums = ["3", "4", "5"].map((id) => byId(state.items, id).album_id)
      assert.isDefined(albums[0])
      assert.deepStrictEqual(albums, [albums[0], albums[0], albums[0]])
      assert.strictEqual(byId(state.items, "6").album_id, undefined)
      const reply = byId(state.items, "6")
      assert.strictEqual(reply.text, "Lovely! [@dana_h](tg:@dana_h) did you see this? Map: the route")
      assert.strictEqual(reply.reply_to_message_id, "3")
      assert.strictEqual(reply.edited_at, 1743494760_000)
      assert.strictEqual(byId(state.items, "7").forward?.origin, "channel")
      assert.deepStrictEqual(byId(state.items, "8").attachments, [{ kind: "poll", name: "Saturday or Sunday?" }])
      assert.deepStrictEqual(byId(state.items, "9").attachments, [{ kind: "sticker", name: "👍" }])
      const kinds = state.snapshot.objects.map((o) => `${o.kind}@${o.source_message_id}`)
      assert.include(kinds, "link@6")
      assert.include(kinds, "media.image@3")
      assert.isTrue(state.snapshot.objects.some((o) => o.kind === "poll"))
    }))

  it.effect("forum supergroup: topics from topic_created, replies inside a topic, General for the rest", () =>
    Effect.gen(function*() {
      const choice = sqlite()
      const chat = String(-(1_000_000_000_000 + 1800000002))
      const { state, summary } = yield* run(choice, Effect.all({ summary: Import.importFile(fixture("forum.json")), state: chatState(chat) }))
      assert.strictEqual(summary.topics, 2)
      const topicOf = (id: string) => byId(state.snapshot.messages, id).topic_id
      assert.deepStrictEqual(["3", "6"].map(topicOf), ["2", "2"])
      assert.deepStrictEqual(["5", "7"].map(topicOf), ["4", "4"])
      assert.strictEqual(topicOf("8"), "1")
      // Before the first topic was created the group was not a forum yet.
      assert.strictEqual(topicOf("1"), null)
      // A message in a topic does not "reply" to the topic's creation; a reply inside one does.
      assert.strictEqual(byId(state.items, "3").reply_to_message_id, null)
      assert.strictEqual(byId(state.items, "6").reply_to_message_id, "3")
      assert.strictEqual(byId(state.items, "6").topic_id, "2")
      assert.deepStrictEqual(byId(state.items, "5").attachments, [{ kind: "document", name: "crash.log" }])
    }))

  it.effect("forum supergroup with --forum: every message from the first is in a topic (General before any topic)", () =>
    Effect.gen(function*() {
      const chat = String(-(1_000_000_000_000 + 1800000002))
      const state = yield* run(sqlite(), Effect.zipRight(Import.importFile(fixture("forum.json"), { forum: true }), chatState(chat)))
      assert.strictEqual(byId(state.snapshot.messages, "1").topic_id, "1")
    }))
})

describe("deixis import: idempotent", () => {
  it.effect("re-import changes nothing", () =>
    Effect.gen(function*() {
      const choice = sqlite()
      const chat = String(-(1_000_000_000_000 + 1700000001))
      const first = yield* run(choice, Effect.zipRight(Import.importFile(fixture("group.json")), chatState(chat)))
      const again = yield* run(choice, Import.importFile(fixture("group.json")))
      const second = yield* run(choice, chatState(chat))
      // Core applies nothing again; the history store rewrites equal copies in place.
      assert.strictEqual(again.applied, 0)
      assert.strictEqual(again.duplicates, first.snapshot.messages.length)
      assert.deepStrictEqual(second, first)
    }))

  it.effect("import then live updates of the same messages → no duplicates", () =>
    Effect.gen(function*() {
      const choice = sqlite()
      const chat = -(1_000_000_000_000 + 1700000001)
      const before = yield* run(choice, Effect.zipRight(Import.importFile(fixture("group.json")), chatState(String(chat))))
      // The bot joins later and sees message 6 again (edited) and 7 redelivered, as the Bot API sends them.
      const live = [
        {
          update_id: 900001,
          edited_message: {
            message_id: 6,
            date: 1743494700,
            edit_date: 1743494760,
            chat: { id: chat, type: "supergroup", title: "Hiking Club" },
            from: { id: 7003, is_bot: false, first_name: "Fay" },
            reply_to_message: { message_id: 3, date: 1743494520, chat: { id: chat, type: "supergroup" }, photo: [{ file_id: "AgAD" }] },
            text: "Lovely! @dana_h did you see this? Map: the route",
            entities: [{ type: "mention", offset: 8, length: 7 }, { type: "text_link", offset: 39, length: 9, url: "https://maps.example.org/route/42" }]
          }
        },
        {
          update_id: 900002,
          message: {
            message_id: 7,
            date: 1743494820,
            chat: { id: chat, type: "supergroup", title: "Hiking Club" },
            sender_chat: { id: -1001600000009, type: "channel", title: "Outdoor News" },
            forward_origin: { type: "channel", date: 1743494820, chat: { id: -1001600000009, type: "channel", title: "Outdoor News" }, message_id: 1 },
            text: "Storm warning for the weekend"
          }
        }
      ]
      yield* run(choice, TelegramRecorder.recordBatch(live, { mode: "talkative" }))
      const after = yield* run(choice, chatState(String(chat)))
      assert.deepStrictEqual(after.items.map((i) => i.message_id), before.items.map((i) => i.message_id))
      assert.deepStrictEqual(after.snapshot.messages.map((m) => m.message_id), before.snapshot.messages.map((m) => m.message_id))
      assert.strictEqual(after.snapshot.objects.filter((o) => o.kind === "link").length, before.snapshot.objects.filter((o) => o.kind === "link").length)
    }))
})

describe("deixis import: bad input", () => {
  const group = fs.readFileSync(fixture("group.json"), "utf8")

  it.effect("a malformed message stops naming the message number and field, and writes nothing of that batch", () =>
    Effect.gen(function*() {
      const choice = sqlite()
      const parsed = JSON.parse(group) as { messages: Array<Record<string, unknown>> }
      parsed.messages[5]!["reply_to_message_id"] = "three"
      const error = yield* run(choice, Effect.flip(Import.importFile(write(JSON.stringify(parsed)))))
      assert.strictEqual(error._tag, "ExportError")
      if (error._tag !== "ExportError") return
      assert.strictEqual(error.number, 6)
      assert.strictEqual(error.id, 6)
      assert.strictEqual(error.field, "reply_to_message_id")
      assert.match(error.message, /message 6 \(id 6\): field "reply_to_message_id"/)
      const state = yield* run(choice, chatState(String(-(1_000_000_000_000 + 1700000001))))
      assert.deepStrictEqual(state.items, [])
      assert.deepStrictEqual(state.snapshot.messages, [])
    }))

  it.effect("a message without its date names the field", () =>
    Effect.gen(function*() {
      const parsed = JSON.parse(group) as { messages: Array<Record<string, unknown>> }
      delete parsed.messages[2]!["date_unixtime"]
      delete parsed.messages[2]!["date"]
      const error = yield* run(sqlite(), Effect.flip(Import.importFile(write(JSON.stringify(parsed)))))
      assert.deepStrictEqual(error._tag === "ExportError" ? [error.number, error.field] : error._tag, [3, "date_unixtime"])
    }))

  it.effect("a truncated export stops naming the message it ends in; earlier batches stay, the broken batch is not written", () =>
    Effect.gen(function*() {
      const choice = sqlite()
      const cut = group.slice(0, group.indexOf("\"Storm warning"))
      const error = yield* run(choice, Effect.flip(Import.importFile(write(cut), { batchSize: 2 })))
      assert.strictEqual(error._tag, "ExportError")
      if (error._tag !== "ExportError") return
      assert.strictEqual(error.number, 7)
      assert.strictEqual(error.field, "(truncated)")
      assert.match(error.message, /truncated/)
      // Batches of two, an album never cut: 1–2, then 3–6 (the album 3–5 closes at 6) are written;
      // message 7, cut off, was in the batch never written.
      const state = yield* run(choice, chatState(String(-(1_000_000_000_000 + 1700000001))))
      assert.deepStrictEqual(state.items.map((i) => i.message_id), ["3", "4", "5", "6"])
    }))

  it.effect("broken JSON inside a message names the message", () =>
    Effect.gen(function*() {
      const broken = group.replace("\"Trail photos from Sunday\"", "\"Trail photos from Sunday\" oops")
      const error = yield* run(sqlite(), Effect.flip(Import.importFile(write(broken))))
      assert.deepStrictEqual(error._tag === "ExportError" ? [error.number, error.field] : error._tag, [3, "(json)"])
    }))

  it.effect("an export of another format is named as such", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [string, RegExp]> = [
        ["<!DOCTYPE html><html><body>messages</body></html>", /HTML/],
        ["{\"about\":\"x\",\"personal_information\":{},\"chats\":{\"list\":[]}}", /full Telegram Desktop account export/],
        ["{\"ok\":true,\"result\":[]}", /Bot API response/],
        ["[{\"update_id\":1}]", /JSON array/],
        ["{\"name\":\"x\",\"type\":\"slack_channel\",\"id\":1,\"messages\":[]}", /unknown chat type "slack_channel"/],
        ["", /empty/]
      ]
      for (const [content, expected] of cases) {
        const error = yield* run(sqlite(), Effect.flip(Import.importFile(write(content))))
        assert.match(error.message, expected, content)
      }
    }))

  it("the mapping of a chat's id follows the Bot API: users as is, groups negative, supergroups -100…", () => {
    assert.strictEqual(TelegramExport.botApiChatId({ name: null, type: "personal_chat", id: 42 }), 42)
    assert.strictEqual(TelegramExport.botApiChatId({ name: null, type: "private_group", id: 42 }), -42)
    assert.strictEqual(TelegramExport.botApiChatId({ name: null, type: "public_channel", id: 42 }), -1000000000042)
    assert.isTrue(Either.isLeft(TelegramExport.readHead(new Map([["chats", {}]]))))
  })
})
