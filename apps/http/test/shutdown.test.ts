import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { exited, freePort, launch as start, ready } from "./process.js"

const launch = (port: number, file: string) => start(port, file).child

const batch = (n: number) =>
  Array.from({ length: 50 }, (_, i) => ({ type: "message_observed", chat_id: 77, message_id: n * 50 + i + 1, topic_id: 1 }))

const post = (port: number, n: number) =>
  fetch(`http://127.0.0.1:${port}/v1/events`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(batch(n))
  }).then(async (r) => ({ n, status: r.status, body: await r.json() as { applied: number; duplicates: number } }), () => ({ n, status: 0, body: null }))

describe("graceful stop", () => {
  it.live("SIGTERM finishes in-flight writes: every acknowledged event is there after a restart", () =>
    Effect.promise(async () => {
      const dir = mkdtempSync(join(tmpdir(), "deixis-http-"))
      const file = join(dir, "deixis.db")
      try {
        const port = await freePort()
        const first = launch(port, file)
        await ready(port)
        // One batch surely acknowledged, then more in flight as the stop begins; requests
        // arriving once it has begun are refused (503 or a closed connection), never left hanging.
        const settled = await post(port, 0)
        const inFlight = Array.from({ length: 20 }, (_, n) => post(port, n + 1))
        await new Promise((r) => setTimeout(r, 20))
        first.kill("SIGTERM")
        const responses = [settled, ...(await Promise.all(inFlight))]
        for (const r of responses) assert.include([0, 200, 503], r.status)
        assert.strictEqual(await exited(first), 0)
        const acknowledged = responses.filter((r) => r.status === 200)
        assert.isAbove(acknowledged.length, 0)
        for (const r of acknowledged) assert.strictEqual(r.body!.applied, 50)

        const second = launch(port, file)
        try {
          await ready(port)
          for (const r of acknowledged) {
            const again = await post(port, r.n)
            assert.deepStrictEqual([again.status, again.body!.applied, again.body!.duplicates], [200, 0, 50])
          }
        } finally {
          second.kill("SIGTERM")
          await exited(second)
        }
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }), 240_000)
})
