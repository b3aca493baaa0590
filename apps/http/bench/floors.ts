/**
 * The in-process floors of `pnpm bench` (`pnpm bench:floors` alone): autocannon over loopback against POST /v1/tools/resolve_reference_target
 * (memory store, seeded), beside a bare node:http server answering a constant JSON body and a
 * bare node:http server doing the same work with nothing of the service around it (`bareCore.ts`);
 * then the service and the bare server at a fixed 1,000 requests/s; then, for comparison,
 * the same route with logging at Info (the service's default level: a line per tool call, to a
 * pipe); then the service on a
 * SQLite file and on PostgreSQL (DEIXIS_TEST_PG_URL; BENCH_STORES=memory skips both), each seeded
 * with the same 10,000-message chat; and on each store, a bot's most frequent call, POST /v1/events
 * with one new message per request. Each server runs in its own process; beside each run, the
 * server's own CPU time per request (user + system, from /proc), which the other processes on
 * the machine disturb far less than the rates.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { dropPgSchema, freePort, processMemory, request, seed, untilHealthy } from "./support.js"

const here = import.meta.dirname
const duration = Number(process.env["BENCH_FLOOR_SECONDS"] ?? process.env["BENCH_SECONDS"] ?? 10)
const connections = Number(process.env["BENCH_CONNECTIONS"] ?? 10)
const stores = (process.env["BENCH_STORES"] ?? "memory,sqlite,pg").split(",")
const pgUrl = process.env["DEIXIS_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

/** A server process's resident set in MiB (Linux), read after its run. */
const rssOf = (child: ChildProcess): string => {
  const { rss } = processMemory(child.pid!)
  return Number.isFinite(rss) ? (rss / 1024 / 1024).toFixed(0) : "?"
}

/** A process's CPU time so far (user + system), in ms (Linux; NaN elsewhere). */
const cpuMsOf = (child: ChildProcess): number => {
  try {
    const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10 // USER_HZ = 100
  } catch {
    return Number.NaN
  }
}

const start = async (script: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string }> => {
  const port = await freePort()
  const child = spawn(process.execPath, [join(here, script)], {
    env: { ...process.env, PORT: String(port), ...env },
    // stdout is a pipe, drained, as under a log collector (the logs' cost is part of the figure).
    stdio: ["ignore", "pipe", "ignore"]
  })
  child.stdout!.resume()
  const url = `http://127.0.0.1:${port}`
  if (await untilHealthy(url)) return { child, url }
  throw new Error(`${script} did not start`)
}

interface Result {
  readonly requests: { readonly average: number; readonly total: number }
  readonly latency: { readonly p50: number; readonly p99: number; readonly average: number }
  readonly non2xx: number
  readonly errors: number
  /** The server's CPU time per request, in µs. */
  readonly cpuUs?: number
}

// The package's own autocannon (a dev dependency), run as a separate process.
const autocannonBin = join(here, "..", "..", "node_modules", ".bin", "autocannon")
const cannon = (url: string, body: string, options: { readonly seconds?: number; readonly rate?: number } = {}) =>
  new Promise<Result>((resolve, reject) => {
    execFile(autocannonBin, [
      "-j", "-d", String(options.seconds ?? duration), "-c", String(connections), "-m", "POST",
      "-H", "content-type=application/json", "-b", body,
      ...(options.rate === undefined ? [] : ["-R", String(options.rate)]),
      url
    ], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      error ? reject(error) : stdout.trim() === "" ? reject(new Error(stderr)) : resolve(JSON.parse(stdout) as Result))
  })

/** A run, with the server's CPU time per request. */
const measure = async (
  server: { readonly child: ChildProcess; readonly url: string },
  body: string,
  options: { readonly seconds?: number; readonly rate?: number } = {}
): Promise<Result> => {
  const before = cpuMsOf(server.child)
  const result = await cannon(server.url + "/v1/tools/resolve_reference_target", body, options)
  return { ...result, cpuUs: ((cpuMsOf(server.child) - before) * 1000) / result.requests.total }
}

/**
 * A bot's most frequent call, one new message per request (`ingestLoad.ts`) — a core event to
 * POST /v1/events, or a Telegram update to POST /v1/telegram/updates — with the server's CPU per request.
 */
const ingest = async (server: { readonly child: ChildProcess; readonly url: string }, shape: "events" | "telegram" = "events"): Promise<Result> => {
  const before = cpuMsOf(server.child)
  const path = shape === "telegram" ? "/v1/telegram/updates" : "/v1/events"
  const result = await new Promise<Result>((resolve, reject) =>
    execFile(process.execPath, [join(here, "ingestLoad.js"), server.url + path, String(duration), String(connections), shape], (error, stdout) =>
      error ? reject(error) : resolve(JSON.parse(stdout) as Result))
  )
  return { ...result, cpuUs: ((cpuMsOf(server.child) - before) * 1000) / result.requests.total }
}

