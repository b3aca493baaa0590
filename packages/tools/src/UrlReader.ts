/**
 * Reading a web page on a stranger's behalf, safely: what the `read_url` tool fetches with.
 *
 * - Only `http` and `https` URLs, without credentials; `localhost`, `*.localhost`, single-label
 *   names and cloud metadata names (`metadata.google.internal`…) are refused by name.
 * - The host is resolved (by the injected {@link Resolver}) and every address must be public
 *   unicast: loopback, private (RFC 1918, `fc00::/7`), link-local (`169.254/16`, `fe80::/10`),
 *   CGNAT (`100.64/10`), multicast, unspecified, broadcast, reserved and documentation ranges
 *   and cloud metadata addresses (`169.254.169.254`, `fd00:ec2::254`, `100.100.100.200`…) are
 *   refused, in IPv4-mapped and NAT64 IPv6 forms too. The fetcher connects to the very address
 *   it checked (no second lookup), and checks the connected socket's remote address again, so
 *   DNS rebinding cannot slip through. Every redirect (at most 3) is checked the same way.
 * - Bounded: {@link defaults}' 10 seconds in all, 1 MiB read at most (compressed or not), only
 *   `text/html` and `text/plain`, the declared charset decoded (the `Content-Type` header, or an
 *   HTML page's `<meta>`).
 * - The readable text is extracted with `html-to-text` (script, style, navigation and images
 *   left out; the `<main>` or `<article>` when there is one), cut to a token budget with the cut
 *   stated.
 * - `DEIXIS_FETCH_ALLOW_HOSTS` names hosts read whatever their addresses (a test's page on
 *   loopback, an intranet wiki an operator trusts); everything else about a read still applies.
 *
 * Sockets are opened only by the injected {@link Connector}: tests inject one that fails the test
 * on any address outside loopback. Each read logs one line (host, status, bytes, time — never the
 * path or query) and updates the `deixis_fetch_*` metrics.
 *
 * @since 0.3.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as Schema from "effect/Schema"
import * as dns from "node:dns"
import * as net from "node:net"
import { httpStatus } from "@deixis/core/Errors"
import { defaultsOf, millis, positiveInt } from "@deixis/core/ConfigKeys"
import { fetchPage, FetchFailure, hostOf } from "./internal/fetch.js"

/**
 * An address a host resolved to.
 *
 * @since 0.3.0
 * @category models
 */
export interface Address {
  readonly address: string
  readonly family: 4 | 6
}

/**
 * Resolves a host name to its addresses (all of them: each is checked).
 *
 * @since 0.3.0
 * @category models
 */
export type Resolver = (hostname: string) => Promise<ReadonlyArray<Address>>

/**
 * Opens a TCP connection to exactly `address:port` and answers the connected socket. The only
 * way the reader reaches the network.
 *
 * @since 0.3.0
 * @category models
 */
export type Connector = (target: { readonly address: string; readonly family: 4 | 6; readonly port: number }) => Promise<net.Socket>

/**
 * The system's resolver (`getaddrinfo`, as every program on the host resolves).
 *
 * @since 0.3.0
 * @category constructors
 */
export const systemResolver: Resolver = async (hostname) => {
  const found = await dns.promises.lookup(hostname, { all: true, verbatim: true })
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))
}

/**
 * A plain TCP connection.
 *
 * @since 0.3.0
 * @category constructors
 */
export const systemConnector: Connector = (target) =>
  new Promise((resolve, reject) => {
    const socket = net.connect({ host: target.address, port: target.port, family: target.family })
    socket.once("connect", () => {
      socket.removeListener("error", reject)
      resolve(socket)
    })
    socket.once("error", reject)
  })

/**
 * The reader's bounds.
 *
 * @since 0.3.0
 * @category models
 */
export interface Settings {
  /** Hosts read whatever their addresses (lower case, without port). */
  readonly allow_hosts: ReadonlyArray<string>
  /** The whole read, redirects included (ms). */
  readonly timeout: number
  /** Bytes read at most, and decoded at most when compressed. */
  readonly max_bytes: number
  readonly max_redirects: number
  /** The text returned, at most, in estimated tokens. */
  readonly max_tokens: number
}

