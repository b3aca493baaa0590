/**
 * Authentication: one set of credentials and one check, `allows`.
 *
 * - The API groups declare it the platform's way: `HttpApiSecurity.bearer` through an
 *   `HttpApiMiddleware` (`Authorization`), so the OpenAPI document shows it.
 *   `/v1/telegram/updates` (`TelegramAuthorization`) also takes Telegram's own webhook header,
 *   `X-Telegram-Bot-Api-Secret-Token`, when `DEIXIS_TELEGRAM_SECRET` is set, so `setWebhook`
 *   can point at deixis itself.
 * - The middlewares *are* the check (`layer`): each scheme's implementation asks `allows`; the
 *   endpoint's executor (`Executor.ts`) applies them before any of the body is read. The routes
 *   outside the API (`/metrics`) are checked by the pipeline with `allows` too.
 *
 * Secrets are compared in constant time (both sides hashed to equal lengths first).
 *
 * @since 0.2.0
 */
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { IncomingHttpHeaders } from "node:http"
import { createHash, timingSafeEqual } from "node:crypto"

/**
 * A request without valid credentials.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()(
  "Unauthorized",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

/**
 * The secrets the service checks. `apiToken` none means the API is open (the server then
 * listens on loopback unless explicitly allowed otherwise, see `Server.ts`).
 *
 * @since 0.2.0
 * @category models
 */
export interface CredentialsShape {
  readonly apiToken: Option.Option<Redacted.Redacted<string>>
  /** A token for `/metrics` alone (the API token is accepted there too). */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  /** Telegram's webhook secret, accepted on `/v1/telegram/updates`. */
  readonly telegramSecret: Option.Option<Redacted.Redacted<string>>
}

/**
 * @since 0.2.0
 * @category services
 */
export class Credentials extends Context.Tag("@deixis/http/Credentials")<Credentials, CredentialsShape>() {}

/**
 * Who may call a route: anyone; the API token; the API token or Telegram's webhook secret;
 * the metrics token (or the API token).
 *
 * @since 0.2.0
 * @category models
 */
export type Access = "public" | "token" | "token or telegram secret" | "metrics token"

const digest = (s: string) => createHash("sha256").update(s).digest()

/** Whether `given` is the secret, in constant time. */
const secretMatches = (expected: Redacted.Redacted<string>, given: string): boolean =>
  timingSafeEqual(digest(Redacted.value(expected)), digest(given))

const bearerScheme = /^bearer /i

/**
 * The token an `Authorization` header presents: what follows `Bearer ` (the scheme in any case,
 * RFC 9110 §11.1, one space), or nothing. (The platform's `HttpApiSecurity.bearer` drops the
 * first seven characters whatever they are: `Basic  <token>` would present the token.)
 */
const presentedToken = (header: string | undefined): string =>
  header !== undefined && bearerScheme.test(header) ? header.slice("Bearer ".length) : ""

const matchesAny = (secrets: ReadonlyArray<Option.Option<Redacted.Redacted<string>>>, given: string) => {
  let ok = false
  // Every configured secret is compared, so the time taken does not tell which one matched.
  for (const secret of secrets) if (Option.isSome(secret) && secretMatches(secret.value, given)) ok = true
  return ok
}

const telegramSecretHeader = "x-telegram-bot-api-secret-token"

/**
 * The one check: whether a request with these headers may call a route of this access.
 *
 * - `token`: the API token as a bearer token; anything when none is configured.
 * - `token or telegram secret`: the API token, or Telegram's secret header when one is
 *   configured; with neither configured, open.
 * - `metrics token`: the metrics token or the API token, whichever are configured; anything
 *   when neither is.
 *
 * @since 0.2.0
 * @category checks
 */
export const allows = (credentials: CredentialsShape, access: Access, headers: IncomingHttpHeaders): boolean => {
  if (access === "public") return true
  const { apiToken, metricsToken, telegramSecret } = credentials
  const token = presentedToken(headers["authorization"])
  switch (access) {
    case "token":
      return Option.isNone(apiToken) || matchesAny([apiToken], token)
    case "metrics token":
      return Option.isNone(apiToken) && Option.isNone(metricsToken) ? true : matchesAny([apiToken, metricsToken], token)
    case "token or telegram secret": {
      const secret = headers[telegramSecretHeader]
      const bySecret = Option.isSome(telegramSecret) && typeof secret === "string" && secretMatches(telegramSecret.value, secret)
      // Without an API token the route is open only while no Telegram secret is configured either.
      const byToken = Option.isSome(apiToken) ? matchesAny([apiToken], token) : Option.isNone(telegramSecret)
      return bySecret || byToken
    }
  }
}

/**
 * Bearer authentication for the API groups (see the module's description: declared here,
 * decided by the pipeline).
 *
 * @since 0.2.0
 * @category middleware
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("Authorization", {
  failure: Unauthorized,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/**
 * `/v1/telegram/updates`: the bearer token, or Telegram's webhook secret header.
 *
 * @since 0.2.0
 * @category middleware
 */
export class TelegramAuthorization extends HttpApiMiddleware.Tag<TelegramAuthorization>()("TelegramAuthorization", {
  failure: Unauthorized,
  security: {
    bearer: HttpApiSecurity.bearer,
    telegramSecret: HttpApiSecurity.apiKey({ in: "header", key: "X-Telegram-Bot-Api-Secret-Token" })
  }
}) {}

const refused = new Unauthorized({ message: "a valid Authorization: Bearer token is required" })

/**
 * Both middlewares over the credentials: each scheme passes when `allows` does for what it
 * presents (an `Authorization: Bearer` token, Telegram's secret header).
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<Authorization | TelegramAuthorization, never, Credentials> = Layer.effectContext(
  Effect.map(Credentials, (credentials) => {
    const check = (access: Access, headers: IncomingHttpHeaders) =>
      allows(credentials, access, headers) ? Effect.void : Effect.fail(refused)
    const bearer = (access: Access) => (token: Redacted.Redacted<string>) =>
      check(access, { authorization: `Bearer ${Redacted.value(token)}` })
    return Context.make(Authorization, Authorization.of({ bearer: bearer("token") })).pipe(
      Context.add(
        TelegramAuthorization,
        TelegramAuthorization.of({
          bearer: bearer("token or telegram secret"),
          telegramSecret: (secret) => check("token or telegram secret", { [telegramSecretHeader]: Redacted.value(secret) })
        })
      )
    )
  })
)
