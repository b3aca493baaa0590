/**
 * A database outage under load: the service (a process, as shipped from the sources) runs on a
 * PostgreSQL this test starts, stops for 10 s in the middle of a stream of writes, and starts
 * again — never the shared server.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { startEmbeddedPg } from "deixis-test-support/pg"
import * as http from "node:http"
import { exited, freePort, launch, ready } from "./process.js"

interface Write {
  readonly n: number
  readonly at: number
  status: number
  retryAfter: string | null
  applied: number | undefined
}

/** Write `n`: one message in one of eight chats, its own message id. */
const event = (n: number) => ({ type: "message_observed", chat_id: 5000 + (n % 8), message_id: n + 1, topic_id: 1 })

// Node's own client on kept-alive connections: at 200 requests a second, fetch's per-request
// cost took a third of a core from the service under test on a shared 2-core machine.
const agent = new http.Agent({ keepAlive: true })
interface Answer {
  readonly status: number
  readonly headers: { readonly get: (name: string) => string | null }
  readonly json: () => Promise<unknown>
}
const post = (port: number, path: string, body: unknown) =>
  new Promise<Answer>((resolve, reject) => {
    const text = JSON.stringify(body)
    const req = http.request({
      host: "127.0.0.1",
      port,
      path,
      method: "POST",
      agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(text) },
      // A bound on a test that must not hang: an answer this late counts as none (status 0).
      timeout: 60_000
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("error", reject)
      res.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8")
        resolve({
          status: res.statusCode ?? 0,
          headers: { get: (name) => [res.headers[name]].flat()[0] ?? null },
          json: async () => JSON.parse(raw)
        })
      })
    })
    req.on("timeout", () => req.destroy(new Error(`no answer to ${path} within 60 s`)))
    req.on("error", reject)
    req.end(text)
  })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A chat with a link object, read (and so cached) before the outage and never written during it. */
const readChat = 6000
const seed = [
  { type: "message_observed", chat_id: readChat, topic_id: 1, message_id: 10, sender_user_id: 42, links: [{ url: "https://example.com/a", title: "A" }] },
  { type: "object_activated", event_id: "s1", chat_id: readChat, reason: "summarized", source_message_id: 10, kind: "link" },
  { type: "message_observed", chat_id: readChat, topic_id: 1, message_id: 11, sender_user_id: 42 }
]
const listRequest = { chat_id: readChat, topic_id: 1, current_message_id: 11, sender_user_id: 42 }
const listed = async (port: number) => {
  const r = await post(port, "/v1/tools/list_active_context_objects", listRequest).catch(() => undefined)
  if (r === undefined) return { status: 0, objects: [] as Array<string> }
  const body = await r.json() as { objects?: ReadonlyArray<{ object_id: string }> }
  return { status: r.status, objects: (body.objects ?? []).map((o) => o.object_id) }
}