/**
 * `DEIXIS_FETCH_ALLOW_HOSTS` (comma-separated host names or addresses, none by default),
 * `DEIXIS_FETCH_TIMEOUT` (10 seconds), `DEIXIS_FETCH_MAX_BYTES` (1 MiB),
 * `DEIXIS_FETCH_MAX_REDIRECTS` (3), `DEIXIS_FETCH_MAX_TOKENS` (2000).
 *
 * @since 0.3.0
 * @category config
 */
export const config: Config.Config<Settings> = Config.all({
  allow_hosts: Config.array(Config.string(), "DEIXIS_FETCH_ALLOW_HOSTS").pipe(
    Config.map((hosts) => hosts.map((h) => hostOf(h.trim())).filter((h) => h !== "")),
    Config.withDefault([] as ReadonlyArray<string>)
  ),
  timeout: millis("DEIXIS_FETCH_TIMEOUT", "10 seconds"),
  max_bytes: positiveInt("DEIXIS_FETCH_MAX_BYTES", 1024 * 1024),
  max_redirects: Config.integer("DEIXIS_FETCH_MAX_REDIRECTS").pipe(
    Config.withDefault(3),
    Config.validate({ message: "DEIXIS_FETCH_MAX_REDIRECTS must be between 0 and 10", validation: (n) => n >= 0 && n <= 10 })
  ),
  max_tokens: positiveInt("DEIXIS_FETCH_MAX_TOKENS", 2000)
})

/**
 * The defaults: {@link config} read with no keys set.
 *
 * @since 0.3.0
 * @category constants
 */
export const defaults: Settings = defaultsOf(config)

/**
 * Why a read was refused or failed, for the model to explain.
 *
 * @since 0.3.0
 * @category schemas
 */
export const FailureReason = Schema.Literal(
  "invalid_url",
  "unsupported_scheme",
  "credentials_in_url",
  "forbidden_host",
  "forbidden_address",
  "address_changed",
  "dns_failed",
  "connect_failed",
  "tls_failed",
  "timeout",
  "too_many_redirects",
  "http_status",
  "unsupported_content_type",
  "unsupported_charset",
  "protocol_error"
)

/**
 * @since 0.3.0
 * @category models
 */
export type FailureReason = typeof FailureReason.Type

/**
 * A read refused (the URL or an address it led to is not one to read) or failed. `host` is the
 * host concerned (never a path or query).
 *
 * @since 0.3.0
 * @category errors
 */
export class ReadUrlError extends Schema.TaggedError<ReadUrlError>()(
  "ReadUrlError",
  { reason: FailureReason, message: Schema.String, host: Schema.optional(Schema.String), status: Schema.optional(Schema.Number) },
  httpStatus(422)
) {}

/**
 * A page read: where it ended (after redirects), what it said and how much of it.
 *
 * @since 0.3.0
 * @category schemas
 */
export const Page = Schema.Struct({
  url: Schema.String,
  final_url: Schema.String,
  status: Schema.Number,
  content_type: Schema.String,
  charset: Schema.String,
  title: Schema.NullOr(Schema.String),
  text: Schema.String,
  /** Bytes of the body read (after decompression). */
  bytes: Schema.Number,
  /** The body was longer than the byte bound: only its start was read. */
  truncated_bytes: Schema.Boolean,
  /** Estimated tokens of `text`. */
  tokens: Schema.Number,
  /** What was cut to fit the token budget, said plainly; null when nothing was. */
  cut: Schema.NullOr(Schema.String),
  redirects: Schema.Number
}).annotations({ identifier: "Page" })

/**
 * @since 0.3.0
 * @category models
 */
export type Page = typeof Page.Type

/**
 * What one read came to, for an app's own metrics (the bot's Prometheus registry).
 *
 * @since 0.3.0
 * @category models
 */
export interface FetchRecord {
  readonly host: string
  /** `ok`, or the failure's reason. */
  readonly outcome: "ok" | FailureReason
  readonly status: number | null
  readonly bytes: number
  readonly millis: number
}

/**
 * The reader.
 *
 * @since 0.3.0
 * @category models
 */
