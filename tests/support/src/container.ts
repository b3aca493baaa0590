/**
 * The container files read as Docker and Compose read them, for tests that check them against
 * the repository (no Docker engine here to build them): a Dockerfile's stages and instructions,
 * the `pnpm` commands its `RUN`s type, what a `.dockerignore` keeps out, and a compose file's
 * environment as `docker compose` substitutes it.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { parse } from "yaml"

export interface Instruction {
  /** Upper-case: `FROM`, `RUN`, `COPY`, `ENV`… */
  readonly keyword: string
  /** Everything after the keyword, line continuations joined. */
  readonly args: string
}

export interface Stage {
  readonly name: string | undefined
  readonly image: string
  readonly instructions: ReadonlyArray<Instruction>
}

/** A Dockerfile's stages, in order (comments, parser directives and continuations handled). */
export const parseDockerfile = (text: string): ReadonlyArray<Stage> => {
  const joined = text.split("\n").filter((line) => !/^\s*#/.test(line)).join("\n").replace(/\\\n/g, " ")
  const stages: Array<{ name: string | undefined; image: string; instructions: Array<Instruction> }> = []
  for (const line of joined.split("\n")) {
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line)
    if (match === null) continue
    const keyword = match[1]!.toUpperCase()
    const args = match[2]!.trim().replace(/\s+/g, " ")
    if (keyword === "FROM") {
      const [image, as, name] = args.split(" ")
      stages.push({ image: image!, name: as?.toUpperCase() === "AS" ? name : undefined, instructions: [] })
    } else {
      stages.at(-1)?.instructions.push({ keyword, args })
    }
  }
  return stages
}

/** The instructions of a stage with this keyword. */
export const instructions = (stage: Stage, keyword: string): ReadonlyArray<string> =>
  stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args)

