/**
 * The operations server: `GET /healthz` (200 while the bot works; 503 while polling is stuck in
 * a conflict or failing), `GET /readyz` (200 while intake can progress: the bot is connected
 * and its inbox writer runs), `GET /metrics` (Prometheus, the process's one registry,
 * `Metrics.Registry`; `?name[]=…` gives only the metrics named).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import * as Metrics from "./Metrics.js"

/**
 * The server could not listen.
 *
 * @since 0.1.0
 * @category errors
 */
export class OpsServerError extends Error {
  readonly _tag = "OpsServerError"
}

/**
 * Serves health and metrics for the lifetime of the scope; its port (useful with port 0).
 *
 * @since 0.1.0
 * @category servers
 */
export const serve = (
  options: { readonly port: number; readonly host: string },
  state: { readonly ready: Effect.Effect<boolean>; readonly healthy: Effect.Effect<boolean> }
): Effect.Effect<number, OpsServerError, Scope.Scope | Metrics.Registry> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const metrics = yield* Metrics.Registry
    // Reads of in-memory values (a `SubscriptionRef`, a flag): synchronous.
    const now = (value: Effect.Effect<boolean>) => Runtime.runSync(runtime)(value)
    const server = http.createServer((req, res) => {
      const [path, query] = (req.url ?? "").split("?", 2)
      if (req.method !== "GET") return void res.writeHead(405).end()
      if (path === "/healthz") {
        const ok = now(state.healthy)
        return void res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" }).end(ok ? "ok\n" : "unhealthy\n")
      }
      if (path === "/readyz") {
        const ok = now(state.ready)
        return void res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" }).end(ok ? "ready\n" : "not ready\n")
      }
      if (path === "/metrics") {
        // `?name[]=a&name[]=b`: only those metrics (a cheap scrape: nothing else is collected).
        const names = query === undefined ? [] : new URLSearchParams(query).getAll("name[]")
        return void Runtime.runPromise(runtime)(metrics.render(names.length === 0 ? undefined : names)).then(
          ({ body, contentType }) => res.writeHead(200, { "content-type": contentType }).end(body),
          () => res.writeHead(500).end()
        )
      }
      res.writeHead(404).end()
    })
    yield* Effect.acquireRelease(
      Effect.async<void, OpsServerError>((resume) => {
        server.once("error", (error) => resume(Effect.fail(new OpsServerError(`health server cannot listen: ${error.message}`))))
        server.listen(options.port, options.host, () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    const address = server.address()
    return typeof address === "object" && address !== null ? address.port : options.port
  })
