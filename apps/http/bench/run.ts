/**
 * `pnpm bench`: the service as it ships — `node dist/main.js`, default configuration, logging at
 * its default level (Info) to a drained pipe — in a process of its own, driven over loopback by
 * another process (`load.ts`), every store side by side in one run: memory, SQLite
 * (`synchronous=normal`, the default), SQLite `synchronous=full`, PostgreSQL (a fresh schema,
 * dropped after). Only the store keys, a temporary data directory and the port differ from an
 * operator's start. The app's own CPU time and bytes written are read from /proc over each
 * measured window, after a warm-up.
 *
 * Per store: (a) POST /v1/telegram/updates, one update per request, 10 connections, 50 chats;
 * (c) resolve_reference_target throughput, 10 connections, in the seeded 10,000-message chat;
 * (b) resolve at 100/s in that chat, idle, then while 200 single-update Telegram ingests/s land
 * in 50 other chats: p99 under writes ÷ idle p99. Then (d) on SQLite: bytes written per
 * recorded update over 10,000 updates into a database pre-loaded with 100,000 messages.
 * Beside the stores, in the same rounds, (a)'s floors (`bareIngest.ts`): a bare node:http server
 * doing the same ingest with nothing of the service around it, on Maps, on SQLite (a writer
 * thread, group commit) and on PostgreSQL (per group of updates one read and one call of the
 * service's `deixis_unit`), each durable one on a fresh file or schema the service migrated —
 * it is started on it once and stopped — each durable floor's ratio to the Map floor is what that
 * store's ratio to memory can reach in Node with its driver. The SQLite rows split the server's
 * CPU between its main thread and its writer thread (/proc/<pid>/task; the writer is the thread
 * that wrote to files); the PostgreSQL rows, the service's and the floor's, add the CPU of the
 * server's backends serving the process's connections (its sockets' ports matched with
 * pg_stat_activity's client ports, their /proc/<pid>/stat; PostgreSQL on this machine). Then
 * the in-process floors (`floors.ts`) beside them.
 *
 * The stores' apps run side by side and are measured in rounds taking them in turn, so that the
 * machine's other load lands on each alike; each store's best round is shown, every round's
 * figure beside it.
 *
 * BENCH_SECONDS (default 3) per measured window; BENCH_ROUNDS (default 2); BENCH_STORES (default
 * `memory,sqlite,sqlite-full,pg`); BENCH_DISK_UPDATES (default 10000); BENCH_FLOOR_SECONDS
 * (default 2; 0 skips the floors); BENCH_WARM_SECONDS (default 2: each app's ingest before the
 * rounds; 15 moved no ratio, 2026-11-30); BENCH_BARE=0 skips (a)'s floors; DEIXIS_TEST_PG_URL. For comparisons: BENCH_BASE (`apps/http` of another
 * checkout, built: its `dist/main.js` runs every store too, in the same rounds — a before/after
 * in one run, each row named `base …`), BENCH_NODE_ARGS (node options for this checkout's app,
 * e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), BENCH_KINDS=ingest (only the ingest windows).
 */
