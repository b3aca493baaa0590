import * as AST from "effect/SchemaAST"
import type * as Schema from "effect/Schema"
import { formatTimestamp, Id, Timestamp } from "../Ids.js"
import { Label } from "../ContextObject.js"

type Encoder = (value: any) => unknown

const identity: Encoder = (value) => value

const iso: Encoder = formatTimestamp

const withoutProtoKey: Encoder = (value: Record<string, unknown>) => {
  if (!Object.hasOwn(value, "__proto__")) return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) if (key !== "__proto__") out[key] = value[key]
  return out
}

const transformationOf = (schema: Schema.Schema.Any) => (schema.ast as AST.Transformation).transformation
// Transformations whose encode side is the identity (ids are strings inside; labels were cut on decode).
const identities = new Set([transformationOf(Id), transformationOf(Label)])
const timestamp = transformationOf(Timestamp)

const compile = (ast: AST.AST): Encoder => {
  switch (ast._tag) {
    case "Transformation":
      if (ast.transformation === timestamp) return iso
      if (identities.has(ast.transformation)) return identity
      break
    case "Refinement":
      return compile(ast.from)
    case "TypeLiteral": {
      const fields = ast.propertySignatures.map((ps) => [ps.name, ps.isOptional, compile(ps.type)] as const)
      const values = ast.indexSignatures.map((is) => compile(is.type))
      // A record: Schema.encode assigns each key onto a fresh object, where "__proto__" sets the
      // prototype instead of a key — so a "__proto__" key is dropped there, and here alike.
      if (fields.length === 0 && values.every((f) => f === identity)) return withoutProtoKey
      if (ast.indexSignatures.length > 0) break
      // Rebuilt in the Schema's field order, so the JSON is byte-identical to Schema.encode's.
      return (value: Record<PropertyKey, unknown>) => {
        const out: Record<PropertyKey, unknown> = {}
        for (const [name, optional, encode] of fields) {
          const field = value[name]
          if (optional && !Object.hasOwn(value, name)) continue
          out[name] = field === undefined ? undefined : encode(field)
        }
        return out
      }
    }
    case "TupleType": {
      if (ast.elements.length > 0 || ast.rest.length !== 1) break
      const item = compile(ast.rest[0]!.type)
      return item === identity ? identity : (value: ReadonlyArray<unknown>) => value.map(item)
    }
    case "Union": {
      const members = ast.types.map(compile)
      if (members.every((m) => m === identity)) return identity
      // NullOr(X) and optional fields' X | undefined: one member with a transformation.
      const other = ast.types.filter((t) => !(AST.isLiteral(t) && t.literal === null) && !AST.isUndefinedKeyword(t))
      if (other.length === 1) {
        const encode = compile(other[0]!)
        return (value) => (value === null || value === undefined ? value : encode(value))
      }
      break
    }
    case "Declaration":
    case "Suspend":
      break
    default:
      return identity
  }
  throw new Error(`no fast encoder for ${String(ast)}`)
}

/**
 * `Schema.encodeSync(schema)` for values the library built itself (already of the Type side),
 * without re-validating them: the same JSON, byte for byte, at a fraction of the cost. Built
 * once from the Schema's AST; a Schema with a transformation it does not know fails at build.
 */
export const trustedEncoder = <A, I>(schema: Schema.Schema<A, I>): (value: A) => I => compile(schema.ast) as (value: A) => I

