/**
 * Bot API calls with bounded retries: a 429 waits the `retry_after` Telegram asked for, a 5xx
 * or a network error backs off exponentially, anything else fails at once. Delays are
 * `Effect.sleep`, so they run on the Clock (and on `TestClock` in tests).
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { SendPolicy } from "./BotConfig.js"

/**
 * A Bot API call failed: `code` is Telegram's `error_code` (or the HTTP status), null for a
 * network error.
 *
 * @since 0.1.0
 * @category errors
 */
export class SendError extends Data.TaggedError("SendError")<{
  readonly method: string
  readonly code: number | null
  readonly description: string
  readonly retry_after: number | null
}> {
  override get message() {
    return `${this.method} failed: ${this.code ?? "network"} ${this.description}`
  }
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/**
 * Reads Telegraf's `TelegramError` (and fetch's errors) into a {@link SendError}.
 *
 * @since 0.1.0
 * @category errors
 */
export const classify = (method: string, error: unknown): SendError => {
  const response = isRecord(error) && isRecord(error["response"]) ? error["response"] : undefined
  const code = response !== undefined && typeof response["error_code"] === "number" ? response["error_code"] : null
  const parameters = response !== undefined && isRecord(response["parameters"]) ? response["parameters"] : undefined
  const retryAfter = parameters !== undefined && typeof parameters["retry_after"] === "number" ? parameters["retry_after"] : null
  const description = response !== undefined && typeof response["description"] === "string"
    ? response["description"]
    : error instanceof Error
    ? error.message
    : String(error)
  return new SendError({ method, code, description, retry_after: retryAfter })
}

/**
 * Whether a failure is worth another try: 429, 5xx, or no answer at all.
 *
 * @since 0.1.0
 * @category retrying
 */
export const isRetryable = (error: SendError): boolean => error.code === null || error.code === 429 || error.code >= 500

/**
 * The wait before attempt `attempt + 1` (attempt counts from 0), or none to give up.
 *
 * @since 0.1.0
 * @category retrying
 */
export const retryDelay = (error: SendError, attempt: number, policy: SendPolicy): Option.Option<Duration.Duration> => {
  if (!isRetryable(error) || attempt + 1 >= policy.maxAttempts) return Option.none()
  const wanted = error.code === 429 && error.retry_after !== null
    ? Duration.seconds(Math.max(0, error.retry_after))
    : Duration.times(policy.baseDelay, 2 ** attempt)
  return Option.some(Duration.min(wanted, policy.maxDelay))
}

/**
 * Runs one Bot API call (`f`, given an abort signal) with the policy's retries.
 *
 * @since 0.1.0
 * @category sending
 */
export const send = <A>(
  method: string,
  f: (signal: AbortSignal) => Promise<A>,
  policy: SendPolicy
): Effect.Effect<A, SendError> => {
  const attempt = Effect.tryPromise({ try: f, catch: (error) => classify(method, error) })
  const loop = (n: number): Effect.Effect<A, SendError> =>
    Effect.catchAll(attempt, (error) =>
      Option.match(retryDelay(error, n, policy), {
        onNone: () => Effect.fail(error),
        onSome: (delay) =>
          Effect.logInfo("Bot API call failed; retrying").pipe(
            Effect.annotateLogs({ method, code: error.code ?? "network", retry_in_ms: Duration.toMillis(delay), attempt: n + 1 }),
            Effect.zipRight(Effect.sleep(delay)),
            Effect.zipRight(loop(n + 1))
          )
      }))
  return loop(0)
}