import { type App, startApp, type Usage, usageSince } from "deixis-test-support/process"
import { execFile, execFileSync, spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs"
import { cpus, tmpdir } from "node:os"
import { join } from "node:path"
import type { Plan, StreamResult } from "./load.js"
import { dropPgSchema, freePort, request, seed } from "./support.js"

const here = import.meta.dirname
const appDir = join(here, "..")
const compiled = join(appDir, ".bench", "bench")
const seconds = Number(process.env["BENCH_SECONDS"] ?? 3)
const roundsOf = Number(process.env["BENCH_ROUNDS"] ?? 2)
const diskUpdates = Number(process.env["BENCH_DISK_UPDATES"] ?? 10_000)
const floorSeconds = Number(process.env["BENCH_FLOOR_SECONDS"] ?? 2)
const warmSeconds = Number(process.env["BENCH_WARM_SECONDS"] ?? 2)
const stores = (process.env["BENCH_STORES"] ?? "memory,sqlite,sqlite-full,pg").split(",")
const pgUrl = process.env["DEIXIS_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const runId = Date.now().toString(36)
const baseDir = process.env["BENCH_BASE"]
const nodeArgs = (process.env["BENCH_NODE_ARGS"] ?? "").split(" ").filter((a) => a !== "")
const ingestOnly = process.env["BENCH_KINDS"] === "ingest"
const bareFloors = process.env["BENCH_BARE"] !== "0"
/** The apps compared: BENCH_BASE's (when set) and this checkout's, each store of each, in the rounds' order. */
const runs = stores.flatMap((store) =>
  baseDir === undefined
    ? [{ name: store, store, appDir }]
    : [{ name: `base ${store}`, store, appDir: baseDir }, { name: store, store, appDir }]
)

/** The load generator, a process of its own. */
const load = (plan: Plan) =>
  new Promise<ReadonlyArray<StreamResult>>((resolve, reject) =>
    execFile(process.execPath, [join(compiled, "load.js"), JSON.stringify(plan)], { maxBuffer: 1 << 20 }, (error, stdout) =>
      error ? reject(error) : resolve(JSON.parse(stdout) as ReadonlyArray<StreamResult>))
  )

/** Each thread of a process: its CPU time (ms, user + system) and the bytes it wrote (`wchar`). */
const threadsOf = (pid: number): Map<number, { readonly ms: number; readonly wchar: number }> => {
  const out = new Map<number, { readonly ms: number; readonly wchar: number }>()
  let tids: Array<string> = []
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch {
    return out
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      const io = readFileSync(`/proc/${pid}/task/${tid}/io`, "utf8")
      out.set(Number(tid), { ms: (Number(fields[11]) + Number(fields[12])) * 10, wchar: Number(/^wchar: (\d+)$/m.exec(io)?.[1] ?? 0) })
    } catch {
      // Gone meanwhile.
    }
  }
  return out
}

/**
 * A window's CPU time on the main thread and on the writer thread — of the others, the one that
 * wrote the most bytes (the SQLite writer; the main thread's writes are its sockets and logs).
 */
interface Split {
  readonly mainMs: number
  readonly writerMs: number | undefined
}
const splitSince = (pid: number, before: ReturnType<typeof threadsOf>): Split => {
  const after = threadsOf(pid)
  const delta = (tid: number, key: "ms" | "wchar") => (after.get(tid)?.[key] ?? 0) - (before.get(tid)?.[key] ?? 0)
  let writer: number | undefined
  for (const tid of after.keys()) {
    if (tid !== pid && delta(tid, "wchar") > 0 && (writer === undefined || delta(tid, "wchar") > delta(writer, "wchar"))) writer = tid
  }
  return { mainMs: delta(pid, "ms"), writerMs: writer === undefined ? undefined : delta(writer, "ms") }
}

/** A process's CPU time so far (ms, user + system) if it is a PostgreSQL process of this machine. */
const postgresMs = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    if (!stat.includes("(postgres)")) return undefined
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return undefined
  }
}

const pgPort = Number(new URL(pgUrl).port || 5432)

/**
 * The CPU time so far of each PostgreSQL backend serving process `pid`'s connections (the server
 * on this machine): the process's TCP sockets to the server's port (its /proc/<pid>/fd, the
 * ports in /proc/net/tcp) matched with pg_stat_activity's client ports. Empty when the server is
 * elsewhere or cannot be asked.
 */
const pgBackendsOf = (pid: number): Map<number, number> => {
  const out = new Map<number, number>()
  const inodes = new Set<string>()
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
        if (socket !== null) inodes.add(socket[1]!)
      } catch {
        // Closed meanwhile.
      }
    }
  } catch {
    return out
  }
  const ports = new Set<number>()
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = ""
    try {
      text = readFileSync(table, "utf8")
    } catch {
      continue
    }
    // sl, local address:port, remote address:port, …, the socket's inode tenth.
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/)
      if (fields.length < 10 || !inodes.has(fields[9]!)) continue
      if (parseInt(fields[2]!.split(":")[1]!, 16) === pgPort) ports.add(parseInt(fields[1]!.split(":")[1]!, 16))
    }
  }
  if (ports.size === 0) return out
  let rows = ""
  try {
    rows = execFileSync("psql", [pgUrl, "-Atc", "SELECT pid, client_port FROM pg_stat_activity WHERE client_port IS NOT NULL"], { encoding: "utf8" })
  } catch {
    return out
  }
  for (const row of rows.split("\n")) {
    const [backend, port] = row.split("|").map(Number)
    const ms = ports.has(port!) ? postgresMs(backend!) : undefined
    if (ms !== undefined) out.set(backend!, ms)
  }
  return out
}

