/**
 * What every part of the SQL context store shares: its settings, how rows become values and
 * values rows, and the statement helpers bound to one database (`ContextSql`).
 */
import { type ContextObject, ContextObject as ContextObjectSchema, type MessageMeta } from "@deixis/core/ContextObject"
import { StoreError } from "@deixis/core/ContextStore"
import { positionLength } from "@deixis/core/Ids"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { bool, chunks, type ColumnType, type Db, describe, num, type Row, type Scalar, str, strOrNull, topicKey, topicOf } from "./db.js"
import { storeError } from "./availability.js"
import type { Dialect } from "./dialect.js"
import { list, sql } from "./statement.js"

export interface ContextSettings {
  /** How long an object is kept after it stops being active (or, never activated, after it was created); 0: kept. */
  readonly object_retention: number
  /** How long a message's metadata is kept after it was sent; 0: kept. */
  readonly message_retention: number
  /** How long an applied event id (and a poll id, a pending poll close) is remembered. */
  readonly event_retention: number
  /** Rows deleted per statement by a sweep. */
  readonly sweep_batch: number
  /** The in-memory cache's budget in MiB (0: no cache). */
  readonly cache_mb: number
}

const decodeObject = Schema.decodeUnknownEither(Schema.typeSchema(ContextObjectSchema))

const parseJson = (text: string): Either.Either<unknown, string> =>
  Either.try({ try: (): unknown => JSON.parse(text), catch: () => "invalid JSON" })

const maxDecoded = 20_000

/**
 * A stored object back from its JSON body; a row that does not decode is a storage failure.
 * Pools read the same few hundred bodies over and over: decoded objects (immutable values) are
 * kept by their exact JSON text, so a hot object is validated once, not on every call. The
 * cache belongs to the store that makes the decoder.
 */
export const makeObjectDecoder = () => {
  const decoded = new Map<string, ContextObject>()
  return (body: unknown): Either.Either<ContextObject, string> => {
    const text = str(body)
    const known = decoded.get(text)
    if (known !== undefined) return Either.right(known)
    const result = Either.flatMap(parseJson(text), (json) => Either.mapLeft(decodeObject(json), (e) => e.message))
    if (Either.isRight(result)) {
      if (decoded.size >= maxDecoded) decoded.clear()
      decoded.set(text, result.right)
    }
    return result
  }
}

export const messageOf = (chatId: string, row: Row): MessageMeta => ({
  chat_id: chatId,
  message_id: str(row["mid"] ?? row["message_id"]),
  topic_id: topicOf(row["topic"]),
  reply_to_message_id: strOrNull(row["reply_to"]),
  sender_user_id: strOrNull(row["sender"]),
  from_bot: bool(row["from_bot"]),
  sent_at: num(row["sent_at"])
})

export const failStore = (what: string) => (error: SqlError | string): StoreError =>
  storeError(`${what} failed: ${typeof error === "string" ? error : describe(error)}`, error)

/** A composite key that cannot collide, whatever characters ids hold. */
export const key = (a: string, b: string) => `${a.length}:${a}${b}`

export const objectColumns = "chat_id, object_id, seq, kind, topic, source_message_id, created_by, active_until, since, body"

/** The columns of `deixis_objects` (in `objectColumns` order), as passed in bulk. */
export const objectRowColumns: ReadonlyArray<readonly [string, ColumnType]> = [
  ["chat_id", "TEXT"],
  ["object_id", "TEXT"],
  ["seq", "BIGINT"],
  ["kind", "TEXT"],
  ["topic", "TEXT"],
  ["source_message_id", "TEXT"],
  ["created_by", "TEXT"],
  ["active_until", "BIGINT"],
  ["since", "BIGINT"],
  ["body", "TEXT"]
]

export const objectRow = (o: ContextObject, seq: number): ReadonlyArray<Scalar> => [
  o.chat_id,
  o.object_id,
  seq,
  o.kind,
  topicKey(o.topic_id),
  o.source_message_id,
  o.created_by_user_id ?? null,
  o.active_until,
  o.active_until ?? o.created_at,
  JSON.stringify(o)
]

/** The columns of `deixis_messages`, as passed in bulk. */
export const messageRowColumns: ReadonlyArray<readonly [string, ColumnType]> = [
  ["chat_id", "TEXT"],
  ["id_len", "INTEGER"],
  ["message_id", "TEXT"],
  ["topic", "TEXT"],
  ["reply_len", "INTEGER"],
  ["reply_to", "TEXT"],
  ["sender", "TEXT"],
  ["from_bot", "INTEGER"],
  ["sent_at", "BIGINT"]
]

export const messageRow = (m: MessageMeta): ReadonlyArray<Scalar> => [
  m.chat_id,
  positionLength(m.message_id),
  m.message_id,
  topicKey(m.topic_id),
  m.reply_to_message_id === null ? null : positionLength(m.reply_to_message_id),
  m.reply_to_message_id,
  m.sender_user_id,
  m.from_bot ? 1 : 0,
  m.sent_at
]

/** The statement helpers of one store over one database. */
export interface ContextSql {
  readonly db: Db
  readonly d: Dialect
  readonly probe: Dialect["probe"]
  readonly bulk: Db["bulk"]
  readonly objectOf: (body: unknown) => Either.Either<ContextObject, string>
}

/** Bumps the revision of `chats` (see ContextCache), inside the caller's transaction. */
export const makeBumpRevisions = (db: Db) => (chats: ReadonlyArray<string>): Effect.Effect<void, SqlError> => {
  const bump = (part: ReadonlyArray<string>) => db.query(sql`UPDATE deixis_chats SET revision = revision + 1 WHERE chat_id IN ${list(part)}`)
  const parts = chunks(chats, 1)
  return parts.length === 0 ? Effect.void : parts.length === 1 ? Effect.asVoid(bump(parts[0]!)) : Effect.forEach(parts, bump, { discard: true })
}

export const makeContextSql = (db: Db): ContextSql => ({
  db,
  d: db.dialect,
  probe: db.dialect.probe,
  bulk: db.bulk,
  objectOf: makeObjectDecoder()
})
