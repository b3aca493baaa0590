/**
 * The service's version, from its package.json: the one the start line, `/openapi.json`,
 * `/docs` and the MCP server report. Read once, from the nearest `@deixis/http` package.json
 * above this module — `src/`, `dist/`, the benchmark build (`.bench/src/`) and the container
 * image (`/app`) alike.
 *
 * @since 0.3.0
 */
import { readFileSync } from "node:fs"

const find = (): string => {
  for (let dir = new URL(".", import.meta.url), i = 0; i < 4; dir = new URL("..", dir), i++) {
    try {
      const manifest = JSON.parse(readFileSync(new URL("package.json", dir), "utf8")) as { name?: unknown; version?: unknown }
      if (manifest.name === "@deixis/http" && typeof manifest.version === "string") return manifest.version
    } catch {
      // No package.json at this level: look one up.
    }
  }
  return "unknown"
}

/**
 * @since 0.3.0
 * @category constants
 */
export const version: string = find()
