/**
 * A fake Telegram Bot API server on loopback, for testing bots with the real Telegraf client
 * (or any HTTP client): it records every call, answers the way Telegram does, and misbehaves
 * on request the way Telegram does.
 *
 * - Sent messages get ids, keep their chat and thread, and come back as `Message`s; polls get
 *   ids, `stopPoll` closes them; `getChatMember` answers the statuses a test sets.
 * - `getUpdates` honours `offset` (updates below it are confirmed and dropped; the others are
 *   delivered again until confirmed), holds a long poll until updates arrive, and answers
 *   **409 Conflict** while a webhook is set or when a newer `getUpdates` replaces a pending one.
 * - `setWebhook` / `deleteWebhook` / `getWebhookInfo`, `setMyCommands` / `getMyCommands`.
 * - `getMe` reports `can_read_all_group_messages` (privacy mode off) when asked to.
 * - Bot API 9.2–10.1: a send with `direct_messages_topic_id` comes back in that direct-messages
 *   topic (a chat with `is_direct_messages`), one with `message_thread_id` to a private chat in
 *   that private-chat topic; `sendMessageDraft` / `sendRichMessageDraft` take a draft (private
 *   chats only, as Telegram: elsewhere a 400; `draft_id` must be non-zero); `sendRichMessage`
 *   sends a `rich_message`; `answerGuestQuery` answers a `guest_query_id` once with a
 *   `SentGuestMessage`.
 * - Failures on request: `failNext` (a 429 with `retry_after`, a 5xx, any error), optionally
 *   only for calls matching a predicate (one chat); `hang` holds matching calls unanswered
 *   until released (an unanswered call is not delivered).
 *
 * ```ts
 * import * as FakeBotApi from "@deixis/telegraf/testing"
 * const api = yield* FakeBotApi.make({ username: "my_bot" })
 * const bot = new Telegraf(token, { telegram: { apiRoot: api.apiRoot } })
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * One call the server received.
 *
 * @since 0.1.0
 * @category models
 */
export interface ApiCall {
  readonly method: string
  readonly payload: Record<string, unknown>
  readonly token: string
  /** `performance.now()` when the call arrived. */
  readonly at: number
  /** Whether an answer was sent: false while the call hangs (or when it never got one). */
  readonly answered: boolean
  /** The HTTP status answered, if any. */
  readonly status: number | null
}

/**
 * A Bot API error answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Failure {
  readonly status?: number
  readonly error_code: number
  readonly description: string
  readonly parameters?: { readonly retry_after?: number; readonly migrate_to_chat_id?: number }
}

/**
 * Which calls a failure or a hang applies to.
 *
 * @since 0.1.0
 * @category models
 */
export type Matcher = (call: { readonly payload: Record<string, unknown>; readonly token: string }) => boolean

/**
 * A hang: calls matching it wait until `release` (then they are answered normally).
 *
 * @since 0.1.0
 * @category models
 */
