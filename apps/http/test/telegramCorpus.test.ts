/**
 * One recording path: the corpus of real updates posted to POST /v1/telegram/updates over a
 * real socket leaves exactly the state the Telegraf middleware (real Telegraf) leaves, and
 * the bot's answers and a message's loaded context are read and written over HTTP as the bot
 * does them.
 */
import { HttpServer } from "@effect/platform"
import { DeixisTelegraf } from "@deixis/telegraf"
import { chats, corpus, options, recordedState } from "@deixis/telegraf/TelegramFixtures"
import { assert, describe, it } from "@effect/vitest"
import type * as DeixisServices from "@deixis/chathistory/DeixisServices"
import { SqlStore } from "@deixis/store-sql"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import { Telegraf } from "telegraf"
import type { Update } from "telegraf/types"
import * as Server from "../src/Server.js"
import * as Store from "../src/Store.js"
import { pgUrl as testPgUrl } from "deixis-test-support/pg"

const call = <A>(f: () => Promise<A>) => Effect.promise(f)

const pgUrl = testPgUrl()

/** Every store in a fresh PostgreSQL schema, dropped afterwards. */
const postgres = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => `deixis_http_corpus_${Date.now().toString(36)}_${process.pid}`),
    (schema) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(
        Effect.provide(SqlStore.layerPgClient({ url: pgUrl, max_connections: 1 })),
        Effect.orDie
      )
  ),
  (schema) => SqlStore.layerPg({ url: pgUrl, schema, max_connections: 4, sweep_interval: 0 })
))

/** The service on a loopback port over stores (memory by default) this test can read too. */
const serveOn = (layer: Layer.Layer<DeixisServices.Stores, unknown>) => Effect.gen(function*() {
  const stores = yield* Layer.build(layer)
  const built = yield* Layer.build(
    Server.layer(
      {
        ...Server.defaults,
        port: 0,
        host: "127.0.0.1",
        apiToken: Option.none(),
        maxBodyBytes: 8 * 1024 * 1024,
        telegram: { botId: options.botId, botUsername: options.botUsername }
      },
      Layer.succeedContext(stores)
    ).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))
  )
  const server = yield* Effect.provide(HttpServer.HttpServer, built)
  const address = server.address
  const url = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "http://unix"
  const send = (method: string, path: string, body: unknown) =>
    call(() =>
      fetch(url + path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
        .then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }))
    )
  const post = (path: string, body: unknown) => send("POST", path, body)
  const get = (path: string) =>
    call(() => fetch(url + path).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> })))
  const read = recordedState().pipe(Effect.provide(stores))
  return { post, send, get, read }
})
const serve = serveOn(Store.layerMemory)

/** The same updates through real Telegraf's middleware, over memory stores, in the service's default (smart) mode. */
const viaTelegraf = Effect.gen(function*() {
  const runtime = yield* Effect.runtime<DeixisTelegraf.Services>()
  const bot = new Telegraf<DeixisTelegraf.DeixisContext>("123:TEST")
  // The bot's identity, as getMe would answer: no network in this test.
  bot.botInfo = {
    ...{ id: Number(options.botId), is_bot: true, first_name: "Deixis", username: options.botUsername },
    can_join_groups: true,
    can_read_all_group_messages: false,
    supports_inline_queries: false
  }
  bot.use(DeixisTelegraf.middleware(runtime))
  for (const f of corpus) yield* call(() => bot.handleUpdate(f.update as unknown as Update))
  return yield* recordedState()
}).pipe(Effect.provide(DeixisTelegraf.layerMemory()))