export interface UrlReaderShape {
  readonly read: (url: string) => Effect.Effect<Page, ReadUrlError>
}

/**
 * @since 0.3.0
 * @category tags
 */
export class UrlReader extends Context.Tag("@deixis/tools/UrlReader")<UrlReader, UrlReaderShape>() {}

/**
 * Reads, by outcome (`ok` or a failure reason).
 *
 * @since 0.3.0
 * @category metrics
 */
export const reads = Metric.counter("deixis_fetch_total", { description: "URL reads by read_url, by outcome (ok or why not)", incremental: true })

/**
 * Body bytes read.
 *
 * @since 0.3.0
 * @category metrics
 */
export const bytesRead = Metric.counter("deixis_fetch_bytes_total", { description: "Body bytes read by read_url", incremental: true })

/**
 * The time of a read, redirects included.
 *
 * @since 0.3.0
 * @category metrics
 */
export const readSeconds = Metric.histogram(
  "deixis_fetch_duration_seconds",
  MetricBoundaries.fromIterable([0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
  "Time of a read_url read, redirects included"
)

/**
 * A reader over `settings` (merged over the defaults), resolving with `deps.resolver` and
 * connecting with `deps.connector` (the system's by default); `deps.onRead` sees every read.
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (
  settings: Partial<Settings> = {},
  deps: { readonly resolver?: Resolver; readonly connector?: Connector; readonly onRead?: (record: FetchRecord) => void } = {}
): UrlReaderShape => {
  const bounds: Settings = { ...defaults, ...settings, allow_hosts: (settings.allow_hosts ?? defaults.allow_hosts).map(hostOf) }
  const resolver = deps.resolver ?? systemResolver
  const connector = deps.connector ?? systemConnector
  const read = (url: string): Effect.Effect<Page, ReadUrlError> => {
    const started = Date.now()
    const host = (() => {
      try {
        return hostOf(new URL(url).hostname)
      } catch {
        return "(invalid)"
      }
    })()
    const done = (outcome: FetchRecord["outcome"], status: number | null, bytes: number) => {
      const record: FetchRecord = { host, outcome, status, bytes, millis: Date.now() - started }
      deps.onRead?.(record)
      return Effect.all([
        Metric.increment(Metric.tagged(reads, "outcome", outcome)),
        Metric.incrementBy(bytesRead, bytes),
        Metric.update(readSeconds, record.millis / 1000),
        Effect.logInfo("url read").pipe(Effect.annotateLogs({
          host,
          outcome,
          status: status ?? "none",
          bytes,
          ms: record.millis
        }))
      ], { discard: true })
    }
    return Effect.tryPromise({
      try: (signal) => fetchPage(url, { resolver, connector, settings: bounds, signal }),
      catch: (error) =>
        error instanceof FetchFailure
          ? new ReadUrlError({ reason: error.reason, message: error.message, ...(error.host === undefined ? {} : { host: error.host }), ...(error.status === undefined ? {} : { status: error.status }) })
          : new ReadUrlError({ reason: "protocol_error", message: `the read failed: ${error instanceof Error ? error.message : String(error)}`, host })
    }).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(bounds.timeout),
        onTimeout: () => new ReadUrlError({ reason: "timeout", message: `no complete answer within ${Duration.format(Duration.millis(bounds.timeout))}`, host })
      }),
      Effect.tap((page) => done("ok", page.status, page.bytes)),
      Effect.tapError((error) => done(error.reason, error.status ?? null, 0))
    )
  }
  return { read }
}

/**
 * The reader as a layer.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = (
  settings: Partial<Settings> = {},
  deps: Parameters<typeof make>[1] = {}
): Layer.Layer<UrlReader> => Layer.sync(UrlReader, () => make(settings, deps))

/**
 * The reader configured from `DEIXIS_FETCH_*` keys.
 *
 * @since 0.3.0
 * @category layers
 */
export const layerConfig = (deps: Parameters<typeof make>[1] = {}): Layer.Layer<UrlReader, ConfigError.ConfigError> =>
  Layer.effect(UrlReader, Effect.map(config, (settings) => make(settings, deps)))
