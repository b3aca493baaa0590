/**
 * Bot API calls with a timeout on every attempt and bounded retries: a 429 waits the
 * `retry_after` Telegram asked for, a 5xx or a network error backs off exponentially, anything
 * else fails at once. A method that posts (`sendMessage`, `sendPoll`, … — see
 * {@link isPosting}) is retried only on 429 or when the request provably never reached
 * Telegram ({@link SendError}'s `unsent`: connection refused, a name that did not resolve, a
 * TLS handshake that failed): after a reset, a timeout or a 5xx it may have been posted, and a
 * second post would be a second message. Delays are `Effect.sleep`, so they run on the Clock
 * (and on `TestClock` in tests). Every failure is counted by method and code.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as http from "node:http"
import * as https from "node:https"
import { Telegram, TelegramError } from "telegraf"
import type { SendPolicy } from "./BotConfig.js"
import * as Metrics from "./Metrics.js"

/**
 * A Bot API call failed: `code` is Telegram's `error_code` (or the HTTP status), null for a
 * network error or a timeout.
 *
 * @since 0.1.0
 * @category errors
 */
export class SendError extends Data.TaggedError("SendError")<{
  readonly method: string
  readonly code: number | null
  readonly description: string
  readonly retry_after: number | null
  /** A supergroup's new id (`parameters.migrate_to_chat_id`), when the chat was upgraded. */
  readonly migrate_to_chat_id?: number | null
  readonly timed_out?: boolean
  /** The request provably never reached Telegram (see {@link neverSent}). */
  readonly unsent?: boolean
}> {
  override get message() {
    return `${this.method} failed: ${this.code ?? (this.timed_out === true ? "timeout" : "network")} ${this.description}`
  }
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

// A Bot API URL's token segment, whatever its shape (`/bot<token>/getMe`, `/file/bot<token>/…`).
const botApiToken = /\/(bot|user)[^/\s]+\//g

/**
 * A text with every Bot API URL's token replaced by `<redacted>`. fetch's network errors name
 * the URL they could not reach, token and all; Telegraf redacts only a token of the usual
 * shape, so this one rule covers any.
 *
 * @since 0.3.0
 * @category errors
 */
export const scrub = (text: string): string => text.replace(botApiToken, "/$1<redacted>/")

/**
 * Reads Telegraf's `TelegramError` (and fetch's errors) into a {@link SendError}, its
 * description scrubbed of the token ({@link scrub}) before anything logs or stores it.
 *
 * @since 0.1.0
 * @category errors
 */
export const classify = (method: string, error: unknown): SendError => {
  const response = isRecord(error) && isRecord(error["response"]) ? error["response"] : undefined
  const code = response !== undefined && typeof response["error_code"] === "number" ? response["error_code"] : null
  const parameters = response !== undefined && isRecord(response["parameters"]) ? response["parameters"] : undefined
  const retryAfter = parameters !== undefined && typeof parameters["retry_after"] === "number" ? parameters["retry_after"] : null
  const migrate = parameters !== undefined && typeof parameters["migrate_to_chat_id"] === "number" ? parameters["migrate_to_chat_id"] : null
  const description = response !== undefined && typeof response["description"] === "string"
    ? response["description"]
    : error instanceof Error
    ? error.message
    : String(error)
  return new SendError({ method, code, description: scrub(description), retry_after: retryAfter, migrate_to_chat_id: migrate, unsent: code === null && neverSent(error) })
}

/**
 * Node's error codes for a connection that never carried the request: refused, unreachable, a
 * name that did not resolve, a TLS certificate or handshake refused before anything was sent.
 * A reset, a hang-up or a timeout is not among them: they can come after Telegram got it.
 */
const unsentCodes = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "CERT_HAS_EXPIRED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "ERR_TLS_CERT_ALTNAME_INVALID"
])

/**
 * Whether a client error proves the request never reached the server: its code (or its
 * cause's, as fetch wraps it) is one of a connection never made ({@link unsentCodes}, or a
 * TLS handshake error, `ERR_SSL_*`).
 *
 * @since 0.3.0
 * @category retrying
 */
export const neverSent = (error: unknown): boolean => {
  for (let e: unknown = error, depth = 0; isRecord(e) && depth < 3; e = e["cause"], depth++) {
    const code = e["code"]
    if (typeof code === "string" && (unsentCodes.has(code) || code.startsWith("ERR_SSL_"))) return true
  }
  return false
}

