import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { builtinModules } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

// Dependency order: each package's build needs its siblings' dist for their .d.ts.
const published = ["core", "chathistory", "store-sql", "telegraf", "tools"] as const

const root = fileURLToPath(new URL("../../..", import.meta.url))
const fixture = fileURLToPath(new URL("./fixture/main.ts", import.meta.url))
const tsc = path.join(root, "node_modules/typescript/bin/tsc")

const run = (command: string, args: ReadonlyArray<string>, cwd: string): string => {
  try {
    return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: process.env })
  } catch (error) {
    // Surface the compiler's or npm's own output, not only the exit code.
    const { stdout, stderr } = error as { stdout?: string; stderr?: string }
    throw new Error(`${command} ${args.join(" ")} failed in ${cwd}\n${stdout ?? ""}\n${stderr ?? ""}`)
  }
}

// `pnpm pack` (not `npm pack`) is what rewrites `workspace:^` to a real range, as `pnpm publish` does.
const pnpm = (args: ReadonlyArray<string>, cwd: string): string => {
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

beforeAll(() => {
  // Outside the workspace, so Node's resolution can never climb into its node_modules.
  work = fs.mkdtempSync(path.join(os.tmpdir(), "deixis-consumer-"))
  const tarballs = path.join(work, "tarballs")
  fs.mkdirSync(tarballs)
  for (const name of published) {
    const dir = path.join(root, "packages", name)
    run(process.execPath, [tsc, "-p", path.join(dir, "tsconfig.build.json")], root)
    const before = new Set(fs.readdirSync(tarballs))
    pnpm(["pack", "--pack-destination", tarballs], dir)
    const tarball = fs.readdirSync(tarballs).find((file) => !before.has(file))
    if (tarball === undefined) throw new Error(`pnpm pack wrote no tarball for ${name}`)
    const full = path.join(tarballs, tarball)
    const files = run("tar", ["-tzf", full], work).split("\n").filter((line) => line.length > 0)
    const manifest = JSON.parse(run("tar", ["-xzOf", full, "package/package.json"], work)) as Record<string, unknown>
    packed.push({ name, tarball: full, files, manifest })
  }

  consumer = path.join(work, "app")
  fs.mkdirSync(consumer)
  const dependencies: Record<string, string> = { effect: "^3.22.4", "@types/node": "^20.19.0" }
  for (const p of packed) dependencies[p.manifest.name as string] = `file:${p.tarball}`
  fs.writeFileSync(
    path.join(consumer, "package.json"),
    JSON.stringify({ name: "deixis-consumer", private: true, type: "module", dependencies }, null, 2)
  )
  // Plain npm, registry for everything but our tarballs; peers are installed by npm itself.
  // Install scripts are skipped: better-sqlite3 would compile from source, and the consumer
  // imports store-sql without opening a database (the binding loads on first open).
  run("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--no-package-lock"], consumer)

  fs.copyFileSync(fixture, path.join(consumer, "main.ts"))
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
      files: ["main.ts"]
    })
  )
})

afterAll(() => {
  if (work !== "" && process.env.DEIXIS_KEEP_CONSUMER === undefined) fs.rmSync(work, { recursive: true, force: true })
})

describe("published packages, as a consumer installs them", () => {
  it("ship only dist, README, CHANGELOG, LICENSE and package.json — nothing of src, test or bench", () => {
    expect(packed.map((p) => p.name)).toEqual([...published])
    for (const p of packed) {
      const stray = p.files.filter(
        (file) => !/^package\/(dist\/.+|package\.json|README\.md|CHANGELOG\.md|LICENSE)$/.test(file)
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
  it("import only what their manifests declare (dependencies or peers)", () => {
    for (const p of packed) {
      const unpacked = path.join(work, "unpacked", p.name)
      fs.mkdirSync(unpacked, { recursive: true })
      run("tar", ["-xzf", p.tarball, "-C", unpacked], work)
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
        for (const match of text.matchAll(/(?:from|import)\s*\(?\s*["']([^"'.][^"']*)["']/g)) {
          const specifier = match[1]!
          if (specifier.startsWith("node:") || builtinModules.includes(specifier)) continue
          const name = specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")
          if (!declared.has(name)) undeclared.add(`${file}: ${specifier}`)
        }
      }
      expect([...undeclared], p.name).toEqual([])
    }
  })

  it("type-check with moduleResolution NodeNext and run with Node", () => {
    let diagnostics = ""
    try {
      execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: consumer, encoding: "utf8", stdio: "pipe" })
    } catch (error) {
      diagnostics = (error as { stdout?: string }).stdout ?? String(error)
    }
    // Third-party declarations that assume the DOM lib or @types/pg are the consumer's business;
    // any diagnostic in the consumer's file or in a @deixis package is ours.
    const ours = diagnostics
      .split("\n")
      .filter((line) => /^(main\.ts|node_modules\/@deixis\/)/.test(line) || (/error TS/.test(line) && !line.startsWith("node_modules/")))
    expect(ours).toEqual([])
    expect(fs.existsSync(path.join(consumer, "out/main.js"))).toBe(true)
    const report = JSON.parse(run(process.execPath, ["out/main.js"], consumer)) as Record<string, unknown>
    expect(report.core).toContain("Deixis")
    expect(report.chathistory).toContain("HistoryRenderer")
    expect(report.storeSql).toEqual(["SqlStore"])
    expect(report.telegraf).toEqual(["DeixisTelegraf", "UpdateMapper"])
    expect(report.tools).toEqual(["DeixisToolkit", "Envelope"])
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
})
