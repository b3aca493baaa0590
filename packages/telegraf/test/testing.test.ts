import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeBotApi from "../src/testing.js"

const call = (api: FakeBotApi.FakeBotApi, method: string, payload: Record<string, unknown> = {}, token = "1:T") =>
  Effect.promise(() =>
    fetch(`${api.apiRoot}/bot${token}/${method}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payload) })
      .then(async (r) => ({ status: r.status, body: (await r.json()) as { ok: boolean; result?: unknown; error_code?: number; description?: string; parameters?: unknown } }))
  )

describe("@deixis/telegraf/testing: the fake Bot API", () => {
  it.scoped("getUpdates delivers again until the offset confirms, and wakes a long poll on push", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ longPollMillis: 5_000 })
      api.pushUpdates({ update_id: 1 }, { update_id: 2 })
      assert.deepStrictEqual((yield* call(api, "getUpdates", { offset: 0 })).body.result, [{ update_id: 1 }, { update_id: 2 }])
      assert.deepStrictEqual((yield* call(api, "getUpdates", { offset: 2 })).body.result, [{ update_id: 2 }])
      const pending = yield* Effect.fork(call(api, "getUpdates", { offset: 3, timeout: 5 }))
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 20)))
      api.pushUpdates({ update_id: 3 })
      const woken = yield* pending.await
      assert.deepStrictEqual(woken._tag === "Success" ? woken.value.body.result : null, [{ update_id: 3 }])
    }))

  it.scoped("servedAt is when getUpdates first handed an update out, unchanged when it is handed out again", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make()
      api.pushUpdates({ update_id: 1 }, { update_id: 2 })
      assert.strictEqual(api.servedAt(1), undefined)
      const before = performance.now()
      yield* call(api, "getUpdates", { offset: 0, limit: 1 })
      const first = api.servedAt(1)
      assert.isDefined(first)
      assert.isAtLeast(first!, before)
      assert.strictEqual(api.servedAt(2), undefined)
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
      yield* call(api, "getUpdates", { offset: 0 })
      assert.strictEqual(api.servedAt(1), first)
      assert.isAbove(api.servedAt(2)!, first!)
    }))

  it.scoped("409 Conflict while a webhook is set, and for a poll replaced by a newer one", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ longPollMillis: 5_000 })
      assert.strictEqual((yield* call(api, "setWebhook", { url: "http://insecure" })).status, 400)
      yield* call(api, "setWebhook", { url: "https://bot.example.com/hook", secret_token: "s" })
      const refused = yield* call(api, "getUpdates")
      assert.deepStrictEqual([refused.status, refused.body.error_code], [409, 409])
      assert.match(refused.body.description!, /webhook is active/)
      yield* call(api, "deleteWebhook")
      const arrived = api.polls().total
      const older = yield* Effect.fork(call(api, "getUpdates", { timeout: 5 }))
      for (let i = 0; i < 4000 && api.polls().total === arrived; i++) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
      api.pushUpdates({ update_id: 1 })
      const newer = yield* call(api, "getUpdates", { timeout: 5 })
      const first = yield* older.await
      assert.strictEqual(first._tag === "Success" ? first.value.status : 0, 200)
      assert.strictEqual(newer.status, 200)
      const before = api.polls().total
      const a = yield* Effect.fork(call(api, "getUpdates", { offset: 2, timeout: 5 }))
      // The newer poll must arrive after the older one is pending: wait for it, not for a fixed time.
      for (let i = 0; i < 4000 && api.polls().total === before; i++) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
      assert.strictEqual(api.polls().total, before + 1)
      const b = yield* Effect.fork(call(api, "getUpdates", { offset: 2, timeout: 5 }))
      const replaced = yield* a.await
      assert.strictEqual(replaced._tag === "Success" ? replaced.value.status : 0, 409)
      api.pushUpdates({ update_id: 2 })
      const winner = yield* b.await
      assert.strictEqual(winner._tag === "Success" ? winner.value.status : 0, 200)
      assert.strictEqual(api.polls().conflicts, 2)
    }))

  it.scoped("failNext hits only matching calls; a hung call is not delivered until released", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make()
      api.failNext("sendMessage", { error_code: 429, description: "Too Many Requests: retry after 9", parameters: { retry_after: 9 } }, 1, (c) =>
        c.payload["chat_id"] === -1)
      const other = yield* call(api, "sendMessage", { chat_id: -2, text: "b" })
      const limited = yield* call(api, "sendMessage", { chat_id: -1, text: "a" })
      assert.strictEqual(other.status, 200)
      assert.deepStrictEqual([limited.status, limited.body.parameters], [429, { retry_after: 9 }])
      const hang = api.hang("sendMessage", (c) => c.token === "1:H")
      const held = yield* Effect.fork(call(api, "sendMessage", { chat_id: -3, text: "held" }, "1:H"))
      yield* api.waitFor("sendMessage", (p) => p["text"] === "held")
      assert.strictEqual(hang.held(), 1)
      assert.isFalse(api.delivered().some((c) => c.payload["text"] === "held"))
      hang.release()
      assert.strictEqual(((yield* held.await) as { _tag: string })._tag, "Success")
      assert.isTrue(api.delivered().some((c) => c.payload["text"] === "held"))
      assert.strictEqual((yield* call(api, "sendMessage", { chat_id: -3, text: "" })).status, 400)
    }))

  it.scoped("polls close once with stopPoll; members, commands and getMe answer as set", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make({ readsAllGroupMessages: true })
      const sent = (yield* call(api, "sendPoll", { chat_id: -1, question: "Q?", options: [{ text: "a" }, { text: "b" }] })).body.result as {
        message_id: number
      }
      const stopped = yield* call(api, "stopPoll", { chat_id: -1, message_id: sent.message_id })
      assert.strictEqual((stopped.body.result as { is_closed: boolean }).is_closed, true)
      assert.strictEqual((yield* call(api, "stopPoll", { chat_id: -1, message_id: sent.message_id })).status, 400)
      api.setMember(-1, 5, "administrator")
      assert.strictEqual(((yield* call(api, "getChatMember", { chat_id: -1, user_id: 5 })).body.result as { status: string }).status, "administrator")
      assert.strictEqual(((yield* call(api, "getChatMember", { chat_id: -1, user_id: 6 })).body.result as { status: string }).status, "member")
      yield* call(api, "setMyCommands", { commands: [{ command: "help", description: "Help" }], scope: { type: "all_group_chats" } })
      assert.deepStrictEqual(api.commands().get("all_group_chats"), [{ command: "help", description: "Help" }])
      assert.strictEqual(((yield* call(api, "getMe")).body.result as { can_read_all_group_messages: boolean }).can_read_all_group_messages, true)
    }))

  it.scoped("Bot API 9.2–10.1: direct-messages and private-chat topics, drafts to private chats only, a guest query answered once", () =>
    Effect.gen(function*() {
      const api = yield* FakeBotApi.make()
      const dm = (yield* call(api, "sendMessage", { chat_id: -1005000, direct_messages_topic_id: 7002, text: "hi" })).body.result as Record<string, unknown>
      assert.deepStrictEqual([dm["direct_messages_topic"], (dm["chat"] as Record<string, unknown>)["is_direct_messages"]], [{ topic_id: 7002 }, true])
      const topic = (yield* call(api, "sendMessage", { chat_id: 11, message_thread_id: 300, text: "hi" })).body.result as Record<string, unknown>
      assert.deepStrictEqual([topic["message_thread_id"], topic["is_topic_message"], (topic["chat"] as Record<string, unknown>)["type"]], [300, true, "private"])
      assert.deepStrictEqual((yield* call(api, "sendMessageDraft", { chat_id: 11, draft_id: 5, text: "par" })).body, { ok: true, result: true })
      assert.strictEqual((yield* call(api, "sendMessageDraft", { chat_id: -1005000, draft_id: 5, text: "par" })).status, 400)
      assert.strictEqual((yield* call(api, "sendMessageDraft", { chat_id: 11, draft_id: 0, text: "par" })).status, 400)
      assert.strictEqual((yield* call(api, "sendRichMessageDraft", { chat_id: 11, draft_id: 5, rich_message: { blocks: [] } })).status, 200)
      const rich = (yield* call(api, "sendRichMessage", { chat_id: 11, rich_message: { blocks: [{ type: "paragraph", text: "x" }] } })).body.result
      assert.deepStrictEqual((rich as Record<string, unknown>)["rich_message"], { blocks: [{ type: "paragraph", text: "x" }] })
      const result = { type: "article", id: "a", title: "t", input_message_content: { message_text: "t" } }
      assert.deepStrictEqual((yield* call(api, "answerGuestQuery", { guest_query_id: "g1", result })).body, { ok: true, result: { inline_message_id: "guest-1" } })
      assert.strictEqual((yield* call(api, "answerGuestQuery", { guest_query_id: "g1", result })).status, 400)
    }))
})