export interface Hang {
  /** Answers the held calls and stops holding new ones. */
  readonly release: () => void
  /** How many calls it holds now. */
  readonly held: () => number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface FakeBotApi {
  readonly apiRoot: string
  readonly bot: {
    readonly id: number
    readonly is_bot: true
    readonly first_name: string
    readonly username: string
    readonly can_join_groups: boolean
    readonly can_read_all_group_messages: boolean
    readonly supports_inline_queries: boolean
  }
  /** Every call but `getUpdates`, in arrival order. */
  readonly calls: () => ReadonlyArray<ApiCall>
  readonly callsOf: (method: string) => ReadonlyArray<ApiCall>
  /** The answered `sendMessage` texts (and `sendPoll` questions), in order. */
  readonly delivered: (method?: string) => ReadonlyArray<ApiCall>
  /**
   * How many `getUpdates` calls arrived, how many were answered 409, and the parameters of the
   * last 1,000 (`offset`, `limit`, `timeout` as sent; absent ones undefined), oldest first.
   */
  readonly polls: () => {
    readonly total: number
    readonly conflicts: number
    readonly requests: ReadonlyArray<{ readonly offset: unknown; readonly limit: unknown; readonly timeout: unknown }>
  }
  /** The next `times` calls of `method` (matching `where`) fail with `failure`. */
  readonly failNext: (method: string, failure: Failure, times?: number, where?: Matcher) => void
  /**
   * The next `times` calls of `method` (matching `where`) are received — recorded, as Telegram
   * would have them — and then their connection is reset without an answer: what a network
   * failure after the request was sent looks like to the client.
   */
  readonly resetNext: (method: string, times?: number, where?: Matcher) => void
  /** Holds calls of `method` matching `where` unanswered until released. */
  readonly hang: (method: string, where?: Matcher) => Hang
  /**
   * When `getUpdates` first handed out the update with this id (`performance.now()`), if it
   * has: where a latency "from the update's arrival at the bot" starts.
   */
  readonly servedAt: (updateId: number) => number | undefined
  /** Queues updates for getUpdates. */
  readonly pushUpdates: (...updates: ReadonlyArray<unknown>) => void
  /** Sets a user's status in a chat (`creator`, `administrator`, `member`, `left`…); `member` otherwise. */
  readonly setMember: (chatId: number, userId: number, status: string) => void
  /** The webhook currently set, if any. */
  readonly webhook: () => { readonly url: string; readonly secret_token: string | undefined; readonly allowed_updates: unknown } | null
  /** The commands set by `setMyCommands`, by scope type (and language code when given). */
  readonly commands: () => ReadonlyMap<string, ReadonlyArray<{ readonly command: string; readonly description: string }>>
  /** Resolves with the n-th (1-based) call of `method` matching `where`, now or when it arrives. */
  readonly waitFor: (
    method: string,
    where?: (payload: Record<string, unknown>) => boolean,
    nth?: number
  ) => Effect.Effect<ApiCall>
}


interface MutableCall {
  method: string
  payload: Record<string, unknown>
  token: string
  at: number
  answered: boolean
  status: number | null
}

/**
 * Starts the server on a random loopback port for the lifetime of the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: {
    readonly botId?: number
    readonly username?: string
    /** `getMe`'s `can_read_all_group_messages` (privacy mode off). Default false. */
    readonly readsAllGroupMessages?: boolean
    /** How long an empty long poll is held at most, in milliseconds. Default 100. */
    readonly longPollMillis?: number
    /** The `date` of the messages it sends (epoch seconds). Default 1771000000. */
    readonly date?: number
  } = {}
): Effect.Effect<FakeBotApi, never, Scope.Scope> =>
  Effect.gen(function*() {
    const bot = {
      id: options.botId ?? 7000000001,
      is_bot: true as const,
      first_name: "Deixis",
      username: options.username ?? "deixis_bot",
      can_join_groups: true,
      can_read_all_group_messages: options.readsAllGroupMessages ?? false,
      supports_inline_queries: false
    }
    const longPoll = options.longPollMillis ?? 100
    const calls: Array<MutableCall> = []
    const failures = new Map<string, Array<{ failure: Failure; where: Matcher | undefined }>>()
    const resets = new Map<string, Array<Matcher | undefined>>()
    const hangs = new Map<string, Array<{ where: Matcher | undefined; held: Array<() => void>; released: boolean }>>()
    let queue: Array<unknown> = []
    const firstServed = new Map<number, number>()
    const listeners = new Set<() => void>()
    const pollWaiters = new Set<() => void>()
    const members = new Map<string, string>()
    const polls = new Map<string, Record<string, unknown>>()
    const commands = new Map<string, ReadonlyArray<{ command: string; description: string }>>()
    let webhook: { url: string; secret_token: string | undefined; allowed_updates: unknown } | null = null
    let pendingPoll: ((conflict: boolean) => void) | null = null
    let pollCount = 0
    const pollRequests: Array<{ offset: unknown; limit: unknown; timeout: unknown }> = []
    let conflictCount = 0
    let nextMessageId = 10_000
    let nextPollId = 1
    const notify = () => {
      for (const listener of [...listeners]) listener()
    }

    const messageFor = (payload: Record<string, unknown>, extra: Record<string, unknown>) => {
      const thread = payload["message_thread_id"]
      const dmTopic = payload["direct_messages_topic_id"]
      const chatId = Number(payload["chat_id"])
      const chat = typeof dmTopic === "number"
        ? { id: chatId, type: "supergroup", is_direct_messages: true, title: "Chat" }
        : { id: chatId, type: chatId < 0 ? "supergroup" : "private", ...(chatId < 0 ? { is_forum: true, title: "Chat" } : {}) }
      return {
        message_id: nextMessageId++,
        from: { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username },
        chat,
        date: options.date ?? 1_771_000_000,
        ...(typeof thread === "number" ? { message_thread_id: thread, is_topic_message: true } : {}),
        ...(typeof dmTopic === "number" ? { direct_messages_topic: { topic_id: dmTopic } } : {}),
        ...extra
      }
    }
    const answeredGuests = new Set<string>()
    let nextGuestMessage = 1
    // A draft: to a private chat only (a positive id), with a non-zero draft_id.
    const draft = (payload: Record<string, unknown>): string | undefined =>
      payload["chat_id"] === undefined
        ? "chat_id is empty"
        : Number(payload["chat_id"]) < 0
        ? "message drafts can be sent to private chats only"
        : typeof payload["draft_id"] !== "number" || payload["draft_id"] === 0
        ? "draft_id must be non-zero"
        : undefined

    type Answer = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly failure: Failure }
    const bad = (description: string): Answer => ({ ok: false, failure: { error_code: 400, description: `Bad Request: ${description}` } })
    const answer = (method: string, payload: Record<string, unknown>): Answer => {
      const ok = (result: unknown): Answer => ({ ok: true, result })
      switch (method) {
        case "getMe":
          return ok(bot)
        case "sendMessage": {
          if (payload["chat_id"] === undefined) return bad("chat_id is empty")
          const text = typeof payload["text"] === "string" ? payload["text"] : ""
          if (text.trim() === "") return bad("message text is empty")
          if (text.length > 4096) return bad("message is too long")
          return ok(messageFor(payload, {
            text,
            ...(Predicate.isRecord(payload["reply_parameters"]) ? { reply_to_message: { message_id: payload["reply_parameters"]["message_id"] } } : {}),
            ...(payload["reply_markup"] ? { reply_markup: payload["reply_markup"] } : {})
          }))
        }
        case "sendMessageDraft": {
          const issue = draft(payload)
          if (issue !== undefined) return bad(issue)
          if (typeof payload["text"] === "string" && payload["text"].length > 4096) return bad("message is too long")
          return ok(true)
        }
        case "sendRichMessageDraft": {
          const issue = draft(payload)
          return issue !== undefined ? bad(issue) : Predicate.isRecord(payload["rich_message"]) ? ok(true) : bad("rich_message is empty")
        }
        case "sendRichMessage":
          if (payload["chat_id"] === undefined) return bad("chat_id is empty")
          if (!Predicate.isRecord(payload["rich_message"])) return bad("rich_message is empty")
          return ok(messageFor(payload, { rich_message: payload["rich_message"] }))
        case "answerGuestQuery": {
          const id = payload["guest_query_id"]
          if (typeof id !== "string" || id === "") return bad("guest_query_id is empty")
          if (!Predicate.isRecord(payload["result"])) return bad("result is empty")
          if (answeredGuests.has(id)) return bad("query is too old and response timeout expired or query ID is invalid")
          answeredGuests.add(id)
          return ok({ inline_message_id: `guest-${nextGuestMessage++}` })
        }
        case "sendPoll": {
          const options = Array.isArray(payload["options"]) ? payload["options"] : []
          if (options.length < 2 || options.length > 10) return bad("poll must have 2-10 options")
          const poll = {
            id: `poll-${nextPollId++}`,
            question: payload["question"],
            options: options.map((o) => ({ text: Predicate.isRecord(o) ? o["text"] : o, voter_count: 0 })),
            total_voter_count: 0,
            is_closed: false,
            is_anonymous: payload["is_anonymous"] !== false,
            type: "regular",
            allows_multiple_answers: false
          }
          const message = messageFor(payload, { poll, ...(payload["reply_markup"] ? { reply_markup: payload["reply_markup"] } : {}) })
          polls.set(`${message.chat.id}:${message.message_id}`, poll)
          return ok(message)
        }
        case "stopPoll": {
          const poll = polls.get(`${Number(payload["chat_id"])}:${Number(payload["message_id"])}`)
          if (poll === undefined) return bad("message with poll to stop not found")
          if (poll["is_closed"] === true) return bad("poll has already been closed")
          poll["is_closed"] = true
          return ok({ ...poll })
        }
        case "editMessageText":
          return ok(messageFor(payload, { message_id: payload["message_id"], text: payload["text"], edit_date: options.date ?? 1_771_000_000 }))
        case "getChatMember": {
          const user = Number(payload["user_id"])
          return ok({ status: members.get(`${Number(payload["chat_id"])}:${user}`) ?? "member", user: { id: user, is_bot: false, first_name: "User" } })
        }
        case "setWebhook": {
          if (typeof payload["url"] !== "string" || !payload["url"].startsWith("https://")) return bad("bad webhook: An HTTPS URL must be provided for webhook")
          webhook = {
            url: payload["url"],
            secret_token: typeof payload["secret_token"] === "string" ? payload["secret_token"] : undefined,
            allowed_updates: payload["allowed_updates"]
          }
          pendingPoll?.(true)
          return ok(true)
        }
        case "deleteWebhook":
          webhook = null
          if (payload["drop_pending_updates"] === true) queue = []
          return ok(true)
        case "getWebhookInfo":
          return ok({ url: webhook?.url ?? "", has_custom_certificate: false, pending_update_count: queue.length })
        case "setMyCommands": {
          const scope = Predicate.isRecord(payload["scope"]) && typeof payload["scope"]["type"] === "string" ? payload["scope"]["type"] : "default"
          const language = typeof payload["language_code"] === "string" && payload["language_code"] !== "" ? `:${payload["language_code"]}` : ""
          const list = Array.isArray(payload["commands"]) ? payload["commands"] : []
          if (list.length > 100) return bad("too many commands")
          commands.set(`${scope}${language}`, list.map((c) => ({ command: String(Predicate.isRecord(c) ? c["command"] : ""), description: String(Predicate.isRecord(c) ? c["description"] : "") })))
          return ok(true)
        }
        case "getMyCommands": {
          const scope = Predicate.isRecord(payload["scope"]) && typeof payload["scope"]["type"] === "string" ? payload["scope"]["type"] : "default"
          return ok(commands.get(scope) ?? [])
        }
        default:
          return ok(true)
      }
    }

    const takeFailure = (method: string, call: { payload: Record<string, unknown>; token: string }) => {
      const list = failures.get(method)
      if (list === undefined) return undefined
      const index = list.findIndex((f) => f.where === undefined || f.where(call))
      return index < 0 ? undefined : list.splice(index, 1)[0]!.failure
    }
    const hangFor = (method: string, call: { payload: Record<string, unknown>; token: string }) =>
      hangs.get(method)?.find((h) => !h.released && (h.where === undefined || h.where(call)))

    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(req.url ?? "")
        const reply = (status: number, body: unknown) => {
          if (res.writableEnded || res.destroyed) return
          res.writeHead(status, { "content-type": "application/json" })
          res.end(JSON.stringify(body))
        }
        const replyFailure = (failure: Failure) => reply(failure.status ?? failure.error_code, { ok: false, ...failure })
        if (match === null) return reply(404, { ok: false, error_code: 404, description: "Not Found" })
        const [, token, method] = match as unknown as [string, string, string]
        let payload: Record<string, unknown> = {}
        try {
          const parsed: unknown = chunks.length === 0 ? {} : JSON.parse(Buffer.concat(chunks).toString("utf8"))
          payload = Predicate.isRecord(parsed) ? parsed : {}
        } catch {
          return reply(400, { ok: false, error_code: 400, description: "Bad Request: invalid JSON" })
        }
        if (method === "getUpdates") {
          pollCount++
          pollRequests.push({ offset: payload["offset"], limit: payload["limit"], timeout: payload["timeout"] })
          if (pollRequests.length > 1000) pollRequests.shift()
          const conflict = (description: string) => {
            conflictCount++
            replyFailure({ error_code: 409, description })
          }
          const failing = takeFailure(method, { payload, token })
          if (failing !== undefined) {
            if (failing.error_code === 409) conflictCount++
            return replyFailure(failing)
          }
          if (webhook !== null) {
            return conflict("Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first")
          }
          // A newer getUpdates ends the pending one with 409, as Telegram does.
          pendingPoll?.(true)
          const offset = typeof payload["offset"] === "number" ? payload["offset"] : 0
          const limit = typeof payload["limit"] === "number" ? Math.max(1, Math.min(100, payload["limit"])) : 100
          const serve = () => {
            queue = queue.filter((u) => !Predicate.isRecord(u) || typeof u["update_id"] !== "number" || u["update_id"] >= offset)
            const batch = queue.slice(0, limit)
            const now = performance.now()
            for (const u of batch) {
              if (Predicate.isRecord(u) && typeof u["update_id"] === "number" && !firstServed.has(u["update_id"])) firstServed.set(u["update_id"], now)
            }
            // Updates without a numeric id can never be confirmed: they are served once.
            const served = new Set(batch)
            queue = queue.filter((u) => !served.has(u) || (Predicate.isRecord(u) && typeof u["update_id"] === "number"))
            reply(200, { ok: true, result: batch })
          }
          queue = queue.filter((u) => !Predicate.isRecord(u) || typeof u["update_id"] !== "number" || u["update_id"] >= offset)
          if (queue.length > 0) return serve()
          let timer: ReturnType<typeof setTimeout> | undefined
          const finish = (conflicted: boolean) => {
            if (timer !== undefined) clearTimeout(timer)
            pollWaiters.delete(wake)
            if (pendingPoll === finish) pendingPoll = null
            if (conflicted) conflict("Conflict: terminated by other getUpdates request; make sure that only one bot instance is running")
            else serve()
          }
          const wake = () => finish(false)
          pendingPoll = finish
          pollWaiters.add(wake)
          const wanted = typeof payload["timeout"] === "number" ? payload["timeout"] * 1000 : 0
          timer = setTimeout(wake, Math.min(wanted, longPoll))
          res.on("close", () => {
            if (timer !== undefined) clearTimeout(timer)
            pollWaiters.delete(wake)
            if (pendingPoll === finish) pendingPoll = null
          })
          return
        }
        const call: MutableCall = { method, payload, token, at: performance.now(), answered: false, status: null }
        calls.push(call)
        const respond = () => {
          const reset = resets.get(method)
          const at = reset === undefined ? -1 : reset.findIndex((r) => r === undefined || r(call))
          if (at >= 0) {
            reset!.splice(at, 1)
            res.destroy()
            notify()
            return
          }
          const failing = takeFailure(method, call)
          if (failing !== undefined) {
            call.status = failing.status ?? failing.error_code
            replyFailure(failing)
          } else {
            const result = answer(method, payload)
            if (result.ok) {
              call.status = 200
              reply(200, { ok: true, result: result.result })
            } else {
              call.status = result.failure.error_code
              replyFailure(result.failure)
            }
          }
          call.answered = !res.destroyed
          notify()
        }
        notify()
        const hang = hangFor(method, call)
        if (hang !== undefined) return void hang.held.push(respond)
        respond()
      })
    })

    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const port = (server.address() as AddressInfo).port

    const matching = (method: string, where?: (payload: Record<string, unknown>) => boolean) =>
      calls.filter((c) => c.method === method && (where === undefined || where(c.payload)))
    const snapshot = (c: MutableCall): ApiCall => c

    return {
      apiRoot: `http://127.0.0.1:${port}`,
      bot,
      calls: () => calls.map(snapshot),
      callsOf: (method) => matching(method).map(snapshot),
      delivered: (method = "sendMessage") => calls.filter((c) => c.method === method && c.answered && c.status === 200).map(snapshot),
      polls: () => ({ total: pollCount, conflicts: conflictCount, requests: [...pollRequests] }),
      resetNext: (method, times = 1, where) => {
        const list = resets.get(method) ?? []
        for (let i = 0; i < times; i++) list.push(where)
        resets.set(method, list)
      },
      failNext: (method, failure, times = 1, where) => {
        const list = failures.get(method) ?? []
        for (let i = 0; i < times; i++) list.push({ failure, where })
        failures.set(method, list)
      },
      hang: (method, where) => {
        const entry = { where, held: [] as Array<() => void>, released: false }
        hangs.set(method, [...(hangs.get(method) ?? []), entry])
        return {
          release: () => {
            entry.released = true
            for (const respond of entry.held.splice(0)) respond()
          },
          held: () => entry.held.length
        }
      },
      servedAt: (updateId) => firstServed.get(updateId),
      pushUpdates: (...updates) => {
        queue.push(...updates)
        for (const wake of [...pollWaiters]) wake()
      },
      setMember: (chatId, userId, status) => void members.set(`${chatId}:${userId}`, status),
      webhook: () => webhook,
      commands: () => commands,
      waitFor: (method, where, nth = 1) =>
        Effect.async<ApiCall>((resume) => {
          const check = () => {
            const found = matching(method, where)[nth - 1]
            if (found !== undefined) {
              listeners.delete(check)
              resume(Effect.succeed(found))
            }
          }
          listeners.add(check)
          check()
          return Effect.sync(() => listeners.delete(check))
        })
    }
  })
