/**
 * The inspector's only way to the service: the API routes, each call with the operator's token
 * in the Authorization header (never in a URL; no header when the server needs no token). A
 * refused token is an error the page shows.
 */

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

// No header at all without a token: a server without DEIXIS_API_TOKEN needs none.
const authorization = (token: string): Record<string, string> => (token === "" ? {} : { authorization: `Bearer ${token}` })

export const call = async (token: string, path: string, body?: unknown): Promise<any> => {
  const response = await fetch(path, {
    method: body === undefined ? "GET" : "POST",
    headers: { ...authorization(token), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  const json = text === "" ? null : JSON.parse(text)
  if (!response.ok) {
    const message = response.status === 401
      ? "The token was refused (401): check DEIXIS_API_TOKEN"
      : `${response.status}: ${json?.message ?? json?._tag ?? text.slice(0, 200)}`
    throw new ApiError(response.status, message)
  }
  return json
}

const scope = (topic: string) => (topic === "" ? "" : `?topic_id=${encodeURIComponent(topic)}`)

export const context = (token: string, chat: string, topic: string) =>
  call(token, `/v1/chats/${encodeURIComponent(chat)}/context${scope(topic)}`)

export const state = (token: string, chat: string, topic: string) =>
  call(token, `/v1/chats/${encodeURIComponent(chat)}/state${scope(topic)}`)

export const list = (token: string, request: Record<string, unknown>) =>
  call(token, "/v1/tools/list_active_context_objects", request)

// The page draws the scores, so it asks for the diagnostics an answer leaves out by default.
export const resolve = (token: string, request: Record<string, unknown>) =>
  call(token, "/v1/tools/resolve_reference_target", { ...request, include_diagnostics: true })

/** A page of the store's chats: `search` a title or id, `after` the previous page's `next`. */
export const chats = (token: string, page: { search: string; limit: number; after: string | null }) => {
  const query = new URLSearchParams({ limit: String(page.limit) })
  if (page.search !== "") query.set("search", page.search)
  if (page.after !== null) query.set("after", page.after)
  return call(token, `/v1/inspect/chats?${query}`)
}

export const thresholds = (token: string) => call(token, "/v1/inspect/thresholds")

/**
 * Reads the live feed (server-sent events) with the token in a header — EventSource cannot
 * send one — calling `onEvent` for each message event, reconnecting when the stream ends
 * (it is open for a minute at a time) until `signal` aborts. A refused token stops it.
 */
export const live = async (
  token: string,
  onEvent: (event: any) => void,
  signal: AbortSignal,
  onError: (e: Error) => void,
  onOpen: () => void
) => {
  while (!signal.aborted) {
    try {
      const response = await fetch("/v1/inspect/live?seconds=60", {
        headers: { ...authorization(token), accept: "text/event-stream" },
        signal
      })
      if (response.status === 401) throw new ApiError(401, "The token was refused (401): check DEIXIS_API_TOKEN")
      if (!response.ok || response.body === null) throw new ApiError(response.status, `live feed: ${response.status}`)
      // Connected: what was recorded before (or while reconnecting) is read again by the caller.
      onOpen()
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ""
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        buffer += value
        let cut: number
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")
          if (block.startsWith("event: message") && data !== "") onEvent(JSON.parse(data))
        }
      }
    } catch (e) {
      if (signal.aborted) return
      onError(e as Error)
      if (e instanceof ApiError && (e.status === 401 || e.status === 406)) return
      // A dropped connection: try again shortly.
      await new Promise((r) => setTimeout(r, 2000))
    }
  }
}
