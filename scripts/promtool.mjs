// Makes sure Prometheus's promtool is there for the metrics tests (`promtool check metrics` on
// each app's /metrics): installs Debian's `prometheus` package with apt-get when run as root,
// as apps/inspector's scripts/chromium.mjs does for Chromium, and otherwise fails with what to
// do. PROMTOOL_PATH names another binary.
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"

const candidates = [process.env.PROMTOOL_PATH, "/usr/bin/promtool", "/usr/local/bin/promtool"].filter(Boolean)
if (candidates.some((p) => existsSync(p))) process.exit(0)
if (typeof process.getuid === "function" && process.getuid() === 0) {
  console.error("promtool is missing: installing Debian's package (apt-get install -y prometheus)")
  execFileSync("apt-get", ["update"], { stdio: "inherit" })
  execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "prometheus"], { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } })
  process.exit(0)
}
console.error("The metrics tests need promtool: run `sudo apt-get install -y prometheus` (Debian), or set PROMTOOL_PATH to a promtool binary.")
process.exit(1)
