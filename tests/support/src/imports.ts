/**
 * The import graph of a package's `src`, read with the TypeScript parser: which module imports
 * which, and whether an import is needed at run time or only by the type checker. Tests use it to
 * keep every `src` free of import cycles (a module that imports itself back runs half-initialised).
 *
 * @since 0.1.0
 */
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"

/** One import edge: `from` imports `to` (both relative to the scanned root). */
export interface ImportEdge {
  readonly from: string
  readonly to: string
  /** true when only types cross it (`import type`, `export type`, every specifier `type`). */
  readonly typeOnly: boolean
}

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(full)
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [full] : []
  })

const resolveLocal = (fromFile: string, specifier: string): string | undefined => {
  if (!specifier.startsWith(".")) return undefined
  const base = path.resolve(path.dirname(fromFile), specifier)
  const candidates = [base.replace(/\.js$/, ".ts"), base.replace(/\.js$/, ".tsx"), `${base}.ts`, path.join(base, "index.ts")]
  return candidates.find((candidate) => fs.existsSync(candidate) && fs.statSync(candidate).isFile())
}

const isTypeOnly = (node: ts.ImportDeclaration | ts.ExportDeclaration): boolean => {
  if (ts.isImportDeclaration(node)) {
    const clause = node.importClause
    if (clause === undefined) return false // `import "./x.js"`: run for its effects
    if (clause.isTypeOnly) return true
    if (clause.name !== undefined) return false
    const bindings = clause.namedBindings
    if (bindings === undefined || ts.isNamespaceImport(bindings)) return false
    return bindings.elements.length > 0 && bindings.elements.every((element) => element.isTypeOnly)
  }
  if (node.isTypeOnly) return true
  const clause = node.exportClause
  return clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0 &&
    clause.elements.every((element) => element.isTypeOnly)
}

/**
 * Every static import and re-export between the modules under `root`. Dynamic `import()` is left
 * out: it runs after the importing module has finished loading, so it cannot close a cycle.
 *
 * @since 0.1.0
 */
export const importEdges = (root: string): Array<ImportEdge> =>
  sourceFiles(root).flatMap((file) => {
    const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false)
    return source.statements.flatMap((statement): Array<ImportEdge> => {
      if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) return []
      const specifier = statement.moduleSpecifier
      if (specifier === undefined || !ts.isStringLiteral(specifier)) return []
      const target = resolveLocal(file, specifier.text)
      if (target === undefined) return []
      return [{
        from: path.relative(root, file),
        to: path.relative(root, target),
        typeOnly: isTypeOnly(statement)
      }]
    })
  })

/**
 * The strongly connected groups of more than one module (Tarjan), each sorted: every module in a
 * group reaches every other through the given edges.
 *
 * @since 0.1.0
 */
export const cycles = (edges: ReadonlyArray<ImportEdge>): Array<Array<string>> => {
  const next = new Map<string, Array<string>>()
  for (const edge of edges) {
    next.set(edge.from, [...(next.get(edge.from) ?? []), edge.to])
    if (!next.has(edge.to)) next.set(edge.to, [])
  }
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const groups: Array<Array<string>> = []
  let counter = 0
  const visit = (node: string): void => {
    index.set(node, counter)
    low.set(node, counter)
    counter++
    stack.push(node)
    onStack.add(node)
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to)
        low.set(node, Math.min(low.get(node)!, low.get(to)!))
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!))
      }
    }
    if (low.get(node) === index.get(node)) {
      const group: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        group.push(member)
      } while (member !== node)
      if (group.length > 1) groups.push(group.sort())
    }
  }
  for (const node of [...next.keys()].sort()) if (!index.has(node)) visit(node)
  return groups
}

/**
 * What a package's `src` must hold to: no cycle of imports needed at run time, and no cycle of
 * type imports except a public module with its own `internal/` implementation (as Effect's own
 * packages have). Returns a line per violation; empty when the layout is clean.
 *
 * @since 0.1.0
 */
export const importCycleViolations = (root: string): Array<string> => {
  const edges = importEdges(root)
  const runtimeGroups = cycles(edges.filter((edge) => !edge.typeOnly))
  const runtime = runtimeGroups.map((group) => `runtime cycle: ${group.join(" ↔ ")}`)
  const reported = new Set(runtimeGroups.map((group) => group.join("\n")))
  const typeLevel = cycles(edges)
    .filter((group) => !reported.has(group.join("\n")))
    .filter((group) => group.filter((module) => !module.startsWith(`internal${path.sep}`)).length !== 1)
    .map((group) => `type cycle beyond a module and its internal/ implementation: ${group.join(" ↔ ")}`)
  return [...runtime, ...typeLevel]
}
