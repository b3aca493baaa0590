/**
 * Faults under a SQLite store, through its public layer: the disk filling up (a small tmpfs of
 * the test's own, mounted in a mount namespace of the scenario's process, so no mount outlives
 * it) and the file locked by another program.
 */
import { assert, describe, it } from "@effect/vitest"
import { ContextEventBatch } from "@deixis/core/ContextEvent"
import { ContextStore } from "@deixis/core/ContextStore"
import * as TtlPolicy from "@deixis/core/TtlPolicy"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Availability from "../src/Availability.js"
import * as Sqlite from "../src/Sqlite.js"
import { tempDir } from "./helpers.js"

const pkg = fileURLToPath(new URL("..", import.meta.url))

interface DiskFull {
  readonly failures: ReadonlyArray<{ readonly tag: string; readonly full: boolean; readonly message: string }>
  readonly integrityFull: string
  readonly integrityAfter: string
  readonly after: ReadonlyArray<number>
  readonly acknowledged: ReadonlyArray<number>
  readonly duplicates: number
  readonly expectedDuplicates: number
}

/**
 * Runs test/fixtures/diskFull.ts over a 2 MiB tmpfs at `dir`: as root in a mount namespace of
 * its own (`unshare -m`), otherwise as root of a user namespace (`unshare -rm`). Its output.
 */
const diskFullScenario = (dir: string) =>
  Effect.async<{ readonly output: string; readonly code: number | null }>((resume) => {
    const root = typeof process.getuid === "function" && process.getuid() === 0
    const child = spawn("unshare", [
      root ? "-m" : "-rm",
      "sh",
      "-c",
      `mount -t tmpfs -o size=2m tmpfs "$1" && exec "${process.execPath}" --conditions=@deixis/source --import tsx test/fixtures/diskFull.ts "$1"`,
      "sh",
      dir
    ], { cwd: pkg, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (c: Buffer) => (output += c.toString()))
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code) => resume(Effect.succeed({ output, code })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("SQLite: the disk fills up", () => {
  it.scoped("writes fail typed (StoreFull) with one log line, nothing is corrupted, and writes succeed again once space is freed", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const { code, output } = yield* diskFullScenario(dir)
      const line = output.split("\n").find((l) => l.startsWith("RESULT "))
      assert.isDefined(line, output)
      assert.strictEqual(code, 0, output)
      const r = JSON.parse(line!.slice(7)) as DiskFull
      console.log(output.split("\n").filter((l) => l.includes("store ")).join("\n"))
      // Every write on the full disk failed, as a StoreFull (a StoreError), saying so.
      assert.strictEqual(r.failures.length, 5)
      for (const f of r.failures) {
        assert.deepStrictEqual([f.tag, f.full], ["StoreError", true])
        assert.include(f.message, "the disk is full")
      }
      // Intact while full and after.
      assert.deepStrictEqual([r.integrityFull, r.integrityAfter], ["ok", "ok"])
      // Writes resumed on the same store, and every acknowledged write is there.
      assert.deepStrictEqual(r.after, [10, 11, 12, 13, 14])
      assert.strictEqual(r.duplicates, r.expectedDuplicates)
      // One line when the disk filled, one when writes resumed; none per failed write.
      const lines = output.split("\n")
      assert.strictEqual(lines.filter((l) => l.includes("store outage") && l.includes("the disk is full")).length, 1)
      assert.strictEqual(lines.filter((l) => l.includes("store recovered")).length, 1)
    }), 120_000)
})

describe("SQLite: the file locked by another program", () => {
  const decode = Schema.decodeUnknownSync(ContextEventBatch)
  const write = (n: number) =>
    Effect.flatMap(ContextStore, (store) =>
      store.apply(decode([{ type: "message_observed", chat_id: 1, message_id: n, topic_id: 1 }]), {
        now: Date.parse("2026-11-29T10:00:00Z"),
        ttl: TtlPolicy.defaultPolicy
      }))

  // Another program: a Node process of its own holding `BEGIN EXCLUSIVE` through better-sqlite3
  // until its stdin closes.
  const holder = `const db = new (require("better-sqlite3"))(process.argv[1]); db.exec("BEGIN EXCLUSIVE"); console.log("locked");
process.stdin.on("end", () => { db.exec("ROLLBACK"); db.close(); process.exit(0) }); process.stdin.resume()`
  const holdLock = (file: string) =>
    Effect.acquireRelease(
      Effect.async<ReturnType<typeof spawn>>((resume) => {
        const child = spawn(process.execPath, ["-e", holder, file], { cwd: pkg, stdio: ["pipe", "pipe", "inherit"] })
        child.stdout!.on("data", (c: Buffer) => c.toString().includes("locked") && resume(Effect.succeed(child)))
      }),
      (child) =>
        Effect.async<void>((resume) => {
          child.once("exit", () => resume(Effect.void))
          child.stdin!.end()
        })
    )

  it.scoped("a write waits the busy timeout, then fails with StoreLocked naming the lock; it succeeds once the lock is gone", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "deixis.db")
      const result = yield* Effect.gen(function*() {
        yield* write(1)
        const locked = yield* Effect.scoped(Effect.gen(function*() {
          yield* holdLock(file)
          const started = performance.now()
          const error = yield* Effect.flip(write(2))
          return { error, waitedMs: performance.now() - started }
        }))
        const after = yield* write(2)
        return { ...locked, after: after.applied }
      }).pipe(Effect.provide(Sqlite.layer({ filename: file, sweep_interval: 0, busy_timeout: 300 })))
      console.log(`locked: waited ${result.waitedMs.toFixed(0)} ms (busy timeout 300 ms): ${result.error.message}`)
      assert.instanceOf(result.error, Availability.StoreLocked)
      assert.include(result.error.message, "locked by another program")
      assert.strictEqual(result.after, 1)
    }))
})
