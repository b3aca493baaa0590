import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chat, launchBrowser, message, seed, type Service, startService, stopService, token, topic } from "./harness.js"

let service: Service
let browser: Browser
const requested: Array<string> = []

beforeAll(async () => {
  service = await startService()
  await seed(service)
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  if (service !== undefined) await stopService(service)
})

const connect = async (page: Page, value: string) => {
  await page.getByLabel("API token (DEIXIS_API_TOKEN)").fill(value)
  await page.getByRole("button", { name: "Connect" }).click()
}

describe("the inspector in a real Chromium", () => {
  it("load: the page is served at /inspect, from this origin only, and asks for the token", async () => {
    const page = await browser.newPage()
    const response = await page.goto(`${service.url}/inspect`)
    expect(response?.status()).toBe(200)
    expect(response?.headers()["content-security-policy"]).toContain("default-src 'self'")
    await expect(page.getByRole("heading", { name: "deixis inspector" }).isVisible()).resolves.toBe(true)
    // Asked once the page has found that this server needs a token.
    await page.getByLabel("API token (DEIXIS_API_TOKEN)").waitFor()
    await page.close()
  })

  it("wrong token refused: the page says so and keeps nothing", async () => {
    const page = await browser.newPage()
    await page.goto(`${service.url}/inspect`)
    await connect(page, "not-the-token")
    await page.getByRole("alert").waitFor()
    expect(await page.getByRole("alert").textContent()).toContain("refused (401)")
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    await page.close()
  })

  it("enter the token, open a topic, run resolve in the panel and see its candidates and chart; a live update arrives", async () => {
    const page = await browser.newPage()
    page.on("request", (request) => requested.push(request.url()))
    await page.goto(`${service.url}/inspect`)
    await connect(page, token)
    // The store's chats: the seeded forum is found by its title; picking a forum puts its id in
    // the form for a topic to be named. The timeline shows its messages with the reply arrow,
    // the edit and the album.
    const chats = page.locator("section[aria-labelledby=chats-title]")
    await chats.getByLabel("Search by title or id").fill("ops")
    await chats.getByRole("button", { name: "Search" }).click()
    await chats.locator(`li[data-chat-id="${chat}"]`).waitFor()
    expect(await chats.locator(`li[data-chat-id="${chat}"]`).textContent()).toMatch(/^Ops -\d+ · forum · \d+ messages · \d+ objects · last message /)
    await chats.getByRole("button", { name: "Ops" }).click()
    expect(await page.getByLabel("Chat id").inputValue()).toBe(String(chat))
    await page.getByLabel("Topic id (forums)").fill(String(topic))
    await page.getByRole("button", { name: "Open", exact: true }).click()
    await page.getByText("is this one still current?").waitFor()
    const timeline = page.locator("section[aria-labelledby=timeline-title]")
    expect(await timeline.getByLabel("reply to message 101").count()).toBe(1)
    expect(await timeline.getByText(/^edited /).count()).toBe(1)
    expect(await timeline.getByText("album alb1").count()).toBe(1)
    // The link is active, with its time-left bar.
    const bar = page.getByRole("meter", { name: `time left for ${chat}/101/link` })
    expect(Number(await bar.getAttribute("aria-valuenow"))).toBeGreaterThan(0)

    // Try it: as message 102 (the reply) asking for an article.
    await timeline.getByRole("button", { name: "#102" }).click()
    await page.getByLabel("What the user wrote").fill("is this still current?")
    await page.getByLabel("target kind hint").selectOption("article")
    await page.getByRole("button", { name: "Resolve" }).click()
    const candidate = page.locator(`[data-candidate="${chat}/101/link"]`)
    await candidate.waitFor()
    expect(await candidate.textContent()).toContain("the message replies to it")
    const chart = page.getByRole("figure", { name: "per-feature score contributions" })
    expect(await chart.locator(".feature").count()).toBeGreaterThan(0)
    expect(await page.locator(".result").textContent()).toContain("resolved")
    expect(await page.locator(".thresholds").textContent()).toContain("plausible from score 60")

    // Live (server-sent events): a new message recorded through the API shows up without a reload.
    await page.getByLabel("Live").check()
    await page.getByText("Live: connected, waiting for traffic").waitFor()
    const posted = await service.post("/v1/telegram/updates", [message(105, "deploy finished, all green")])
    expect(posted.ok).toBe(true)
    await page.getByText("deploy finished, all green").waitFor({ timeout: 15_000 })

    // The token was sent as a header, never in a URL.
    expect(requested.some((url) => url.includes(token))).toBe(false)
    await page.close()
  })

  it("the chat list reads the store: newest first, a page at a time, searchable; a chat that is no forum opens on a click", async () => {
    // 25 more chats, one message each, a minute apart (Room 25 the newest).
    const rooms = Array.from({ length: 25 }, (_, i) => ({
      type: "message_observed",
      chat_id: `room-${i + 1}`,
      message_id: 1,
      chat_title: `Room ${String(i + 1).padStart(2, "0")}`,
      sent_at: new Date(Date.parse("2025-11-01T10:00:00Z") + i * 60_000).toISOString()
    }))
    expect((await service.post("/v1/events", rooms)).ok).toBe(true)
    const page = await browser.newPage()
    await page.goto(`${service.url}/inspect`)
    await connect(page, token)
    const chats = page.locator("section[aria-labelledby=chats-title]")
    const listed = () => chats.locator("li").evaluateAll((items) => items.map((li) => li.getAttribute("data-chat-id")))
    await chats.locator("li").nth(19).waitFor()
    // The seeded forum spoke today: first; then the rooms, newest first, 20 to a page.
    expect(await listed()).toEqual([String(chat), ...Array.from({ length: 19 }, (_, i) => `room-${25 - i}`)])
    await chats.getByRole("button", { name: "More chats" }).click()
    await chats.locator("li").nth(25).waitFor()
    expect((await listed()).slice(20)).toEqual(["room-6", "room-5", "room-4", "room-3", "room-2", "room-1"])
    expect(await chats.getByRole("button", { name: "More chats" }).count()).toBe(0)
    // Search: by title in any case, by a part of the id; nothing found is said.
    await chats.getByLabel("Search by title or id").fill("ROOM 07")
    await chats.getByRole("button", { name: "Search" }).click()
    await page.waitForFunction(() => document.querySelectorAll("section[aria-labelledby=chats-title] li").length === 1)
    expect(await listed()).toEqual(["room-7"])
    await chats.getByLabel("Search by title or id").fill("no such chat")
    await chats.getByRole("button", { name: "Search" }).click()
    await chats.getByText("No chat matches “no such chat”.").waitFor()
    // A chat that is no forum opens at once.
    await chats.getByLabel("Search by title or id").fill("room-12")
    await chats.getByRole("button", { name: "Search" }).click()
    await chats.getByRole("button", { name: "Room 12" }).click()
    await page.locator("section[aria-labelledby=timeline-title]").waitFor()
    expect(await page.getByLabel("Chat id").inputValue()).toBe("room-12")
    await page.close()
  })

  it("usable on a phone: no sideways scrolling at 375 px", async () => {
    const page = await browser.newPage({ viewport: { width: 375, height: 800 } })
    await page.goto(`${service.url}/inspect`)
    await connect(page, token)
    await page.getByLabel("Chat id").fill(String(chat))
    await page.getByLabel("Topic id (forums)").fill(String(topic))
    await page.getByRole("button", { name: "Open", exact: true }).click()
    await page.getByText("is this one still current?").waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
    await page.close()
  })
})
