import { execFile } from "node:child_process"
import * as fs from "node:fs"
import { builtinModules, createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { tsBlocks } from "deixis-test-support/readme"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

// Dependency order: each package's build needs its siblings' dist for their .d.ts.
const published = ["core", "chathistory", "store-sql", "telegraf", "grammy", "tools", "cli"] as const

const root = fileURLToPath(new URL("../../..", import.meta.url))
const fixture = fileURLToPath(new URL("./fixture/main.ts", import.meta.url))
const tsc = path.join(root, "node_modules/typescript/bin/tsc")
const require = createRequire(import.meta.url)
// Where the workspace installed (and compiled) better-sqlite3: beside @effect/sql-sqlite-node.
const sqliteNode = path.dirname(
  createRequire(path.join(root, "packages/store-sql/package.json")).resolve("@effect/sql-sqlite-node/package.json")
)

const execFileAsync = promisify(execFile)

// Asynchronous on purpose: a worker blocked for minutes in a synchronous child process misses
// vitest's own RPC deadlines ("Timeout calling onTaskUpdate").
const run = async (command: string, args: ReadonlyArray<string>, cwd: string): Promise<string> => {
  try {
    const { stdout } = await execFileAsync(command, args, { cwd, encoding: "utf8", env: process.env, maxBuffer: 64 * 1024 * 1024 })
    return stdout
  } catch (error) {
    // Surface the compiler's or npm's own output, not only the exit code.
    const { stdout, stderr } = error as { stdout?: string; stderr?: string }
    throw new Error(`${command} ${args.join(" ")} failed in ${cwd}\n${stdout ?? ""}\n${stderr ?? ""}`)
  }
}

// `pnpm pack` (not `npm pack`) is what rewrites `workspace:^` to a real range, as `pnpm publish` does.
const pnpm = (args: ReadonlyArray<string>, cwd: string): Promise<string> => {
  const execpath = process.env.npm_execpath
  return execpath !== undefined && /pnpm/.test(execpath)
    ? run(process.execPath, [execpath, ...args], cwd)
    : run("npx", ["-y", "pnpm@10.34.9", ...args], cwd)
}

interface Packed {
  readonly name: string
  readonly tarball: string
  readonly files: ReadonlyArray<string>
  readonly manifest: Record<string, unknown>
}

let work = ""
let consumer = ""
const packed: Array<Packed> = []
const examples: Array<string> = []

beforeAll(async () => {
  // Outside the workspace, so Node's resolution can never climb into its node_modules.
  work = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-consumer-"))
  const tarballs = path.join(work, "tarballs")
  fs.mkdirSync(tarballs)
  for (const name of published) {
    const dir = path.join(root, "packages", name)
    await run(process.execPath, [tsc, "-p", path.join(dir, "tsconfig.build.json")], root)
    const before = new Set(fs.readdirSync(tarballs))
    await pnpm(["pack", "--pack-destination", tarballs], dir)
    const tarball = fs.readdirSync(tarballs).find((file) => !before.has(file))
    if (tarball === undefined) throw new Error(`pnpm pack wrote no tarball for ${name}`)
    const full = path.join(tarballs, tarball)
    const files = (await run("tar", ["-tzf", full], work)).split("\n").filter((line) => line.length > 0)
    const manifest = JSON.parse(await run("tar", ["-xzOf", full, "package/package.json"], work)) as Record<string, unknown>
    packed.push({ name, tarball: full, files, manifest })
  }

  consumer = path.join(work, "app")
  fs.mkdirSync(consumer)
  const dependencies: Record<string, string> = { effect: "^3.22.4", "@types/node": "^20.19.0" }
  for (const p of packed) dependencies[p.manifest.name as string] = `file:${p.tarball}`
  // A SQLite-only consumer: store-sql's engine drivers are optional peers, and this one installs
  // the SQLite driver alone (at the range store-sql declares), never the PostgreSQL one.
  const storeSql = packed.find((p) => p.name === "store-sql")!.manifest.peerDependencies as Record<string, string>
  dependencies["@effect/sql-sqlite-node"] = storeSql["@effect/sql-sqlite-node"]!
  // Each bot framework is an optional peer of its adapter: this consumer uses both, and grammY's runner.
  dependencies["telegraf"] = (packed.find((p) => p.name === "telegraf")!.manifest.peerDependencies as Record<string, string>)["telegraf"]!
  dependencies["grammy"] = (packed.find((p) => p.name === "grammy")!.manifest.peerDependencies as Record<string, string>)["grammy"]!
  dependencies["@grammyjs/runner"] = "^2.0.3"
  fs.writeFileSync(
    path.join(consumer, "package.json"),
    JSON.stringify({ name: "deixis-consumer", private: true, type: "module", dependencies }, null, 2)
  )
  // Plain npm, registry for everything but our tarballs; peers are installed by npm itself.
  // Install scripts are skipped: better-sqlite3 would compile from source, and the consumer
  // imports store-sql without opening a database (the binding loads on first open).
  await run("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--no-package-lock"], consumer)
  // Skipping install scripts left better-sqlite3 without its native binding; compiling it again
  // costs minutes, so the consumer gets the one the workspace compiled for this same version.
  const binding = path.join("build", "Release", "better_sqlite3.node")
  const installed = path.join(consumer, "node_modules", "better-sqlite3")
  const compiled = path.dirname(require.resolve("better-sqlite3/package.json", { paths: [sqliteNode] }))
  const version = (dir: string) => (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version
  if (version(installed) !== version(compiled)) {
    throw new Error(`better-sqlite3 ${version(installed)} installed, ${version(compiled)} compiled in the workspace`)
  }
  fs.mkdirSync(path.dirname(path.join(installed, binding)), { recursive: true })
  fs.copyFileSync(path.join(compiled, binding), path.join(installed, binding))

  fs.copyFileSync(fixture, path.join(consumer, "main.ts"))
  // Every complete example of every README (```ts blocks; "```ts fragment" marks a piece of one),
  // as shipped in the tarball: what a newcomer copies from npm must compile and run. The
  // reference pages a README links to (`docs/*.md`, shipped beside it) too.
  fs.mkdirSync(path.join(consumer, "readme"))
  for (const p of packed) {
    const text = fs.readFileSync(path.join(consumer, "node_modules", p.manifest.name as string, "README.md"), "utf8")
    const blocks = tsBlocks(text)
    if (blocks.length === 0) throw new Error(`${p.name}'s README has no example`)
    blocks.forEach((block, i) => {
      const file = `readme/${p.name}-${i + 1}.ts`
      fs.writeFileSync(path.join(consumer, file), block)
      examples.push(file)
    })
    const docs = path.join(root, "packages", p.name, "docs")
    const pages = fs.existsSync(docs) ? fs.readdirSync(docs).filter((page) => page.endsWith(".md")).sort() : []
    for (const page of pages) {
      tsBlocks(fs.readFileSync(path.join(docs, page), "utf8")).forEach((block, i) => {
        const file = `readme/${p.name}-docs-${page.replace(/\.md$/, "")}-${i + 1}.ts`
        fs.writeFileSync(path.join(consumer, file), block)
        examples.push(file)
      })
    }
  }
  fs.writeFileSync(
    path.join(consumer, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        lib: ["ES2022"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        types: ["node"],
        // Our .d.ts files are checked too, so an import of a package the tarball does not declare fails.
        skipLibCheck: false,
        outDir: "out"
      },
      files: ["main.ts", ...examples]
    })
  )
})

