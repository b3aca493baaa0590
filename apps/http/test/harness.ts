import type * as DeixisServices from "@deixis/chathistory/DeixisServices"
import { HttpServer } from "@effect/platform"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Server from "../src/Server.js"
import * as Store from "../src/Store.js"

export interface Running {
  readonly url: string
  /** What the service's layer built (its services, the executors, the pipeline). */
  readonly context: Context.Context<never>
  readonly fetch: (path: string, init?: RequestInit) => Promise<Response>
  readonly json: (path: string, body: unknown, init?: RequestInit) => Promise<Response>
}

const secret = (value: string | undefined) => (value === undefined ? Option.none() : Option.some(Redacted.make(value)))

/** Starts the service on an ephemeral loopback port for the current scope. */
export const start = (
  options: {
    readonly token?: string
    readonly metricsToken?: string
    readonly telegramSecret?: string
    readonly maxBodyBytes?: number
    /** The stores (and any other service the layer needs); the memory stores by default. */
    readonly stores?: Layer.Layer<DeixisServices.Stores, unknown>
    /** The bot the Telegram entrance records for; `999` / `deixis_bot` by default. */
    readonly telegram?: { readonly botId: string; readonly botUsername: string }
  } = {}
) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      Server.layer(
        {
          ...Server.defaults,
          port: 0,
          host: "127.0.0.1",
          apiToken: secret(options.token),
          metricsToken: secret(options.metricsToken),
          telegramSecret: secret(options.telegramSecret),
          maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
          telegram: options.telegram ?? { botId: "999", botUsername: "deixis_bot" }
        },
        options.stores ?? Store.layerMemory
      ).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))
    )
    const server = yield* Effect.provide(HttpServer.HttpServer, context)
    const address = server.address
    const url = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "http://unix"
    const auth: Record<string, string> = options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }
    const running: Running = {
      url,
      context: context as Context.Context<never>,
      fetch: (path, init = {}) => fetch(url + path, { ...init, headers: { ...auth, ...(init.headers as Record<string, string> | undefined) } }),
      json: (path, body, init = {}) =>
        fetch(url + path, {
          method: "POST",
          ...init,
          headers: { "content-type": "application/json", ...auth, ...(init.headers as Record<string, string> | undefined) },
          body: typeof body === "string" ? body : JSON.stringify(body)
        })
    }
    return running
  })
