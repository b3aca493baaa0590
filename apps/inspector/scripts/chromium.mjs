// Makes sure Debian's Chromium is there for the browser tests: installs it with apt-get when
// run as root, and otherwise fails with what to do. CHROMIUM_PATH names another binary.
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"

const candidates = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"].filter(Boolean)
if (candidates.some((p) => existsSync(p))) process.exit(0)
if (typeof process.getuid === "function" && process.getuid() === 0) {
  console.error("chromium is missing: installing Debian's package (apt-get install -y chromium)")
  execFileSync("apt-get", ["update"], { stdio: "inherit" })
  execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } })
  process.exit(0)
}
console.error("The browser tests need Chromium: run `sudo apt-get install -y chromium` (Debian), or set CHROMIUM_PATH to a Chromium binary.")
process.exit(1)