describe("POST /v1/telegram/updates: the corpus", () => {
  it.scoped("posted as one batch over a socket, it records exactly what the Telegraf middleware records; posted again, nothing changes", () =>
    Effect.gen(function*() {
      const api = yield* serve
      const first = yield* api.post("/v1/telegram/updates", corpus.map((f) => f.update))
      assert.strictEqual(first.status, 200)
      assert.strictEqual(first.body["updates"], corpus.length)
      const skipped = (first.body["skipped"] as ReadonlyArray<{ index: number }>).map((s) => s.index)
      assert.deepStrictEqual(skipped, corpus.flatMap((f, i) => (f.expected.skipped === undefined ? [] : [i])))
      const migrations = first.body["migrations"] as ReadonlyArray<{ from_chat_id: string; to_chat_id: string; migrated: boolean }>
      assert.deepStrictEqual(migrations.map((m) => m.migrated), [true, false])
      const viaHttp = yield* api.read
      assert.deepStrictEqual(viaHttp, yield* viaTelegraf)
      const again = yield* api.post("/v1/telegram/updates", corpus.map((f) => f.update))
      assert.strictEqual(again.status, 200)
      assert.deepStrictEqual(yield* api.read, viaHttp)
    }))

  it.scoped("posted one update at a time, it records the same as one batch", () =>
    Effect.gen(function*() {
      const one = yield* serve
      for (const f of corpus) assert.strictEqual((yield* one.post("/v1/telegram/updates", f.update)).status, 200)
      const batch = yield* serve
      yield* batch.post("/v1/telegram/updates", corpus.map((f) => f.update))
      assert.deepStrictEqual(yield* one.read, yield* batch.read)
    }))

  it.scoped("over PostgreSQL, posted one update at a time and then all at once again, it records what the memory stores record", () =>
    Effect.gen(function*() {
      const pg = yield* serveOn(postgres)
      for (const f of corpus) assert.strictEqual((yield* pg.post("/v1/telegram/updates", f.update)).status, 200)
      const memory = yield* serve
      yield* memory.post("/v1/telegram/updates", corpus.map((f) => f.update))
      const recorded = yield* pg.read
      assert.deepStrictEqual(recorded, yield* memory.read)
      // Every update again, each its own request, all at once: each a repeat, nothing changes.
      const again = yield* Effect.forEach(corpus, (f) => pg.post("/v1/telegram/updates", f.update), { concurrency: "unbounded" })
      assert.deepStrictEqual(again.map((r) => r.status), corpus.map(() => 200))
      assert.deepStrictEqual(yield* pg.read, recorded)
    }))

  it.scoped("privacy mode over HTTP: /what as a reply to a link the bot never saw resolves to that link", () =>
    Effect.gen(function*() {
      const api = yield* serve
      const update = corpus.find((f) => f.name.startsWith("group (privacy mode)"))!.update
      yield* api.post("/v1/telegram/updates", update)
      const resolved = yield* api.post("/v1/tools/resolve_reference_target", {
        chat_id: chats.group.id, current_message_id: 42, reply_to_message_id: 40, sender_user_id: 1001
      })
      assert.strictEqual(resolved.body["status"], "resolved")
      assert.strictEqual((resolved.body["best_match"] as { ref: string }).ref, "https://example.com/books/dune")
    }))

  it.scoped("in a forum, tools and state without a topic are the General topic", () =>
    Effect.gen(function*() {
      const api = yield* serve
      yield* api.post("/v1/telegram/updates", corpus.map((f) => f.update))
      yield* api.post("/v1/events", [
        { type: "object_activated", event_id: "t500", chat_id: chats.forum.id, reason: "summarized", source_message_id: 501, kind: "link" }
      ])
      // Topic 500 has an active link; General has none of its own: the request without a topic is General's.
      const listed = yield* api.post("/v1/tools/list_active_context_objects", { chat_id: chats.forum.id, current_message_id: 509 })
      assert.strictEqual(listed.body["scope_used"], "chat")
      const objects = listed.body["objects"] as ReadonlyArray<{ object_id: string; why_active: ReadonlyArray<string> }>
      assert.deepStrictEqual(objects.map((o) => [o.object_id, o.why_active.includes("chat_scope_fallback")]), [[`${chats.forum.id}/501/link`, true]])
      // State written without a topic is General's: the bot (topic "1") and HTTP callers share it.
      const patched = yield* api.send("PATCH", `/v1/chats/${chats.forum.id}/state`, { plan: "friday" })
      assert.strictEqual(patched.status, 200)
      assert.strictEqual(patched.body["topic_id"], "1")
      const general = yield* api.get(`/v1/chats/${chats.forum.id}/state?topic_id=1`)
      assert.deepStrictEqual(general.body["state"], { plan: "friday" })
      // A plain supergroup has no General topic: its topicless scope stays topicless.
      const plain = yield* api.send("PATCH", `/v1/chats/${chats.supergroup.id}/state`, { plan: "monday" })
      assert.strictEqual(plain.body["topic_id"], null)
    }))
})
