/**
 * The deixis inspector: what the bot knows of a topic and why it answers as it does.
 * The token is asked once, kept in sessionStorage (gone when the tab closes), and sent only
 * as an Authorization header; a server that needs none (DEIXIS_API_TOKEN unset) is opened
 * without asking, and the page says so.
 */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import * as Api from "./api"
import { Chats } from "./Chats"
import { type Change, diff, duration, inWords, plainText, scoreLead, textParts, timeLeft } from "./logic"
import "./style.css"

type Item = Record<string, any>

const tokenKey = "deixis.inspector.token"
const recentKey = "deixis.inspector.recent"

const readRecent = (): Array<{ chat: string; topic: string }> => {
  try {
    return JSON.parse(sessionStorage.getItem(recentKey) ?? "[]")
  } catch {
    return []
  }
}

const time = (v: string | number) => new Date(v).toISOString().replace("T", " ").slice(0, 19)

/** A history text with each mentioned person as their name (the username on hover). */
function Text(props: { value: string }) {
  return (
    <>
      {textParts(props.value).map((part, i) =>
        "text" in part ? part.text : <span key={i} class="mention" title={`@${part.username}`}>{part.name}</span>
      )}
    </>
  )
}

function TokenForm(props: { onToken: (t: string) => void; error: string | null }) {
  const [value, setValue] = useState("")
  const [empty, setEmpty] = useState(false)
  return (
    <form
      class="card"
      aria-labelledby="token-title"
      onSubmit={(e) => {
        e.preventDefault()
        setEmpty(value.trim() === "")
        if (value.trim() !== "") props.onToken(value.trim())
      }}
    >
      <h2 id="token-title">Connect</h2>
      <label for="token">API token (DEIXIS_API_TOKEN)</label>
      <input id="token" type="password" autocomplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      <button type="submit">Connect</button>
      {empty
        ? <p role="alert" class="error">Enter the API token: this server needs one (DEIXIS_API_TOKEN is set).</p>
        : props.error !== null && <p role="alert" class="error">{props.error}</p>}
      <p class="note">Kept in this tab only (sessionStorage) and sent as an Authorization header.</p>
    </form>
  )
}

function Timeline(props: { items: ReadonlyArray<Item>; gapNote: string | null; selected: string | null; onSelect: (id: string) => void }) {
  const byId = new Map(props.items.filter((i) => i.message_id !== null).map((i) => [i.message_id, i]))
  let lastAlbum: string | undefined
  return (
    <section class="card" aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      {props.gapNote !== null && <p class="gap" role="note">⋯ {props.gapNote}</p>}
      <ol class="timeline">
        {props.items.map((item) => {
          const bot = item.kind === "outbound_agent" || item.sender?.is_bot === true
          const albumStart = item.album_id !== undefined && item.album_id !== lastAlbum
          lastAlbum = item.album_id
          const target = item.reply_to_message_id === null ? undefined : byId.get(item.reply_to_message_id)
          return (
            <li
              key={`${item.message_id}:${item.event_id ?? ""}`}
              class={`msg ${bot ? "bot" : ""} ${props.selected === item.message_id ? "selected" : ""}`}
              data-message-id={item.message_id ?? ""}
            >
              {albumStart && <div class="album">album {item.album_id}</div>}
              <div class="meta">
                <button
                  type="button"
                  class="link"
                  aria-pressed={props.selected === item.message_id}
                  onClick={() => item.message_id !== null && props.onSelect(item.message_id)}
                >
                  #{item.message_id ?? "—"}
                </button>{" "}
                <strong>{item.sender?.nickname ?? "?"}</strong> <time>{time(item.sent_at)}</time>
                {item.edited_at !== undefined && <span class="badge">edited {time(item.edited_at)}</span>}
                {item.forward !== undefined && <span class="badge">forwarded</span>}
                {item.seen_via === "reply" && <span class="badge">seen via a reply</span>}
              </div>
              {item.reply_to_message_id !== null && (
                <div class="reply" aria-label={`reply to message ${item.reply_to_message_id}`}>
                  ↳ reply to #{item.reply_to_message_id}
                  {target !== undefined && <span class="excerpt"> “{plainText(String(target.text)).slice(0, 60)}”</span>}
                </div>
              )}
              {item.quote !== null && item.quote !== undefined && <blockquote><Text value={item.quote.text} /></blockquote>}
              <p class="text"><Text value={item.text} /></p>
              {(item.attachments ?? []).length > 0 && (
                <div class="attachments">{item.attachments.map((a: Item) => `${a.kind}${a.name ? `: ${a.name}` : ""}`).join(", ")}</div>
              )}
              {item.bot_response_id !== null && item.bot_response_id !== undefined && (
                <div class="answer">→ answered by the bot in #{item.bot_response_id}</div>
              )}
            </li>
          )
        })}
      </ol>
      {props.items.length === 0 && <p>No history for this topic.</p>}
    </section>
  )
}

