/**
 * `pnpm bench:rss`: the service's memory with a realistic amount of data (issue 18: "RSS after
 * loading 100 chats × 10,000 messages through HTTP on each store, with the cache budget it was
 * run with"). For each store in turn — memory, a SQLite file, PostgreSQL (DEIXIS_TEST_PG_URL, a
 * schema of its own, dropped after) — it starts the service (`bench/server.js`, as `pnpm bench`
 * does, in its own process, with `--expose-gc`), posts BENCH_CHATS chats × BENCH_MESSAGES
 * `message_observed` events to `POST /v1/events` in batches of BENCH_BATCH (at most 1,000, the
 * API's limit; BENCH_CONCURRENCY requests in flight), then reads the server's RSS
 * (`/proc/<pid>/status`): after loading, after two resolves in each of a chat's 10 topics (each
 * chat's hot part then in the SQL stores' cache, the second pass served from it), and after a full GC in the server (SIGUSR2, see `gcSignal.ts`),
 * with its V8 heap. Loading each store stops at BENCH_RSS_SECONDS (default 600): the table then
 * says how many messages were loaded. The cache budget is DEIXIS_STORE_CACHE_MB (64 when unset).
 * Prints a markdown table. Never a test: numbers depend on the machine.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { dropPgSchema, freePort, processMemory, untilHealthy } from "./support.js"

const here = import.meta.dirname
const chats = Number(process.env["BENCH_CHATS"] ?? 100)
const messages = Number(process.env["BENCH_MESSAGES"] ?? 10_000)
const batch = Math.min(1000, Number(process.env["BENCH_BATCH"] ?? 1000))
const concurrency = Number(process.env["BENCH_CONCURRENCY"] ?? 4)
const deadlineSeconds = Number(process.env["BENCH_RSS_SECONDS"] ?? 600)
const stores = (process.env["BENCH_STORES"] ?? "memory,sqlite,pg").split(",")
const pgUrl = process.env["DEIXIS_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const cacheMb = process.env["DEIXIS_STORE_CACHE_MB"] ?? "64"

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0)

interface Server {
  readonly child: ChildProcess
  readonly url: string
  /** The next `deixis-memory` line the server prints (after SIGUSR2). */
  readonly memoryReport: () => Promise<Record<string, number | boolean>>
}

const start = async (env: Record<string, string>): Promise<Server> => {
  const port = await freePort()
  const child = spawn(process.execPath, ["--expose-gc", "--import", join(here, "gcSignal.js"), join(here, "server.js")], {
    env: { ...process.env, PORT: String(port), ...env },
    stdio: ["ignore", "pipe", "ignore"]
  })
  let buffered = ""
  const waiting: Array<(line: string) => void> = []
  child.stdout!.setEncoding("utf8")
  child.stdout!.on("data", (chunk: string) => {
    buffered += chunk
    let nl: number
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      if (line.startsWith("deixis-memory ")) waiting.shift()?.(line.slice("deixis-memory ".length))
    }
  })
  const url = `http://127.0.0.1:${port}`
  if (!(await untilHealthy(url))) throw new Error("the server did not start")
  return {
    child,
    url,
    memoryReport: () =>
      new Promise((resolve) => {
        waiting.push((line) => resolve(JSON.parse(line) as Record<string, number | boolean>))
        child.kill("SIGUSR2")
      })
  }
}

const chatId = (c: number) => -1002000000000 - c

/** Messages `from..to` (inclusive) of chat `c`, shaped as `pnpm bench` seeds its chat. */
const events = (c: number, from: number, to: number) => {
  const out: Array<unknown> = []
  for (let i = from; i <= to; i++) {
    out.push({
      type: "message_observed", chat_id: chatId(c), topic_id: String(i % 10), message_id: i, sender_user_id: 1000 + (i % 20),
      ...(i % 10 === 0 ? { links: [{ url: `https://example.com/${c}/${i}` }] } : {}),
      ...(i > 10 && i % 3 === 0 ? { reply_to_message_id: i - 10 } : {})
    })
  }
  return out
}

