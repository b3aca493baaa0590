/**
 * The one formatter of people references: `[nickname](tg:@username)`.
 *
 * A history item's `sender.display_ref`, a quote's `sender_ref` and every normalised mention
 * come from {@link format}, so a person reads the same wherever they appear.
 *
 * - nickname priority: display name > first/last name > `@username`;
 * - `[`, `]`, `(` and `)` are stripped from labels (they would break the Markdown link), and
 *   whitespace runs (newlines included) collapse to one space;
 * - a missing username never fails: the reference degrades to the plain label and a warning
 *   says why (the caller logs it).
 *
 * @since 0.1.0
 */
import { UserId } from "@deixis/core/Ids"
import * as Schema from "effect/Schema"

/**
 * What is known about a person, as a platform reports it. Every field is optional: Telegram's
 * anonymous admins have no user id, many users have no username, bots have no last name.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Person = Schema.Struct({
  user_id: Schema.optional(Schema.NullOr(UserId)),
  username: Schema.optional(Schema.NullOr(Schema.String)),
  display_name: Schema.optional(Schema.NullOr(Schema.String)),
  first_name: Schema.optional(Schema.NullOr(Schema.String)),
  last_name: Schema.optional(Schema.NullOr(Schema.String)),
  is_bot: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "Person" })

/**
 * @since 0.1.0
 * @category models
 */
export type Person = typeof Person.Type

/**
 * A formatted reference. `warning` is set when the reference degraded (no usable username).
 *
 * @since 0.1.0
 * @category models
 */
export interface PeopleRef {
  /** `[nickname](tg:@username)`, or the plain nickname when there is no username. */
  readonly ref: string
  readonly nickname: string
  /** The username without `@`, or null when there is none. */
  readonly username: string | null
  readonly warning: string | null
}

const linkBreakers = /[[\]()]/g
const whitespace = /\s+/g

/**
 * A label safe inside `[...]`: `[]()` stripped, whitespace collapsed, trimmed.
 *
 * @since 0.1.0
 * @category formatting
 */
export const sanitizeLabel = (label: string): string =>
  label.replace(linkBreakers, "").replace(whitespace, " ").trim()

/**
 * A username as it goes inside `(tg:@...)`: without `@`, without `[]()` or whitespace;
 * null when nothing is left.
 *
 * @since 0.1.0
 * @category formatting
 */
export const normalizeUsername = (username: string | null | undefined): string | null => {
  if (username === null || username === undefined) return null
  const clean = username.replace(linkBreakers, "").replace(whitespace, "").replace(/^@+/, "")
  return clean === "" ? null : clean
}

const nonEmpty = (label: string | null | undefined): string | null => {
  if (label === null || label === undefined) return null
  const clean = sanitizeLabel(label)
  return clean === "" ? null : clean
}

/**
 * The nickname: display name, else first and last name, else `@username`, else a stand-in
 * naming the user id (`user 42`), else `unknown`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const nickname = (person: Person): string => {
  const display = nonEmpty(person.display_name)
  if (display !== null) return display
  const full = nonEmpty([person.first_name ?? "", person.last_name ?? ""].join(" "))
  if (full !== null) return full
  const username = normalizeUsername(person.username)
  if (username !== null) return `@${username}`
  return person.user_id === null || person.user_id === undefined ? "unknown" : `user ${person.user_id}`
}

/**
 * Formats a person as `[nickname](tg:@username)`. Without a username the reference is the
 * plain nickname and `warning` says so; this never fails.
 *
 * @since 0.1.0
 * @category formatting
 */
export const format = (person: Person): PeopleRef => {
  const name = nickname(person)
  const username = normalizeUsername(person.username)
  if (username === null) {
    return {
      ref: name,
      nickname: name,
      username: null,
      warning: `no username for ${
        person.user_id === null || person.user_id === undefined ? name : `user ${person.user_id}`
      }; the reference degrades to its plain label`
    }
  }
  return { ref: `[${name}](tg:@${username})`, nickname: name, username, warning: null }
}
