/**
 * The HTTP service as a child process (started as `pnpm dev` starts it, from the sources, over
 * the memory store, with an API token or — `startService({ token: null })` — without one), some
 * Telegram traffic recorded through its API, and Debian's Chromium driven by playwright-core.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { existsSync } from "node:fs"
import { freePort } from "deixis-test-support/net"
import { join } from "node:path"
import { chromium, type Browser } from "playwright-core"

export const token = "inspector-test-token-5f1c"
export const chat = -1009876543210
export const topic = 7

export interface Service {
  readonly url: string
  readonly child: ChildProcess
  readonly output: () => string
  readonly post: (path: string, body: unknown) => Promise<Response>
}

export const startService = async (options: { readonly token?: string | null } = {}): Promise<Service> => {
  const port = await freePort()
  const apiToken = options.token === undefined ? token : options.token
  const env: Record<string, string | undefined> = { ...process.env, PORT: String(port), HOST: "127.0.0.1", DEIXIS_STORE: "memory", DEIXIS_HISTORY_MODE: "talkative" }
  if (apiToken === null) delete env["DEIXIS_API_TOKEN"]
  else env["DEIXIS_API_TOKEN"] = apiToken
  const child = spawn(process.execPath, ["--conditions=@deixis/source", "--import", "tsx", "src/main.ts"], {
    cwd: join(import.meta.dirname, "..", "..", "http"),
    env,
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const url = `http://127.0.0.1:${port}`
  for (let attempt = 0; ; attempt++) {
    if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false)) break
    if (attempt > 600 || child.exitCode !== null) throw new Error(`the service did not start:\n${output}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  const post = (path: string, body: unknown) =>
    fetch(url + path, {
      method: "POST",
      headers: { ...(apiToken === null ? {} : { authorization: `Bearer ${apiToken}` }), "content-type": "application/json" },
      body: JSON.stringify(body)
    })
  return { url, child, output: () => output, post }
}

export const stopService = async (service: Service) => {
  if (service.child.exitCode !== null) return
  const exited = new Promise((r) => service.child.once("exit", r))
  service.child.kill("SIGTERM")
  await exited
}

const forum = { id: chat, type: "supergroup", title: "Ops", is_forum: true }
const user = (id: number, name: string) => ({ id, is_bot: false, first_name: name })
const date = () => Math.floor(Date.now() / 1000)

/** A message of the test topic as Telegram sends it. */
export const message = (id: number, text: string, extra: Record<string, unknown> = {}) => ({
  update_id: 10_000 + id,
  message: {
    message_id: id,
    date: date(),
    chat: forum,
    from: user(501, "Ana"),
    message_thread_id: topic,
    is_topic_message: true,
    ...(text === "" ? {} : { text }),
    ...extra
  }
})

/** A topic's worth of traffic: a link (the bot read it: active), a reply to it (edited), a photo album. */
export const seed = async (service: Service) => {
  const link = "https://example.com/runbook"
  const reply = { from: user(502, "Ben"), reply_to_message: { message_id: 101, date: date(), chat: forum, from: user(501, "Ana"), text: `runbook: ${link}` } }
  const updates = [
    message(101, `runbook: ${link}`, { entities: [{ type: "url", offset: 9, length: link.length }] }),
    message(102, "is this still current?", reply),
    { update_id: 10_200, edited_message: { ...message(102, "is this one still current?", reply).message, edit_date: date() } },
    message(103, "", { photo: [{ file_id: "AgADphoto1", width: 800, height: 600 }], media_group_id: "alb1", caption: "dashboards" }),
    message(104, "", { photo: [{ file_id: "AgADphoto2", width: 800, height: 600 }], media_group_id: "alb1" })
  ]
  const response = await service.post("/v1/telegram/updates", updates)
  if (!response.ok) throw new Error(`seeding failed: ${response.status} ${await response.text()}`)
  const activated = await service.post("/v1/events", [
    { type: "object_activated", event_id: "fetch-101", chat_id: String(chat), source_message_id: "101", kind: "link", reason: "url_fetched" }
  ])
  if (!activated.ok) throw new Error(`activation failed: ${activated.status} ${await activated.text()}`)
}

export const chromiumPath = (): string => {
  const path = [process.env["CHROMIUM_PATH"], "/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => p !== undefined && existsSync(p))
  if (path === undefined) throw new Error("Chromium is missing: `apt-get install -y chromium` (the pretest script does it as root)")
  return path
}

export const launchBrowser = (): Promise<Browser> =>
  // --no-sandbox: the tests run as root in a container, where Chromium's sandbox cannot start.
  chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--disable-dev-shm-usage"] })
