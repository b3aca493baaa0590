/**
 * The OpenAPI document served at `/openapi.json`: the API's (`OpenApi.fromApi`), saying what the
 * running configuration enforces, so a generated client can tell.
 *
 * - Security: none required when no API token is configured (the service is then open, on
 *   loopback unless allowed otherwise); the bearer token when one is; on the webhook route, the
 *   bearer token or Telegram's secret header, each when configured.
 * - `servers`: the address the client reached the service by (its `Host`).
 * - Every `503` carries its `Retry-After` header.
 *
 * @since 0.3.0
 */
import * as OpenApi from "@effect/platform/OpenApi"
import * as Option from "effect/Option"
import { Api } from "./Api.js"
import type * as Auth from "./Auth.js"

type Json = Record<string, any>

const base: Json = OpenApi.fromApi(Api) as Json
const serialized = JSON.stringify(base)

/** The operations that take Telegram's secret header as well (the webhook's `TelegramAuthorization`). */
const takesTelegramSecret = (operation: Json): boolean =>
  Array.isArray(operation["security"]) && operation["security"].some((s: Json) => "telegramSecret" in s)

const methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const

/**
 * The document for these credentials, naming the server by `host` when given.
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (credentials: Auth.CredentialsShape, options: { readonly host?: string | undefined } = {}): Json => {
  const spec = JSON.parse(serialized) as Json
  const token = Option.isSome(credentials.apiToken)
  const secret = Option.isSome(credentials.telegramSecret)
  const used = new Set<string>()
  for (const item of Object.values(spec["paths"] as Json)) {
    for (const method of methods) {
      const operation = (item as Json)[method] as Json | undefined
      if (operation === undefined) continue
      const security = [
        ...(token ? [{ bearer: [] }] : []),
        ...(secret && takesTelegramSecret(operation) ? [{ telegramSecret: [] }] : [])
      ]
      if (security.length === 0) delete operation["security"]
      else operation["security"] = security
      for (const s of security) for (const name of Object.keys(s)) used.add(name)
      const unavailable = (operation["responses"] as Json | undefined)?.["503"] as Json | undefined
      if (unavailable !== undefined) {
        unavailable["headers"] = {
          "Retry-After": { description: "Seconds to wait before retrying", schema: { type: "integer", minimum: 0 } }
        }
      }
    }
  }
  const components = spec["components"] as Json
  const schemes = components["securitySchemes"] as Json | undefined
  if (schemes !== undefined) {
    for (const name of Object.keys(schemes)) if (!used.has(name)) delete schemes[name]
    if (Object.keys(schemes).length === 0) delete components["securitySchemes"]
  }
  spec["security"] = []
  const host = options.host !== undefined && /^[A-Za-z0-9.:[\]-]+$/.test(options.host) ? options.host : undefined
  spec["servers"] = [
    host === undefined
      ? { url: "http://127.0.0.1:8080", description: "The default address (PORT, HOST)" }
      : { url: `http://${host}`, description: "This service, as this request reached it" }
  ]
  spec["info"] = {
    ...(spec["info"] as Json),
    contact: { name: "deixis", url: "https://github.com/deixis/deixis" }
  }
  return spec
}
