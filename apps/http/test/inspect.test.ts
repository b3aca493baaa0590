import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { start } from "./harness.js"

const token = "inspect-s3cret"
const call = <A>(f: () => Promise<A>) => Effect.promise(f)
const update = (id: number, text: string) => ({
  update_id: id,
  message: {
    message_id: id,
    date: 1_700_000_000 + id,
    chat: { id: -100777, type: "supergroup", title: "Ops", is_forum: true },
    from: { id: 5, is_bot: false, first_name: "Ana" },
    message_thread_id: 3,
    is_topic_message: true,
    text
  }
})

// Reads server-sent events from a fetch body until `done` says so (or the stream ends).
const readEvents = async (response: Response, done: (events: ReadonlyArray<string>) => boolean) => {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let text = ""
  const events: Array<string> = []
  while (!done(events)) {
    const { done: ended, value } = await reader.read()
    if (ended) break
    text += value
    let cut: number
    while ((cut = text.indexOf("\n\n")) >= 0) {
      events.push(text.slice(0, cut))
      text = text.slice(cut + 2)
    }
  }
  await reader.cancel()
  return events
}

describe("the inspector's data routes", () => {
  it.scoped("GET /v1/inspect/chats lists the store's chats (title, newest message, counts), newest first, by pages and by search; 401 without the token", () =>
    Effect.gen(function*() {
      const api = yield* start({ token })
      yield* call(() => api.json("/v1/telegram/updates", [update(1, "a"), update(2, "b")]))
      yield* call(() =>
        api.json("/v1/events", [
          { type: "message_observed", chat_id: "other", message_id: 9, chat_title: "Side room", sent_at: "2023-11-14T22:13:00Z" }
        ])
      )
      type Page = { chats: Array<Record<string, unknown>>; next: string | null }
      const page = (query: string) => call(() => api.fetch(`/v1/inspect/chats${query}`).then((r) => r.json() as Promise<Page>))
      const all = yield* page("")
      assert.deepStrictEqual(all, {
        chats: [
          { chat_id: "-100777", title: "Ops", is_forum: true, last_message_at: "2023-11-14T22:13:22.000Z", messages: 2, objects: 0 },
          { chat_id: "other", title: "Side room", is_forum: false, last_message_at: "2023-11-14T22:13:00.000Z", messages: 1, objects: 0 }
        ],
        next: null
      })
      const first = yield* page("?limit=1")
      assert.deepStrictEqual([first.chats.map((c) => c["chat_id"]), first.next], [["-100777"], "1700000002000:-100777"])
      const second = yield* page(`?limit=1&after=${encodeURIComponent(first.next!)}`)
      assert.deepStrictEqual([second.chats.map((c) => c["chat_id"]), second.next], [["other"], null])
      assert.deepStrictEqual((yield* page("?search=SIDE")).chats.map((c) => c["chat_id"]), ["other"])
      assert.deepStrictEqual((yield* page("?search=777")).chats.map((c) => c["chat_id"]), ["-100777"])
      // A cursor that no page gave, or a limit out of range: refused, naming the parameter.
      const badCursor = yield* call(() => api.fetch("/v1/inspect/chats?after=yesterday"))
      assert.strictEqual(badCursor.status, 400)
      assert.include(yield* call(() => badCursor.text()), "after")
      assert.strictEqual((yield* call(() => api.fetch("/v1/inspect/chats?limit=0"))).status, 400)
      const anonymous = yield* call(() => fetch(`${api.url}/v1/inspect/chats`))
      assert.strictEqual(anonymous.status, 401)
    }))

  it.scoped("GET /v1/inspect/thresholds gives the resolver's thresholds and weights in force", () =>
    Effect.gen(function*() {
      const api = yield* start({ token })
      const body = yield* call(() => api.fetch("/v1/inspect/thresholds").then((r) => r.json() as Promise<Record<string, unknown>>))
      assert.strictEqual(body["min_score"], 60)
      assert.isNumber(body["ambiguity_margin"])
      assert.isAbove(Object.keys(body["weights"] as object).length, 3)
    }))

  it.scopedLive("GET /v1/inspect/live streams each recorded message as a server-sent event", () =>
    Effect.gen(function*() {
      const api = yield* start({ token })
      const response = yield* call(() => api.fetch("/v1/inspect/live?seconds=20", { headers: { accept: "text/event-stream" } }))
      assert.strictEqual(response.status, 200)
      assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/)
      const reading = readEvents(response, (events) => events.some((e) => e.startsWith("event: message")))
      // Recorded after the reader connected (the first event is the connection's comment).
      yield* Effect.sleep("200 millis")
      yield* call(() => api.json("/v1/telegram/updates", [update(3, "live one")]))
      const events = yield* call(() => reading)
      assert.strictEqual(events[0], ": connected")
      const message = events.find((e) => e.startsWith("event: message"))!
      const data = JSON.parse(message.split("\ndata: ")[1]!) as Record<string, unknown>
      assert.deepInclude(data, { chat_id: "-100777", topic_id: "3", message_id: "3", source: "telegram" })
    }))

  it.scopedLive("the live feed ends after `seconds`, answers 406 to a client that did not ask for events, and 401 without the token", () =>
    Effect.gen(function*() {
      const api = yield* start({ token })
      const ended = yield* call(() =>
        api.fetch("/v1/inspect/live?seconds=0", { headers: { accept: "text/event-stream" } }).then((r) => r.text())
      )
      assert.strictEqual(ended, ": connected\n\n")
      const plain = yield* call(() => api.fetch("/v1/inspect/live"))
      assert.strictEqual(plain.status, 406)
      const anonymous = yield* call(() => fetch(`${api.url}/v1/inspect/live`, { headers: { accept: "text/event-stream" } }))
      assert.strictEqual(anonymous.status, 401)
    }))
})
