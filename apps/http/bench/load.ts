/**
 * The load generator of `pnpm bench`, a process of its own (never inside the app it measures):
 * runs the streams its JSON argument names against one server over keep-alive loopback
 * connections, and prints each stream's result as JSON.
 *
 * - `telegram`: one new Telegram update per request to POST /v1/telegram/updates (a one-line
 *   text message, fresh update and message ids), spread over `chats` chats;
 * - `resolve`: POST /v1/tools/resolve_reference_target with `body`;
 * - `connections` set: closed loop, that many requests in flight, as fast as answered;
 *   `rate` set: open loop, one request every 1/rate s whether or not earlier ones were
 *   answered, each latency measured from when the request was due (a stall is not hidden by
 *   sending less during it).
 *
 * The run ends after `seconds`, or once `count` requests of the first stream were answered.
 */
import { Agent, request } from "node:http"

export interface Stream {
  readonly kind: "telegram" | "resolve"
  readonly connections?: number
  readonly rate?: number
  /** telegram: how many chats, numbered down from `chatBase`. */
  readonly chats?: number
  readonly chatBase?: number
  /** telegram: the first update and message id (the next ones count up from it). */
  readonly firstId?: number
  /** resolve: the request body. */
  readonly body?: string
}

export interface Plan {
  readonly url: string
  readonly seconds: number
  readonly count?: number
  readonly streams: ReadonlyArray<Stream>
}

export interface StreamResult {
  readonly total: number
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly failed: number
}

const plan = JSON.parse(process.argv[2]!) as Plan
const target = new URL(plan.url)
const agent = new Agent({ keepAlive: true, maxSockets: 256 })
const run = `${process.pid}-${Date.now().toString(36)}`

const post = (path: string, body: string) =>
  new Promise<number>((resolve) => {
    const req = request(
      {
        agent, host: target.hostname, port: target.port, path, method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
      },
      (res) => {
        res.resume()
        res.on("end", () => resolve(res.statusCode ?? 0))
      }
    )
    req.on("error", () => resolve(0))
    req.end(body)
  })

const telegramBody = (stream: Stream, n: number) => {
  const id = (stream.firstId ?? 1) + n
  const chats = stream.chats ?? 50
  return JSON.stringify({
    update_id: id,
    message: {
      message_id: id, date: 1_700_000_000, chat: { id: (stream.chatBase ?? -3_000_000) - (n % chats), type: "supergroup", title: "bench" },
      from: { id: 1000 + (n % 20), is_bot: false, first_name: "A" }, text: `a message like most (${run})`
    }
  })
}

const main = async () => {
  const started = performance.now()
  const until = started + plan.seconds * 1000
  let stop = false
  const results = await Promise.all(plan.streams.map(async (stream, index) => {
    const latencies: Array<number> = []
    let failed = 0
    let next = 0
    const path = stream.kind === "telegram" ? "/v1/telegram/updates" : "/v1/tools/resolve_reference_target"
    const one = async (due: number) => {
      const n = next++
      const status = await post(path, stream.kind === "telegram" ? telegramBody(stream, n) : stream.body!)
      latencies.push(performance.now() - due)
      if (status < 200 || status > 299) failed++
      if (index === 0 && plan.count !== undefined && latencies.length >= plan.count) stop = true
    }
    const t0 = performance.now()
    if (stream.rate !== undefined) {
      const pending: Array<Promise<void>> = []
      for (let i = 0; !stop; i++) {
        const due = t0 + (i * 1000) / stream.rate
        if (due >= until) break
        const wait = due - performance.now()
        if (wait > 0) await new Promise((r) => setTimeout(r, wait))
        pending.push(one(due))
      }
      await Promise.all(pending)
    } else {
      await Promise.all(Array.from({ length: stream.connections ?? 10 }, async () => {
        while (!stop && performance.now() < until && (plan.count === undefined || index !== 0 || next < plan.count)) {
          await one(performance.now())
        }
      }))
    }
    const elapsed = (performance.now() - t0) / 1000
    latencies.sort((a, b) => a - b)
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0
    const result: StreamResult = {
      total: latencies.length, perSecond: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), max: latencies.at(-1) ?? 0, failed
    }
    return result
  }))
  agent.destroy()
  console.log(JSON.stringify(results))
}

void main()
