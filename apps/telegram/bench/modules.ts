/**
 * The bot and its packages as the in-process benches load them: from this checkout, or from
 * another one (`BENCH_BASE`, its compiled `.bench/src` when there is one), each package by its ESM
 * entry as the app's own imports resolve it.
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))
/** The checkout whose code runs. */
export const base = process.env["BENCH_BASE"] ?? path.join(here, "..")
export const src = fs.existsSync(path.join(base, ".bench", "src")) ? path.join(base, ".bench", "src") : path.join(base, "src")
const req = createRequire(path.join(base, "package.json"))
// A package's ESM entry (its "import" condition, as the app's own imports resolve it), found from
// `base`: `require.resolve` picks the CommonJS build — a second copy of Effect beside the app's,
// running the bench's fibers (and those they fork) on the other copy's runtime.
const resolveImport = (specifier: string): string => {
  const name = specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")
  const subpath = `.${specifier.slice(name.length)}`
  for (const dir of req.resolve.paths(name) ?? []) {
    const manifest = path.join(dir, name, "package.json")
    if (!fs.existsSync(manifest)) continue
    const exports: Record<string, unknown> = JSON.parse(fs.readFileSync(manifest, "utf8")).exports ?? {}
    const pattern = Object.keys(exports).filter((k) => k.endsWith("*") && subpath.startsWith(k.slice(0, -1)))
      .sort((a, b) => b.length - a.length)[0]
    const key = exports[subpath] !== undefined ? subpath : pattern
    const target = key === undefined ? undefined : exports[key]
    const file = typeof target === "string" ? target : (target as { import?: string; default?: string } | null)?.import ??
      (target as { default?: string } | null)?.default
    if (file === undefined) break
    return path.join(dir, name, key === pattern ? file.replace("*", subpath.slice(key!.length - 1)) : file)
  }
  return req.resolve(specifier)
}
/** A package module (`effect/Effect`, `@deixis/store-sql`) as the app under test imports it. */
export const load = (specifier: string) => import(pathToFileURL(resolveImport(specifier)).href)

/** One of the app's own modules (`App.js`, `Bot.js`). */
export const loadApp = (file: string) => import(pathToFileURL(path.join(src, file)).href)