function Objects(props: { result: Item | null; now: number }) {
  if (props.result === null) return null
  return (
    <section class="card" aria-labelledby="objects-title">
      <h2 id="objects-title">Active objects</h2>
      <ul class="objects">
        {props.result.objects.map((o: Item) => {
          const until = Date.parse(o.active_until)
          const share = timeLeft(props.now, Date.parse(o.last_touched_at), until)
          return (
            <li key={o.object_id} data-object-id={o.object_id}>
              <div>
                <span class="kind">{o.kind}</span> {o.title_or_label ?? o.ref ?? o.object_id} <span class="muted">from #{o.source_message_id}</span>
              </div>
              <div class="bar" role="meter" aria-label={`time left for ${o.object_id}`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(share * 100)}>
                <span style={{ width: `${share * 100}%` }} />
              </div>
              <div class="muted">{duration(until - props.now)} left · {o.why_active.map(inWords).join("; ")}</div>
            </li>
          )
        })}
      </ul>
      {props.result.objects.length === 0 && <p>Nothing active.</p>}
      {(props.result.inactive_debug ?? []).length > 0 && (
        <details>
          <summary>Not active ({props.result.inactive_debug.length})</summary>
          <ul>
            {props.result.inactive_debug.map((o: Item) => (
              <li key={o.object_id}>
                <span class="kind">{o.kind}</span> {o.object_id}: {o.why_inactive === "expired" ? "expired" : "never activated"}
              </li>
            ))}
          </ul>
        </details>
      )}
    </section>
  )
}

const hintOptions: Readonly<Record<string, ReadonlyArray<string>>> = {
  positional_hint: ["replied_message", "latest", "previous", "above", "current_topic_recent"],
  ordinal_hint: ["first", "second", "last"],
  target_kind_hint: ["poll", "reminder", "image", "file", "article", "quote", "link", "video", "voice", "pdf", "summary", "message"],
  ownership_hint: ["mine", "bot_created", "any"],
  recency_hint: ["latest", "recent", "currently_active"]
}

function Chart(props: { scored: ReadonlyArray<Item>; minScore: number | null }) {
  const max = Math.max(0.0001, ...props.scored.flatMap((s) => Object.values(s.features as Record<string, number>).map(Math.abs)))
  const top = Math.max(0.0001, props.minScore ?? 0, ...props.scored.map((s) => s.score))
  return (
    <div class="chart" role="figure" aria-label="per-feature score contributions">
      {props.scored.map((s) => (
        <div key={s.object_id} class="chart-row">
          <div class="chart-title">
            {s.object_id} <strong>{s.score.toFixed(3)}</strong>
            {props.minScore !== null && (s.score >= props.minScore ? " (plausible)" : " (below the minimum)")}
          </div>
          <div class="total" aria-hidden="true">
            <span class="total-bar" style={{ width: `${(Math.max(0, s.score) / top) * 100}%` }} />
            {props.minScore !== null && <span class="threshold" style={{ left: `${(props.minScore / top) * 100}%` }} />}
          </div>
          {Object.entries(s.features as Record<string, number>).filter(([, v]) => v !== 0).map(([feature, value]) => (
            <div class="feature" key={feature}>
              <span class="feature-name">{feature}</span>
              <span class={`feature-bar ${value < 0 ? "neg" : ""}`} style={{ width: `${(Math.abs(value) / max) * 60}%` }} />
              <span class="feature-value">{value.toFixed(3)}</span>
            </div>
          ))}
        </div>
      ))}
    </div>
  )
}

