/**
 * The `deixis` command as an operator runs it: a child process (from the sources, as `pnpm dev`
 * runs the apps, and once through the root script `pnpm deixis`), its exit code, stdout and
 * stderr, on a SQLite file.
 */
import { deixis, deixisCommand, run } from "deixis-test-support/process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "vitest"

const fixtures = path.join(import.meta.dirname, "fixtures")

/** The same on a pseudo-terminal (util-linux `script`): stdout and stderr are a TTY. */
const onTerminal = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  run("script", ["-qec", deixisCommand(args).map((a) => `'${a}'`).join(" "), "/dev/null"], env)

const store = () => ({ DEIXIS_STORE: `sqlite:${path.join(fs.mkdtempSync(path.join(os.tmpdir(), "deixis-cli-process-")), "d.sqlite")}` })
const lines = (text: string) => text.split("\n").filter((l) => l !== "")
const day = 24 * 3600 * 1000
const colour = /\x1b\[/

describe("deixis as a child process", () => {
  it("a re-import says the events are already known, even when a configured retention is past them", async () => {
    // group.json is from April 2025: older than the 30 days configured here.
    const env = { ...store(), DEIXIS_STORE_MESSAGE_RETENTION: "30 days", DEIXIS_HISTORY_STORE_RETENTION: "30 days" }
    const first = await deixis(["import", path.join(fixtures, "group.json")], env)
    assert.strictEqual(first.code, 0, first.stderr)
    assert.match(first.stdout, /events applied 7, already known 0/)
    const again = await deixis(["import", path.join(fixtures, "group.json")], env)
    assert.strictEqual(again.code, 0, again.stderr)
    assert.match(again.stdout, /events applied 0, already known 7/)
  }, 120_000)

  it("the import's summary says what the configured retention will do to what it wrote; the default keeps it, and a sweep right after removes nothing", async () => {
    const env = store()
    const kept = await deixis(["import", path.join(fixtures, "group.json")], env)
    assert.strictEqual(kept.code, 0, kept.stderr)
    assert.include(
      lines(kept.stdout)[2],
      "retention: all 7 messages are kept, whatever their age (DEIXIS_STORE_MESSAGE_RETENTION, DEIXIS_HISTORY_STORE_RETENTION, DEIXIS_STORE_OBJECT_RETENTION off)"
    )
    const swept = await deixis(["sweep"], env)
    assert.strictEqual(swept.code, 0, swept.stderr)
    assert.deepInclude(JSON.parse(swept.stdout), { objects: 0, messages: 0, history_items: 0 })
    const stats = JSON.parse((await deixis(["stats"], env)).stdout)
    assert.deepStrictEqual([stats.context.messages, stats.history.items], [7, 7])

    const limited = { ...store(), DEIXIS_STORE_MESSAGE_RETENTION: "30 days", DEIXIS_STORE_OBJECT_RETENTION: "400 days" }
    const past = await deixis(["import", path.join(fixtures, "group.json")], limited)
    // The store's log lines (here: the sweep's indexes made for the retentions) go to stderr, one logfmt line each.
    assert.deepStrictEqual(lines(past.stderr).map((l) => /message="([^"]*)".* index=(\w+)/.exec(l)?.slice(1)), [
      ["store creating the retention sweep's index", "deixis_messages_sent"],
      ["store creating the retention sweep's index", "deixis_objects_since"]
    ])
    assert.strictEqual(lines(past.stdout).length, 3, past.stdout)
    const line = lines(past.stdout)[2]!
    assert.include(line, "DEIXIS_STORE_MESSAGE_RETENTION 30d: 7 of the 7 messages are older, their metadata (reply chains) go at the next sweep")
    // Sent 2025-04-01: kept 400 days, the last of them go on 2026-05-06 — already past, so all 7.
    const objectsPast = Date.now() - 400 * day >= Date.parse("2025-04-01T08:09:00Z") ? 7 : 0
    assert.include(line, `DEIXIS_STORE_OBJECT_RETENTION 400d: ${objectsPast} of the 7 messages are older`)
    assert.include(line, "kept: DEIXIS_HISTORY_STORE_RETENTION off")
    const after = JSON.parse((await deixis(["sweep"], limited)).stdout)
    assert.strictEqual(after.messages, 7)
  }, 120_000)

  it("an unknown chat is an error: an export's id gets the Bot API form the store holds; any other, a pointer to `deixis chats`", async () => {
    const env = store()
    assert.strictEqual((await deixis(["import", path.join(fixtures, "group.json")], env)).code, 0)
    const exportId = await deixis(["export", "1700000001"], env)
    assert.strictEqual(exportId.code, 1)
    assert.strictEqual(exportId.stdout, "")
    assert.include(exportId.stderr, "the store holds -1001700000001: deixis export -1001700000001")
    const nonexistent = await deixis(["export", "nonexistent"], env)
    assert.strictEqual(nonexistent.code, 1)
    assert.strictEqual(nonexistent.stdout, "")
    assert.match(nonexistent.stderr, /^deixis: no chat "nonexistent" in sqlite .*: `deixis chats` lists the chats it holds\n$/)
    // The chat list: the imported chat, by its title, with the next command spelled out.
    const chats = await deixis(["chats", "hiking"], env)
    assert.strictEqual(chats.code, 0, chats.stderr)
    assert.deepStrictEqual(lines(chats.stdout).map((l) => JSON.parse(l)), [{
      chat_id: "-1001700000001",
      title: "Hiking Club",
      is_forum: false,
      last_message_at: "2025-04-01T08:09:00.000Z",
      messages: 7,
      objects: 5
    }])
  }, 120_000)

  it("every line of an export writes its times in ISO 8601: history items and objects alike", async () => {
    const env = store()
    assert.strictEqual((await deixis(["import", path.join(fixtures, "group.json")], env)).code, 0)
    const exported = await deixis(["export", "-1001700000001"], env)
    assert.strictEqual(exported.code, 0, exported.stderr)
    const rows = lines(exported.stdout).map((l) => JSON.parse(l) as Record<string, unknown>)
    assert.deepStrictEqual([...new Set(rows.map((r) => r["type"]))], ["history_item", "object"])
    const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
    const times: Array<string> = []
    const walk = (value: unknown, key: string): void => {
      if (Array.isArray(value)) return value.forEach((v) => walk(v, key))
      if (typeof value === "object" && value !== null) return Object.entries(value).forEach(([k, v]) => walk(v, k))
      // No epoch milliseconds anywhere; every time field a string in one format.
      assert.isFalse(typeof value === "number" && value > 1e11, `${key}: ${String(value)}`)
      if (/_at$|_until$/.test(key) && value !== null) {
        assert.match(String(value), iso, key)
        times.push(key)
      }
    }
    for (const row of rows) walk(row, "")
    assert.includeMembers([...new Set(times)], ["sent_at", "created_at", "last_touched_at"])
  }, 120_000)

  it("--version prints the package's version, from its package.json", async () => {
    const manifest = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
    const printed = await deixis(["--version"], {})
    assert.strictEqual(printed.code, 0)
    assert.strictEqual(printed.stdout.trim(), manifest.version)
  }, 120_000)

  it("--help has no colour in a pipe or with NO_COLOR set, and colour on a terminal", async () => {
    const piped = await deixis(["--help"], {})
    assert.strictEqual(piped.code, 0)
    assert.include(piped.stdout, "USAGE")
    assert.notMatch(piped.stdout, colour)
    const terminal = await onTerminal(["--help"], {})
    assert.include(terminal.stdout, "USAGE")
    assert.match(terminal.stdout, colour)
    const noColor = await onTerminal(["--help"], { NO_COLOR: "1" })
    assert.include(noColor.stdout, "USAGE")
    assert.notMatch(noColor.stdout, colour)
    // A usage error in a pipe: plain too.
    const wrong = await deixis(["export"], {})
    assert.strictEqual(wrong.code, 1)
    assert.notMatch(wrong.stdout + wrong.stderr, colour)
  }, 120_000)

  it("`pnpm deixis` runs the command from the checkout: builds what it needs, reads paths from where pnpm was typed, prints only the command's output", async () => {
    const env = store()
    // `-w`: the workspace root's script from a directory inside it; `-s`: without pnpm's own lines.
    const ran = await run("npx", ["-y", "pnpm@10.34.9", "-w", "-s", "deixis", "import", "group.json"], env, fixtures)
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.match(lines(ran.stdout)[0]!, /^imported 10 messages \(3 service\) of Hiking Club/)
    assert.notMatch(ran.stdout, /turbo|Tasks:/)
    const failed = await run("npx", ["-y", "pnpm@10.34.9", "-w", "-s", "deixis", "export", "nonexistent"], env, fixtures)
    assert.notStrictEqual(failed.code, 0)
    assert.include(failed.stderr, `no chat "nonexistent"`)
  }, 600_000)
})
