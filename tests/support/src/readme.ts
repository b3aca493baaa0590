/**
 * Checks a package README against the code: every configuration key the package reads has a
 * row in a README table (`| \`KEY\` | default | meaning |`), every such row names a key the code
 * reads (a `| \`PREFIX_*\` |` row covers keys documented in another README), and each
 * documented default is the real one — setting the key to the documented value
 * must change nothing. Default cells starting `unset`, `required` or `—` document a key without one.
 * Also: every module of the package's barrel has a row in the API table, and the first example
 * is the package's example file.
 */
import * as fs from "node:fs"
import type * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as PathPatch from "effect/ConfigProviderPathPatch"
import * as Effect from "effect/Effect"
import * as HashSet from "effect/HashSet"
import * as Redacted from "effect/Redacted"

const noDefault = /^(unset|required|—|-)(?!\w)/

export interface ConfigDocumentation {
  /** Keys the code reads that no README row names. */
  readonly undocumented: ReadonlyArray<string>
  /** README rows for keys the code does not read. */
  readonly unknown: ReadonlyArray<string>
  /** README rows whose default is not what the code uses. */
  readonly wrongDefaults: ReadonlyArray<string>
}

/** The `| \`KEY\` | default |` rows of a markdown file. */
export const configRows = (markdown: string): ReadonlyMap<string, string> =>
  new Map(
    [...markdown.matchAll(/^\|\s*`([A-Z][A-Z0-9_]+\*?)`\s*\|\s*([^|]*?)\s*\|/gm)].map(
      (match) => [match[1]!, match[2]!.replace(/^`(.*)`$/, "$1")] as const
    )
  )

/**
 * Every environment key a configuration reads (path segments joined by "_", as
 * `ConfigProvider.fromEnv` does). Each key is answered "missing", so defaults apply and
 * required keys are listed too.
 */
export const keysOf = (config: Config.Config<unknown>): ReadonlyArray<string> => {
  const keys = new Set<string>()
  const recorder = ConfigProvider.fromFlat(ConfigProvider.makeFlat({
    load: (path) => {
      keys.add(path.join("_"))
      return Effect.fail(ConfigError.MissingData([...path], `${path.join("_")} is not set`))
    },
    enumerateChildren: () => Effect.succeed(HashSet.empty()),
    patch: PathPatch.empty
  }))
  Effect.runSync(Effect.either(Effect.withConfigProvider(config, recorder)))
  return [...keys]
}

// Redacted values print as "<redacted>" (toJSON runs before a replacer sees them): compare
// their contents, read from the holder.
function reveal(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key]
  return Redacted.isRedacted(original) ? Redacted.value(original) : value
}

const read = (config: Config.Config<unknown>, entries: ReadonlyArray<readonly [string, string]>): string =>
  JSON.stringify(
    Effect.runSync(
      Effect.either(Effect.withConfigProvider(config, ConfigProvider.fromMap(new Map(entries), { pathDelim: "_" })))
    ),
    reveal
  )

/**
 * @param baseline keys set in every read (a required key, or the key that switches a feature on
 * so that the keys under it are read at all); their rows' defaults are not checked.
 */
export const checkConfigDocumentation = (
  readme: URL,
  configs: ReadonlyArray<Config.Config<unknown>>,
  baseline: Readonly<Record<string, string>> = {}
): ConfigDocumentation => {
  const base = Object.entries(baseline)
  const rows = configRows(fs.readFileSync(readme, "utf8"))
  const owners = new Map<string, Config.Config<unknown>>()
  for (const config of configs) for (const key of keysOf(config)) owners.set(key, config)
  const wrongDefaults: Array<string> = []
  for (const [key, documented] of rows) {
    const config = owners.get(key)
    if (config === undefined || noDefault.test(documented) || key in baseline) continue
    if (read(config, [...base, [key, documented]]) !== read(config, base)) wrongDefaults.push(`${key} = ${documented}`)
  }
  // A `PREFIX_*` row stands for keys documented elsewhere (another package's README).
  const prefixes = [...rows.keys()].filter((key) => key.endsWith("*")).map((key) => key.slice(0, -1))
  const covered = (key: string) => rows.has(key) || prefixes.some((prefix) => key.startsWith(prefix))
  const known = (row: string) =>
    row.endsWith("*") ? [...owners.keys()].some((key) => key.startsWith(row.slice(0, -1))) : owners.has(row)
  return {
    undocumented: [...owners.keys()].filter((key) => !covered(key)),
    unknown: [...rows.keys()].filter((key) => !known(key)),
    wrongDefaults
  }
}

/**
 * Modules of a package's barrel that its README's API list does not name: a table row
 * `| \`Module\` |`, a list item `- \`Module\`` or a paragraph starting `\`Module\``.
 */
export const undocumentedModules = (readme: URL, barrel: Record<string, unknown>): ReadonlyArray<string> => {
  const text = fs.readFileSync(readme, "utf8")
  return Object.keys(barrel).filter((name) => !new RegExp(`^(\\| |- )?\`${name}\``, "m").test(text))
}

/**
 * The complete examples of a markdown text: its ```ts blocks (a block opened with
 * "```ts fragment" is a piece of one, and not among them).
 */
export const tsBlocks = (markdown: string): ReadonlyArray<string> =>
  [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!)

/** The first ```ts block of a README: the package's example. */
export const firstExample = (readme: URL): string | undefined => tsBlocks(fs.readFileSync(readme, "utf8"))[0]

/** A relative link of a Markdown page: the page (as given) and the file it names. */
export interface RelativeLink {
  readonly page: string
  readonly target: URL
}

/**
 * Every relative link (`](path)` or `](path#anchor)`, not a URL with a scheme) of the given
 * pages of a package, `root` its folder; `missing` those whose file does not exist.
 */
export const relativeLinks = (root: URL, pages: ReadonlyArray<string>): { readonly links: ReadonlyArray<RelativeLink>; readonly missing: ReadonlyArray<string> } => {
  const links = pages.flatMap((page) => {
    const base = new URL(page, root)
    return [...fs.readFileSync(base, "utf8").matchAll(/\]\(([^)#:]+)(?:#[^)]*)?\)/g)].map((m) => ({ page, target: new URL(m[1]!, base) }))
  })
  return { links, missing: links.filter((l) => !fs.existsSync(l.target)).map((l) => `${l.page} → ${l.target.pathname}`) }
}
