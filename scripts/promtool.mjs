// Makes sure Prometheus's promtool is there for the metrics tests (`promtool check metrics` on
// each app's /metrics): Debian's `prometheus` package. PROMTOOL_PATH names another binary.
import { ensureDebianTool } from "./debian-tool.mjs"

ensureDebianTool({
  pkg: "prometheus",
  envVar: "PROMTOOL_PATH",
  paths: ["/usr/bin/promtool", "/usr/local/bin/promtool"],
  needs: "The metrics tests need promtool"
})