const main = async () => {
  const bare = await start("bare.js")
  const bareCore = await start("bareCore.js")
  const service = await start("server.js", { DEIXIS_STORE: "memory" })
  const logging = await start("server.js", { DEIXIS_STORE: "memory", DEIXIS_LOG_LEVEL: "Info" })
  const sqliteDir = mkdtempSync(join(tmpdir(), "deixis-http-bench-"))
  const pgSchema = `deixis_http_bench_${Date.now().toString(36)}`
  const engines: Array<{ readonly name: string; readonly env: Record<string, string> }> = [
    ...(stores.includes("sqlite") ? [{ name: "SQLite store (file, WAL, synchronous=NORMAL, the default)", env: { DEIXIS_STORE: `sqlite:${join(sqliteDir, "bench.sqlite")}` } }] : []),
    ...(stores.includes("pg") ? [{ name: "PostgreSQL store (loopback)", env: { DEIXIS_STORE: pgUrl, DEIXIS_PG_SCHEMA: pgSchema } }] : [])
  ]
  const others: Array<ChildProcess> = []
  try {
    await seed(bareCore.url)
    await seed(service.url)
    await seed(logging.url)
    await cannon(service.url + "/v1/tools/resolve_reference_target", request, { seconds: 3 }) // warm-up
    const baseline = await measure(bare, request)
    await cannon(bareCore.url + "/v1/tools/resolve_reference_target", request, { seconds: 3 }) // warm-up
    const sameWork = await measure(bareCore, request)
    const deixis = await measure(service, request)
    const paced = await measure(service, request, { rate: 1000 })
    // The same pacing against the bare server: what this machine and autocannon's pacing add.
    const barePaced = await measure(bare, request, { rate: 1000 })
    await cannon(logging.url + "/v1/tools/resolve_reference_target", request, { seconds: 3 }) // warm-up
    const logged = await measure(logging, request)
    const ingested = await ingest(service)
    const forwarded = await ingest(service, "telegram")
    const answerBytes = Buffer.byteLength(await (await fetch(service.url + "/v1/tools/resolve_reference_target", {
      method: "POST", headers: { "content-type": "application/json" }, body: request
    })).text())
    // The same chat and requests on the durable stores, one server at a time.
    const durable: Array<{ readonly name: string; readonly result: Result; readonly ingested: Result; readonly forwarded: Result; readonly rss: string }> = []
    for (const engine of engines) {
      const server = await start("server.js", engine.env)
      others.push(server.child)
      await seed(server.url)
      await cannon(server.url + "/v1/tools/resolve_reference_target", request, { seconds: 3 }) // warm-up
      const result = await measure(server, request)
      const ingested = await ingest(server)
      const forwarded = await ingest(server, "telegram")
      durable.push({ name: engine.name, result, ingested, forwarded, rss: rssOf(server.child) })
      server.child.kill("SIGTERM")
    }
    const memoryRss = rssOf(service.child)
    const ratio = deixis.requests.average / baseline.requests.average
    const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")
    console.log(`\nin-process floors (bench/server.ts: the service composed in the bench's own build, not dist/main.js) — Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, autocannon ${connections} connections, ${duration} s per run, logging at Warning unless said, load average at the end ${load}\n`)
    console.log("| run | requests/s | p50 (ms) | p99 (ms) | non-2xx | server CPU µs/request |")
    console.log("|---|---:|---:|---:|---:|---:|")
    const row = (name: string, r: Result) =>
      console.log(`| ${name} | ${Math.round(r.requests.average).toLocaleString("en-US")} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx + r.errors} | ${r.cpuUs === undefined || Number.isNaN(r.cpuUs) ? "?" : Math.round(r.cpuUs)} |`)
    row("bare node:http, constant JSON", baseline)
    row("bare node:http, the same work (core resolve on the memory store, nothing else)", sameWork)
    row("deixis resolve_reference_target, max rate", deixis)
    row("deixis resolve_reference_target, 1,000 req/s", paced)
    row("bare node:http, 1,000 req/s", barePaced)
    row("deixis resolve_reference_target, logging at Info (the default), max rate", logged)
    for (const d of durable) row(`deixis resolve_reference_target, ${d.name}, max rate`, d.result)
    row("deixis POST /v1/events, one new message per request, memory store, max rate", ingested)
    for (const d of durable) row(`deixis POST /v1/events, one new message per request, ${d.name}, max rate`, d.ingested)
    row("deixis POST /v1/telegram/updates, one new update per request, memory store, max rate", forwarded)
    for (const d of durable) row(`deixis POST /v1/telegram/updates, one new update per request, ${d.name}, max rate`, d.forwarded)
    console.log(`\nthe resolve answer: ${answerBytes} bytes`)
    console.log(`\nratio (deixis / bare): ${ratio.toFixed(2)} — target >= 0.6; p99 at 1,000 req/s: ${paced.latency.p99} ms — target within 2 ms of bare's (bare: ${barePaced.latency.p99} ms)`)
    console.log(`ratio (deixis / bare doing the same work): ${(deixis.requests.average / sameWork.requests.average).toFixed(2)}, ${((deixis.cpuUs ?? 0) / (sameWork.cpuUs ?? 1)).toFixed(2)}× its CPU per request — what the service's HTTP layer costs`)
    console.log(`logging at Info / at Warning: ${(logged.requests.average / deixis.requests.average).toFixed(2)} of the rate, ${((logged.cpuUs ?? 0) / (deixis.cpuUs ?? 1)).toFixed(2)}× the CPU per request`)
    console.log(`server RSS after its runs (MiB; DEIXIS_STORE_CACHE_MB at its default): memory store ${memoryRss}${
      durable.map((d) => `, ${d.name} ${d.rss}`).join("")
    }`)
    for (const d of durable) {
      const target = d.name.startsWith("SQLite") ? 0.6 : 0.4
      console.log(`ratio (${d.name} / memory store): ${(d.result.requests.average / deixis.requests.average).toFixed(2)} — target >= ${target}`)
    }
  } finally {
    bare.child.kill("SIGTERM")
    bareCore.child.kill("SIGTERM")
    service.child.kill("SIGTERM")
    logging.child.kill("SIGTERM")
    for (const child of others) child.kill("SIGTERM")
    rmSync(sqliteDir, { recursive: true, force: true })
    if (stores.includes("pg")) dropPgSchema(pgUrl, pgSchema)
  }
}

void main()