const post = async (url: string, body: unknown) => {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`)
  return response.json() as Promise<unknown>
}

/** Posts every batch (chats round-robin, each chat's batches in order), up to the deadline; returns the messages posted. */
const load = async (url: string): Promise<{ readonly loaded: number; readonly seconds: number; readonly complete: boolean }> => {
  const jobs: Array<readonly [number, number, number]> = []
  for (let from = 1; from <= messages; from += batch) {
    for (let c = 0; c < chats; c++) jobs.push([c, from, Math.min(messages, from + batch - 1)])
  }
  const started = performance.now()
  const deadline = started + deadlineSeconds * 1000
  let next = 0
  let loaded = 0
  const worker = async () => {
    while (next < jobs.length && performance.now() < deadline) {
      const [c, from, to] = jobs[next++]!
      await post(url + "/v1/events", events(c, from, to))
      loaded += to - from + 1
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return { loaded, seconds: (performance.now() - started) / 1000, complete: loaded === chats * messages }
}

/** One resolve in each topic of each chat, so every chat's hot part is in the SQL stores' cache. */
const resolveEach = async (url: string, upTo: number) => {
  for (let c = 0; c < chats; c++) {
    for (let topic = 0; topic < 10; topic++) {
      await post(url + "/v1/tools/resolve_reference_target", {
        chat_id: chatId(c), topic_id: String(topic), current_message_id: upTo + 1, reply_to_message_id: upTo - 10 + topic,
        sender_user_id: 1007, raw_user_text: "what does it say?", normalized_reference_hints: { target_kind_hint: "article" }
      })
    }
  }
}

/** The store cache's counters from the server's `/metrics` (hits, misses, evictions), when it exports them. */
const cacheCounters = async (url: string): Promise<string> => {
  const text = await fetch(url + "/metrics").then((r) => (r.ok ? r.text() : ""), () => "")
  const value = (name: string) => /^(\S+)\s+([\d.e+]+)$/m.exec(text.split("\n").filter((l) => l.startsWith(name)).join("\n"))?.[2]
  const [hits, misses, evictions] = ["deixis_store_cache_hits_total", "deixis_store_cache_misses_total", "deixis_store_cache_evictions_total"].map(value)
  // A counter never incremented is not exported: 0.
  return hits === undefined && misses === undefined ? "" : `cache hits ${hits ?? 0}, misses ${misses ?? 0}, evictions ${evictions ?? 0}`
}

const dirBytes = (dir: string) => readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0)

interface Row {
  readonly store: string
  readonly cache: string
  readonly loaded: number
  readonly complete: boolean
  readonly seconds: number
  readonly afterLoad: number
  readonly afterResolve: number
  readonly afterGc: number
  readonly heapUsed: number
  readonly heapTotal: number
  readonly external: number
  readonly peak: number
  readonly disk: string
  readonly counters: string
  readonly load: string
}

const main = async () => {
  const sqliteDir = mkdtempSync(join(tmpdir(), "deixis-http-rss-"))
  const pgSchema = `deixis_http_rss_${Date.now().toString(36)}`
  const engines = [
    { key: "memory", name: "memory", env: { DEIXIS_STORE: "memory" } },
    { key: "sqlite", name: "SQLite (file, WAL, synchronous=NORMAL, the default)", env: { DEIXIS_STORE: `sqlite:${join(sqliteDir, "rss.sqlite")}` } },
    { key: "pg", name: "PostgreSQL (loopback)", env: { DEIXIS_STORE: pgUrl, DEIXIS_PG_SCHEMA: pgSchema } }
  ].filter((e) => stores.includes(e.key))
  const rows: Array<Row> = []
  try {
    for (const engine of engines) {
      const server = await start(engine.env)
      try {
        const before = loadavg()[0]!.toFixed(1)
        const result = await load(server.url)
        const afterLoad = processMemory(server.child.pid!).rss
        // Twice: the first pass fills the SQL stores' cache (misses), the second is served from it (hits).
        await resolveEach(server.url, Math.ceil(result.loaded / chats))
        await resolveEach(server.url, Math.ceil(result.loaded / chats))
        const afterResolve = processMemory(server.child.pid!).rss
        const counters = engine.key === "memory" ? "" : await cacheCounters(server.url)
        const heap = await server.memoryReport()
        const after = processMemory(server.child.pid!)
        rows.push({
          store: engine.name,
          cache: engine.key === "memory" ? "— (keeps everything)" : `${cacheMb} MiB`,
          loaded: result.loaded,
          complete: result.complete,
          seconds: result.seconds,
          afterLoad,
          afterResolve,
          afterGc: after.rss,
          heapUsed: Number(heap["heapUsed"]),
          heapTotal: Number(heap["heapTotal"]),
          external: Number(heap["external"]),
          peak: after.peak,
          disk: engine.key === "sqlite" ? `${mib(dirBytes(sqliteDir))} MiB file + WAL` : "",
          counters,
          load: `${before}–${loadavg()[0]!.toFixed(1)}`
        })
        console.error(`${engine.name}: ${result.loaded} messages in ${result.seconds.toFixed(0)} s`)
      } finally {
        server.child.kill("SIGTERM")
        await new Promise((r) => server.child.once("exit", r))
      }
    }
  } finally {
    rmSync(sqliteDir, { recursive: true, force: true })
    if (stores.includes("pg")) dropPgSchema(pgUrl, pgSchema)
  }
  console.log(`\napps/http RSS benchmark — Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, ${chats} chats × ${messages.toLocaleString("en-US")} messages posted to POST /v1/events in batches of ${batch} (${concurrency} in flight), DEIXIS_STORE_CACHE_MB ${cacheMb}\n`)
  console.log("| store | cache budget | messages loaded | load (s) | messages/s | RSS after load (MiB) | after two resolves per topic | after GC | V8 heap used / total after GC | external | peak RSS | load average |")
  console.log("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
  for (const r of rows) {
    console.log(`| ${r.store} | ${r.cache} | ${r.loaded.toLocaleString("en-US")}${r.complete ? "" : " (stopped at the deadline)"} | ${r.seconds.toFixed(0)} | ${
      Math.round(r.loaded / r.seconds).toLocaleString("en-US")
    } | ${mib(r.afterLoad)} | ${mib(r.afterResolve)} | ${mib(r.afterGc)} | ${mib(r.heapUsed)} / ${mib(r.heapTotal)} | ${mib(r.external)} | ${mib(r.peak)} | ${r.load} |`)
  }
  for (const r of rows) if (r.disk !== "") console.log(`\n${r.store}: ${r.disk} on disk`)
  for (const r of rows) if (r.counters !== "") console.log(`\n${r.store}: ${r.counters} (from /metrics, after the resolves)`)
}

void main()
