/**
 * The one statement builder of store-sql: statements are written with the `sql` template, each
 * `${value}` a bound parameter and each `${fragment}` SQL spliced in (a dialect's spelling, a
 * part of a larger statement); {@link compile} turns a fragment into a dialect's text, numbering
 * the placeholders as it appends them (`?` on SQLite, `$1, $2, …` on PostgreSQL).
 *
 * A fragment whose values are all parameters is compiled once per call site (its template's
 * strings are the key), so the hot statements cost no text building at all.
 */

/** A scalar bound to a placeholder. */
export type Scalar = string | number | null

/** A row as the drivers return it. */
export type Row = { readonly [column: string]: unknown }

/** A value bound to a placeholder: what both drivers accept (arrays on PostgreSQL only). */
export type Param = Scalar | ReadonlyArray<Scalar>

/** A piece of SQL with its parameters in place. */
export class Fragment {
  constructor(readonly strings: ReadonlyArray<string>, readonly values: ReadonlyArray<Param | Fragment>) {}
}

/** What a statement is compiled with: how a dialect writes its `n`th placeholder. */
export interface Placeholders {
  readonly placeholder: (n: number) => string
  /** Texts compiled per template (see the module's doc). */
  readonly texts: WeakMap<ReadonlyArray<string>, string>
}

/** A statement: `${value}` binds a parameter, `${fragment}` splices SQL. */
export const sql = (strings: TemplateStringsArray, ...values: Array<Param | Fragment>): Fragment =>
  new Fragment(strings, values)

/** SQL text spliced as it is (never a value from outside: identifiers and constants only). */
export const raw = (text: string): Fragment => new Fragment([text], [])

/** Nothing. */
export const empty: Fragment = raw("")

/** `parts` one after the other, `separator` between them. */
export const join = (parts: ReadonlyArray<Fragment>, separator: string): Fragment => {
  if (parts.length === 0) return empty
  if (parts.length === 1) return parts[0]!
  const strings: Array<string> = [""]
  for (let i = 1; i < parts.length; i++) strings.push(separator)
  strings.push("")
  return new Fragment(strings, parts)
}

/** Every condition (`1=1` for none). */
export const and = (conditions: ReadonlyArray<Fragment>): Fragment =>
  conditions.length === 0 ? raw("1=1") : sql`(${join(conditions, " AND ")})`

/** Any condition (`1=0` for none). */
export const or = (conditions: ReadonlyArray<Fragment>): Fragment =>
  conditions.length === 0 ? raw("1=0") : sql`(${join(conditions, " OR ")})`

/**
 * `LIMIT n`, `n` bound behind a CAST. SQLite reads a bare `LIMIT ?`'s value when it plans, and so
 * marks the statement to be prepared again — parsed and planned anew — whenever that parameter is
 * bound, which is every run: a cached statement with `LIMIT ?` pays its whole preparation on each
 * call (a pool scope's read cost 10× its run). An expression's value is not read: the statement is
 * planned once, for a limit not known. PostgreSQL reads it the same.
 */
export const limit = (n: number): Fragment => sql`LIMIT CAST(${n} AS INTEGER)`

// The strings of `list` and `tuples` by their shape, built once: statements list keys and rows
// on every write and read, in a handful of shapes (power-of-two chunks, see the dialects).
const maxShared = 4096
const listStrings: Array<ReadonlyArray<string>> = []
const tupleStrings = new Map<number, Array<ReadonlyArray<string>>>()

/** `(?, ?, …)`: one parameter per value, for `IN` and `VALUES`. */
export const list = (values: ReadonlyArray<Scalar>): Fragment => {
  const n = values.length
  let strings = n < maxShared ? listStrings[n] : undefined
  if (strings === undefined) {
    const built: Array<string> = ["("]
    for (let i = 1; i < n; i++) built.push(", ")
    built.push(")")
    strings = built
    if (n < maxShared) listStrings[n] = built
  }
  return new Fragment(strings, values)
}

/**
 * Rows of parameters: `(?, ?), (?, ?)`. Rows of one width are one fragment of parameters (the
 * text `join(rows.map(list), ", ")` gives), not a fragment per row.
 */
export const tuples = (rows: ReadonlyArray<ReadonlyArray<Scalar>>): Fragment => {
  const n = rows.length
  const width = n === 0 ? 0 : rows[0]!.length
  if (width === 0 || n * width >= maxShared) return join(rows.map(list), ", ")
  for (let r = 1; r < n; r++) if (rows[r]!.length !== width) return join(rows.map(list), ", ")
  let byCount = tupleStrings.get(width)
  if (byCount === undefined) tupleStrings.set(width, byCount = [])
  let strings = byCount[n]
  if (strings === undefined) {
    const built: Array<string> = ["("]
    for (let r = 0; r < n; r++) {
      for (let c = 1; c < width; c++) built.push(", ")
      built.push(r === n - 1 ? ")" : "), (")
    }
    byCount[n] = strings = built
  }
  const values: Array<Scalar> = new Array(n * width)
  let at = 0
  for (let r = 0; r < n; r++) {
    const row = rows[r]!
    for (let c = 0; c < width; c++) values[at++] = row[c]!
  }
  return new Fragment(strings, values)
}

const simple = (f: Fragment): boolean => {
  for (const v of f.values) if (v instanceof Fragment) return false
  return true
}

/** A compiled statement: its text and its parameters in placeholder order. */
export interface Compiled {
  readonly text: string
  readonly params: ReadonlyArray<Param>
}

/** `f` as the dialect's text, placeholders numbered in order of appearance. */
export const compile = (p: Placeholders, f: Fragment): Compiled => {
  if (simple(f)) {
    // A template whose values are all parameters: one text per call site.
    const template = "raw" in f.strings
    let text = template ? p.texts.get(f.strings) : undefined
    if (text === undefined) {
      text = f.strings[0]!
      for (let i = 0; i < f.values.length; i++) text += p.placeholder(i + 1) + f.strings[i + 1]!
      if (template) p.texts.set(f.strings, text)
    }
    return { text, params: f.values as ReadonlyArray<Param> }
  }
  const params: Array<Param> = []
  const append = (g: Fragment): string => {
    let text = g.strings[0]!
    for (let i = 0; i < g.values.length; i++) {
      const v = g.values[i]!
      if (v instanceof Fragment) text += append(v)
      else {
        params.push(v)
        text += p.placeholder(params.length)
      }
      text += g.strings[i + 1]!
    }
    return text
  }
  const text = append(f)
  return { text, params }
}

// -----------------------------------------------------------------------------
// Row readers: drivers differ (PostgreSQL returns BIGINT as a string, SQLite has no booleans).
// -----------------------------------------------------------------------------

export const num = (value: unknown): number =>
  typeof value === "number" ? value : typeof value === "string" || typeof value === "bigint" ? Number(value) : Number.NaN

export const numOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : num(value))

export const str = (value: unknown): string => (typeof value === "string" ? value : String(value))

export const strOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : str(value))

export const bool = (value: unknown): boolean => value === true || value === 1 || value === "1" || value === "t"

/** The topic column: '' stands for "no topic" (ids are never empty), so it can be indexed and compared. */
export const topicKey = (topic: string | null): string => topic ?? ""

export const topicOf = (key: unknown): string | null => {
  const s = str(key)
  return s === "" ? null : s
}

/** Splits `items` into chunks whose placeholders stay well under both engines' limits. */
export const chunks = <A>(items: ReadonlyArray<A>, width: number): ReadonlyArray<ReadonlyArray<A>> => {
  const size = Math.max(1, Math.floor(4000 / width))
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
