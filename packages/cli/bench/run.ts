/**
 * `pnpm bench`: `deixis import` of a generated 1,000,000-message Telegram Desktop export
 * (a busy forum supergroup: text with links and mentions as entity arrays, replies, edits,
 * forwards, photo albums, documents, service messages), each run in its own process so its
 * peak memory (max RSS) is its own:
 *
 * - read + decode + map only, over the whole file (what streaming costs, no store);
 * - into a SQLite file, and into PostgreSQL (a fresh schema), each bounded to
 *   `DEIXIS_BENCH_SECONDS` (default 120) of importing: messages/s over what it imported.
 *
 * Prints a markdown table. Never a test: numbers depend on the machine.
 */
import * as SqlStore from "@deixis/store-sql/SqlStore"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Cli from "../src/Cli.js"
import * as Import from "../src/Import.js"
import { Scanner } from "../src/internal/scanner.js"
import * as TelegramExport from "../src/TelegramExport.js"

const MESSAGES = Number(process.env["DEIXIS_BENCH_MESSAGES"] ?? 1_000_000)
const SECONDS = Number(process.env["DEIXIS_BENCH_SECONDS"] ?? 120)
const pgUrl = process.env["DEIXIS_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const self = fileURLToPath(import.meta.url)

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

/** Writes the export; returns its size in bytes. */
const generate = async (file: string): Promise<number> => {
  const out = fs.createWriteStream(file)
  const write = (s: string) => (out.write(s) ? Promise.resolve() : new Promise<void>((r) => out.once("drain", () => r())))
  await write("{\n \"name\": \"Bench Forum\",\n \"type\": \"private_supergroup\",\n \"id\": 1999000001,\n \"messages\": [\n")
  const topics: Array<number> = []
  let date = 1_700_000_000
  let chunk: Array<string> = []
  for (let id = 1; id <= MESSAGES; id++) {
    date += 1 + Math.floor(random() * 20)
    const common = { id, date: new Date(date * 1000).toISOString().slice(0, 19), date_unixtime: String(date) }
    const user = 1000 + Math.floor(random() * 200)
    const from = { from: `User ${user}`, from_id: `user${user}` }
    const roll = random()
    let m: Record<string, unknown>
    if (roll < 0.01 || topics.length === 0) {
      topics.push(id)
      m = { ...common, type: "service", actor: from.from, actor_id: from.from_id, action: "topic_created", title: sentence().slice(0, 30), text: "", text_entities: [] }
    } else if (roll < 0.03) {
      m = { ...common, type: "service", actor: from.from, actor_id: from.from_id, action: "invite_members", members: ["New Member"], text: "", text_entities: [] }
    } else {
      const text = sentence()
      const parts: Array<Record<string, unknown>> = [{ type: "plain", text }]
      if (random() < 0.2) parts.push({ type: "plain", text: " see " }, { type: "link", text: `https://example.com/a/${id}` })
      if (random() < 0.1) parts.push({ type: "plain", text: " " }, { type: "mention", text: `@user_${user}` })
      const replyTo = random() < 0.6 ? pick(topics) : Math.max(1, id - 1 - Math.floor(random() * 50))
      m = { ...common, type: "message", ...from, reply_to_message_id: replyTo, text: parts.length === 1 ? text : parts.map((p) => (p["type"] === "plain" ? p["text"] : p)), text_entities: parts }
      if (random() < 0.08) Object.assign(m, { edited: common.date, edited_unixtime: String(date + 60) })
      if (random() < 0.04) Object.assign(m, { forwarded_from: "News Channel", forwarded_from_id: "channel1555000001" })
      if (random() < 0.06) Object.assign(m, { photo: `photos/photo_${id}.jpg`, width: 1280, height: 960 })
      else if (random() < 0.02) Object.assign(m, { file: `files/report_${id}.pdf`, file_name: `report_${id}.pdf`, mime_type: "application/pdf" })
    }
    chunk.push(`  ${JSON.stringify(m)}`)
    if (chunk.length === 1000) {
      await write(chunk.join(",\n") + (id === MESSAGES ? "\n" : ",\n"))
      chunk = []
    }
  }
  if (chunk.length > 0) await write(chunk.join(",\n") + "\n")
  await write(" ]\n}\n")
  await new Promise<void>((resolve) => out.end(() => resolve()))
  return fs.statSync(file).size
}

interface Result {
  readonly messages: number
  readonly seconds: number
  readonly share: number
  readonly rss_mb: number
}

const rssMb = () => Math.round(process.resourceUsage().maxRSS / 1024)

/** Read, decode and map every message, recording nothing. */
const parseOnly = async (file: string): Promise<Result> => {
  const started = performance.now()
  const scanner = new Scanner("messages", 16 * 1024 * 1024)
  const fields = new Map<string, unknown>()
  const state = TelegramExport.initialState()
  let head: TelegramExport.ChatHead | null = null
  let messages = 0
  for await (const chunk of fs.createReadStream(file, { encoding: "utf8", highWaterMark: 1 << 20 })) {
    for (const token of scanner.feed(chunk as string)) {
      if (token._tag === "Field") fields.set(token.key, JSON.parse(token.raw))
      else if (token._tag === "ArrayStart") head = Either.getOrThrow(TelegramExport.readHead(fields))
      else if (token._tag === "Element") {
        const m = Either.getOrThrow(TelegramExport.decode(JSON.parse(token.raw), token.index + 1))
        TelegramExport.toUpdate(head!, m, state)
        messages++
      }
    }
  }
  scanner.end()
  return { messages, seconds: (performance.now() - started) / 1000, share: 1, rss_mb: rssMb() }
}

/** Import into the store `DEIXIS_STORE` names, for at most SECONDS. */
const importBounded = async (file: string, store: string): Promise<Result> => {
  let last: Import.Progress = { messages: 0, bytes: 0, total_bytes: 1, elapsed_ms: 0 }
  const choice = store.startsWith("postgres")
    ? { _tag: "postgres" as const, url: Redacted.make(store) }
    : { _tag: "sqlite" as const, filename: store.slice("sqlite:".length) }
  const started = performance.now()
  await Effect.runPromise(
    Import.importFile(file, { onProgress: (p) => void (last = p) }).pipe(
      Effect.provide(Cli.services(choice)),
      Effect.timeoutOption(`${SECONDS} seconds`),
      Effect.scoped
    ) as Effect.Effect<unknown, unknown, never>
  )
  const seconds = (performance.now() - started) / 1000
  return { messages: last.messages, seconds: last.elapsed_ms / 1000 || seconds, share: last.bytes / last.total_bytes, rss_mb: rssMb() }
}

const child = async (mode: string, file: string): Promise<void> => {
  const result = mode === "parse" ? await parseOnly(file) : await importBounded(file, mode)
  process.stdout.write(JSON.stringify(result))
}

const main = async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-cli-bench-"))
  const file = path.join(dir, "result.json")
  try {
    const t0 = performance.now()
    const bytes = await generate(file)
    console.error(`generated ${MESSAGES} messages, ${(bytes / 1e6).toFixed(0)} MB in ${((performance.now() - t0) / 1000).toFixed(0)}s`)
    const schema = `cli_bench_${process.pid}`
    const runs: ReadonlyArray<readonly [string, string, Record<string, string>]> = [
      ["read + decode + map only (no store)", "parse", {}],
      ["SQLite file", `sqlite:${path.join(dir, "bench.sqlite")}`, {}],
      ["PostgreSQL", pgUrl, { DEIXIS_PG_SCHEMA: schema }]
    ]
    const rows: Array<string> = []
    for (const [label, mode, env] of runs) {
      const out = execFileSync(process.execPath, [self, "--child", mode, file], {
        env: { ...process.env, ...env },
        encoding: "utf8",
        maxBuffer: 1 << 20,
        timeout: (SECONDS + 300) * 1000
      })
      const r = JSON.parse(out) as Result
      console.error(label, r)
      rows.push(`| ${label} | ${r.messages.toLocaleString("en")} | ${(r.share * 100).toFixed(0)}% | ${Math.round(r.messages / r.seconds).toLocaleString("en")} | ${r.rss_mb} |`)
    }
    await Effect.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(
        Effect.provide(SqlStore.layerPgClient({ url: pgUrl, max_connections: 1 })),
        Effect.orElse(() => Effect.void)
      )
    )
    console.log(`\n${MESSAGES.toLocaleString("en")}-message export, ${(bytes / 1e6).toFixed(0)} MB; import bounded to ${SECONDS} s per store; ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(2)}\n`)
    console.log("| run | messages | of the file | messages/s | peak RSS (MB) |")
    console.log("|---|---:|---:|---:|---:|")
    for (const row of rows) console.log(row)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[2] === "--child") await child(process.argv[3]!, process.argv[4]!)
else await main()
