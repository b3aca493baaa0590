/**
 * `pnpm bench`: the inspector over loopback in Debian's Chromium — its page weight (every byte
 * the page loads before the operator types anything) and its time to first render (First
 * Contentful Paint), over 20 cold loads (a fresh browser context each), and the time from
 * "Open" to a rendered timeline of a seeded topic. Prints a markdown table.
 */
import * as os from "node:os"
import { chat, launchBrowser, seed, startService, stopService, token, topic } from "../test/harness.js"

const RUNS = 20
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const service = await startService()
await seed(service)
const browser = await launchBrowser()
try {
  const fcp: Array<number> = []
  const opened: Array<number> = []
  let bytes = 0
  let files = 0
  for (let run = 0; run < RUNS; run++) {
    const context = await browser.newContext()
    const page = await context.newPage()
    let weight = 0
    let count = 0
    page.on("response", async (response) => {
      const body = await response.body().catch(() => Buffer.alloc(0))
      weight += body.length
      count++
    })
    await page.goto(`${service.url}/inspect`, { waitUntil: "load" })
    await page.getByRole("heading", { name: "deixis inspector" }).waitFor()
    fcp.push(await page.evaluate(() => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? NaN))
    if (run === 0) {
      bytes = weight
      files = count
    }
    await page.getByLabel("API token (DEIXIS_API_TOKEN)").fill(token)
    await page.getByRole("button", { name: "Connect" }).click()
    await page.getByLabel("Chat id").fill(String(chat))
    await page.getByLabel("Topic id (forums)").fill(String(topic))
    const started = performance.now()
    await page.getByRole("button", { name: "Open", exact: true }).click()
    await page.getByText("is this one still current?").waitFor()
    opened.push(performance.now() - started)
    await context.close()
  }
  console.log(`\nInspector over loopback, Chromium ${browser.version()}, ${RUNS} cold loads; ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(2)}\n`)
  console.log("| measure | value |")
  console.log("|---|---:|")
  console.log(`| page weight (${files} files, uncompressed) | ${(bytes / 1024).toFixed(1)} KB |`)
  console.log(`| time to first render (First Contentful Paint), median | ${median(fcp).toFixed(0)} ms |`)
  console.log(`| time to first render, slowest | ${Math.max(...fcp).toFixed(0)} ms |`)
  console.log(`| "Open" to a rendered topic (timeline, objects, state), median | ${median(opened).toFixed(0)} ms |`)
} finally {
  await browser.close()
  await stopService(service)
}