/**
 * Whether a failure is worth another try: 429, 5xx, or no answer at all.
 *
 * @since 0.1.0
 * @category retrying
 */
export const isRetryable = (error: SendError): boolean => error.code === null || error.code === 429 || error.code >= 500

/**
 * Whether a method posts something (a message, a poll, a file; a forward or a copy): repeating
 * one that may have reached Telegram could post twice. `sendChatAction` (a typing indicator)
 * posts nothing.
 *
 * @since 0.3.0
 * @category retrying
 */
export const isPosting = (method: string): boolean =>
  (method.startsWith("send") && method !== "sendChatAction") || method.startsWith("forwardMessage") || method.startsWith("copyMessage")

/**
 * The wait before attempt `attempt + 1` (attempt counts from 0), or none to give up.
 *
 * @since 0.1.0
 * @category retrying
 */
export const retryDelay = (error: SendError, attempt: number, policy: SendPolicy): Option.Option<Duration.Duration> => {
  if (!isRetryable(error) || attempt + 1 >= policy.maxAttempts) return Option.none()
  // grammY's auto-retry retries every method on 429, 5xx and any network error (unless told to
  // rethrow them); here a posting method is retried only when it provably did not post.
  if (isPosting(error.method) && error.code !== 429 && error.unsent !== true) return Option.none()
  const wanted = error.code === 429 && error.retry_after !== null
    ? Duration.seconds(Math.max(0, error.retry_after))
    : Duration.times(policy.baseDelay, 2 ** attempt)
  return Option.some(Duration.min(wanted, policy.maxDelay))
}

// The live clock's `sleep` (a method of its class): under it, a call's timeout is a timer of its own.
const liveSleep = Clock.make().sleep
const maxTimerMillis = 2 ** 31 - 1

/**
 * One attempt with its timeout on a timer of its own: what `Effect.timeoutFail` does on the live
 * clock (the call aborted when the time is up or the fiber is interrupted) without racing the
 * call against a sleep in two fibers of their own — about a third of a call's CPU. Any other
 * clock (`TestClock`) keeps Effect's timeout, so time in tests still moves only when told.
 */
const timed = <A>(method: string, f: (signal: AbortSignal) => Promise<A>, millis: number, timedOut: () => SendError) =>
  Effect.async<A, SendError>((resume) => {
    const controller = new AbortController()
    let done = false
    const finish = (result: Effect.Effect<A, SendError>) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resume(result)
    }
    const timer = setTimeout(() => {
      controller.abort()
      finish(Effect.fail(timedOut()))
    }, millis)
    try {
      f(controller.signal).then((a) => finish(Effect.succeed(a)), (error) => finish(Effect.fail(classify(method, error))))
    } catch (error) {
      finish(Effect.fail(classify(method, error)))
    }
    return Effect.sync(() => {
      done = true
      clearTimeout(timer)
      controller.abort()
    })
  })

/**
 * Runs one Bot API call (`f`, given an abort signal) with the policy's timeout per attempt and
 * retries.
 *
 * @since 0.1.0
 * @category sending
 */
export const send = <A>(
  method: string,
  f: (signal: AbortSignal) => Promise<A>,
  policy: SendPolicy
): Effect.Effect<A, SendError> => {
  const timedOut = () =>
    new SendError({
      method,
      code: null,
      description: `no answer within ${Duration.format(policy.timeout)}`,
      retry_after: null,
      timed_out: true
    })
  const millis = Duration.toMillis(policy.timeout)
  const attempt = Effect.clockWith((clock) =>
    clock.sleep === liveSleep && millis <= maxTimerMillis
      ? timed(method, f, millis, timedOut)
      : Effect.tryPromise({ try: f, catch: (error) => classify(method, error) }).pipe(
        Effect.timeoutFail({ duration: policy.timeout, onTimeout: timedOut })
      )
  ).pipe(
    Effect.tapError((error) => Metrics.sendFailed(method, error.code === null ? (error.timed_out === true ? "timeout" : "network") : String(error.code)))
  )
  const loop = (n: number): Effect.Effect<A, SendError> =>
    Effect.catchAll(attempt, (error) =>
      Option.match(retryDelay(error, n, policy), {
        onNone: () => Effect.fail(error),
        onSome: (delay) =>
          Effect.logInfo("Bot API call failed; retrying").pipe(
            Effect.annotateLogs({
              method,
              code: error.code ?? (error.timed_out === true ? "timeout" : "network"),
              retry_in_ms: Duration.toMillis(delay),
              attempt: n + 1
            }),
            Effect.zipRight(Effect.sleep(delay)),
            Effect.zipRight(loop(n + 1))
          )
      }))
  return loop(0)
}