function TryIt(props: { token: string; chat: string; topic: string; message: Item | null; thresholds: Item | null }) {
  const [hints, setHints] = useState<Record<string, string>>({})
  const [text, setText] = useState("")
  const [result, setResult] = useState<{ kind: "resolve" | "list"; body: Item } | null>(null)
  const [error, setError] = useState<string | null>(null)
  const request = () => ({
    chat_id: props.chat,
    ...(props.topic === "" ? {} : { topic_id: props.topic }),
    current_message_id: props.message?.message_id,
    reply_to_message_id: props.message?.reply_to_message_id ?? null,
    sender_user_id: props.message?.sender?.user_id ?? null
  })
  const run = (kind: "resolve" | "list") => {
    setError(null)
    const body = kind === "resolve"
      ? { ...request(), raw_user_text: text, normalized_reference_hints: Object.fromEntries(Object.entries(hints).filter(([, v]) => v !== "")), max_candidates: 5 }
      : { ...request(), max_results: 20, include_inactive_debug: true }
    ;(kind === "resolve" ? Api.resolve : Api.list)(props.token, body).then((b) => setResult({ kind, body: b }), (e: Error) => setError(e.message))
  }
  return (
    <section class="card" aria-labelledby="try-title">
      <h2 id="try-title">Try it</h2>
      <p>{props.message === null ? "Pick a message in the timeline (its #id)." : `As if message #${props.message.message_id} asked:`}</p>
      <label for="raw-text">What the user wrote</label>
      <input id="raw-text" value={text} onInput={(e) => setText(e.currentTarget.value)} placeholder="what about this one?" />
      <div class="hints">
        {Object.entries(hintOptions).map(([name, values]) => (
          <div key={name}>
            <label for={`hint-${name}`}>{name.replace(/_/g, " ")}</label>
            <select id={`hint-${name}`} value={hints[name] ?? ""} onChange={(e) => setHints({ ...hints, [name]: e.currentTarget.value })}>
              <option value="">—</option>
              {values.map((v) => <option key={v} value={v}>{v}</option>)}
            </select>
          </div>
        ))}
      </div>
      <button type="button" disabled={props.message === null} onClick={() => run("resolve")}>Resolve</button>{" "}
      <button type="button" disabled={props.message === null} onClick={() => run("list")}>List</button>
      {error !== null && <p role="alert" class="error">{error}</p>}
      {result?.kind === "resolve" && (
        <div class="result" aria-live="polite">
          <p>
            <strong>{result.body.status}</strong> · confidence {result.body.confidence} · scope {result.body.scope_used} ·{" "}
            <span class="lead">{scoreLead(result.body.diagnostics)}</span> ·{" "}
            {result.body.diagnostics.candidate_count} candidates{result.body.diagnostics.fallback ? " (fallback scope)" : ""}
          </p>
          {result.body.reasons.length > 0 && <p>Why: {result.body.reasons.map(inWords).join("; ")}</p>}
          {props.thresholds !== null && (
            <p class="thresholds">
              Thresholds: a candidate is plausible from score {props.thresholds.min_score}; the winner must lead the second by{" "}
              {props.thresholds.ambiguity_margin}, else the answer is ambiguous.
            </p>
          )}
          <ol class="candidates">
            {result.body.candidates.map((c: Item) => (
              <li key={c.object_id} data-candidate={c.object_id}>
                <span class="kind">{c.kind}</span> {c.title_or_label ?? c.ref ?? c.object_id} — {c.confidence}:{" "}
                {c.reasons.map(inWords).join("; ")}
              </li>
            ))}
          </ol>
          <Chart scored={result.body.diagnostics.scored} minScore={props.thresholds?.min_score ?? null} />
        </div>
      )}
      {result?.kind === "list" && <Objects result={result.body} now={Date.now()} />}
    </section>
  )
}

