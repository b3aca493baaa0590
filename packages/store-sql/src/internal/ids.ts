/**
 * Core's one id rule, as the SQL stores apply it at their door: nothing can have been stored
 * under an id the rule refuses (every entrance refuses it first), so a read with one finds
 * nothing without asking the database — which could not even hold some of them (PostgreSQL
 * `text` has no NUL) or would alias them (a lone surrogate stored as UTF-8 is U+FFFD).
 */
import { isValidId, MAX_OBJECT_ID_LENGTH } from "@deixis/core/Ids"

/** Whether every id is one the rule accepts (null: an absent optional id). */
export const storable = (...ids: ReadonlyArray<string | null>): boolean =>
  ids.every((id) => id === null || isValidId(id))

/** Whether an object id (a composed id, longer) is one the rule accepts. */
export const storableObjectId = (id: string): boolean => isValidId(id, MAX_OBJECT_ID_LENGTH)

/** The first refused id of a write, named, or undefined. */
export const refused = (ids: Record<string, string | null>): string | undefined => {
  for (const [name, id] of Object.entries(ids)) {
    if (id !== null && !isValidId(id)) return `${name} is not a valid id`
  }
  return undefined
}
