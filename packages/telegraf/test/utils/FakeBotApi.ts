/**
 * A fake Telegram Bot API on loopback: records every call, answers like Telegram (sent
 * messages get ids and keep their thread), serves getUpdates from a queue, and fails calls on
 * request (429 with retry_after, 5xx). Used by this package's and apps/telegram's tests.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface ApiCall {
  readonly method: string
  readonly payload: Record<string, unknown>
  readonly token: string
}

export interface Failure {
  readonly status?: number
  readonly error_code: number
  readonly description: string
  readonly parameters?: { readonly retry_after?: number }
}

export interface FakeBotApi {
  readonly apiRoot: string
  readonly bot: { readonly id: number; readonly is_bot: true; readonly first_name: string; readonly username: string }
  readonly calls: () => ReadonlyArray<ApiCall>
  readonly callsOf: (method: string) => ReadonlyArray<ApiCall>
  /** The next `times` calls of `method` fail with `failure`. */
  readonly failNext: (method: string, failure: Failure, times?: number) => void
  /** Queues updates for getUpdates. */
  readonly pushUpdates: (...updates: ReadonlyArray<unknown>) => void
  /** Resolves with the n-th (1-based) call of `method` matching `where`, now or when it arrives. */
  readonly waitFor: (
    method: string,
    where?: (payload: Record<string, unknown>) => boolean,
    nth?: number
  ) => Effect.Effect<ApiCall>
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

export const make = (
  options: { readonly botId?: number; readonly username?: string } = {}
): Effect.Effect<FakeBotApi, never, Scope.Scope> =>
  Effect.gen(function*() {
    const bot = { id: options.botId ?? 7000000001, is_bot: true as const, first_name: "Deixis", username: options.username ?? "deixis_bot" }
    const calls: Array<ApiCall> = []
    const failures = new Map<string, Array<Failure>>()
    const queue: Array<unknown> = []
    const listeners = new Set<() => void>()
    let nextMessageId = 10_000
    let nextPollId = 1

    const messageFor = (payload: Record<string, unknown>, extra: Record<string, unknown>) => {
      const thread = payload["message_thread_id"]
      const chatId = Number(payload["chat_id"])
      return {
        message_id: nextMessageId++,
        from: bot,
        chat: { id: chatId, type: chatId < 0 ? "supergroup" : "private", ...(chatId < 0 ? { is_forum: true } : {}) },
        date: 1_771_000_000,
        ...(typeof thread === "number" ? { message_thread_id: thread, is_topic_message: true } : {}),
        ...extra
      }
    }

    const answer = (method: string, payload: Record<string, unknown>): unknown => {
      switch (method) {
        case "getMe":
          return bot
        case "sendMessage":
          return messageFor(payload, { text: payload["text"], ...(payload["reply_markup"] ? { reply_markup: payload["reply_markup"] } : {}) })
        case "sendPoll": {
          const options = Array.isArray(payload["options"]) ? payload["options"] : []
          return messageFor(payload, {
            poll: {
              id: `poll-${nextPollId++}`,
              question: payload["question"],
              options: options.map((o) => ({ text: isRecord(o) ? o["text"] : o, voter_count: 0 })),
              total_voter_count: 0,
              is_closed: false,
              is_anonymous: payload["is_anonymous"] !== false,
              type: "regular",
              allows_multiple_answers: false
            }
          })
        }
        case "editMessageText":
          return messageFor(payload, { message_id: payload["message_id"], text: payload["text"] })
        default:
          return true
      }
    }

    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(req.url ?? "")
        const reply = (status: number, body: unknown) => {
          res.writeHead(status, { "content-type": "application/json" })
          res.end(JSON.stringify(body))
        }
        if (match === null) return reply(404, { ok: false, error_code: 404, description: "Not Found" })
        const [, token, method] = match as unknown as [string, string, string]
        let payload: Record<string, unknown> = {}
        try {
          const parsed: unknown = chunks.length === 0 ? {} : JSON.parse(Buffer.concat(chunks).toString("utf8"))
          payload = isRecord(parsed) ? parsed : {}
        } catch {
          return reply(400, { ok: false, error_code: 400, description: "Bad Request: invalid JSON" })
        }
        if (method === "getUpdates") {
          const offset = typeof payload["offset"] === "number" ? payload["offset"] : 0
          const serve = () => {
            const ready = queue.filter((u) => !isRecord(u) || typeof u["update_id"] !== "number" || u["update_id"] >= offset)
            queue.length = 0
            reply(200, { ok: true, result: ready })
          }
          const failing = failures.get(method)?.shift()
          if (failing !== undefined) {
            calls.push({ method, payload, token })
            return reply(failing.status ?? failing.error_code, { ok: false, ...failing })
          }
          if (queue.length > 0) return serve()
          // A short long-poll: answer as soon as updates arrive, or empty after 100 ms.
          const timer = setTimeout(serve, 100)
          res.on("close", () => clearTimeout(timer))
          return
        }
        calls.push({ method, payload, token })
        for (const listener of listeners) listener()
        const failing = failures.get(method)?.shift()
        if (failing !== undefined) return reply(failing.status ?? failing.error_code, { ok: false, ...failing })
        return reply(200, { ok: true, result: answer(method, payload) })
      })
    })

    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const port = (server.address() as AddressInfo).port

    const matching = (method: string, where?: (payload: Record<string, unknown>) => boolean) =>
      calls.filter((c) => c.method === method && (where === undefined || where(c.payload)))

    return {
      apiRoot: `http://127.0.0.1:${port}`,
      bot,
      calls: () => calls.slice(),
      callsOf: (method) => matching(method),
      failNext: (method, failure, times = 1) => {
        const list = failures.get(method) ?? []
        for (let i = 0; i < times; i++) list.push(failure)
        failures.set(method, list)
      },
      pushUpdates: (...updates) => {
        queue.push(...updates)
      },
      waitFor: (method, where, nth = 1) =>
        Effect.async<ApiCall>((resume) => {
          const check = () => {
            const found = matching(method, where)[nth - 1]
            if (found !== undefined) {
              listeners.delete(check)
              resume(Effect.succeed(found))
            }
          }
          listeners.add(check)
          check()
          return Effect.sync(() => listeners.delete(check))
        })
    }
  })
