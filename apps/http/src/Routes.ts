/**
 * The one route table: every route the service answers, keyed by method and path, with whether
 * it takes a body. The API's routes come from the HttpApi definition itself (`HttpApi.reflect`),
 * each answered by its endpoint's executor (`Executor.ts`), which applies the endpoint's
 * security middleware; the few routes outside it (`/mcp`, `/metrics`, health, docs) are
 * declared here once, with who may call them, and registered from here by `Server.ts`. The
 * pipeline (`Pipeline.ts`) finds each request's route here, once, on the canonical target
 * (`RequestTarget.ts`), so authentication, the body, the metric label and the route that
 * answers never disagree.
 *
 * @since 0.2.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import * as FindMyWay from "find-my-way-ts"
import { Api } from "./Api.js"
import type * as Auth from "./Auth.js"

/**
 * @since 0.2.0
 * @category models
 */
export interface Route {
  readonly method: HttpMethod
  /** The path template, as the router reads it (`/v1/chats/:chat_id/state`); also the metric label. */
  readonly path: string
  /** Who may call a route outside the API (`Auth.allows` decides); an endpoint's own middleware decides for the API's. */
  readonly access?: Auth.Access | undefined
  /** The HttpApi endpoint, `group.name`, for API routes. */
  readonly endpoint?: string | undefined
  /**
   * What the route's body is, read by the pipeline under the body limit and parsed once
   * (nested at most `Json.maxDepth` levels): `json` (an endpoint with a payload; not JSON is a
   * 400), `json-rpc` (`/mcp`, whose edge answers a body that is not JSON with JSON-RPC's parse
   * error), or none.
   */
  readonly body?: "json" | "json-rpc" | undefined
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
  mcp: { method: "POST", path: "/mcp", access: "token", body: "json-rpc" },
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

const apiRoutes = (): ReadonlyArray<Route> => {
  const routes: Array<Route> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, payloads }) => {
      routes.push({
        method: endpoint.method,
        path: endpoint.path,
        endpoint: `${group.identifier}.${endpoint.name}`,
        ...(payloads.size > 0 ? { body: "json" as const } : {})
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
 * A route found, with the path parameters it matched.
 *
 * @since 0.3.0
 * @category models
 */
export interface Found {
  readonly route: Route
  readonly params: Readonly<Record<string, string | undefined>>
}

/**
 * The route a canonical request's method and path take (HEAD is answered by GET routes, as the
 * platform's router does), or undefined.
 *
 * @since 0.2.0
 * @category routes
 */
export const find = (method: string, path: string): Found | undefined => {
  const found = router.find(method as HttpMethod, path) ?? (method === "HEAD" ? router.find("GET", path) : undefined)
  return found === undefined ? undefined : { route: found.handler, params: found.params }
}

const methods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/**
 * The method as a metric label: one of the methods HTTP defines for resources, or `OTHER`.
 *
 * @since 0.2.0
 * @category routes
 */
export const methodLabel = (method: string): string => (methods.has(method) ? method : "OTHER")