/** A stage's `ENV` settings (`KEY=value` pairs, several per instruction). */
export const envOf = (stage: Stage): ReadonlyMap<string, string> =>
  new Map(instructions(stage, "ENV").flatMap((args) => [...args.matchAll(/([A-Z_][A-Z0-9_]*)=("[^"]*"|\S*)/g)].map((m) => [m[1]!, m[2]!.replace(/^"|"$/g, "")] as const)))

/** A `COPY`'s options (`--from`, `--chown`), sources and destination. */
export const parseCopy = (args: string) => {
  const words = args.split(" ")
  const options = new Map(words.filter((w) => w.startsWith("--")).map((w) => {
    const [key, value] = w.slice(2).split("=")
    return [key!, value ?? ""] as const
  }))
  const paths = words.filter((w) => !w.startsWith("--"))
  return { from: options.get("from"), sources: paths.slice(0, -1), destination: paths.at(-1)! }
}

/** An exec-form instruction's argument list (`CMD ["node", "dist/main.js"]`). */
export const execForm = (args: string): ReadonlyArray<string> => JSON.parse(args) as ReadonlyArray<string>

/** Each `pnpm …` command of a `RUN` line (split at `&&`), as its words without quotes. */
export const pnpmCommands = (run: string): ReadonlyArray<ReadonlyArray<string>> =>
  run.split("&&").map((part) => part.trim().split(" ").map((w) => w.replace(/^["']|["']$/g, ""))).filter((words) => words[0] === "pnpm")

/** The patterns of a `.dockerignore` (comments and blank lines dropped). */
export const ignorePatterns = (text: string): ReadonlyArray<string> =>
  text.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))

/** Whether a path (relative to the build context) is kept out by one of the patterns. */
export const ignored = (patterns: ReadonlyArray<string>, file: string): boolean =>
  patterns.some((pattern) => {
    const regex = new RegExp(
      "^" + pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*\*\//g, "(?:.*/)?").replace(/\*/g, "[^/]*") + "(?:/.*)?$"
    )
    return regex.test(file)
  })

export interface ComposeService {
  readonly image?: string
  readonly build?: { readonly context: string; readonly dockerfile: string }
  readonly environment?: Record<string, string>
  readonly ports?: ReadonlyArray<string>
  readonly volumes?: ReadonlyArray<string>
  readonly depends_on?: Record<string, { readonly condition: string }>
  readonly stop_grace_period?: string
  readonly healthcheck?: unknown
}

/** A compose file, parsed. */
export const readCompose = (file: string | URL): { readonly name?: string; readonly services: Record<string, ComposeService> } =>
  parse(readFileSync(file, "utf8")) as { services: Record<string, ComposeService> }

/**
 * A value as `docker compose` substitutes it, given the variables set: `${X}`, `${X:-default}`,
 * and `${X:?message}` (which fails, as compose does, when X is unset or empty).
 */
export const substitute = (value: string, variables: Readonly<Record<string, string>>): string =>
  value.replace(/\$\{([A-Z_][A-Z0-9_]*)(?::([-?])([^}]*))?\}/g, (_, name: string, op: string | undefined, rest: string | undefined) => {
    const set = variables[name]
    if (set !== undefined && set !== "") return set
    if (op === "?") throw new Error(`${name} is required: ${rest}`)
    return op === "-" ? rest ?? "" : ""
  })

/** Every variable a compose value reads (`${X…}`), with whether compose requires it (`:?`). */
export const variablesOf = (value: string): ReadonlyArray<{ readonly name: string; readonly required: boolean }> =>
  [...value.matchAll(/\$\{([A-Z_][A-Z0-9_]*)(:[-?])?/g)].map((m) => ({ name: m[1]!, required: m[2] === ":?" }))

interface Manifest {
  readonly name: string
  readonly packageManager?: string
  readonly scripts?: Record<string, string>
  readonly files?: ReadonlyArray<string>
  readonly dependencies?: Record<string, string>
}

/** Every workspace project's manifest by name, with its directory (relative to the root). */
export const workspace = (root: string): ReadonlyMap<string, { readonly dir: string; readonly manifest: Manifest }> => {
  const globs = (parse(readFileSync(`${root}/pnpm-workspace.yaml`, "utf8")) as { packages: ReadonlyArray<string> }).packages
  const projects = new Map<string, { dir: string; manifest: Manifest }>()
  for (const glob of globs) {
    const parent = glob.replace(/\/\*$/, "")
    for (const entry of readdirSync(`${root}/${parent}`, { withFileTypes: true })) {
      const dir = `${parent}/${entry.name}`
      if (!entry.isDirectory() || !existsSync(`${root}/${dir}/package.json`)) continue
      const manifest = JSON.parse(readFileSync(`${root}/${dir}/package.json`, "utf8")) as Manifest
      projects.set(manifest.name, { dir, manifest })
    }
  }
  return projects
}

/**
 * What is wrong with an app's image file, checked against the repository it is built from (the
 * root, its build context): every file a `COPY` takes exists and is not kept out by the
 * Dockerfile's `.dockerignore`, nor is anything the install needs; every `pnpm` command names
 * a workspace package and a script it has, and `corepack` prepares the root's pnpm; the last
 * stage runs the package's start command (`node dist/main.js`) as a user other than root.
 * Empty when nothing is.
 */
export const imageProblems = (root: string, dockerfile: string, app: string): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const stages = parseDockerfile(readFileSync(`${root}/${dockerfile}`, "utf8"))
  const ignore = existsSync(`${root}/${dockerfile}.dockerignore`) ? ignorePatterns(readFileSync(`${root}/${dockerfile}.dockerignore`, "utf8")) : []
  const projects = workspace(root)
  const rootManifest = JSON.parse(readFileSync(`${root}/package.json`, "utf8")) as Manifest
  if (stages.length < 2) problems.push(`${dockerfile}: one stage; a build stage and a runtime stage expected`)
  const names = new Set(stages.map((s) => s.name))
  // What `pnpm install --frozen-lockfile` reads, and each workspace project's manifest and sources.
  const needed = ["package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml", ".npmrc", ".prebuild-installrc"]
  for (const { dir } of projects.values()) needed.push(`${dir}/package.json`)
  for (const [index, stage] of stages.entries()) {
    for (const args of instructions(stage, "COPY")) {
      const copy = parseCopy(args)
      if (copy.from !== undefined) {
        if (!names.has(copy.from)) problems.push(`${dockerfile}: COPY --from=${copy.from}: no such stage`)
        continue
      }
      for (const source of copy.sources) {
        if (!existsSync(`${root}/${source}`)) problems.push(`${dockerfile}: COPY ${source}: no such file`)
        else if (source !== "." && ignored(ignore, source)) problems.push(`${dockerfile}: COPY ${source}: kept out by the .dockerignore`)
      }
      if (copy.sources.includes(".")) {
        for (const file of needed) if (ignored(ignore, file)) problems.push(`${dockerfile}: ${file} is kept out by the .dockerignore`)
      }
    }
    for (const run of instructions(stage, "RUN")) {
      const corepack = /corepack prepare (pnpm@\S+)/.exec(run)
      if (corepack !== null && corepack[1] !== rootManifest.packageManager) {
        problems.push(`${dockerfile}: corepack prepares ${corepack[1]}, the root's packageManager is ${rootManifest.packageManager}`)
      }
      for (const words of pnpmCommands(run)) {
        const filter = words.indexOf("--filter")
        if (filter < 0) {
          if (words[1] !== "install") problems.push(`${dockerfile}: unexpected ${words.join(" ")}`)
          continue
        }
        const name = words[filter + 1]!.replace(/\.\.\.$/, "")
        const project = projects.get(name)
        if (project === undefined) {
          problems.push(`${dockerfile}: ${words.join(" ")}: no workspace package ${name}`)
          continue
        }
        const command = words.slice(filter + 2)
        const script = command[0] === "run" ? command[1]! : command[0]!
        if (script !== "deploy" && project.manifest.scripts?.[script] === undefined) {
          problems.push(`${dockerfile}: ${words.join(" ")}: ${name} has no "${script}" script`)
        }
      }
    }
    if (index === stages.length - 1) {
      const users = instructions(stage, "USER")
      if (users.length === 0 || ["root", "0"].includes(users.at(-1)!)) problems.push(`${dockerfile}: the runtime stage runs as root`)
      const cmd = instructions(stage, "CMD").at(-1)
      const start = projects.get(app)?.manifest.scripts?.["start"] ?? ""
      if (cmd === undefined || execForm(cmd).join(" ") !== "node dist/main.js" || !/(^|&& exec |^exec )node dist\/main\.js$/.test(start)) {
        problems.push(`${dockerfile}: CMD ${cmd} is not ${app}'s start command (${start})`)
      }
    }
  }
  // `pnpm deploy` copies a workspace dependency as it would pack it: its "files" must name the
  // compiled dist, so that what ships does not hang on which ignore files the packing reads.
  for (const dependency of Object.keys(projects.get(app)?.manifest.dependencies ?? {})) {
    const project = projects.get(dependency)
    if (project !== undefined && !(project.manifest.files ?? []).includes("dist")) {
      problems.push(`${dependency}'s "files" do not name dist: pnpm deploy would leave it out`)
    }
  }
  return problems
}
