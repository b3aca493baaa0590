import * as SqlStore from "@deixis/store-sql/SqlStore"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Cli from "../src/Cli.js"
import { pgUrl as testPgUrl } from "deixis-test-support/pg"

const pgUrl = testPgUrl()
const fixture = (name: string) => path.join(__dirname, "fixtures", name)
const group = String(-(1_000_000_000_000 + 1700000001))

// Runs `deixis <argv>` with the environment `env` (as the apps read theirs), collecting its output.
const deixis = (argv: ReadonlyArray<string>, env: Record<string, string>, progress = false) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const redraws: Array<string> = []
    const out: Cli.Output = { line: (t) => void lines.push(t), progress: progress ? (t) => void redraws.push(t) : undefined }
    yield* Cli.run(argv, out).pipe(
      Effect.provide(NodeContext.layer),
      // Keys as the environment spells them: nested configs (`DEIXIS` + `PG_SCHEMA`) join with "_".
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)), { pathDelim: "_" }))
    )
    return { lines, redraws }
  })

const json = (line: string | undefined) => JSON.parse(line ?? "null") as Record<string, unknown>

const session = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const migrated = yield* deixis(["migrate"], env)
    const first = yield* deixis(["import", fixture("group.json"), "--batch-size", "3"], env, true)
    const again = yield* deixis(["import", fixture("group.json")], env)
    const stats = yield* deixis(["stats"], env)
    const exported = yield* deixis(["export", group], env)
    const swept = yield* deixis(["sweep"], env)
    return { migrated, first, again, stats, exported, swept }
  })

const check = (s: Effect.Effect.Success<ReturnType<typeof session>>) => {
  assert.deepStrictEqual(json(s.migrated.lines[0])["schema_version"], SqlStore.schemaVersion)
  assert.match(s.first.lines[0]!, /imported 10 messages \(3 service\) of Hiking Club \(chat -1001700000001, private_supergroup\)/)
  assert.match(s.again.lines[1]!, /events applied 0, already known 7/)
  // The progress line: messages per second and an ETA.
  assert.isAbove(s.first.redraws.length, 1)
  assert.isTrue(s.first.redraws.some((line) => /\d+ messages, \d+ msg\/s, ETA \d+s/.test(line)), s.first.redraws.join("\n"))
  const stats = json(s.stats.lines[0])
  assert.deepStrictEqual([(stats["context"] as { messages: number }).messages, (stats["history"] as { items: number }).items], [7, 7])
  const rows = s.exported.lines.map((l) => json(l))
  assert.deepStrictEqual(rows.filter((r) => r["type"] === "history_item").map((r) => r["message_id"]), ["3", "4", "5", "6", "7", "8", "9"])
  assert.isTrue(rows.some((r) => r["type"] === "object" && r["kind"] === "link"))
  // What the sweep removed, per table: nothing (the default retention keeps what was recorded).
  assert.deepStrictEqual(json(s.swept.lines[0]), {
    store: json(s.swept.lines[0])["store"],
    objects: 0,
    messages: 0,
    event_ids: 0,
    poll_ids: 0,
    poll_closes: 0,
    history_items: 0
  })
}

describe("deixis commands", () => {
  it.effect("migrate, import (progress, summary), re-import, stats, export and sweep on a SQLite file", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-cli-"))
      const s = yield* session({ DEIXIS_STORE: `sqlite:${path.join(dir, "d.sqlite")}` })
      check(s)
      // Every version, in order, on a fresh file.
      const applied = json(s.migrated.lines[0])["applied"] as ReadonlyArray<number>
      assert.deepStrictEqual([applied[0], applied[applied.length - 1]], [1, SqlStore.schemaVersion])
      assert.isTrue(applied.every((v, i) => i === 0 || v > applied[i - 1]!))
    }))

  it.effect("the same on PostgreSQL (DEIXIS_STORE=postgres://…, its own schema)", () =>
    Effect.gen(function*() {
      const schema = `cli_${process.pid}_${Date.now()}`
      const s = yield* session({ DEIXIS_STORE: pgUrl, DEIXIS_PG_SCHEMA: schema })
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).pipe(
        Effect.provide(SqlStore.layerPgClient({ url: pgUrl, max_connections: 1 }))
      )
      check(s)
    }), 60_000)

  it.effect("an import of a file of another format fails naming it, and writes nothing", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-cli-"))
      const file = path.join(dir, "messages.html")
      fs.writeFileSync(file, "<!DOCTYPE html><html></html>")
      const env = { DEIXIS_STORE: `sqlite:${path.join(dir, "d.sqlite")}` }
      const error = yield* Effect.flip(deixis(["import", file], env))
      assert.match(String((error as { message?: string }).message), /HTML/)
      const stats = json((yield* deixis(["stats"], env)).lines[0])
      assert.strictEqual((stats["history"] as { items: number }).items, 0)
    }))

  it("progress line: share read, messages per second, time left", () => {
    assert.strictEqual(
      Cli.progressLine({ messages: 500, bytes: 250, total_bytes: 1000, elapsed_ms: 1000 }),
      "[######------------------] 25.0% 500 messages, 500 msg/s, ETA 3s"
    )
  })
})