describe("PostgreSQL outage", () => {
  it.live("stopped 10 s under a stream of 200 writes a second: writes answer 503 with Retry-After (never 500), cached reads keep working, every acknowledged write is there after, outage and recovery logged once each", () =>
    Effect.promise(async () => {
      const pg = await startEmbeddedPg()
      const port = await freePort()
      const app = launch(port, "unused.db", { DEIXIS_STORE: pg.url })
      try {
        await ready(port)
        assert.strictEqual((await post(port, "/v1/events", seed)).status, 200)
        const before = await listed(port)
        assert.deepStrictEqual(before, { status: 200, objects: [`${readChat}/10/link`] })

        // 200 writes a second, each its own request, not waiting for the previous ones: paced by
        // the clock (every write due by now is sent), not by sleeps, which a loaded machine stretches.
        const writes: Array<Write> = []
        const answered: Array<Promise<void>> = []
        let running = true
        const send = (n: number) => {
          const w: Write = { n, at: Date.now(), status: 0, retryAfter: null, applied: undefined }
          writes.push(w)
          answered.push(post(port, "/v1/events", [event(n)]).then(async (r) => {
            w.status = r.status
            w.retryAfter = r.headers.get("retry-after")
            w.applied = (await r.json() as { applied?: number }).applied
          }, () => {}))
        }
        const began = Date.now()
        const writer = (async () => {
          for (let n = 0; running;) {
            const due = Math.floor(((Date.now() - began) * 200) / 1000)
            while (n < due) send(n++)
            await sleep(5)
          }
        })()
        await sleep(2_000)
        await pg.stop()
        const stoppedAt = Date.now()
        const reads: Array<{ status: number; objects: Array<string> }> = []
        while (Date.now() - stoppedAt < 10_000) {
          reads.push(await listed(port))
          await sleep(500)
        }
        await pg.start()
        const startedAt = Date.now()
        // Until 20 writes sent after the restart are acknowledged (bounded by the test's timeout).
        const recovered = () => writes.filter((w) => w.at >= startedAt && w.status === 200).length >= 20
        while (!recovered()) await sleep(100)
        running = false
        await writer
        await Promise.all(answered)

        const count = (status: number) => writes.filter((w) => w.status === status).length
        // The middle of the outage: a second after the stop, two before the restart (a loaded
        // machine delays requests, so one sent just before the restart may be handled after it).
        const during = writes.filter((w) => w.at >= stoppedAt + 1_000 && w.at < stoppedAt + 8_000)
        const firstAfter = writes.find((w) => w.at >= startedAt && w.status === 200)
        const seconds = (writes.at(-1)!.at - began) / 1000
        console.log(
          `writes ${writes.length} in ${seconds.toFixed(1)} s (${(writes.length / seconds).toFixed(0)}/s): ${count(200)}×200, ${count(503)}×503, ${count(500)}×500, ${count(0)} unanswered; ` +
            `first write acknowledged ${firstAfter!.at - startedAt} ms after the database was back; reads during: ${reads.map((r) => r.status).join(",")}`
        )
        // Every write was answered, 200 or 503, and every 503 says when to retry.
        assert.deepStrictEqual([...new Set(writes.map((w) => w.status))].sort(), [200, 503])
        for (const w of writes.filter((w) => w.status === 503)) assert.strictEqual(w.retryAfter, "2")
        // Writes sent while the database was down failed (a loaded machine may hold a request past
        // the restart, and then it is stored: what is acknowledged is checked below, not when).
        assert.isAbove(during.filter((w) => w.status === 503).length, 100)
        for (const w of writes.filter((w) => w.status === 200)) assert.strictEqual(w.applied, 1)
        // The chat read before the outage was served from the cache throughout: every read in the
        // 10 s, one after the other (a few on a machine whose cores other tests hold, 20 on a quiet one).
        assert.isAtLeast(reads.length, 3)
        for (const r of reads) assert.deepStrictEqual(r, before)

        // Every acknowledged write is stored: sent again, each is a duplicate.
        const acknowledged = writes.filter((w) => w.status === 200)
        for (let i = 0; i < acknowledged.length; i += 500) {
          const part = acknowledged.slice(i, i + 500)
          const r = await post(port, "/v1/events", part.map((w) => event(w.n)))
          assert.strictEqual(r.status, 200)
          const body = await r.json() as { applied: number; duplicates: number }
          assert.deepStrictEqual([body.applied, body.duplicates], [0, part.length])
        }

        // One line for the outage, one for the recovery; none per request.
        const lines = app.output().split("\n")
        const outage = lines.filter((l) => l.includes("store outage"))
        const recovery = lines.filter((l) => l.includes("store recovered"))
        console.log([...outage, ...recovery].join("\n"))
        assert.strictEqual(outage.length, 1)
        assert.include(outage[0], "the database cannot be reached")
        assert.strictEqual(recovery.length, 1)
        assert.isFalse(lines.some((l) => l.includes("request failed")))
      } finally {
        agent.destroy()
        app.child.kill("SIGTERM")
        await exited(app.child)
        await pg.destroy()
      }
    }), 180_000)
})
