/**
 * The inspector's only way to the service: the API routes, each call with the operator's token
 * in the Authorization header (never in a URL). A refused token is an error the page shows.
 */

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

export const call = async (token: string, path: string, body?: unknown): Promise<any> => {
  const response = await fetch(path, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
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

export const resolve = (token: string, request: Record<string, unknown>) =>
  call(token, "/v1/tools/resolve_reference_target", request)
