/**
 * The Bot API specification's facts the tests use (test/fixtures/bot-api.json), typed.
 */
import spec from "../fixtures/bot-api.json" with { type: "json" }

/** One field: its name, its type as the specification writes it, whether required, and the constant of a `type` field. */
export type Field = readonly [name: string, type: string, required: boolean, constant?: string]

export const version: string = spec.version
export const source: string = spec.source
export const types = spec.types as unknown as Readonly<Record<string, ReadonlyArray<Field>>>
export const unions = spec.unions as unknown as Readonly<Record<string, ReadonlyArray<string>>>
export const fieldsOf = (type: string): ReadonlyArray<Field> => types[type] ?? []
