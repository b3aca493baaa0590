/**
 * `pnpm bench`: raw Telegram update JSON → every store, through `TelegramRecorder`, in updates
 * per second — over the memory stores and over a SQLite file (`@deixis/store-sql`), a page of
 * 100 updates at a time (as `getUpdates` and webhook batches deliver them) and one at a time.
 * The mix is what a busy group sends: text with links, replies carrying the replied message,
 * photos and albums, forum topics, edits, reactions, polls. Everything is written (talkative
 * mode). Prints a markdown table. Never a test: numbers depend on the machine.
 */
import * as DeixisTelegraf from "../src/DeixisTelegraf.js"
import * as TelegramRecorder from "../src/TelegramRecorder.js"
import { SqlStore } from "@deixis/store-sql"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const CHATS = 200
const UPDATES = Number(process.env["BENCH_UPDATES"] ?? 20_000)
/** `BENCH_STORES=sqlite` (or `memory`) runs one kind of store only (for a profile). */
const STORES = (process.env["BENCH_STORES"] ?? "memory,sqlite").split(",")
const PAGE = 100
const options = { botId: "7000000001", botUsername: "deixis_bot", mode: "talkative" as const }

// A fixed-seed generator, so runs compare.
let seed = 0x5eed1
const random = () => {
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) / 0x1_0000_0000
}
const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)]!
const words = "the poll about friday lunch moved to thursday please check this link article summary remind me tomorrow at nine which one do you mean that one above sounds good thanks voted agenda draft photo meeting notes deadline review".split(" ")
const sentence = () => Array.from({ length: 5 + Math.floor(random() * 12) }, () => pick(words)).join(" ")
const users = Array.from({ length: 30 }, (_, i) => ({ id: 1000 + i, is_bot: false, first_name: `User${i}`, username: `user_${i}` }))

/** `UPDATES` raw updates as JSON text, in arrival order. */
const corpus = (): ReadonlyArray<string> => {
  const next = new Map<number, number>()
  const sent = new Map<number, Array<Record<string, unknown>>>()
  const out: Array<string> = []
  for (let u = 0; u < UPDATES; u++) {
    const c = Math.floor(random() * CHATS)
    const forum = c % 4 === 0
    const chat = { id: -1001000000000 - c, title: `Chat ${c}`, type: "supergroup", ...(forum ? { is_forum: true } : {}) }
    const id = (next.get(c) ?? 0) + 1
    const history = sent.get(c) ?? []
    const date = 1_771_000_000 + u
    const thread = forum && random() < 0.7 ? { message_thread_id: 100 + (id % 3), is_topic_message: true } : {}
    const roll = random()
    let update: Record<string, unknown>
    if (roll < 0.08 && history.length > 0) {
      const target = pick(history)
      update = { update_id: u, message_reaction: { chat, message_id: target["message_id"], user: pick(users), date, old_reaction: [], new_reaction: [{ type: "emoji", emoji: "👍" }] } }
    } else if (roll < 0.12 && history.length > 0) {
      const target = pick(history)
      update = { update_id: u, edited_message: { ...target, edit_date: date, text: `${String(target["text"] ?? "")} (edited)` } }
    } else {
      next.set(c, id)
      const base: Record<string, unknown> = { message_id: id, from: pick(users), chat, date, ...thread }
      const kind = random()
      let message: Record<string, unknown>
      if (kind < 0.35) {
        const text = `${sentence()} https://example.com/${c}/${id}`
        message = { ...base, text, entities: [{ type: "url", offset: text.length - `https://example.com/${c}/${id}`.length, length: `https://example.com/${c}/${id}`.length }] }
      } else if (kind < 0.5) {
        message = { ...base, photo: [{ file_id: `p${c}-${id}-s`, file_unique_id: "s", width: 90, height: 90 }, { file_id: `p${c}-${id}`, file_unique_id: "l", width: 1280, height: 960 }], caption: sentence(), ...(random() < 0.5 ? { media_group_id: `g${c}-${Math.floor(id / 3)}` } : {}) }
      } else if (kind < 0.53) {
        message = { ...base, poll: { id: `poll-${c}-${id}`, question: "Lunch?", options: [{ text: "a", voter_count: 0 }], total_voter_count: 0, is_closed: false, is_anonymous: true, type: "regular", allows_multiple_answers: false } }
      } else {
        message = { ...base, text: `@deixis_bot ${sentence()}`, entities: [{ type: "mention", offset: 0, length: 11 }] }
      }
      if (history.length > 0 && random() < 0.4) message = { ...message, reply_to_message: pick(history) }
      const { reply_to_message: _, ...kept } = message
      history.push(kept)
      if (history.length > 50) history.shift()
      sent.set(c, history)
      update = { update_id: u, message }
    }
    out.push(JSON.stringify(update))
  }
  return out
}

const measure = async (
  label: string,
  layer: Layer.Layer<DeixisTelegraf.Services, unknown>,
  updates: ReadonlyArray<string>,
  page: number
) => {
  const runtime = ManagedRuntime.make(layer)
  try {
    const started = performance.now()
    const cpu = process.cpuUsage()
    for (let i = 0; i < updates.length; i += page) {
      const raw = updates.slice(i, i + page).map((u) => JSON.parse(u) as unknown)
      if (page === 1) await runtime.runPromise(TelegramRecorder.record(raw[0], options))
      else await runtime.runPromise(TelegramRecorder.recordBatch(raw, options))
    }
    const seconds = (performance.now() - started) / 1000
    const used = process.cpuUsage(cpu)
    // CPU time of this process (user + system) per update: less swayed than wall time by other
    // processes sharing the machine.
    const cpuMicros = (used.user + used.system) / updates.length
    return { label, page, updates: updates.length, perSecond: Math.round(updates.length / seconds), cpuMicros: Math.round(cpuMicros) }
  } finally {
    await runtime.dispose()
  }
}

const main = async () => {
  const updates = corpus()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-telegraf-bench-"))
  const sqlite = (name: string) =>
    DeixisTelegraf.layerWith(SqlStore.layerSqlite({ filename: path.join(dir, `${name}.db`), sweep_interval: 0 }), {
      writePolicy: { default_mode: "talkative" }
    })
  const memory = () => DeixisTelegraf.layerMemory({ writePolicy: { default_mode: "talkative" } })
  try {
    // Warm-up passes, so the JIT has optimised every path before anything is timed (steady state).
    await measure("warm-up", memory(), updates, PAGE)
    await measure("warm-up", memory(), updates.slice(0, 4000), 1)
    const rows = []
    if (STORES.includes("memory")) {
      rows.push(await measure("memory", memory(), updates, PAGE))
      rows.push(await measure("memory", memory(), updates, 1))
    }
    if (STORES.includes("sqlite")) {
      rows.push(await measure("SQLite (synchronous=FULL)", sqlite("batch"), updates, PAGE))
      rows.push(await measure("SQLite (synchronous=FULL)", sqlite("single"), updates.slice(0, 2000), 1))
    }
    console.log(`\n${UPDATES} raw updates across ${CHATS} chats (a quarter of them forums), node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}\n`)
    console.log("| stores | updates per call | updates | updates/s | CPU µs per update |")
    console.log("|---|---|---|---|---|")
    for (const r of rows) console.log(`| ${r.label} | ${r.page} | ${r.updates} | ${r.perSecond.toLocaleString("en-US")} | ${r.cpuMicros} |`)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (process.env["DUMP"] !== undefined) fs.writeFileSync(process.env["DUMP"], JSON.stringify(corpus())); else void main()
