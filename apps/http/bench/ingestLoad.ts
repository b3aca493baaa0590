/**
 * A bot's most frequent call under load: `connections` clients, each posting one new message
 * per request for `seconds`, over keep-alive connections on loopback — as a core event to
 * POST /v1/events, or (`telegram`) as a raw Telegram update to POST /v1/telegram/updates, a
 * fresh message id every time. autocannon's id replacement cannot do it: it sends a Content-Length
 * for ids of one length and ids of another. Prints the result as autocannon's `-j` would.
 */
import { Agent, request } from "node:http"

const [url, secondsArg, connectionsArg, shape] = process.argv.slice(2)
const seconds = Number(secondsArg ?? 10)
const connections = Number(connectionsArg ?? 10)
const target = new URL(url!)
const agent = new Agent({ keepAlive: true, maxSockets: connections })
const run = `${process.pid}-${Date.now().toString(36)}`
// A chat of this run's own, so that a second run against the same server writes new messages.
const telegramChat = -(3_000_000 + (process.pid % 1_000_000))

const post = (id: number) =>
  new Promise<number>((resolve) => {
    const body = JSON.stringify(
      shape === "telegram"
        ? {
          update_id: id,
          message: {
            message_id: id, date: 1_700_000_000, chat: { id: telegramChat, type: "supergroup", title: "bench" },
            from: { id: 1005, is_bot: false, first_name: "A" }, text: `a message like most (${run})`
          }
        }
        : [{ type: "message_observed", chat_id: -2002, topic_id: "3", message_id: `${run}-${id}`, sender_user_id: 1005, text: "a message like most" }]
    )
    const req = request(
      { agent, host: target.hostname, port: target.port, path: target.pathname, method: "POST", headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
      (res) => {
        res.resume()
        res.on("end", () => resolve(res.statusCode ?? 0))
      }
    )
    req.on("error", () => resolve(0))
    req.end(body)
  })

const main = async () => {
  const latencies: Array<number> = []
  let next = 0
  let non2xx = 0
  let errors = 0
  const until = performance.now() + seconds * 1000
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < until) {
      const started = performance.now()
      const status = await post(next++)
      latencies.push(performance.now() - started)
      if (status === 0) errors++
      else if (status < 200 || status > 299) non2xx++
    }
  }))
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0)
  console.log(JSON.stringify({
    requests: { average: latencies.length / seconds, total: latencies.length },
    latency: { p50: at(0.5), p99: at(0.99), average: latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length) },
    non2xx,
    errors
  }))
}

void main()