afterAll(() => {
  if (work !== "" && process.env.DEIXIS_KEEP_CONSUMER === undefined) fs.rmSync(work, { recursive: true, force: true })
})

describe("published packages, as a consumer installs them", () => {
  it("ship only dist, README, its docs pages, CHANGELOG, LICENSE and package.json — nothing of src, test or bench", () => {
    expect(packed.map((p) => p.name)).toEqual([...published])
    for (const p of packed) {
      const stray = p.files.filter(
        (file) => !/^package\/(dist\/.+|docs\/[^/]+\.md|package\.json|README\.md|CHANGELOG\.md|LICENSE)$/.test(file)
      )
      expect(stray, p.name).toEqual([])
      expect(p.files, p.name).toContain("package/LICENSE")
      expect(p.files, p.name).toContain("package/dist/index.js")
      expect(p.files, p.name).toContain("package/dist/index.d.ts")
      expect(p.files, p.name).toContain("package/dist/index.d.ts.map")
      expect(p.files.some((file) => /\/(src|test|bench)\//.test(file)), p.name).toBe(false)
    }
  })

  it("have publishable manifests: no workspace ranges, effect as a peer, engines, license, repository", () => {
    for (const p of packed) {
      const m = p.manifest
      expect(JSON.stringify(m), p.name).not.toContain("workspace:")
      expect((m.peerDependencies as Record<string, string>).effect, p.name).toBe("^3.22.4")
      expect((m.engines as Record<string, string>).node, p.name).toBeDefined()
      expect(m.license, p.name).toBe("MIT")
      expect((m.repository as Record<string, string>).directory, p.name).toBe(`packages/${p.name}`)
      expect((m.publishConfig as Record<string, string>).access, p.name).toBe("public")
      expect(m.private, p.name).toBeUndefined()
    }
  })

  // npm hoists all tarballs into one node_modules, so the install alone would not notice a
  // sibling the workspace linked but the manifest forgot: every import in dist must be declared.
  it("import only what their manifests declare (dependencies or peers)", async () => {
    for (const p of packed) {
      const unpacked = path.join(work, "unpacked", p.name)
      fs.mkdirSync(unpacked, { recursive: true })
      await run("tar", ["-xzf", p.tarball, "-C", unpacked], work)
      const declared = new Set([
        p.manifest.name as string,
        ...Object.keys((p.manifest.dependencies ?? {}) as Record<string, string>),
        ...Object.keys((p.manifest.peerDependencies ?? {}) as Record<string, string>)
      ])
      const dist = path.join(unpacked, "package", "dist")
      const undeclared = new Set<string>()
      for (const file of fs.readdirSync(dist, { recursive: true, encoding: "utf8" })) {
        if (!/\.(js|d\.ts)$/.test(file)) continue
        const text = fs.readFileSync(path.join(dist, file), "utf8")
        for (const match of text.matchAll(/\b(?:from|import)(?:\s+|\s*\(\s*)["']([^"'.][^"']*)["']/g)) {
          const specifier = match[1]!
          if (specifier.startsWith("node:") || builtinModules.includes(specifier)) continue
          const name = specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")
          if (!declared.has(name)) undeclared.add(`${file}: ${specifier}`)
        }
      }
      expect([...undeclared], p.name).toEqual([])
    }
  })

  it("a SQLite-only consumer does not need pg installed: store-sql's drivers are optional peers", () => {
    const manifest = packed.find((p) => p.name === "store-sql")!.manifest
    const dependencies = (manifest.dependencies ?? {}) as Record<string, string>
    const optional = (manifest.peerDependenciesMeta ?? {}) as Record<string, { optional?: boolean }>
    for (const driver of ["@effect/sql-sqlite-node", "@effect/sql-pg"]) {
      expect(dependencies[driver], driver).toBeUndefined()
      expect(optional[driver]?.optional, driver).toBe(true)
    }
    expect(fs.existsSync(path.join(consumer, "node_modules", "@effect", "sql-sqlite-node"))).toBe(true)
    expect(fs.existsSync(path.join(consumer, "node_modules", "@effect", "sql-pg"))).toBe(false)
    expect(fs.existsSync(path.join(consumer, "node_modules", "pg"))).toBe(false)
  })

  it("type-check with moduleResolution NodeNext and run with Node", async () => {
    // tsc exits non-zero on any diagnostic, the third-party ones below included: read its output.
    const diagnostics = await execFileAsync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: consumer, encoding: "utf8" })
      .then(() => "", (error: { stdout?: string }) => error.stdout ?? String(error))
    // Third-party declarations that assume the DOM lib or @types/pg are the consumer's business;
    // any diagnostic in the consumer's files (main.ts, the README examples) or in a @deixis
    // package is ours.
    const ours = diagnostics
      .split("\n")
      .filter((line) => /^(main\.ts|node_modules\/@deixis\/)/.test(line) || (/error TS/.test(line) && !line.startsWith("node_modules/")))
    expect(ours).toEqual([])
    expect(fs.existsSync(path.join(consumer, "out/main.js"))).toBe(true)
    const report = JSON.parse(await run(process.execPath, ["out/main.js"], consumer)) as Record<string, unknown>
    expect(report.core).toContain("Deixis")
    expect(report.chathistory).toContain("HistoryRenderer")
    expect(report.storeSql).toEqual(["Availability", "SqlStore", "StoreConfig", "StoreMetrics"])
    expect(report.sqliteEngine).toEqual(["layer", "layerClient", "layerConfig"])
    // Without @effect/sql-pg the pg entry point does not load, and the root's PostgreSQL layer
    // fails, when built, with a typed error naming the package to install.
    expect(report.pgEntry).toBe("ERR_MODULE_NOT_FOUND")
    expect(report.rootPg).toMatch(/^SqlStoreError: the PostgreSQL engine needs @effect\/sql-pg installed/)
    expect(report.telegraf).toEqual(["DeixisAdapter", "DeixisTelegraf", "FieldDecisions", "TelegramRecorder", "UpdateMapper"])
    expect(report.grammy).toEqual(["DeixisGrammy"])
    expect(report.grammyKey).toEqual(["42"])
    expect(report.tools).toEqual(["DeixisToolkit", "Envelope", "ModelActions", "UrlReader"])
    expect(report.toolNames).toContain("read_url")
    expect(report.cli).toEqual(["Cli", "Import", "TelegramExport"])
    // The `deixis` executable, as npm linked it: its usage, not a crash.
    expect(await run(path.join(consumer, "node_modules", ".bin", "deixis"), ["--help"], consumer)).toContain("import")
    expect(report.sameScoring).toBe(true)
    expect(report.scoringWeights).toBe("object")
    expect(report.memoryLayer).toBe(true)
    expect(report.rendered).toBe("string")
    expect(report.retentionDefaults).toBe("object")
    expect(report.layerSqlite).toBe("function")
    expect(report.mapUpdate).toBe("function")
    expect(report.toolNames).toContain("resolve_reference_target")
    expect(report.effect).toBe("ran")
    expect(report.internalBlocked).toBe(true)
    // The `@deixis/source` condition points at src, which is not shipped: consumers resolve dist.
    const resolved = report.resolved as Record<string, string>
    expect(resolved.core).toMatch(/node_modules\/@deixis\/core\/dist\/index\.js$/)
    expect(resolved.chathistory).toMatch(/node_modules\/@deixis\/chathistory\/dist\/HistoryRenderer\.js$/)
  })

  it("README examples type-check against the installed packages, and run: SQLite on a real file", async () => {
    expect(examples.length).toBeGreaterThanOrEqual(6)
    for (const file of examples) expect(fs.existsSync(path.join(consumer, "out", file.replace(/\.ts$/, ".js"))), file).toBe(true)
    const runExample = (name: string) => {
      const file = examples.find((example) => example.startsWith(`readme/${name}-`))!
      return run(process.execPath, [path.join("out", file.replace(/\.ts$/, ".js"))], consumer)
    }
    // @deixis/core: both tools' answers.
    const core = await runExample("core")
    expect(core).toContain(`"status": "resolved"`)
    expect(core).toContain(`"kind": "link"`)
    // @deixis/chathistory: a rendered prompt with the history marked as such.
    expect(await runExample("chathistory")).toContain("chat_history_context")
    // @deixis/store-sql: a real SQLite file through its sqlite entry point and the driver installed beside it.
    expect(await runExample("store-sql")).toContain("applied 1 event(s)")
    expect(fs.existsSync(path.join(consumer, "deixis.db"))).toBe(true)
    // @deixis/tools: a resolved poll, and a bad call as an error envelope.
    const tools = (await runExample("tools")).split("\n").filter((line) => line.startsWith("{"))
    expect(tools.map((line) => (JSON.parse(line) as { status: string }).status)).toEqual(["ok", "error"])
    expect(tools[1]).toContain("InvalidParameters")
    // @deixis/core's "Replacing the rules" (docs/replacing-the-rules.md): a custom kind, TTL policy and scorer feature.
    const runMarked = async (marker: string) => {
      const file = examples.find((example) => fs.readFileSync(path.join(consumer, example), "utf8").includes(marker))
      expect(file, marker).toBeDefined()
      const out = await run(process.execPath, [path.join("out", file!.replace(/\.ts$/, ".js"))], consumer)
      return JSON.parse(out.split("\n").filter((line) => line.startsWith("{")).at(-1)!) as unknown
    }
    expect(await runMarked("examples/customKind.ts")).toEqual({
      status: "resolved", kind: "x.ticket", label: "TCK-42: login fails", listed: ["x.ticket"]
    })
    expect(await runMarked("examples/customTtlPolicy.ts")).toEqual({ minutes_left: { "-1001": 120, "-1002": 10 } })
    expect(await runMarked("examples/customScorer.ts")).toEqual({ status: "resolved", best: "-1001/10/link", embedding: 40 })
  })
})
