/**
 * The one route table: every route the service answers, with who may call it, whether it takes
 * a body, and whether the pipeline answers it on the fast path. The API's routes come from the
 * HttpApi definition itself (`HttpApi.reflect`); the few routes outside it (`/mcp`, `/metrics`,
 * health, docs) are declared here once and registered from here by `Server.ts`. The pipeline
 * (`Pipeline.ts`) finds each request's route here, once, on the canonical target
 * (`RequestTarget.ts`), with the same router settings as the server's, so authentication, the
 * body, the metric label and the route that answers never disagree.
 *
 * @since 0.2.0
 */
import { HttpApi } from "@effect/platform"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import * as FindMyWay from "find-my-way-ts"
import { Api } from "./Api.js"
import * as Auth from "./Auth.js"

/**
 * @since 0.2.0
 * @category models
 */
export interface Route {
  readonly method: HttpMethod
  /** The path template, as the router reads it (`/v1/chats/:chat_id/state`); also the metric label. */
  readonly path: string
  /** Who may call it (`Auth.allows` decides). */
  readonly access: Auth.Access
  /** The HttpApi endpoint, `group.name`, for API routes. */
  readonly endpoint?: string | undefined
  /**
   * What the route's body is, read by the pipeline under the body limit before the route sees
   * it: `json` (parsed, nested at most `Json.maxDepth` levels; an endpoint with a payload),
   * `text` (`/mcp`, whose JSON-RPC edge parses it and words its own errors), or none.
   */
  readonly body?: "json" | "text" | undefined
  /**
   * Answered from the Node listener with the endpoint's own Schemas and handler (`FastPath.ts`)
   * instead of through the Effect HTTP stack: set for the endpoints in {@link fast}.
   */
  readonly fast?: boolean | undefined
}

/**
 * The router settings of the server and of this table: case-sensitive, no folding of `//` or a
 * trailing slash (the canonical target has none to fold), ids up to 128 characters even when
 * every one is percent-encoded.
 *
 * @since 0.2.0
 * @category config
 */
export const routerConfig = {
  caseSensitive: true,
  ignoreTrailingSlash: false,
  ignoreDuplicateSlashes: false,
  maxParamLength: 2048
} as const satisfies Partial<FindMyWay.RouterConfig>

/**
 * The routes outside the HttpApi definition, registered by `Server.ts` from these entries.
 *
 * @since 0.2.0
 * @category routes
 */
export const service = {
  mcp: { method: "POST", path: "/mcp", access: "token", body: "text" },
  // No event stream and no sessions: both answer 405 (the streamable HTTP transport's rule).
  mcpStream: { method: "GET", path: "/mcp", access: "token" },
  mcpSession: { method: "DELETE", path: "/mcp", access: "token" },
  metrics: { method: "GET", path: "/metrics", access: "metrics token" },
  healthz: { method: "GET", path: "/healthz", access: "public" },
  readyz: { method: "GET", path: "/readyz", access: "public" },
  openapi: { method: "GET", path: "/openapi.json", access: "public" },
  docs: { method: "GET", path: "/docs", access: "public" },
  // The inspector's static shell: no data in it (its data comes from the API, with the token).
  inspect: { method: "GET", path: "/inspect", access: "public" },
  inspectAsset: { method: "GET", path: "/inspect/*", access: "public" }
} as const satisfies Record<string, Route>

const accessOf = (middleware: ReadonlySet<unknown>): Auth.Access =>
  middleware.has(Auth.TelegramAuthorization)
    ? "token or telegram secret"
    : middleware.has(Auth.Authorization)
    ? "token"
    : "public"

/**
 * The endpoints answered on the fast path: a bot's most frequent calls — both tools, an event
 * batch, forwarded Telegram updates. Each must read its payload alone (no path, query or header
 * parameters) and answer JSON.
 *
 * @since 0.2.0
 * @category routes
 */
export const fast: ReadonlySet<string> = new Set(["tools.resolve", "tools.list", "events.ingest", "webhook.telegram"])

const apiRoutes = (): ReadonlyArray<Route> => {
  const routes: Array<Route> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, middleware, payloads }) => {
      const name = `${group.identifier}.${endpoint.name}`
      routes.push({
        method: endpoint.method,
        path: endpoint.path,
        access: accessOf(middleware),
        endpoint: name,
        ...(payloads.size > 0 ? { body: "json" as const } : {}),
        ...(fast.has(name) ? { fast: true } : {})
      })
    }
  })
  return routes
}

/**
 * Every route, API routes first.
 *
 * @since 0.2.0
 * @category routes
 */
export const table: ReadonlyArray<Route> = [...apiRoutes(), ...Object.values(service)]

/**
 * The route of an API endpoint, by `group.name`.
 *
 * @since 0.2.0
 * @category routes
 */
export const endpoint = (name: string): Route => {
  const route = table.find((r) => r.endpoint === name)
  if (route === undefined) throw new Error(`no endpoint ${name} in the API`)
  return route
}

const router = FindMyWay.make<Route>(routerConfig)
for (const route of table) router.on(route.method, route.path as FindMyWay.PathInput, route)

/**
 * The route a canonical request would take (HEAD is answered by GET routes, as the server's
 * router does), or undefined.
 *
 * @since 0.2.0
 * @category routes
 */
export const find = (method: string, url: string): Route | undefined =>
  (router.find(method as HttpMethod, url) ?? (method === "HEAD" ? router.find("GET", url) : undefined))?.handler

const methods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/**
 * The method as a metric label: one of the methods HTTP defines for resources, or `OTHER`.
 *
 * @since 0.2.0
 * @category routes
 */
export const methodLabel = (method: string): string => (methods.has(method) ? method : "OTHER")
