/**
 * Fast decoders compiled from a Schema's structure, the decoding twin of core's
 * `Json.trustedEncoder`: for the JSON values clients send, the same value `Schema.decodeUnknown`
 * gives (the same keys in the same order), without the Schema interpreter's per-field `Either`
 * and issue context.
 *
 * A fast decoder never decides alone that a value is invalid: it returns the Schema's decoded
 * value or {@link NO}, and then the caller decodes with the Schema, which accepts or refuses and
 * words the error. So the accepted set and every error byte stay the Schema's. A node it does
 * not know (a declaration without a surrogate, a recursive Schema, an asynchronous
 * transformation, a union whose members overlap) compiles to "always the Schema".
 * `test/fastDecoder.test.ts` checks the contract on every endpoint's Schemas.
 *
 * @since 0.3.0
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

/**
 * "Decode with the Schema": the value is outside the shapes compiled here, or invalid.
 *
 * @since 0.3.0
 * @category models
 */
export const NO: unique symbol = Symbol.for("@deixis/http/FastDecoder/NO")

/**
 * @since 0.3.0
 * @category models
 */
export type NO = typeof NO

/**
 * A compiled decoder: the Schema's decoded value, or {@link NO}.
 *
 * @since 0.3.0
 * @category models
 */
export type FastDecoder = (input: unknown) => unknown

const never: FastDecoder = () => NO
const identity: FastDecoder = (value) => value

const options: AST.ParseOptions = {}

/** The JSON types a node can accept, to tell whether a union's members overlap. */
type Kind = "string" | "number" | "boolean" | "null" | "object" | "array" | "undefined"
const allKinds: ReadonlySet<Kind> = new Set(["string", "number", "boolean", "null", "object", "array", "undefined"])

const kindsOf = (ast: AST.AST): ReadonlySet<Kind> => {
  switch (ast._tag) {
    case "StringKeyword":
    case "TemplateLiteral":
      return new Set(["string"])
    case "NumberKeyword":
      return new Set(["number"])
    case "BooleanKeyword":
      return new Set(["boolean"])
    case "UndefinedKeyword":
      return new Set(["undefined"])
    case "Literal":
      return new Set([ast.literal === null ? "null" : (typeof ast.literal as Kind)])
    case "TypeLiteral":
      return new Set(["object"])
    case "TupleType":
      return new Set(["array"])
    case "Refinement":
      return kindsOf(ast.from)
    case "Transformation":
      return kindsOf(ast.from)
    case "Union":
      return new Set(ast.types.flatMap((t) => Array.from(kindsOf(t))))
    case "Declaration": {
      const surrogate = AST.getSurrogateAnnotation(ast)
      return Option.isSome(surrogate) ? kindsOf(surrogate.value) : allKinds
    }
    default:
      return allKinds
  }
}

const kindOf = (value: unknown): Kind =>
  value === null ? "null" : Array.isArray(value) ? "array" : (typeof value as Kind)

/** Whether a node decodes a value to itself (no transformation, no rebuilt object). */
const isIdentity = (ast: AST.AST): boolean => {
  switch (ast._tag) {
    case "StringKeyword":
    case "NumberKeyword":
    case "BooleanKeyword":
    case "UndefinedKeyword":
    case "Literal":
    case "TemplateLiteral":
    case "Enums":
      return true
    case "Refinement":
      return isIdentity(ast.from)
    case "Union":
      return ast.types.every(isIdentity)
    default:
      return false
  }
}

