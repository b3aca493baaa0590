/**
 * `lengthCheckedFirst` (see ContextEvent): an array Schema whose `maxItems` bound is checked
 * before its elements are decoded.
 */
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

export const lengthCheckedFirst = <A, I, R>(
  schema: Schema.Schema<ReadonlyArray<A>, ReadonlyArray<I>, R>
): Schema.Schema<ReadonlyArray<A>, ReadonlyArray<I>, R> => {
  // The refinements from the outermost in, up to the maxItems one.
  const chain: Array<AST.Refinement> = []
  let bound: AST.Refinement | undefined
  for (let ast = schema.ast; AST.isRefinement(ast); ast = ast.from) {
    if (ast.annotations[AST.SchemaIdAnnotationId] === Schema.MaxItemsSchemaId) {
      bound = ast
      break
    }
    chain.push(ast)
  }
  if (bound === undefined) return schema
  const maxItems = bound
  const tooLong = (input: unknown, options: AST.ParseOptions): ParseResult.ParseIssue | undefined => {
    if (!Array.isArray(input)) return undefined
    const issue = maxItems.filter(input, options, maxItems)
    if (Option.isNone(issue)) return undefined
    let out: ParseResult.ParseIssue = new ParseResult.Refinement(maxItems, input, "Predicate", issue.value)
    for (let k = chain.length - 1; k >= 0; k--) out = new ParseResult.Refinement(chain[k]!, input, "From", out)
    return out
  }
  const parse = (decoding: boolean) => (inner: AST.AST) => {
    const run = decoding ? ParseResult.decodeUnknown(Schema.make(inner)) : ParseResult.encodeUnknown(Schema.make(inner))
    return (input: unknown, options: AST.ParseOptions) => {
      const issue = tooLong(input, options)
      return issue === undefined ? run(input, options) : ParseResult.fail(issue)
    }
  }
  return Schema.make(
    new AST.Declaration([schema.ast], parse(true), parse(false), {
      ...schema.ast.annotations,
      [AST.SurrogateAnnotationId]: schema.ast,
      // What describes `schema` describes this: generated values, printing.
      [AST.ArbitraryAnnotationId]: (inner: (fc: unknown) => unknown) => inner,
      [AST.PrettyAnnotationId]: (inner: (a: unknown) => string) => inner
    })
  )
}