/** The CPU time (ms) the backends serving `pid` used since `before` (a backend opened meanwhile: all of its). */
const pgMsSince = (pid: number, before: Map<number, number>): number | undefined => {
  const after = pgBackendsOf(pid)
  if (after.size === 0) return undefined
  let ms = 0
  for (const [backend, now] of after) ms += now - (before.get(backend) ?? 0)
  return ms
}

/** A window's results with what the app used meanwhile (`pg`: and its PostgreSQL backends). */
const measured = async (app: App, plan: Plan, pg = false) => {
  const before = app.usage()
  const threads = threadsOf(app.pid)
  const backends = pg ? pgBackendsOf(app.pid) : undefined
  const results = await load(plan)
  return {
    results, used: usageSince(before, app.usage()), split: splitSince(app.pid, threads),
    pgMs: backends === undefined ? undefined : pgMsSince(app.pid, backends)
  }
}

const cpuUs = (used: Usage, n: number) => ((used.userMs + used.systemMs) * 1000) / n
const pgSchemas: Array<string> = []
/** A fresh schema's name, dropped at the end. */
const pgSchema = () => {
  const schema = `deixis_http_bench_${runId}_${pgSchemas.length}`
  pgSchemas.push(schema)
  return schema
}

const storeEnv = (store: string, dir: string): Record<string, string> => {
  switch (store) {
    case "memory":
      return { DEIXIS_STORE: "memory" }
    case "sqlite":
      return { DEIXIS_STORE: `sqlite:${join(dir, "deixis.sqlite")}` }
    case "sqlite-full":
      return { DEIXIS_STORE: `sqlite:${join(dir, "deixis.sqlite")}`, DEIXIS_SQLITE_SYNCHRONOUS: "full" }
    case "pg":
      return { DEIXIS_STORE: pgUrl, DEIXIS_PG_SCHEMA: pgSchema() }
    default:
      throw new Error(`unknown store ${store} (memory, sqlite, sqlite-full, pg)`)
  }
}

const launch = async (store: string, dir: string, from = appDir) => {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const app = await startApp(join(from, "dist", "main.js"), {
    cwd: dir,
    env: { PORT: String(port), ...storeEnv(store, dir) },
    nodeArgs: from === appDir ? nodeArgs : [],
    ready: `${url}/healthz`
  })
  return { app, url }
}

let nextChats = -3_000_000
/** 50 chats no earlier stream of this run wrote to. */
const freshChats = () => (nextChats -= 100)
let nextId = 1
/** Update ids no earlier stream of this run used (`count` of them). */
const freshIds = (count: number) => {
  const first = nextId
  nextId += count
  return first
}

const ingestStream = (extra: { readonly connections?: number; readonly rate?: number }) => ({
  kind: "telegram" as const, chats: 50, chatBase: freshChats(), firstId: freshIds(10_000_000), ...extra
})

interface StoreFigures {
  readonly store: string
  readonly ingest: StreamResult
  readonly ingestUsed: Usage
  readonly ingestSplit: Split
  /** The app's PostgreSQL backends' CPU time over the ingest window (ms), where measured. */
  readonly ingestPgMs: number | undefined
  readonly resolve: StreamResult
  readonly resolveUsed: Usage
  readonly idle: StreamResult
  readonly underWrites: StreamResult
  readonly writesDuringReads: StreamResult
  readonly rounds?: ReadonlyArray<StoreFigures>
}

