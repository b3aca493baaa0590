/**
 * The chats the store holds (`GET /v1/inspect/chats`), newest first: searchable by title or
 * id, read a page at a time ("More chats" reads the next), read again from the first page when
 * `refresh` changes (live traffic).
 */
import { useEffect, useState } from "preact/hooks"
import * as Api from "./api"

type Chat = Record<string, any>

/** Chats per page. */
export const pageSize = 20

const time = (v: string | null) => (v === null ? "no messages" : `last message ${new Date(v).toISOString().replace("T", " ").slice(0, 19)}`)

export function Chats(props: {
  token: string
  refresh: number
  onPick: (chat: Chat) => void
  onError: (e: Error) => void
}) {
  const [typed, setTyped] = useState("")
  const [search, setSearch] = useState("")
  const [chats, setChats] = useState<Array<Chat>>([])
  const [next, setNext] = useState<string | null>(null)
  const [loading, setLoading] = useState(false)

  const read = (after: string | null) => {
    setLoading(true)
    Api.chats(props.token, { search, limit: pageSize, after }).then((page: Chat) => {
      setChats((shown) => (after === null ? page.chats : [...shown, ...page.chats]))
      setNext(page.next)
    }, props.onError).finally(() => setLoading(false))
  }
  useEffect(() => read(null), [props.token, props.refresh, search])

  return (
    <section class="card" aria-labelledby="chats-title">
      <h2 id="chats-title">Chats</h2>
      <form class="search" role="search" onSubmit={(e) => {
        e.preventDefault()
        setSearch(typed.trim())
      }}>
        <label for="chat-search">Search by title or id</label>
        <div class="search-row">
          <input id="chat-search" type="search" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
          <button type="submit">Search</button>
        </div>
      </form>
      <ul class="chats" aria-busy={loading}>
        {chats.map((c) => (
          <li key={c.chat_id} data-chat-id={c.chat_id}>
            <button type="button" class="link" onClick={() => props.onPick(c)}>{c.title ?? c.chat_id}</button>{" "}
            <span class="muted">
              {c.title === null ? "" : `${c.chat_id} · `}{c.is_forum ? "forum · " : ""}{c.messages} messages · {c.objects} objects ·{" "}
              {time(c.last_message_at)}
            </span>
          </li>
        ))}
      </ul>
      {!loading && chats.length === 0 && <p>{search === "" ? "The store holds no chat yet." : `No chat matches “${search}”.`}</p>}
      {next !== null && <button type="button" disabled={loading} onClick={() => read(next)}>More chats</button>}
    </section>
  )
}
