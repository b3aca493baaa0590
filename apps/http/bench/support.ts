/**
 * What the benches' drivers share (the compiled bench cannot import the test support's
 * TypeScript sources): a free loopback port, waiting for a server to answer, a process's memory,
 * and dropping the PostgreSQL schema a run made.
 */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { createServer } from "node:net"

export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

/** Whether the server at `url` answered `/healthz` within ~30 s. */
export const untilHealthy = async (url: string): Promise<boolean> => {
  for (let i = 0; i < 300; i++) {
    if (await fetch(url + "/healthz").then(() => true, () => false)) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return false
}

/** VmRSS and VmHWM (peak) of a process, in bytes (Linux; NaN when unreadable). */
export const processMemory = (pid: number): { readonly rss: number; readonly peak: number } => {
  let status = ""
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8")
  } catch {
    // Not Linux, or the process is gone.
  }
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN) * 1024
  return { rss: kb("VmRSS"), peak: kb("VmHWM") }
}

/** Drops the schema a run made on PostgreSQL (or says to drop it by hand). */
export const dropPgSchema = (pgUrl: string, schema: string) => {
  try {
    execFileSync("psql", [pgUrl, "-q", "-c", `DROP SCHEMA IF EXISTS "${schema}" CASCADE`], { stdio: "ignore" })
  } catch {
    console.error(`could not drop schema ${schema}; drop it by hand`)
  }
}

/** A 10,000-message chat (-1001, ten topics, links, replies, activations), posted through POST /v1/events. */
export const seed = async (url: string) => {
  const events: Array<unknown> = []
  for (let i = 1; i <= 10_000; i++) {
    events.push({
      type: "message_observed", chat_id: -1001, topic_id: String(i % 10), message_id: i, sender_user_id: 1000 + (i % 20),
      ...(i % 10 === 0 ? { links: [{ url: `https://example.com/${i}` }] } : {}),
      ...(i > 10 && i % 3 === 0 ? { reply_to_message_id: i - 10 } : {})
    })
    if (i % 50 === 0 && i > 9000) {
      events.push({ type: "object_activated", event_id: `a${i}`, chat_id: -1001, reason: "summarized", source_message_id: i, kind: "link" })
    }
  }
  for (let i = 0; i < events.length; i += 1000) {
    const response = await fetch(url + "/v1/events", {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(events.slice(i, i + 1000))
    })
    if (!response.ok) throw new Error(`seeding failed: ${response.status}`)
  }
}

/** The resolve request the benches send: a follow-up in the seeded chat asking for an article. */
export const request = JSON.stringify({
  chat_id: -1001, topic_id: "7", current_message_id: 10_001, reply_to_message_id: 9997, sender_user_id: 1007,
  raw_user_text: "what does it say?", normalized_reference_hints: { target_kind_hint: "article" }
})
