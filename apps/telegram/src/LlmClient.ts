/**
 * The model's side of LLM mode: one call to an OpenAI-compatible chat-completions server
 * (`POST {LLM_BASE_URL}/chat/completions`), answered as one JSON body or streamed as
 * server-sent events, bounded by `LLM_TIMEOUT`.
 *
 * @since 0.4.0
 */
import { DeixisToolkit } from "@deixis/tools"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { LlmConfig } from "./LlmConfig.js"


/**
 * A tool call as the server sends it (`arguments` a JSON string; some servers send an object).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolCall = Schema.Struct({
  id: Schema.optional(Schema.NullOr(Schema.String)),
  type: Schema.optional(Schema.String),
  function: Schema.Struct({
    name: Schema.String,
    arguments: Schema.optional(Schema.Union(Schema.String, Schema.Record({ key: Schema.String, value: Schema.Unknown }), Schema.Null))
  })
})

/**
 * The part of a chat-completions response the bot reads.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatResponse = Schema.Struct({
  choices: Schema.NonEmptyArray(Schema.Struct({
    message: Schema.Struct({
      content: Schema.optional(Schema.NullOr(Schema.String)),
      tool_calls: Schema.optional(Schema.NullOr(Schema.Array(ToolCall)))
    })
  }))
})

/**
 * @since 0.1.0
 * @category models
 */
export type ChatResponse = typeof ChatResponse.Type

/**
 * A request message.
 *
 * @since 0.1.0
 * @category models
 */
export type ChatMessage =
  | { readonly role: "system" | "user"; readonly content: string }
  | {
    readonly role: "assistant"
    readonly content: string | null
    readonly tool_calls?: ReadonlyArray<
      { readonly id: string; readonly type: "function"; readonly function: { readonly name: string; readonly arguments: string } }
    >
  }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

/**
 * The `tools` of a request: every deixis tool as a function.
 *
 * @since 0.1.0
 * @category constants
 */
export const tools = DeixisToolkit.definitions.map((f) => ({ type: "function" as const, function: f }))

/**
 * A model call that did not give an answer.
 *
 * @since 0.1.0
 * @category errors
 */
export class LlmError extends Data.TaggedError("LlmError")<{
  readonly reason: "timeout" | "status" | "decode" | "transport"
  readonly detail: string
  /** Whether this was the conversation's first model call. */
  readonly first: boolean
}> {
  override get message() {
    return `model call failed (${this.reason}): ${this.detail}`
  }
}

const decodeResponse = Schema.decodeUnknown(ChatResponse)

/**
 * One chat-completions call, bounded by the timeout.
 *
 * @since 0.1.0
 * @category calls
 */
export const complete = <R = never>(
  client: HttpClient.HttpClient,
  settings: LlmConfig,
  body: { readonly messages: ReadonlyArray<ChatMessage>; readonly tools?: typeof tools },
  first = false,
  onText?: (text: string) => Effect.Effect<void, never, R>
): Effect.Effect<ChatResponse, LlmError, R> =>
  HttpClientRequest.post(`${settings.baseUrl}/chat/completions`).pipe(
    // With `onText`, the answer is asked as a stream (server-sent events); a server that
    // answers with one JSON body anyway is read as before.
    HttpClientRequest.bodyUnsafeJson({ model: settings.model, stream: onText !== undefined, ...body }),
    Option.match(settings.apiKey, {
      onNone: () => (r: HttpClientRequest.HttpClientRequest) => r,
      onSome: (key) => HttpClientRequest.bearerToken(Redacted.value(key))
    }),
    client.execute,
    Effect.mapError((error) => new LlmError({ reason: "transport", detail: error.message, first })),
    Effect.flatMap((response) =>
      response.status >= 200 && response.status < 300
        ? onText !== undefined && (response.headers["content-type"] ?? "").includes("text/event-stream")
          ? Effect.mapError(readStream(response.stream, onText), (error) => new LlmError({ reason: "decode", detail: error.message, first }))
          : Effect.mapError(response.json, (error) => new LlmError({ reason: "decode", detail: error.message, first }))
        : Effect.flatMap(
          Effect.orElseSucceed(response.text, () => ""),
          (text) => Effect.fail(new LlmError({ reason: "status", detail: `HTTP ${response.status} ${text.slice(0, 300)}`, first }))
        )
    ),
    Effect.flatMap((json) => Effect.mapError(decodeResponse(json), (error) => new LlmError({ reason: "decode", detail: error.message, first }))),
    Effect.scoped,
    Effect.timeoutFail({
      duration: settings.timeout,
      onTimeout: () => new LlmError({ reason: "timeout", detail: `no answer within ${Duration.format(settings.timeout)}`, first })
    })
  )

const StreamChunk = Schema.Struct({
  choices: Schema.optional(Schema.Array(Schema.Struct({
    delta: Schema.optional(Schema.Struct({
      content: Schema.optional(Schema.NullOr(Schema.String)),
      tool_calls: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
        index: Schema.optional(Schema.Number),
        id: Schema.optional(Schema.NullOr(Schema.String)),
        function: Schema.optional(Schema.Struct({
          name: Schema.optional(Schema.NullOr(Schema.String)),
          arguments: Schema.optional(Schema.NullOr(Schema.String))
        }))
      }))))
    }))
  })))
})
const decodeChunk = Schema.decodeUnknownEither(Schema.parseJson(StreamChunk))
// The longest answer and tool arguments a stream may build (Telegram's limit is far below).
const maxStreamed = 64 * 1024

/**
 * A streamed chat completion (server-sent events of OpenAI's `chat.completion.chunk`) read
 * into the response it amounts to; `onText` gets the answer so far at every content delta.
 */
const readStream = <E, R>(stream: Stream.Stream<Uint8Array, E>, onText: (text: string) => Effect.Effect<void, never, R>) => {
  let content = ""
  const calls: Array<{ id: string | null; name: string; args: string }> = []
  return stream.pipe(
    Stream.decodeText(),
    Stream.splitLines,
    Stream.runForEach((line) => {
      if (!line.startsWith("data:")) return Effect.void
      const data = line.slice(5).trim()
      if (data === "[DONE]") return Effect.void
      const chunk = decodeChunk(data)
      if (Either.isLeft(chunk)) return Effect.void
      const delta = chunk.right.choices?.[0]?.delta
      for (const call of delta?.tool_calls ?? []) {
        const i = Math.max(0, Math.min(63, call.index ?? calls.length))
        const entry = calls[i] ?? (calls[i] = { id: null, name: "", args: "" })
        if (call.id) entry.id = call.id
        if (call.function?.name) entry.name += call.function.name
        if (call.function?.arguments && entry.args.length < maxStreamed) entry.args += call.function.arguments
      }
      if (!delta?.content || content.length >= maxStreamed) return Effect.void
      content += delta.content
      return onText(content)
    }),
    Effect.map((): ChatResponse => ({
      choices: [{
        message: {
          content: content === "" ? null : content,
          ...(calls.length === 0 ? {} : {
            tool_calls: calls.filter((c) => c !== undefined && c.name !== "").map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.args } }))
          })
        }
      }]
    }))
  )
}

