/**
 * Mention normalisation from message entities — never from a regex over the text.
 *
 * Telegram marks mentions with `mention` (`@username` typed in the text) and `text_mention`
 * (a user without a username, picked from a list) entities whose `offset` and `length` are in
 * UTF-16 code units. JavaScript strings are indexed in UTF-16 code units too, so the spans are
 * sliced directly; counting code points (`Array.from`) would shift every span after an emoji.
 * Each mention is replaced by {@link PeopleRef.format}'s `[nickname](tg:@username)`.
 *
 * Nothing here fails: an entity out of range, overlapping another, or cutting a surrogate
 * pair is skipped, and a `text_mention` of a user without a username keeps its original text;
 * each such case adds a warning for the caller to log.
 *
 * @since 0.1.0
 */
import { UserId } from "@deixis/core/Ids"
import * as Schema from "effect/Schema"
import * as PeopleRef from "./PeopleRef.js"

/**
 * The user a `text_mention` entity points at.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EntityUser = Schema.Struct({
  id: UserId,
  is_bot: Schema.optional(Schema.Boolean),
  first_name: Schema.optional(Schema.String),
  last_name: Schema.optional(Schema.String),
  username: Schema.optional(Schema.String)
}).annotations({ identifier: "EntityUser" })

/**
 * A message entity as Telegram sends it; offsets and lengths in UTF-16 code units. Types
 * other than `mention` and `text_mention` are accepted and ignored.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MessageEntity = Schema.Struct({
  type: Schema.String,
  offset: Schema.Int.pipe(Schema.nonNegative()),
  length: Schema.Int.pipe(Schema.positive()),
  user: Schema.optional(EntityUser)
}).annotations({ identifier: "MessageEntity" })

/**
 * @since 0.1.0
 * @category models
 */
export type MessageEntity = typeof MessageEntity.Type

/**
 * The normalised text and the warnings met on the way.
 *
 * @since 0.1.0
 * @category models
 */
export interface Normalized {
  readonly text: string
  readonly warnings: ReadonlyArray<string>
}

/**
 * People known by username (lower case) and by user id, so a mention can use a display name.
 *
 * @since 0.1.0
 * @category models
 */
export interface Directory {
  readonly byUsername: ReadonlyMap<string, PeopleRef.Person>
  readonly byUserId: ReadonlyMap<string, PeopleRef.Person>
}

const emptyDirectory: Directory = { byUsername: new Map(), byUserId: new Map() }

/**
 * A directory of the given people.
 *
 * @since 0.1.0
 * @category constructors
 */
export const directory = (people: ReadonlyArray<PeopleRef.Person>): Directory => {
  // Read only when a text mentions someone: most build none (two Maps per message otherwise).
  if (people.length === 0) return emptyDirectory
  const byUsername = new Map<string, PeopleRef.Person>()
  const byUserId = new Map<string, PeopleRef.Person>()
  for (const person of people) {
    const username = PeopleRef.normalizeUsername(person.username)
    if (username !== null) byUsername.set(username.toLowerCase(), person)
    if (person.user_id !== null && person.user_id !== undefined) byUserId.set(person.user_id, person)
  }
  return { byUsername, byUserId }
}

const isMention = (e: MessageEntity) => e.type === "mention" || e.type === "text_mention"

/**
 * Whether `entities` hold a `mention` or `text_mention` — what {@link normalize} replaces; without
 * one it reads no directory.
 *
 * @since 0.1.0
 * @category normalisation
 */
export const hasMention = (entities: ReadonlyArray<MessageEntity> | undefined): boolean =>
  entities !== undefined && entities.some(isMention)

const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff
const cutsSurrogatePair = (text: string, at: number) =>
  at > 0 && at < text.length && isLowSurrogate(text.charCodeAt(at))
const mentionSpan = /^@[A-Za-z0-9_]{1,64}$/

const replacement = (
  text: string,
  entity: MessageEntity,
  people: Directory,
  warnings: Array<string>
): string | null => {
  const span = text.slice(entity.offset, entity.offset + entity.length)
  if (entity.type === "mention") {
    if (!mentionSpan.test(span)) {
      warnings.push(`mention entity at ${entity.offset} does not cover an @username (${JSON.stringify(span)}); kept as is`)
      return null
    }
    const username = span.slice(1)
    const known = people.byUsername.get(username.toLowerCase())
    // The text's spelling of the username wins over the directory's (it is what was typed).
    return PeopleRef.format({ ...(known ?? {}), username }).ref
  }
  const user = entity.user
  if (user === undefined) {
    warnings.push(`text_mention entity at ${entity.offset} carries no user; kept as is`)
    return null
  }
  const known = people.byUserId.get(user.id)
  // The entity's own username wins; the directory may add a display name.
  const person: PeopleRef.Person = {
    user_id: user.id,
    display_name: known?.display_name ?? null,
    first_name: user.first_name ?? known?.first_name ?? null,
    last_name: user.last_name ?? known?.last_name ?? null,
    username: user.username ?? known?.username ?? null
  }
  const formatted = PeopleRef.format(person)
  if (formatted.warning !== null) {
    warnings.push(`text_mention of user ${user.id} has no username; kept the original text`)
    return null
  }
  return formatted.ref
}

/**
 * Replaces `mention` and `text_mention` spans by `[nickname](tg:@username)`.
 *
 * @since 0.1.0
 * @category normalisation
 */
export const normalize = (
  text: string,
  entities: ReadonlyArray<MessageEntity>,
  people: Directory = emptyDirectory
): Normalized => {
  if (!hasMention(entities)) return { text, warnings: [] }
  const warnings: Array<string> = []
  const mentions = entities.filter(isMention).sort((a, b) => a.offset - b.offset || a.length - b.length)
  let out = ""
  let cursor = 0
  for (const entity of mentions) {
    const end = entity.offset + entity.length
    if (end > text.length) {
      warnings.push(`${entity.type} entity at ${entity.offset}+${entity.length} lies beyond the text; skipped`)
      continue
    }
    if (entity.offset < cursor) {
      warnings.push(`${entity.type} entity at ${entity.offset} overlaps the previous mention; skipped`)
      continue
    }
    if (cutsSurrogatePair(text, entity.offset) || cutsSurrogatePair(text, end)) {
      warnings.push(`${entity.type} entity at ${entity.offset}+${entity.length} cuts a character in two; skipped`)
      continue
    }
    const ref = replacement(text, entity, people, warnings)
    if (ref === null) continue
    out += text.slice(cursor, entity.offset) + ref
    cursor = end
  }
  return { text: out + text.slice(cursor), warnings }
}
