// Makes sure Debian's Chromium is there for the browser tests. CHROMIUM_PATH names another binary.
import { ensureDebianTool } from "../../../scripts/debian-tool.mjs"

ensureDebianTool({
  pkg: "chromium",
  envVar: "CHROMIUM_PATH",
  paths: ["/usr/bin/chromium", "/usr/bin/chromium-browser"],
  needs: "The browser tests need Chromium"
})