/** The literal values of a property, when its type is a literal or a union of literals. */
const literalsOf = (ast: AST.AST): ReadonlyArray<AST.LiteralValue> | undefined => {
  if (AST.isLiteral(ast)) return [ast.literal]
  if (AST.isUnion(ast) && ast.types.every(AST.isLiteral)) return ast.types.map((t) => (t as AST.Literal).literal)
  return undefined
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const hasOwn = (value: object, key: PropertyKey) => Object.prototype.hasOwnProperty.call(value, key)

const typeLiteral = (ast: AST.TypeLiteral): FastDecoder => {
  const fields = ast.propertySignatures.map((ps) => ({ name: ps.name, optional: ps.isOptional, decode: compile(ps.type) }))
  if (ast.indexSignatures.length > 0) {
    // A record of string keys alone (an open JSON object).
    const [index] = ast.indexSignatures
    if (fields.length > 0 || ast.indexSignatures.length > 1 || index!.parameter._tag !== "StringKeyword") return never
    const value = compile(index!.type)
    return (input) => {
      if (!isPlainObject(input)) return NO
      const out: Record<string, unknown> = {}
      for (const key of Object.keys(input)) {
        // Assigning "__proto__" sets the prototype: the Schema decides what that means.
        if (key === "__proto__") return NO
        const decoded = value(input[key])
        if (decoded === NO) return NO
        out[key] = decoded
      }
      return out
    }
  }
  if (fields.length === 0) return (input) => (input === null || input === undefined ? NO : input)
  return (input) => {
    if (!isPlainObject(input)) return NO
    const out: Record<PropertyKey, unknown> = {}
    for (const field of fields) {
      const present = hasOwn(input, field.name)
      if (!present && field.optional) continue
      // A required field that is absent is `undefined` to its type, as the Schema reads it.
      const decoded = field.decode(present ? (input as Record<PropertyKey, unknown>)[field.name] : undefined)
      if (decoded === NO) return NO
      out[field.name] = decoded
    }
    return out
  }
}

const tupleType = (ast: AST.TupleType): FastDecoder => {
  if (ast.rest.length > 1) return never
  const elements = ast.elements.map((e) => ({ optional: e.isOptional, decode: compile(e.type) }))
  const rest = ast.rest.length === 1 ? compile(ast.rest[0]!.type) : undefined
  return (input) => {
    if (!Array.isArray(input)) return NO
    if (rest === undefined && input.length > elements.length) return NO
    const out: Array<unknown> = []
    for (let i = 0; i < elements.length; i++) {
      if (i >= input.length) {
        if (elements[i]!.optional) return out
        return NO
      }
      const decoded = elements[i]!.decode(input[i])
      if (decoded === NO) return NO
      out.push(decoded)
    }
    for (let i = elements.length; i < input.length; i++) {
      const decoded = rest!(input[i])
      if (decoded === NO) return NO
      out.push(decoded)
    }
    return out
  }
}

const union = (ast: AST.Union): FastDecoder => {
  const members = ast.types.map((type) => ({ type, kinds: kindsOf(type), decode: compile(type) }))
  // Members that accept only values of their own JSON types: dispatched by the value's type.
  const byKind = new Map<Kind, Array<FastDecoder>>()
  for (const member of members) {
    for (const kind of member.kinds) byKind.set(kind, [...(byKind.get(kind) ?? []), member.decode])
  }
  const overlapping = Array.from(byKind.entries()).filter(([, decoders]) => decoders.length > 1)
  for (const [kind, _] of overlapping) {
    const inKind = members.filter((m) => m.kinds.has(kind))
    // Several members that decode a value to itself: whichever accepts gives the same value.
    if (inKind.every((m) => isIdentity(m.type))) continue
    // Objects told apart by a literal property, as the Schema's own union does.
    if (kind === "object") {
      const tag = discriminant(inKind.map((m) => m.type))
      if (tag !== undefined) {
        byKind.set(kind, [tag])
        continue
      }
    }
    byKind.set(kind, [never])
  }
  return (input) => {
    const decoders = byKind.get(kindOf(input))
    if (decoders === undefined) return NO
    for (const decode of decoders) {
      const decoded = decode(input)
      if (decoded !== NO) return decoded
    }
    return NO
  }
}

/** Object members told apart by one required property whose literal values no two share. */
const discriminant = (types: ReadonlyArray<AST.AST>): FastDecoder | undefined => {
  const shapes = types.map((t) => {
    let ast = t
    while (AST.isRefinement(ast) || AST.isTransformation(ast)) ast = ast.from
    return AST.isTypeLiteral(ast) ? ast : undefined
  })
  if (shapes.some((s) => s === undefined)) return undefined
  const candidates = shapes[0]!.propertySignatures.filter((ps) => !ps.isOptional && literalsOf(ps.type) !== undefined)
  for (const candidate of candidates) {
    const byValue = new Map<unknown, FastDecoder>()
    let disjoint = true
    for (let i = 0; i < types.length && disjoint; i++) {
      const ps = shapes[i]!.propertySignatures.find((p) => p.name === candidate.name && !p.isOptional)
      const values = ps === undefined ? undefined : literalsOf(ps.type)
      if (values === undefined) {
        disjoint = false
        break
      }
      const decode = compile(types[i]!)
      for (const value of values) {
        if (byValue.has(value)) disjoint = false
        byValue.set(value, decode)
      }
    }
    if (disjoint) {
      const name = candidate.name
      return (input) => byValue.get((input as Record<PropertyKey, unknown>)[name])?.(input) ?? NO
    }
  }
  return undefined
}

const refinement = (ast: AST.Refinement): FastDecoder => {
  const from = compile(ast.from)
  if (from === never) return never
  // A bound on an array's length holds of the input as of the output: checked first, so a
  // too-long array costs nothing to refuse (as `ContextEvent.lengthCheckedFirst`).
  const lengthOnly = AST.getSchemaIdAnnotation(ast).pipe(Option.exists((id) => id === Schema.MaxItemsSchemaId))
  return (input) => {
    if (lengthOnly && Array.isArray(input) && Option.isSome(ast.filter(input, options, ast))) return NO
    const decoded = from(input)
    if (decoded === NO) return NO
    return Option.isSome(ast.filter(decoded, options, ast)) ? NO : decoded
  }
}

const transformation = (ast: AST.Transformation): FastDecoder => {
  const from = compile(ast.from)
  if (from === never) return never
  const t = ast.transformation
  switch (t._tag) {
    case "FinalTransformation": {
      // The type side, decoded after the transformation as the Schema decodes it.
      const to = compile(ast.to)
      if (to === never) return never
      return (input) => {
        const decoded = from(input)
        if (decoded === NO) return NO
        // A synchronous transformation answers with an Either; any other effect: the Schema.
        const result: unknown = t.decode(decoded, options, ast, input)
        if (!Either.isEither(result) || Either.isLeft(result)) return NO
        return to(result.right)
      }
    }
    case "TypeLiteralTransformation": {
      // Defaults and renames of fields (`optionalWith`, `fromKey`), then the type side's order.
      if (!AST.isTypeLiteral(ast.to)) return never
      const order = ast.to.propertySignatures.map((ps) => ps.name)
      const steps = t.propertySignatureTransformations
      return (input) => {
        const decoded = from(input)
        if (decoded === NO) return NO
        const out = { ...(decoded as Record<PropertyKey, unknown>) }
        for (const step of steps) {
          const value = step.decode(hasOwn(out, step.from) ? Option.some(out[step.from]) : Option.none())
          delete out[step.from]
          if (Option.isSome(value)) out[step.to] = value.value
        }
        const ordered: Record<PropertyKey, unknown> = {}
        for (const name of order) if (hasOwn(out, name)) ordered[name] = out[name]
        return ordered
      }
    }
    default:
      return never
  }
}

const compile = (ast: AST.AST): FastDecoder => {
  switch (ast._tag) {
    case "StringKeyword":
      return (input) => (typeof input === "string" ? input : NO)
    case "NumberKeyword":
      return (input) => (typeof input === "number" ? input : NO)
    case "BooleanKeyword":
      return (input) => (typeof input === "boolean" ? input : NO)
    case "UndefinedKeyword":
      return (input) => (input === undefined ? input : NO)
    case "UnknownKeyword":
    case "AnyKeyword":
      return identity
    case "Literal": {
      const literal = ast.literal
      return (input) => (input === literal ? input : NO)
    }
    case "TemplateLiteral":
    case "Enums": {
      const is = Schema.is(Schema.make(ast))
      return (input) => (is(input) ? input : NO)
    }
    case "TypeLiteral":
      return typeLiteral(ast)
    case "TupleType":
      return tupleType(ast)
    case "Union":
      return union(ast)
    case "Refinement":
      return refinement(ast)
    case "Transformation":
      return transformation(ast)
    case "Declaration": {
      // A declaration that describes itself by a surrogate Schema (core's `lengthCheckedFirst`).
      const surrogate = AST.getSurrogateAnnotation(ast)
      return Option.isSome(surrogate) ? compile(surrogate.value) : never
    }
    default:
      return never
  }
}

/**
 * The fast decoder of a Schema, compiled once from its AST.
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = <A, I, R>(schema: Schema.Schema<A, I, R>): FastDecoder => compile(schema.ast)

/**
 * Whether a Schema compiles to anything but "always the Schema" (for tests and the startup check).
 *
 * @since 0.3.0
 * @category constructors
 */
export const isCompiled = <A, I, R>(schema: Schema.Schema<A, I, R>): boolean => compile(schema.ast) !== never
