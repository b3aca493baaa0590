/**
 * The edge: the Node HTTP server, with the pipeline (`Pipeline.ts`) as its one request listener.
 *
 * - Connections are bounded in number and time (headers, whole request, keep-alive).
 * - `Expect: 100-continue` reaches the pipeline too, which answers 100 when it reads the body,
 *   after authentication, not as soon as the headers are in.
 * - The platform's `HttpServer` (`NodeHttpServer.make`) is the listening server; nothing is
 *   served through it (`serve` is never called): the pipeline builds what it runs itself.
 * - A stop closes the listening socket, closes idle connections and those whose request has not
 *   fully arrived (nothing of theirs was accepted), lets requests being handled finish and
 *   answer with `connection: close`, and after `shutdownTimeoutMs` closes whatever is left.
 *
 * @since 0.2.0
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import type { ListenOptions, Socket } from "node:net"
import * as Pipeline from "./Pipeline.js"

/**
 * @since 0.2.0
 * @category models
 */
export interface EdgeOptions {
  /** Time to receive a request's headers (Node's `headersTimeout`). */
  readonly headersTimeoutMs: number
  /** Time to receive a whole request, body included (Node's `requestTimeout`). */
  readonly requestTimeoutMs: number
  /** How long an idle keep-alive connection stays open. */
  readonly keepAliveTimeoutMs: number
  /** Open connections at most; more are refused. */
  readonly maxConnections: number
  /** How long a stop waits for requests being handled before closing every connection. */
  readonly shutdownTimeoutMs: number
}

/** The exchange a connection is in, if any. */
interface Exchange {
  readonly request: IncomingMessage
  readonly response: ServerResponse
}

/**
 * The Node HTTP server (as `NodeHttpServer.layer`) with the pipeline as its only request
 * listener.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerServer = (server: Server, listen: ListenOptions, options: EdgeOptions): Layer.Layer<
  Layer.Layer.Success<ReturnType<typeof NodeHttpServer.layer>>,
  Layer.Layer.Error<ReturnType<typeof NodeHttpServer.layer>>,
  Pipeline.Pipeline
> =>
  Layer.merge(
    Layer.scoped(
      HttpServer.HttpServer,
      Effect.gen(function*() {
        const pipeline = yield* Pipeline.Pipeline
        server.headersTimeout = options.headersTimeoutMs
        server.requestTimeout = options.requestTimeoutMs
        server.keepAliveTimeout = options.keepAliveTimeoutMs
        server.maxConnections = options.maxConnections

        const sockets = new Set<Socket>()
        const exchanges = new Map<Socket, Exchange>()
        const state: { stopping: boolean } = { stopping: false }

        server.on("connection", (socket: Socket) => {
          sockets.add(socket)
          socket.once("close", () => {
            sockets.delete(socket)
            exchanges.delete(socket)
          })
        })
        const listener = (request: IncomingMessage, response: ServerResponse) => {
          exchanges.set(request.socket, { request, response })
          pipeline.handle(request, response, state)
        }
        server.on("request", listener)
        // Node would answer 100 as soon as the headers are in, before any check, inviting a body
        // that is then refused: with a listener here, the pipeline answers it when it reads.
        server.on("checkContinue", listener)

        const node = yield* NodeHttpServer.make(() => server, listen)

        // Released before the server itself (acquired after it): drain, then close.
        yield* Effect.addFinalizer(() =>
          Effect.async<void>((resume) => {
            state.stopping = true
            let done = false
            const finish = () => {
              if (done) return
              done = true
              clearTimeout(timer)
              resume(Effect.void)
            }
            const timer = setTimeout(() => {
              server.closeAllConnections()
              for (const socket of sockets) socket.destroy()
              finish()
            }, options.shutdownTimeoutMs)
            timer.unref()
            if (server.listening) server.close(finish)
            for (const socket of sockets) {
              const exchange = exchanges.get(socket)
              if (exchange === undefined || exchange.response.writableFinished || Pipeline.bodyPending(exchange.request)) {
                // Idle, mid-headers, or a body still arriving: nothing of it was accepted.
                socket.destroy()
              } else {
                // Being handled: it finishes, answering with connection: close unless its
                // headers are out already, and then its connection ends.
                if (!exchange.response.headersSent) exchange.response.setHeader("connection", "close")
                exchange.response.once("finish", () => socket.end())
              }
            }
            if (sockets.size === 0 && !server.listening) finish()
          })
        )

        return node
      })
    ),
    NodeHttpServer.layerContext
  )
