/**
 * `BENCH_SUITES=pages`: which tables and indexes one recorded single-message update writes on
 * SQLite. Loads PAGES_MESSAGES messages (default 100,000) in 50 chats as the disk suite does,
 * lets the checkpoint settle, records PAGES_UPDATES updates (default 300; few enough that the
 * WAL is not checkpointed meanwhile) as the Telegram recorder does, 10 at once, then reads the
 * WAL they left: its frames, each a page, named by the b-tree it belongs to (`dbstat`).
 */
import * as Deixis from "@deixis/core/Deixis"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Sqlite from "../src/Sqlite.js"
import { CHATS, preload, recordUpdate } from "./disk.js"

const MESSAGES = Number(process.env["PAGES_MESSAGES"] ?? 100_000)
const UPDATES = Number(process.env["PAGES_UPDATES"] ?? 300)
const INBOX = process.env["PAGES_INBOX"] === "1"
const CONCURRENCY = 10

/** The WAL's frames since its last reset: page number of each, and how many were commits. */
const walFrames = (file: string) => {
  const wal = fs.readFileSync(`${file}-wal`)
  const pageSize = wal.readUInt32BE(8)
  const salt1 = wal.readUInt32BE(16)
  const salt2 = wal.readUInt32BE(20)
  const pages: Array<number> = []
  let commits = 0
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break
    pages.push(wal.readUInt32BE(at))
    if (wal.readUInt32BE(at + 4) !== 0) commits++
  }
  return { pages, commits, pageSize }
}

export const pagesSuite = async (): Promise<string> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-bench-pages-"))
  const filename = path.join(dir, "bench.db")
  const stores = Sqlite.layer({ filename, sweep_interval: 0 })
  const runtime = ManagedRuntime.make(Layer.mergeAll(Deixis.layerWith(stores), stores, Logger.minimumLogLevel(LogLevel.None)))
  const perChat = Math.ceil(MESSAGES / CHATS)
  const frames = await runtime.runPromise(Effect.gen(function*() {
    yield* preload(CHATS, perChat)
    yield* Effect.sleep("1500 millis")
    let next = 0
    const record = recordUpdate(perChat, INBOX)
    yield* Effect.forEach(Array.from({ length: CONCURRENCY }, () => 0), () =>
      Effect.gen(function*() {
        while (next < UPDATES) yield* record(next++)
      }), { concurrency: "unbounded", discard: true })
    return walFrames(filename)
  }))
  // The b-tree of every page, read from a copy (the runtime's close checkpoints the WAL).
  fs.copyFileSync(filename, `${filename}.copy`)
  await runtime.dispose()
  const db = new Database(`${filename}.copy`, { readonly: true })
  const owner = new Map<number, string>()
  for (const row of db.prepare("SELECT name, pageno FROM dbstat").iterate() as Iterable<{ name: string; pageno: number }>) {
    owner.set(row.pageno, row.name)
  }
  const sizes = new Map<string, number>()
  for (const row of db.prepare("SELECT name, count(*) AS pages FROM dbstat GROUP BY name").all() as Array<{ name: string; pages: number }>) {
    sizes.set(row.name, row.pages)
  }
  db.close()
  const byName = new Map<string, { frames: number; distinct: Set<number> }>()
  for (const page of frames.pages) {
    const name = page === 1 ? "(page 1: header)" : owner.get(page) ?? "(new or freed page)"
    const entry = byName.get(name) ?? { frames: 0, distinct: new Set<number>() }
    entry.frames++
    entry.distinct.add(page)
    byName.set(name, entry)
  }
  fs.rmSync(dir, { recursive: true, force: true })
  const perUpdate = (n: number) => (n / UPDATES).toFixed(2)
  const kb = (n: number) => ((n * (frames.pageSize + 24)) / UPDATES / 1024).toFixed(2)
  const rows = [...byName].sort((a, b) => b[1].frames - a[1].frames)
  return [
    `SQLite: WAL frames of ${UPDATES} single-message updates${INBOX ? " (with the inbox)" : ""} into ${MESSAGES} messages, ${CONCURRENCY} at once: ` +
    `${frames.pages.length} frames in ${frames.commits} commits (${perUpdate(frames.commits)} commits/update)`,
    "",
    "| b-tree | frames/update | WAL KB/update | distinct pages | pages in the b-tree |",
    "|---|---:|---:|---:|---:|",
    ...rows.map(([name, e]) => `| ${name} | ${perUpdate(e.frames)} | ${kb(e.frames)} | ${e.distinct.size} | ${sizes.get(name) ?? ""} |`),
    `| total | ${perUpdate(frames.pages.length)} | ${kb(frames.pages.length)} | | |`
  ].join("\n")
}

if (process.argv[1]?.endsWith("pages.ts") || process.argv[1]?.endsWith("pages.js")) {
  pagesSuite().then((table) => console.log(table), (error) => {
    console.error(error)
    process.exit(1)
  })
}