function State(props: { revisions: ReadonlyArray<Item> }) {
  const current = props.revisions[props.revisions.length - 1]
  if (current === undefined) return null
  const previous = props.revisions[props.revisions.length - 2]
  const changes: Array<Change> = previous === undefined ? [] : diff(previous.state, current.state)
  return (
    <section class="card" aria-labelledby="state-title">
      <h2 id="state-title">Conversation state · revision {current.revision}</h2>
      <pre>{JSON.stringify(current.state, null, 2)}</pre>
      {previous !== undefined && (
        <div>
          <h3>Since revision {previous.revision}</h3>
          {changes.length === 0 ? <p>No change.</p> : (
            <ul class="diff">
              {changes.map((c) => (
                <li key={c.path} class={c.kind}>
                  {c.kind} <code>{c.path}</code>
                  {c.kind !== "added" && <> from <code>{JSON.stringify(c.before)}</code></>}
                  {c.kind !== "removed" && <> to <code>{JSON.stringify(c.after)}</code></>}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  )
}

function App() {
  // The token typed in; "" when the server needs none (then no Authorization header is sent).
  const [token, setToken] = useState<string | null>(() => sessionStorage.getItem(tokenKey))
  // Whether the server asked for no token; null until it is known.
  const [tokenless, setTokenless] = useState<boolean | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [chat, setChat] = useState("")
  const [topic, setTopic] = useState("")
  const [open, setOpen] = useState<{ chat: string; topic: string } | null>(null)
  const [data, setData] = useState<{ context: Item; objects: Item } | null>(null)
  const [revisions, setRevisions] = useState<Array<Item>>([])
  const [selected, setSelected] = useState<string | null>(null)
  const [live, setLive] = useState(false)
  const [recent, setRecent] = useState(readRecent)

  const refuse = (e: Error) => {
    if (e instanceof Api.ApiError && e.status === 401) {
      sessionStorage.removeItem(tokenKey)
      setToken(null)
    }
    setError(e.message)
  }

  const load = (target: { chat: string; topic: string }, t: string) =>
    Api.context(t, target.chat, target.topic).then(async (context: Item) => {
      const newest = [...context.messages].reverse().find((m: Item) => m.message_id !== null)
      const objects = newest === undefined ? { objects: [], inactive_debug: [] } : await Api.list(t, {
        chat_id: target.chat,
        ...(target.topic === "" ? {} : { topic_id: target.topic }),
        current_message_id: newest.message_id,
        max_results: 50,
        include_inactive_debug: true
      })
      const state = await Api.state(t, target.chat, target.topic)
      setData({ context, objects })
      setRevisions((rs) => (rs.length > 0 && rs[rs.length - 1]!.revision === state.revision ? rs : [...rs.slice(-9), state]))
      setError(null)
    }, refuse)

  // Bumped by live traffic: the chat list reads its first page again.
  const [chatsRead, setChatsRead] = useState(0)
  const [lastLive, setLastLive] = useState<Item | null>(null)
  const [connected, setConnected] = useState(false)
  const [thresholds, setThresholds] = useState<Item | null>(null)
  // Asked once, without a token: a server with no DEIXIS_API_TOKEN answers, and the page opens.
  useEffect(() => {
    if (token !== null) return
    Api.call("", "/v1/inspect/thresholds").then(() => {
      setTokenless(true)
      setToken("")
    }, (e: Error) => {
      setTokenless(false)
      if (!(e instanceof Api.ApiError && e.status === 401)) setError(e.message)
    })
  }, [])
  useEffect(() => {
    if (token === null) return
    Api.thresholds(token).then(setThresholds, refuse)
  }, [token])

  // Live: server-sent events of every message recorded; the open topic is read again when one
  // of its messages arrives, the list of active chats always.
  useEffect(() => {
    if (token === null || !live) return
    const abort = new AbortController()
    void Api.live(token, (event: Item) => {
      setLastLive(event)
      setChatsRead((n) => n + 1)
      if (open !== null && event.chat_id === open.chat && (open.topic === "" || event.topic_id === open.topic)) void load(open, token)
    }, abort.signal, (e) => setError(e.message), () => {
      setConnected(true)
      if (open !== null) void load(open, token)
    })
    return () => {
      abort.abort()
      setConnected(false)
    }
  }, [open, token, live])

  if (token === null && tokenless === null) {
    return (
      <main>
        <h1>deixis inspector</h1>
        <p class="muted" aria-live="polite">Connecting…</p>
      </main>
    )
  }

  if (token === null) {
    return (
      <main>
        <h1>deixis inspector</h1>
        <TokenForm error={error} onToken={(t) => {
          // Checked against the API before it is kept.
          Api.call(t, "/v1/chats/0/state").then(() => {
            sessionStorage.setItem(tokenKey, t)
            setToken(t)
            setError(null)
          }, (e: Error) => setError(e.message))
        }} />
      </main>
    )
  }

  const openTopic = (target: { chat: string; topic: string }) => {
    setOpen(target)
    setSelected(null)
    setRevisions([])
    const next = [target, ...recent.filter((r) => r.chat !== target.chat || r.topic !== target.topic)].slice(0, 10)
    setRecent(next)
    sessionStorage.setItem(recentKey, JSON.stringify(next))
    void load(target, token)
  }
  const items: ReadonlyArray<Item> = data?.context.messages ?? []
  const message = items.find((i) => i.message_id === selected) ?? null

  return (
    <main>
      <header>
        <h1>deixis inspector</h1>
        {token === "" ? null : (
          <button type="button" onClick={() => {
            sessionStorage.removeItem(tokenKey)
            setToken(null)
          }}>Sign out</button>
        )}
      </header>
      {token === "" && (
        <p class="note" role="status">
          No token needed: this server runs without DEIXIS_API_TOKEN, so anyone who can reach it can read what it holds.
        </p>
      )}
      <form class="card open" onSubmit={(e) => {
        e.preventDefault()
        if (chat.trim() !== "") openTopic({ chat: chat.trim(), topic: topic.trim() })
      }}>
        <div>
          <label for="chat">Chat id</label>
          <input id="chat" value={chat} onInput={(e) => setChat(e.currentTarget.value)} placeholder="-1001234567890" />
        </div>
        <div>
          <label for="topic">Topic id (forums)</label>
          <input id="topic" value={topic} onInput={(e) => setTopic(e.currentTarget.value)} placeholder="General: 1" />
        </div>
        <button type="submit">Open</button>
        <label class="inline"><input type="checkbox" checked={live} onChange={(e) => setLive(e.currentTarget.checked)} /> Live</label>
      </form>
      <Chats token={token} refresh={chatsRead} onError={refuse} onPick={(c) => {
        setChat(c.chat_id)
        setTopic("")
        // A forum's messages are in its topics: its id goes into the form for a topic to be named.
        if (c.is_forum) document.getElementById("topic")?.focus()
        else openTopic({ chat: c.chat_id, topic: "" })
      }} />
      {live && <p class="muted" aria-live="polite">Live{!connected ? ": connecting…" : lastLive === null ? ": connected, waiting for traffic" : `: last message #${lastLive.message_id} in ${lastLive.chat_id} at ${time(lastLive.at)}`}</p>}
      {recent.length > 0 && (
        <nav aria-label="recently opened" class="recent">
          {recent.map((r) => (
            <button type="button" class="link" key={`${r.chat}/${r.topic}`} onClick={() => openTopic(r)}>
              {r.chat}{r.topic === "" ? "" : ` · topic ${r.topic}`}
            </button>
          ))}
        </nav>
      )}
      {error !== null && <p role="alert" class="error">{error}</p>}
      {open !== null && data !== null && (
        <div class="grid">
          <Timeline items={items} gapNote={data.context.gap_note} selected={selected} onSelect={setSelected} />
          <div>
            <Objects result={data.objects} now={Date.now()} />
            <TryIt token={token} chat={open.chat} topic={open.topic} message={message} thresholds={thresholds} />
            <State revisions={revisions} />
          </div>
        </div>
      )}
    </main>
  )
}

render(<App />, document.getElementById("app")!)
