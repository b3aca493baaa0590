/**
 * The ContextStore over SQL, put together from its parts by concern: loading (`contextLoad`),
 * writing (`contextWrite`: `apply` and `migrateChat`), pool queries (`contextPool`) and sweeping
 * (`contextSweep`), with the hot part of each active chat in memory (`contextCache`); the
 * single-row reads are here.
 */
import { type ContextObject, type MessageMeta } from "@deixis/core/ContextObject"
import type { ChatSnapshot, ContextStoreShape, StoreError } from "@deixis/core/ContextStore"
import type { ChatInfo } from "@deixis/core/ChatInfo"
import { compareMessageIds, positionLength } from "@deixis/core/Ids"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ChangeProbe } from "./changes.js"
import { bool, type Db, num, strOrNull } from "./db.js"
import { listChats } from "./chatDirectory.js"
import { makeContextCache } from "./contextCache.js"
import { makePool } from "./contextPool.js"
import { type ContextSettings, failStore, makeContextSql, messageOf } from "./contextRows.js"
import { type ContextSwept, makeSweep } from "./contextSweep.js"
import { makeWrite } from "./contextWrite.js"
import { storable, storableObjectId } from "./ids.js"
import { sql } from "./statement.js"
import { guardChatRead, guardRead } from "./unitState.js"

export type { ContextSettings } from "./contextRows.js"

/**
 * The store, and its sweep's count per table (`sweepTables`; the port's `sweep` counts objects
 * only).
 */
export const makeSqlContextStore = (
  db: Db,
  settings: ContextSettings,
  changes?: ChangeProbe
): ContextStoreShape & { readonly sweepTables: (now: number) => Effect.Effect<ContextSwept, StoreError> } => {
  const ctx = makeContextSql(db)
  const { d, objectOf } = ctx
  const C = d.C
  // The hot part of each active chat, kept by this store alone (see contextCache).
  const cache = makeContextCache(Math.floor(settings.cache_mb * 1024 * 1024))
  const { apply, migrateChat } = makeWrite(ctx, cache)
  const pool = makePool(ctx, cache, changes)
  const { stats, sweep } = makeSweep(ctx, settings)

  const message = (chatId: string, messageId: string) =>
    !storable(chatId, messageId) ? Effect.succeed(Option.none<MessageMeta>()) : db.query(
      sql`SELECT message_id, topic, reply_to, sender, from_bot, sent_at FROM deixis_messages WHERE chat_id = ${chatId} AND id_len = ${positionLength(messageId)} AND message_id = ${messageId}`).pipe(
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => messageOf(chatId, r))),
      Effect.mapError(failStore("message"))
    )

  const object = (chatId: string, objectId: string) =>
    !storable(chatId) || !storableObjectId(objectId) ? Effect.succeed(Option.none<ContextObject>()) : db.query(sql`SELECT body FROM deixis_objects WHERE chat_id = ${chatId} AND object_id = ${objectId}`).pipe(
      Effect.mapError(failStore("object")),
      Effect.flatMap((rows) => {
        const row = rows[0]
        if (row === undefined) return Effect.succeed(Option.none<ContextObject>())
        return Either.match(objectOf(row["body"]), {
          onLeft: (e) => Effect.fail(failStore("object")(e)),
          onRight: (o) => Effect.succeed(Option.some(o))
        })
      })
    )

  const replyChain = (chatId: string, messageId: string, depth: number) =>
    depth <= 0 || !storable(chatId, messageId) ? Effect.succeed([]) : db.query(
      sql`WITH RECURSIVE chain(depth, id_len, message_id) AS (
         SELECT 1, CAST(${positionLength(messageId)} AS INTEGER), CAST(${messageId} AS TEXT)${C}
         UNION ALL
         SELECT c.depth + 1, m.reply_len, m.reply_to FROM chain c
           JOIN deixis_messages m ON m.chat_id = ${chatId} AND m.id_len = c.id_len AND m.message_id = c.message_id
         WHERE c.depth < ${depth} AND m.reply_to IS NOT NULL
       )
       SELECT c.depth, m.message_id, m.topic, m.reply_to, m.sender, m.from_bot, m.sent_at
       FROM chain c JOIN deixis_messages m ON m.chat_id = ${chatId} AND m.id_len = c.id_len AND m.message_id = c.message_id
       ORDER BY c.depth`).pipe(
      Effect.map((rows) => {
        const out: Array<MessageMeta> = []
        for (const r of rows) {
          const m = messageOf(chatId, r)
          if (out.some((x) => x.message_id === m.message_id)) break
          out.push(m)
        }
        return out
      }),
      Effect.mapError(failStore("replyChain"))
    )

  const snapshot = (chatId: string): Effect.Effect<ChatSnapshot, StoreError> =>
    Effect.gen(function*() {
      if (!storable(chatId)) return { messages: [], objects: [] }
      const messageRows = yield* db.query(
        sql`SELECT message_id, topic, reply_to, sender, from_bot, sent_at FROM deixis_messages WHERE chat_id = ${chatId}`)
      const objectRows = yield* db.query(sql`SELECT body FROM deixis_objects WHERE chat_id = ${chatId}`)
      const objects: Array<ContextObject> = []
      for (const r of objectRows) {
        const o = objectOf(r["body"])
        if (Either.isLeft(o)) return yield* Effect.fail(o.left)
        objects.push(o.right)
      }
      return {
        messages: messageRows.map((r) => messageOf(chatId, r)).sort((a, b) => compareMessageIds(a.message_id, b.message_id)),
        objects: objects.sort((a, b) => (a.object_id < b.object_id ? -1 : a.object_id > b.object_id ? 1 : 0))
      }
    }).pipe(Effect.mapError(failStore("snapshot")))

  const chat = (chatId: string): Effect.Effect<ChatInfo, StoreError> =>
    db.query(
      sql`SELECT (SELECT is_forum FROM deixis_chats WHERE chat_id = ${chatId}) AS is_forum,
              (SELECT title FROM deixis_chats WHERE chat_id = ${chatId}) AS title,
              (SELECT to_chat_id FROM deixis_chat_migrations WHERE chat_id = ${chatId}) AS to_chat,
              (SELECT migrated_at FROM deixis_chat_migrations WHERE chat_id = ${chatId}) AS migrated_at`).pipe(
      Effect.map((rows): ChatInfo => {
        const r = rows[0] ?? {}
        return {
          chat_id: chatId,
          is_forum: bool(r["is_forum"]),
          title: strOrNull(r["title"]),
          migrated_to: strOrNull(r["to_chat"]),
          migrated_at: r["migrated_at"] === null || r["migrated_at"] === undefined ? null : num(r["migrated_at"])
        }
      }),
      Effect.mapError(failStore("chat"))
    )

  // In an optimistic unit of work, a read runs while the unit holds no context write of its own
  // (see unitState.ts): neither the cache nor the database has that write yet.
  const read = guardRead(db.sql, "context")
  return {
    apply,
    pool: (query) => read(pool(query)),
    message: (chatId, messageId) => read(message(chatId, messageId)),
    object: (chatId, objectId) => read(object(chatId, objectId)),
    replyChain: (chatId, messageId, depth) => read(replyChain(chatId, messageId, depth)),
    snapshot: (chatId) => read(snapshot(chatId)),
    chat: (chatId) => guardChatRead(db.sql, chatId)(chat(chatId)),
    chats: (query) => read(listChats(db, query).pipe(Effect.mapError(failStore("chats")))),
    migrateChat,
    sweep: (now) => Effect.map(sweep(now), (swept) => swept.objects),
    sweepTables: sweep,
    stats: read(stats)
  }
}
