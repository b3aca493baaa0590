/**
 * The inspector's static shell at `/inspect`: the files `apps/inspector` built (HTML, one
 * script, one stylesheet), served from memory, read once at start. Public on purpose — it holds
 * no data; every request it makes for data goes to the API with the bearer token the operator
 * typed in the page. Nothing is fetched from elsewhere: the Content-Security-Policy allows
 * this origin only.
 *
 * @since 0.2.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import * as Routes from "./Routes.js"

const types: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".ico": "image/x-icon"
}

const headers = {
  "content-security-policy": "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
}

/**
 * The built inspector's directory (`apps/inspector/dist`), or undefined when it is not built.
 *
 * @since 0.2.0
 * @category files
 */
export const distDir = (): string | undefined => {
  try {
    const manifest = createRequire(import.meta.url).resolve("@deixis/inspector/package.json")
    const dist = path.join(path.dirname(manifest), "dist")
    return fs.existsSync(path.join(dist, "index.html")) ? dist : undefined
  } catch {
    return undefined
  }
}

/**
 * Every file of a built inspector by its URL path under `/inspect/`, read into memory (a few
 * hundred kilobytes; the list is fixed at start, so no request reaches the file system).
 *
 * @since 0.2.0
 * @category files
 */
export const load = (dir: string | undefined): ReadonlyMap<string, { readonly body: Uint8Array; readonly type: string }> => {
  const files = new Map<string, { body: Uint8Array; type: string }>()
  if (dir === undefined) return files
  for (const file of fs.readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    const full = path.join(dir, file)
    const type = types[path.extname(file)]
    if (type === undefined || !fs.statSync(full).isFile()) continue
    files.set(file.split(path.sep).join("/"), { body: fs.readFileSync(full), type })
  }
  return files
}

const notBuilt = HttpServerResponse.text(
  "The inspector is not built: run `pnpm --filter @deixis/inspector build` (or `pnpm build`).\n",
  { status: 404 }
)

/**
 * The two routes of the shell: the page, and its assets.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (dir: string | undefined = distDir()) => {
  const files = load(dir)
  const serve = (name: string) => {
    const file = files.get(name)
    if (file === undefined) return files.size === 0 ? notBuilt : HttpServerResponse.text("not found\n", { status: 404 })
    return HttpServerResponse.uint8Array(file.body, {
      contentType: file.type,
      headers: {
        ...headers,
        // Hashed asset names never change content; the page itself is always asked for again.
        "cache-control": name === "index.html" ? "no-cache" : "public, max-age=31536000, immutable"
      }
    })
  }
  const { inspect, inspectAsset } = Routes.service
  return HttpLayerRouter.addAll([
    HttpLayerRouter.route(inspect.method, inspect.path, () => Effect.succeed(serve("index.html"))),
    HttpLayerRouter.route(inspectAsset.method, inspectAsset.path, (request) =>
      Effect.succeed(serve(new URL(request.url, "http://x").pathname.slice("/inspect/".length))))
  ])
}
