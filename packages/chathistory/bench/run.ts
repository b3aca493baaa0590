/**
 * `pnpm bench`: context load with 1M messages across 1k chats, rendering a 16-item history,
 * and memory per stored item. Prints a markdown table. Never a test: numbers depend on the
 * machine.
 */
import * as Effect from "effect/Effect"
import * as ContextLoader from "../src/ContextLoader.js"
import type { HistoryItem, Sender } from "../src/HistoryItem.js"
import * as HistoryRenderer from "../src/HistoryRenderer.js"
import * as HistoryStore from "../src/HistoryStore.js"
import { makeText } from "./text.js"

const CHATS = 1_000
const PER_CHAT = 1_000
const TOPICS = 4 // per chat: the General topic (null) and three forum topics
const LOADS = 100_000
const RENDERS = 100_000

// A fixed-seed generator, so runs compare.
const { pick, random, sentence } = makeText(0x2f6e2b1)

const gc = (): void => {
  const collect = (globalThis as { gc?: () => void }).gc
  if (collect !== undefined) {
    collect()
    collect()
  }
}

const percentile = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const micros = (ns: number) => (ns / 1000).toFixed(2)

const senderPool = (chat: number): ReadonlyArray<Sender> =>
  Array.from({ length: 20 }, (_, u) => {
    const id = `${chat * 100 + u}`
    const name = `User${u}`
    return u === 0
      ? { user_id: "7000", username: "deixis_bot", nickname: "Deixis", is_bot: true, display_ref: "[Deixis](tg:@deixis_bot)" }
      : { user_id: id, username: `user_${id}`, nickname: name, is_bot: false, display_ref: `[${name}](tg:@user_${id})` }
  })

const t0 = Date.UTC(2026, 10, 1)
const topicIds: ReadonlyArray<string | null> = [null, "11", "12", "13"]

/** Timed loops live in plain functions, outside the generator that sets the bench up. */
const measureLoads = (loader: ContextLoader.ContextLoaderShape, requests: ReadonlyArray<ContextLoader.LoadRequest>) => {
  const run = (r: ContextLoader.LoadRequest) => Effect.runSync(loader.load(r))
  for (let i = 0; i < 20_000; i++) run(requests[i]!)
  const loadNs = new Float64Array(requests.length)
  let loaded = 0
  for (let i = 0; i < requests.length; i++) {
    const start = process.hrtime.bigint()
    const context = run(requests[i]!)
    loadNs[i] = Number(process.hrtime.bigint() - start)
    loaded += context.messages.length
  }
  loadNs.sort()
  return { loadNs, loaded }
}

const COLD = 20_000

const measureRender = (items: ReadonlyArray<HistoryItem>) => {
  for (let i = 0; i < 20_000; i++) HistoryRenderer.renderHistoryContext(items)
  const renderNs = new Float64Array(RENDERS)
  let bytes = 0
  for (let i = 0; i < RENDERS; i++) {
    const start = process.hrtime.bigint()
    bytes += HistoryRenderer.renderHistoryContext(items).length
    renderNs[i] = Number(process.hrtime.bigint() - start)
  }
  renderNs.sort()
  // Fresh copies each time, as items read from a database would be.
  const coldNs = new Float64Array(COLD)
  for (let batch = 0; batch < COLD; batch += 1000) {
    const fresh = Array.from({ length: 1000 }, () => items.map((item) => ({ ...item })))
    for (let i = 0; i < 1000; i++) {
      const start = process.hrtime.bigint()
      bytes += HistoryRenderer.renderHistoryContext(fresh[i]!).length
      coldNs[batch + i] = Number(process.hrtime.bigint() - start)
    }
  }
  coldNs.sort()
  return { bytes, coldNs, renderNs }
}