const resolveStream = (extra: { readonly connections?: number; readonly rate?: number }) => ({ kind: "resolve" as const, body: request, ...extra })

/**
 * Every store's app started, seeded and warmed, then measured in rounds that take the stores in
 * turn (a window of each kind on each store, then the next kind): a change in the machine's
 * other load lands on every store alike, so the ratios within one run hold.
 */
const storeRuns = async (): Promise<Array<StoreFigures>> => {
  const apps: Array<{
    readonly store: string
    readonly app: App
    readonly url: string
    readonly dir: string
    readonly floor: boolean
    readonly pg: boolean
  }> = []
  try {
    for (const run of runs) {
      const dir = mkdtempSync(join(tmpdir(), "deixis-http-bench-"))
      const { app, url } = await launch(run.store, dir, run.appDir)
      apps.push({ store: run.name, app, url, dir, floor: false, pg: run.store === "pg" })
      await seed(url)
      await load({ url, seconds: warmSeconds, streams: [ingestStream({ connections: 10 })] }) // warm-up
      await load({ url, seconds: 1, streams: [resolveStream({ connections: 10 })] })
    }
    // (a)'s floors: ingest windows only, in the same rounds.
    for (const store of bareFloors ? ["memory", "sqlite", "pg"].filter((s) => stores.includes(s)) : []) {
      const dir = mkdtempSync(join(tmpdir(), "deixis-http-bench-"))
      const schema = store === "pg" ? pgSchema() : undefined
      const bare = store === "sqlite" ? `sqlite:${join(dir, "bare.sqlite")}` : store === "pg" ? `pg:${pgUrl}#${schema}` : store
      if (store !== "memory") {
        // A fresh file or schema the service migrates (started on it until it answers, then
        // stopped): the floor writes the service's own tables (on PostgreSQL through its functions).
        const port = await freePort()
        const migrator = await startApp(join(appDir, "dist", "main.js"), {
          cwd: dir,
          env: { PORT: String(port), ...(schema === undefined ? { DEIXIS_STORE: bare } : { DEIXIS_STORE: pgUrl, DEIXIS_PG_SCHEMA: schema }) },
          ready: `http://127.0.0.1:${port}/healthz`
        })
        await migrator.stop()
      }
      const port = await freePort()
      const url = `http://127.0.0.1:${port}`
      const app = await startApp(join(compiled, "bareIngest.js"), {
        cwd: dir,
        env: { PORT: String(port), BARE_STORE: bare },
        ready: `${url}/healthz`
      })
      apps.push({ store: `floor ${store}`, app, url, dir, floor: true, pg: store === "pg" })
      await load({ url, seconds: 2, streams: [ingestStream({ connections: 10 })] }) // warm-up
    }
    const rounds = apps.map(() => [] as Array<StoreFigures>)
    for (let round = 0; round < roundsOf; round++) {
      const ingest: Array<Awaited<ReturnType<typeof measured>>> = []
      for (const { app, pg, url } of apps) ingest.push(await measured(app, { url, seconds, streams: [ingestStream({ connections: 10 })] }, pg))
      const resolve: Array<Awaited<ReturnType<typeof measured>>> = []
      const idle: Array<StreamResult> = []
      const under: Array<ReadonlyArray<StreamResult>> = []
      // Only the ingest windows (BENCH_KINDS=ingest, and the floors always): the others repeat its figures.
      const only = (i: number) => ingestOnly || apps[i]!.floor
      for (const [i, { app, url }] of apps.entries()) {
        resolve.push(only(i) ? ingest[i]! : await measured(app, { url, seconds, streams: [resolveStream({ connections: 10 })] }))
      }
      for (const [i, { url }] of apps.entries()) {
        idle.push(only(i) ? ingest[i]!.results[0]! : (await load({ url, seconds, streams: [resolveStream({ rate: 100 })] }))[0]!)
      }
      for (const [i, { url }] of apps.entries()) {
        under.push(
          only(i)
            ? [ingest[i]!.results[0]!, ingest[i]!.results[0]!]
            : await load({ url, seconds, streams: [resolveStream({ rate: 100 }), ingestStream({ rate: 200 })] })
        )
      }
      apps.forEach(({ store }, i) =>
        rounds[i]!.push({
          store, ingest: ingest[i]!.results[0]!, ingestUsed: ingest[i]!.used, ingestSplit: ingest[i]!.split, ingestPgMs: ingest[i]!.pgMs,
          resolve: resolve[i]!.results[0]!, resolveUsed: resolve[i]!.used,
          idle: idle[i]!, underWrites: under[i]![0]!, writesDuringReads: under[i]![1]!
        }))
    }
    // Per store, its best round: the fastest ingest window, the lowest p99 ratio (each is the
    // machine at its quietest for that store); every round's figure is printed beside.
    return rounds.map((r) => {
      const ingest = [...r].sort((a, b) => b.ingest.perSecond - a.ingest.perSecond)[0]!
      const resolve = [...r].sort((a, b) => b.resolve.perSecond - a.resolve.perSecond)[0]!
      const cross = [...r].sort((a, b) => a.underWrites.p99 / a.idle.p99 - b.underWrites.p99 / b.idle.p99)[0]!
      return {
        ...ingest, resolve: resolve.resolve, resolveUsed: resolve.resolveUsed,
        idle: cross.idle, underWrites: cross.underWrites, writesDuringReads: cross.writesDuringReads, rounds: r
      }
    })
  } finally {
    for (const { app, dir } of apps) {
      await app.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** 100,000 messages in 50 chats, 1,000 per request to POST /v1/events. */
const preload = async (url: string, chatBase: number) => {
  for (let batch = 0; batch < 100; batch++) {
    const events = Array.from({ length: 1000 }, (_, i) => {
      const n = batch * 1000 + i
      return {
        type: "message_observed", chat_id: chatBase - (n % 50), message_id: 50_000_000 + n, sender_user_id: 1000 + (n % 20),
        text: `an earlier message, number ${n}`
      }
    })
    const response = await fetch(url + "/v1/events", {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(events)
    })
    if (!response.ok) throw new Error(`preload failed: ${response.status} ${await response.text()}`)
  }
}

/** (d): bytes written per recorded update into a 100,000-message database, in two halves. */
const diskRun = async () => {
  const dir = mkdtempSync(join(tmpdir(), "deixis-http-bench-"))
  const { app, url } = await launch("sqlite", dir)
  try {
    const chatBase = freshChats()
    await preload(url, chatBase)
    // What the preload left to write (a checkpoint) lands before the window, not in it.
    await new Promise((r) => setTimeout(r, 2000))
    const halves = []
    for (let half = 0; half < 2; half++) {
      const count = Math.ceil(diskUpdates / 2)
      const run = await measured(app, {
        url, seconds: 600, count, streams: [{ kind: "telegram", connections: 10, chats: 50, chatBase, firstId: freshIds(count) }]
      })
      halves.push({ result: run.results[0]!, used: run.used })
    }
    return halves
  } finally {
    await app.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Whether a row is one of (a)'s floors (ingest only: no resolve, no (b)). */
const isFloor = (f: StoreFigures) => f.store.startsWith("floor ")

/** The floors' rows in table (a). */
const floorNames: Record<string, string> = {
  "floor memory": "bare node:http + Map, the same ingest",
  "floor sqlite": "bare node:http + better-sqlite3 writer thread, the same ingest",
  "floor pg": "bare node:http + pg, the same ingest"
}

const n0 = (x: number) => Math.round(x).toLocaleString("en-US")
/** A row's PostgreSQL backends' CPU per update (µs), where measured. */
const pgUs = (f: StoreFigures): string | undefined => (f.ingestPgMs === undefined ? undefined : n0((f.ingestPgMs * 1000) / f.ingest.total))
const ms1 = (x: number) => x.toFixed(1)
const kb = (bytes: number, n: number) => (bytes / n / 1024).toFixed(1)

const main = async () => {
  const t0 = performance.now()
  const figures: Array<StoreFigures> = []
  try {
    figures.push(...await storeRuns())
    const disk = stores.includes("sqlite") && diskUpdates > 0 ? await diskRun() : []
    const load1 = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")
    console.log(
      `\napps/http, the shipped process (node dist/main.js, default configuration, logging at Info to a drained pipe), ` +
        `driven from another process over loopback — Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "?"}, ` +
        `${new Date().toISOString().slice(0, 16)}Z, ${seconds} s per window, ${roundsOf} rounds taking the stores in turn (each store's best round shown), load average at the end ${load1}\n`
    )
    console.log("(a) POST /v1/telegram/updates, one update per request, 10 connections, 50 chats; (c) resolve_reference_target, 10 connections\n")
    console.log("| store | (a) updates/s | p99 ms | server CPU µs/update (user+sys) | main / writer thread µs/update | PostgreSQL backends CPU µs/update | disk KB/update | write calls/update | ratio to memory | (c) resolves/s | server CPU µs/resolve | (a) every round, updates/s (server CPU µs/update, PostgreSQL backends') |")
    console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    const memoryOf = (name: string) =>
      figures.find((f) => f.store === (name.startsWith("base ") ? "base memory" : name.startsWith("floor ") ? "floor memory" : "memory"))
    for (const f of figures) {
      const memory = memoryOf(f.store)
      const n = f.ingest.total
      const floor = isFloor(f)
      const failed = f.ingest.failed + (floor ? 0 : f.resolve.failed)
      const { mainMs, writerMs } = f.ingestSplit
      console.log(
        `| ${floorNames[f.store] ?? f.store} | ${n0(f.ingest.perSecond)} | ${ms1(f.ingest.p99)} | ${n0(cpuUs(f.ingestUsed, n))} (${n0((f.ingestUsed.userMs * 1000) / n)}+${n0((f.ingestUsed.systemMs * 1000) / n)}) | ` +
          `${n0((mainMs * 1000) / n)} / ${writerMs === undefined ? "–" : n0((writerMs * 1000) / n)} | ${pgUs(f) ?? "–"} | ` +
          `${kb(f.ingestUsed.writeBytes, n)} | ${(f.ingestUsed.writeCalls / n).toFixed(1)} | ${memory === undefined ? "?" : (f.ingest.perSecond / memory.ingest.perSecond).toFixed(2)} | ` +
          `${floor ? "–" : n0(f.resolve.perSecond)} | ${floor ? "–" : n0(cpuUs(f.resolveUsed, f.resolve.total))} | ` +
          `${(f.rounds ?? []).map((r) => `${n0(r.ingest.perSecond)} (${n0(cpuUs(r.ingestUsed, r.ingest.total))} µs${pgUs(r) === undefined ? "" : `, ${pgUs(r)}`})`).join(", ")} |` +
          (failed > 0 ? ` ${failed} failed` : "")
      )
    }
    console.log("\n(b) resolve at 100/s in the seeded chat, idle, then while 200 single-update Telegram ingests/s land in 50 other chats (latency from when each request was due)\n")
    console.log("| store | idle p50 / p99 ms | under writes p50 / p99 / max ms | p99 ratio (under ÷ idle) | ingests/s achieved | every round's ratio |")
    console.log("|---|---:|---:|---:|---:|---|")
    for (const f of figures.filter((f) => !isFloor(f))) {
      console.log(
        `| ${f.store} | ${ms1(f.idle.p50)} / ${ms1(f.idle.p99)} | ${ms1(f.underWrites.p50)} / ${ms1(f.underWrites.p99)} / ${ms1(f.underWrites.max)} | ` +
          `${(f.underWrites.p99 / f.idle.p99).toFixed(2)} | ${n0(f.writesDuringReads.perSecond)} | ${(f.rounds ?? []).map((r) => (r.underWrites.p99 / r.idle.p99).toFixed(2)).join(", ")} |` +
          (f.underWrites.failed + f.writesDuringReads.failed > 0 ? ` ${f.underWrites.failed + f.writesDuringReads.failed} failed` : "")
      )
    }
    if (disk.length > 0) {
      console.log(`\n(d) SQLite (normal): ${n0(diskUpdates)} single-update Telegram ingests into a database pre-loaded with 100,000 messages, in two halves\n`)
      console.log("| half | updates/s | disk KB/update (write_bytes) | write calls/update | server CPU µs/update |")
      console.log("|---|---:|---:|---:|---:|")
      disk.forEach(({ result, used }, i) =>
        console.log(`| ${i + 1} | ${n0(result.perSecond)} | ${kb(used.writeBytes, result.total)} | ${(used.writeCalls / result.total).toFixed(1)} | ${n0(cpuUs(used, result.total))} |`))
    }
    console.log("\ntargets (issue #34), as ratios within this run:")
    const by = (s: string) => figures.find((f) => f.store === s)
    const memory = by("memory")
    if (memory !== undefined) {
      console.log(`- memory ingest ${n0(memory.ingest.perSecond)}/s — target ≥ 4,000/s`)
      for (const [s, target] of [["sqlite", 0.6], ["sqlite-full", 0.6], ["pg", 0.3]] as const) {
        const f = by(s)
        if (f !== undefined) console.log(`- ${s} ingest ${(f.ingest.perSecond / memory.ingest.perSecond).toFixed(2)}× memory — target ≥ ${target}×`)
      }
    }
    const floorMemory = by("floor memory")
    for (const store of ["sqlite", "pg"]) {
      const [floor, app] = [by(`floor ${store}`), by(store)]
      if (floorMemory === undefined || floor === undefined) continue
      // The process's CPU per update, and its PostgreSQL backends' where measured.
      const us = (f: StoreFigures) => `${n0(cpuUs(f.ingestUsed, f.ingest.total))}${pgUs(f) === undefined ? "" : ` + ${pgUs(f)} PostgreSQL`}`
      console.log(
        `- the floor, ${floorNames[`floor ${store}`]} ÷ ${floorNames["floor memory"]}: ${(floor.ingest.perSecond / floorMemory.ingest.perSecond).toFixed(2)}× ` +
          `(${us(floor)} against ${us(floorMemory)} µs/update)` +
          (memory !== undefined && app !== undefined
            ? `, beside the app's ${(app.ingest.perSecond / memory.ingest.perSecond).toFixed(2)}× (${us(app)} against ${us(memory)} µs/update)`
            : "")
      )
    }
    for (const f of figures.filter((f) => !isFloor(f))) console.log(`- ${f.store} resolve p99 under writes ${(f.underWrites.p99 / f.idle.p99).toFixed(2)}× idle — target ≤ 2×`)
    if (disk.length > 0) {
      const total = disk.reduce((a, d) => a + d.used.writeBytes, 0) / disk.reduce((a, d) => a + d.result.total, 0)
      console.log(`- SQLite disk written ${(total / 1024).toFixed(1)} KB/update over ${n0(diskUpdates)} into 100,000 messages — target ≤ 8 KB, not growing (halves: ${disk.map((d) => kb(d.used.writeBytes, d.result.total)).join(", ")})`)
    }
    console.log(
      "\nThe machine is shared: absolute rates move with the other load on it; compare ratios within one run. PostgreSQL's own writes are the database server's, not in the app's write_bytes; " +
        "its CPU is the backends' column (the backends serving the process's connections; the server's shared processes, WAL writer and checkpointer, are in no row)."
    )
    console.log(`shipped runs took ${((performance.now() - t0) / 1000).toFixed(0)} s`)
  } finally {
    for (const schema of pgSchemas) dropPgSchema(pgUrl, schema)
  }
  if (floorSeconds > 0) {
    // The in-process floors, printed after (their own process; their servers their own too).
    await new Promise<void>((resolve) => {
      const child = spawn(process.execPath, [join(compiled, "floors.js")], {
        stdio: ["ignore", "inherit", "inherit"],
        env: { ...process.env, BENCH_FLOOR_SECONDS: String(floorSeconds), BENCH_STORES: stores.filter((s) => s !== "sqlite-full").join(",") }
      })
      child.once("exit", () => resolve())
    })
  }
}

void main()
