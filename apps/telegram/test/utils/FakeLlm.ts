/**
 * A scripted OpenAI-compatible chat-completions server on loopback: records every request
 * body and answers each with the script's reply for it (a JSON body with a status, or `hang`:
 * never answer). Closed, hanging connections included, with the scope.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface Request {
  readonly model: string
  readonly messages: ReadonlyArray<Record<string, unknown> & { readonly role: string }>
  readonly tools?: ReadonlyArray<{ readonly type: string; readonly function: { readonly name: string; readonly parameters: Record<string, unknown> } }>
  readonly [key: string]: unknown
}

export type Reply = { readonly status?: number; readonly body: unknown } | { readonly stream: ReadonlyArray<unknown> } | "hang"

export interface FakeLlm {
  readonly baseUrl: string
  readonly requests: () => ReadonlyArray<Request>
  readonly authorizations: () => ReadonlyArray<string | undefined>
  /** Waits (real time, bounded) until `n` requests have arrived. */
  readonly waitForRequests: (n: number) => Effect.Effect<void>
}

/** An assistant answer. */
export const answer = (content: string): Reply => ({ body: { choices: [{ message: { role: "assistant", content } }] } })

/** A streamed answer: server-sent events of `chat.completion.chunk`s, one per piece of content, then `[DONE]`. */
export const streamed = (...pieces: ReadonlyArray<string>): Reply => ({
  stream: pieces.map((content) => ({ object: "chat.completion.chunk", choices: [{ index: 0, delta: { content } }] }))
})

/** An assistant turn asking for tool calls (`[name, arguments, id?]`). */
export const toolCalls = (...calls: ReadonlyArray<readonly [string, unknown, string?]>): Reply => ({
  body: {
    choices: [{
      message: {
        role: "assistant",
        content: null,
        tool_calls: calls.map(([name, args, id]) => ({ id: id ?? "call_0", type: "function", function: { name, arguments: JSON.stringify(args) } }))
      }
    }]
  }
})

export const make = (script: (request: Request, index: number) => Reply): Effect.Effect<FakeLlm, never, Scope.Scope> =>
  Effect.gen(function*() {
    const requests: Array<Request> = []
    const authorizations: Array<string | undefined> = []
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        if (req.method !== "POST" || req.url !== "/v1/chat/completions") return void res.writeHead(404).end()
        const request = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Request
        requests.push(request)
        authorizations.push(req.headers.authorization)
        const reply = script(request, requests.length - 1)
        if (reply === "hang") return
        // Asked without `stream`, a streamed reply is its whole answer in one body, as servers do.
        if ("stream" in reply && request["stream"] !== true) {
          const content = reply.stream.map((c) => (c as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "").join("")
          return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ choices: [{ message: { role: "assistant", content } }] }))
        }
        if ("stream" in reply) {
          res.writeHead(200, { "content-type": "text/event-stream" })
          for (const chunk of reply.stream) res.write(`data: ${JSON.stringify(chunk)}\n\n`)
          return void res.end("data: [DONE]\n\n")
        }
        res.writeHead(reply.status ?? 200, { "content-type": "application/json" }).end(JSON.stringify(reply.body))
      })
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    const port = (server.address() as AddressInfo).port
    return {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      requests: () => requests,
      authorizations: () => authorizations,
      waitForRequests: (n) =>
        Effect.gen(function*() {
          for (let i = 0; i < 400 && requests.length < n; i++) {
            yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
          }
          if (requests.length < n) return yield* Effect.dieMessage(`only ${requests.length} of ${n} model requests arrived`)
        })
    }
  })
