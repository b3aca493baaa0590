/**
 * The inspector as an operator meets it on day one: a server without a token opens at once and
 * says so; an empty token is refused in words; mentions read as names; the score gap reads
 * right when the second candidate scores below zero.
 */
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chat, launchBrowser, message, seed, type Service, startService, stopService, token, topic } from "./harness.js"

let secured: Service
let open: Service
let browser: Browser

beforeAll(async () => {
  ;[secured, open] = await Promise.all([startService(), startService({ token: null })])
  await Promise.all([seed(secured), seed(open)])
  // A message naming a person: its history text is `cc [@carol](tg:@carol) …`.
  const mention = message(106, "cc @carol: the runbook is stale", { entities: [{ type: "mention", offset: 3, length: 6 }] })
  for (const service of [secured, open]) {
    const posted = await service.post("/v1/telegram/updates", [mention])
    if (!posted.ok) throw new Error(`seeding the mention failed: ${posted.status}`)
  }
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  await Promise.all([secured, open].filter((s) => s !== undefined).map(stopService))
})

const openTopic = async (page: Page) => {
  await page.getByLabel("Chat id").fill(String(chat))
  await page.getByLabel("Topic id (forums)").fill(String(topic))
  await page.getByRole("button", { name: "Open", exact: true }).click()
  await page.getByText("is this one still current?").waitFor()
}

describe("the inspector on day one", () => {
  it("a server without DEIXIS_API_TOKEN: the page opens without asking for a token, says none is needed, and sends no Authorization header", async () => {
    const page = await browser.newPage()
    const authorized: Array<string> = []
    page.on("request", (request) => {
      if (request.headers()["authorization"] !== undefined) authorized.push(request.url())
    })
    await page.goto(`${open.url}/inspect`)
    await page.getByRole("status").filter({ hasText: "No token needed" }).waitFor()
    expect(await page.getByLabel("API token (DEIXIS_API_TOKEN)").count()).toBe(0)
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0)
    await openTopic(page)
    expect(authorized).toEqual([])
    await page.close()
  })

  it("a server with a token: an empty token is refused with a message, and nothing is sent or kept", async () => {
    const page = await browser.newPage()
    const calls: Array<string> = []
    await page.goto(`${secured.url}/inspect`)
    await page.getByLabel("API token (DEIXIS_API_TOKEN)").waitFor()
    page.on("request", (request) => calls.push(request.url()))
    for (const value of ["", "   "]) {
      await page.getByLabel("API token (DEIXIS_API_TOKEN)").fill(value)
      await page.getByRole("button", { name: "Connect" }).click()
      await page.getByRole("alert").waitFor()
      expect(await page.getByRole("alert").textContent()).toContain("Enter the API token: this server needs one")
    }
    expect(calls).toEqual([])
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    // The right token still connects.
    await page.getByLabel("API token (DEIXIS_API_TOKEN)").fill(token)
    await page.getByRole("button", { name: "Connect" }).click()
    await page.getByLabel("Chat id").waitFor()
    await page.close()
  })

  it("the timeline shows a mention as the person's name, not as markdown", async () => {
    const page = await browser.newPage()
    await page.goto(`${open.url}/inspect`)
    await openTopic(page)
    const item = page.locator('[data-message-id="106"] .text')
    await item.waitFor()
    expect(await item.textContent()).toBe("cc @carol: the runbook is stale")
    expect(await item.locator(".mention").getAttribute("title")).toBe("@carol")
    const timeline = await page.locator("section[aria-labelledby=timeline-title]").textContent()
    expect(timeline).not.toContain("](tg:")
    await page.close()
  })

  it("the score line says the second candidate's own score and the top's lead when the second scores below zero", async () => {
    const page = await browser.newPage()
    await page.goto(`${open.url}/inspect`)
    await openTopic(page)
    // As message 102 (the reply to the link) asking for an article: the photos score below zero.
    await page.locator("section[aria-labelledby=timeline-title]").getByRole("button", { name: "#102" }).click()
    await page.getByLabel("target kind hint").selectOption("article")
    await page.getByRole("button", { name: "Resolve" }).click()
    const lead = page.locator(".result .lead")
    await lead.waitFor()
    const text = (await lead.textContent())!
    const [, top, second, by] = /^top score (-?[\d.]+) · second (-?[\d.]+) \(the top leads by (-?[\d.]+)\)$/.exec(text) ?? []
    expect(text).toMatch(/^top score/)
    expect(Number(second), text).toBeLessThan(0)
    expect(Number(by)).toBeCloseTo(Number(top) - Number(second), 3)
    expect(await page.locator(".result").textContent()).not.toContain("gap to the second")
    await page.close()
  })
})