const populate = (store: HistoryStore.HistoryStoreShape) => {
  let textChars = 0
  for (let c = 0; c < CHATS; c++) {
    const chatId = `-100${1_000_000 + c}`
    const senders = senderPool(c)
    const byTopic: Array<Array<number>> = Array.from({ length: TOPICS }, () => [])
    for (let m = 1; m <= PER_CHAT; m++) {
      const t = Math.floor(random() * TOPICS)
      const inTopic = byTopic[t]!
      const sender = pick(senders)
      const replyTo = inTopic.length > 0 && random() < 0.35
        ? String(inTopic[Math.max(0, inTopic.length - 1 - Math.floor(random() * 20))])
        : null
      const text = sentence()
      textChars += text.length
      const item: HistoryItem = {
        channel: "telegram",
        kind: sender.is_bot ? "outbound_agent" : "inbound_user",
        chat_id: chatId,
        topic_id: topicIds[t]!,
        chat_type: "supergroup",
        message_id: String(m),
        reply_to_message_id: replyTo,
        bot_response_id: null,
        sent_at: t0 + c * 1000 + m * 45_000,
        sender,
        text,
        quote: random() < 0.05 ? { sender_ref: pick(senders).display_ref, text: "quoted", markdown_block: "> quoted" } : null,
        attachments: random() < 0.1 ? [{ kind: "photo" }] : []
      }
      Effect.runSync(store.append(item))
      inTopic.push(m)
    }
  }
  return textChars
}

// The next message of a random chat and topic; half reply to one of the last 200 messages of
// the chat (some of another topic: not found there), 1% of those to an id never stored.
const makeRequests = (): ReadonlyArray<ContextLoader.LoadRequest> =>
  Array.from({ length: LOADS }, () => {
    const c = Math.floor(random() * CHATS)
    const t = Math.floor(random() * TOPICS)
    const replyTo = random() < 0.5
      ? null
      : random() < 0.02
      ? "999999"
      : String(Math.max(1, PER_CHAT - Math.floor(random() * 200)))
    return {
      chat_id: `-100${1_000_000 + c}`,
      topic_id: topicIds[t]!,
      message_id: String(PER_CHAT + 1),
      reply_to_message_id: replyTo,
      sent_at: t0 + c * 1000 + (PER_CHAT + 1) * 45_000 + Math.floor(random() * 3_600_000)
    }
  })

const main = () => {
  gc()
  const heapBefore = process.memoryUsage().heapUsed
  const store = HistoryStore.makeMemory()
  const appendStart = process.hrtime.bigint()
  const textChars = populate(store)
  const appendNs = Number(process.hrtime.bigint() - appendStart)
  const stats = Effect.runSync(store.stats)
  gc()
  const bytesPerItem = (process.memoryUsage().heapUsed - heapBefore) / stats.items

  // Rendering the 16 newest items of a busy topic (the talkative cap).
  const items = Effect.runSync(store.recent({ chat_id: "-1001000000", topic_id: null }, 16)).map((e) => e.item)
  const { bytes, coldNs, renderNs } = measureRender(items)

  const { loadNs, loaded } = measureLoads(ContextLoader.make(store), makeRequests())

  const rows: ReadonlyArray<readonly [string, string]> = [
    ["stored", `${stats.items.toLocaleString("en")} messages in ${stats.chats.toLocaleString("en")} chats (${TOPICS} topics each), ${stats.evicted_items} evicted`],
    ["context load p50", `${micros(percentile(loadNs, 0.5))} µs`],
    ["context load p99", `${micros(percentile(loadNs, 0.99))} µs`],
    ["context load p99.9", `${micros(percentile(loadNs, 0.999))} µs`],
    ["context load: messages per context (mean)", (loaded / LOADS).toFixed(1)],
    ["render 16 items p50 (the same items again and again)", `${micros(percentile(renderNs, 0.5))} µs`],
    ["render 16 items p99 (the same items)", `${micros(percentile(renderNs, 0.99))} µs`],
    ["render 16 items p50 (fresh item objects each time)", `${micros(percentile(coldNs, 0.5))} µs`],
    ["render 16 items p99 (fresh item objects)", `${micros(percentile(coldNs, 0.99))} µs`],
    ["render 16 items: payload size", `${Math.round(bytes / (RENDERS + COLD)).toLocaleString("en")} chars`],
    ["bytes per stored item", `${Math.round(bytesPerItem)} B (text ${(textChars / stats.items).toFixed(0)} chars on average)`],
    ["append", `${micros(appendNs / stats.items)} µs per item`]
  ]
  console.log([
    `Node ${process.version}, ${process.platform}/${process.arch}; default settings (reply chain on); ${LOADS.toLocaleString("en")} loads, ${RENDERS.toLocaleString("en")} + ${COLD.toLocaleString("en")} renders.`,
    "",
    "| measure | result |",
    "|---|---|",
    ...rows.map(([k, v]) => `| ${k} | ${v} |`)
  ].join("\n"))
}

main()
