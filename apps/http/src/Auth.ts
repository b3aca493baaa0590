/**
 * Authentication: one set of credentials and one check, used by every entrance.
 *
 * - The API groups declare it the platform's way: `HttpApiSecurity.bearer` through an
 *   `HttpApiMiddleware` (`Authorization`), so the OpenAPI document shows it and HttpApi runs it
 *   after routing and before reading the body.
 * - `/v1/telegram/updates` (`TelegramAuthorization`) also takes Telegram's own webhook header,
 *   `X-Telegram-Bot-Api-Secret-Token`, when `DEIXIS_TELEGRAM_SECRET` is set, so `setWebhook`
 *   can point at deixis itself.
 * - `/mcp` and `/metrics` are not HttpApi routes: a route middleware (`routeMiddleware`)
 *   applies the same check to them, and the fast path calls it too.
 *
 * Secrets are compared in constant time (both sides hashed to equal lengths first).
 *
 * @since 0.2.0
 */
import { HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
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

const unauthorized = new Unauthorized({ message: "a valid Authorization: Bearer token is required" })

/** The 401 body as HttpApi encodes it, shared by every entrance so all answer alike. */
export const unauthorizedBody = Schema.encodeSync(Unauthorized)(unauthorized)

/**
 * The header a 401 carries (RFC 6750 §3).
 *
 * @since 0.2.0
 * @category constants
 */
export const challenge = "Bearer realm=\"deixis\""

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

const digest = (s: string) => createHash("sha256").update(s).digest()

/**
 * Whether `given` is the secret, in constant time.
 *
 * @since 0.2.0
 * @category checks
 */
export const secretMatches = (expected: Redacted.Redacted<string>, given: string): boolean =>
  timingSafeEqual(digest(Redacted.value(expected)), digest(given))

/**
 * The token an `Authorization` header presents: what follows `Bearer ` (the scheme in any case,
 * RFC 9110 §11.1, one space), or nothing. The platform's `HttpApiSecurity.bearer` drops the
 * first seven characters whatever they are (`Basic  <token>` presented the token); every
 * entrance reads the header with this function instead, so all agree on every spelling of it.
 *
 * @since 0.2.0
 * @category checks
 */
export const presentedToken = (header: string | undefined): string =>
  header !== undefined && bearerScheme.test(header) ? header.slice("Bearer ".length) : ""

const bearerScheme = /^bearer /i

// The header of the request being authenticated: the HttpApi middleware runs inside it (the
// token the platform hands it is not used, see `presentedToken`).
const requestToken = Effect.map(
  Effect.serviceOption(HttpServerRequest.HttpServerRequest),
  (request) => presentedToken(Option.isSome(request) ? request.value.headers["authorization"] : undefined)
)

const matchesAny = (secrets: ReadonlyArray<Option.Option<Redacted.Redacted<string>>>, given: string) => {
  let ok = false
  // Every configured secret is compared, so the time taken does not tell which one matched.
  for (const secret of secrets) if (Option.isSome(secret) && secretMatches(secret.value, given)) ok = true
  return ok
}

/**
 * Whether a bearer token opens the API: any token when no API token is configured.
 *
 * @since 0.2.0
 * @category checks
 */
export const bearerAllowed = (credentials: CredentialsShape, token: string): boolean =>
  Option.isNone(credentials.apiToken) || matchesAny([credentials.apiToken], token)

/**
 * Whether a bearer token opens `/metrics`: the metrics token or the API token, whichever are
 * configured; anything when neither is.
 *
 * @since 0.2.0
 * @category checks
 */
export const metricsAllowed = (credentials: CredentialsShape, token: string): boolean =>
  Option.isNone(credentials.apiToken) && Option.isNone(credentials.metricsToken)
    ? true
    : matchesAny([credentials.apiToken, credentials.metricsToken], token)

/**
 * The Telegram route's bearer check: a valid API token; with no API token, open only while no
 * Telegram secret is configured either (a configured secret is then the route's credential).
 */
const telegramBearerAllowed = (credentials: CredentialsShape, token: string): boolean =>
  Option.isSome(credentials.apiToken)
    ? matchesAny([credentials.apiToken], token)
    : Option.isNone(credentials.telegramSecret)

/**
 * Bearer authentication for the API groups.
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

const verdict = (ok: boolean) => (ok ? Effect.void : Effect.fail(unauthorized))

/**
 * Both middlewares, over the credentials.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<Authorization | TelegramAuthorization, never, Credentials> = Layer.merge(
  Layer.effect(
    Authorization,
    Effect.map(Credentials, (credentials) =>
      Authorization.of({ bearer: () => Effect.flatMap(requestToken, (token) => verdict(bearerAllowed(credentials, token))) }))
  ),
  Layer.effect(
    TelegramAuthorization,
    Effect.map(Credentials, (credentials) =>
      TelegramAuthorization.of({
        bearer: () => Effect.flatMap(requestToken, (token) => verdict(telegramBearerAllowed(credentials, token))),
        telegramSecret: (secret) =>
          verdict(Option.isSome(credentials.telegramSecret) && secretMatches(credentials.telegramSecret.value, Redacted.value(secret)))
      }))
  )
)

/**
 * The 401 response of the routes outside HttpApi (the same body and challenge).
 *
 * @since 0.2.0
 * @category responses
 */
export const unauthorizedResponse = HttpServerResponse.unsafeJson(unauthorizedBody, {
  status: 401,
  headers: { "www-authenticate": challenge }
})

/**
 * The same check as a route middleware, for routes that are not HttpApi endpoints: `check`
 * says which one (the API's, or the metrics endpoint's).
 *
 * @since 0.2.0
 * @category middleware
 */
export const routeMiddleware = (check: (credentials: CredentialsShape, token: string) => boolean) =>
  HttpLayerRouter.middleware(
    Effect.map(Credentials, (credentials) =>
    <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        check(credentials, presentedToken(request.headers["authorization"])) ? app : Effect.succeed(unauthorizedResponse)))
  )
