/**
 * An operator's first day, as processes: a Telegram Desktop export of a chat from a year ago,
 * imported with `deixis import` (the CLI, default settings), then the HTTP service started on
 * that store, sweeping every second.
 */
import { assert, describe, it } from "@effect/vitest"
import { deixis } from "deixis-test-support/process"
import * as Effect from "effect/Effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { exited, freePort, launch, type Launched, ready } from "./process.js"

const exportFile = join(import.meta.dirname, "fixtures", "year-old-export.json")
const chat = "-1001987654321"

/** The log lines of `message` the service wrote so far. */
const logged = (service: Launched, message: string) =>
  service.output().split("\n").filter((line) => line.includes(`message="${message}"`))

/** A logfmt line's fields (values unquoted). */
const fields = (line: string): Record<string, string> =>
  Object.fromEntries([...line.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|\S+)/g)].map((m) => [m[1]!, m[2]!.replace(/^"|"$/g, "")]))

/** Waits until the service logged `message` at least `times` times. */
const until = async (service: Launched, message: string, times: number) => {
  for (let i = 0; i < 600 && logged(service, message).length < times; i++) await new Promise((r) => setTimeout(r, 100))
  assert.isAtLeast(logged(service, message).length, times, `${message} ×${times}:\n${service.output()}`)
}

const resolveReplyToPhoto = (port: number) =>
  fetch(`http://127.0.0.1:${port}/v1/tools/resolve_reference_target`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      chat_id: chat,
      current_message_id: "100",
      reply_to_message_id: "2",
      sender_user_id: "7003",
      raw_user_text: "what is in this photo?",
      normalized_reference_hints: { target_kind_hint: "image" }
    })
  }).then((r) => r.json() as Promise<{ status: string; best_match: { object_id: string; kind: string; source_message_id: string } | null }>)

const stop = async (service: Launched) => {
  service.child.kill("SIGTERM")
  await exited(service.child)
}

describe("a year-old chat imported, then the HTTP service on its store", () => {
  it.live("after two sweeps the imported photo still answers a reply to it; the log says what the retention is and what each sweep removed", () =>
    Effect.promise(async () => {
      const dir = mkdtempSync(join(tmpdir(), "deixis-operator-"))
      const file = join(dir, "deixis.sqlite")
      const services: Array<Launched> = []
      try {
        const imported = await deixis(["import", exportFile], { DEIXIS_STORE: `sqlite:${file}` })
        assert.strictEqual(imported.code, 0, imported.stderr)
        assert.include(imported.stdout, `imported 4 messages (1 service) of Trail Crew (chat ${chat}, private_supergroup)`)
        assert.include(imported.stdout, "retention: all 3 messages are kept, whatever their age")

        // Default settings, but a sweep every second; Debug shows the sweeps that removed nothing.
        const port = await freePort()
        const service = launch(port, file, { DEIXIS_STORE_SWEEP_INTERVAL: "1 second", DEIXIS_LOG_LEVEL: "DEBUG" })
        services.push(service)
        await ready(port)
        await until(service, "store sweep removed nothing", 2)
        const answer = await resolveReplyToPhoto(port)
        assert.strictEqual(answer.status, "resolved", JSON.stringify(answer))
        assert.deepStrictEqual(answer.best_match && [answer.best_match.kind, answer.best_match.source_message_id], ["media.image", "2"])
        const [retention] = logged(service, "store retention")
        assert.deepInclude(fields(retention ?? ""), {
          level: "INFO",
          objects: "off",
          messages: "off",
          history_items: "off",
          event_ids: "7d",
          sweep_interval: "1s"
        })
        assert.deepStrictEqual(logged(service, "store sweep removed rows"), [])
        // The inspector's list reads the store: the imported chat, by its title.
        const listed = await fetch(`http://127.0.0.1:${port}/v1/inspect/chats?search=trail`).then((r) => r.json() as Promise<{ chats: Array<Record<string, unknown>> }>)
        assert.deepStrictEqual(listed.chats.map((c) => [c["chat_id"], c["title"], c["messages"], c["last_message_at"]]), [
          [chat, "Trail Crew", 3, "2025-11-20T09:06:00.000Z"]
        ])
        await stop(service)

        // The same store under a 30-day retention (set by the operator): the next sweep removes the
        // year-old messages and history items, and says so per table at Info; the one after, nothing.
        const limited = launch(port, file, {
          DEIXIS_STORE_SWEEP_INTERVAL: "1 second",
          DEIXIS_LOG_LEVEL: "DEBUG",
          DEIXIS_STORE_MESSAGE_RETENTION: "30 days",
          DEIXIS_HISTORY_STORE_RETENTION: "30 days"
        })
        services.push(limited)
        await ready(port)
        await until(limited, "store sweep removed rows", 1)
        await until(limited, "store sweep removed nothing", 1)
        const removed = logged(limited, "store sweep removed rows")
        assert.strictEqual(removed.length, 1)
        assert.deepInclude(fields(removed[0]!), {
          level: "INFO",
          objects: "0",
          messages: "3",
          history_items: "3",
          event_ids: "0",
          poll_ids: "0",
          poll_closes: "0"
        })
        await stop(limited)
      } finally {
        for (const service of services) if (service.child.exitCode === null) service.child.kill("SIGKILL")
        rmSync(dir, { recursive: true, force: true })
      }
    }), 300_000)
})