// Telegraf's test for a payload with a file to upload (sent as multipart/form-data): an
// `InputFile` (`{ source }` or `{ url }`) as a value, or as a `media` of one or of an album's.
const isRecordOf = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null
const isFile = (u: unknown) => isRecordOf(u) && (Boolean(u["source"]) || Boolean(u["url"]))
const includesMedia = (payload: Record<string, unknown>): boolean =>
  Object.entries(payload).some(([key, value]) =>
    key !== "link_preview_options" && (Array.isArray(value)
      ? value.some((v) => isRecordOf(v) && isRecordOf(v["media"]) && isFile(v["media"]))
      : isFile(value) || (isRecordOf(value) && isRecordOf(value["media"]) && isFile(value["media"])))
  )

// Telegraf's JSON body: null and undefined fields left out.
const replacer = (_: string, value: unknown) => (value === null ? undefined : value)

/**
 * A Bot API client (Telegraf's `Telegram`, what a handler's context is built with) whose calls
 * without a file go out as one `http`/`https` request on a keep-alive agent — the same agent,
 * body and answers as Telegraf's own path (node-fetch: a `URL`, a `Request`, `Headers`, a
 * compressed body stream and a timer per call), at about a third of its CPU. A call with a
 * file to upload still takes Telegraf's path. As Telegraf: Telegram's refusal (or a 5xx)
 * rejects with a `TelegramError`, a network error as Node reports it.
 *
 * @since 0.4.0
 * @category sending
 */
export const client = (token: string, apiRoot: string): Telegram => {
  const telegram = new Telegram(token, { apiRoot, webhookReply: false })
  const base = new URL(`./bot${token}/`, apiRoot)
  const secure = base.protocol === "https:"
  // Telegraf's agents: its own keep-alive agent over https, Node's global one (keep-alive) over http.
  const agent = secure ? new https.Agent({ keepAlive: true, keepAliveMsecs: 10_000 }) : http.globalAgent
  const request = secure ? https.request : http.request
  const target = { protocol: base.protocol, hostname: base.hostname, port: base.port, agent, method: "POST" }
  const telegrafs = telegram.callApi.bind(telegram)
  // As node-fetch words a network error: the URL (its token scrubbed by `classify`), Node's error as its cause and its code kept.
  const failed = (method: string, error: Error & { readonly code?: unknown }) =>
    Object.assign(new Error(`request to ${base.href}${method} failed, reason: ${error.message}`, { cause: error }), { code: error.code })
  const post = (method: string, payload: Record<string, unknown>, signal: AbortSignal | undefined) =>
    new Promise<unknown>((resolve, reject) => {
      const body = JSON.stringify(payload, replacer)
      const req = request({
        ...target,
        path: `${base.pathname}${method}`,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        ...(signal === undefined ? {} : { signal })
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("error", (error) => reject(failed(method, error)))
        res.on("aborted", () => reject(failed(method, new Error("the answer was cut off"))))
        res.on("end", () => {
          const status = res.statusCode ?? 0
          if (status >= 500) return reject(new TelegramError({ error_code: status, description: res.statusMessage ?? "" }, { method, payload }))
          let data: unknown
          try {
            data = JSON.parse(Buffer.concat(chunks).toString("utf8"))
          } catch (error) {
            return reject(new Error(`invalid JSON in the answer to ${method}: ${error instanceof Error ? error.message : String(error)}`))
          }
          if (isRecordOf(data) && data["ok"] === true) return resolve(data["result"])
          reject(new TelegramError(data as ConstructorParameters<typeof TelegramError>[0], { method, payload }))
        })
      })
      req.on("error", (error) => reject(failed(method, error)))
      req.end(body)
    })
  telegram.callApi = ((method: string, payload: Record<string, unknown>, options: { readonly signal?: AbortSignal } = {}) =>
    includesMedia(payload)
      ? telegrafs(method as never, payload as never, options as never)
      : post(method, payload, options.signal)) as Telegram["callApi"]
  return telegram
}
