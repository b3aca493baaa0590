/**
 * The chat list of the SQL context store (`ContextStore.chats`) and the chat titles it shows.
 *
 * A chat's title and its search key live on its `deixis_chats` row (migration 13), written by
 * `apply` when an event brings a new one. When a chat last spoke is its newest message's
 * `sent_at`, read through the primary key (one index probe per chat), and the counts are read
 * for the chats of the page only: nothing is kept up to date on the write path for the list.
 */
import type { ChatPage, ChatQuery, ChatSummary } from "@deixis/core/ChatInfo"
import { maxChatPage, searchKey } from "@deixis/core/ChatInfo"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import { bool, type Db, num, str, strOrNull } from "./db.js"
import { and, or, raw, sql } from "./statement.js"

/** What `last_at` reads for a chat without messages: before any timestamp (year 0 is -6.2e13 ms). */
const noMessages = -1_000_000_000_000_000

/** Stores the titles `apply` saw change, inside its transaction. */
export const writeTitles = (db: Db, titles: ReadonlyMap<string, string>): Effect.Effect<void, SqlError> =>
  titles.size === 0 ? Effect.void : Effect.forEach(
    titles,
    ([chatId, title]) => db.query(sql`UPDATE deixis_chats SET title = ${title}, title_key = ${searchKey(title)} WHERE chat_id = ${chatId}`),
    { discard: true }
  )

/** One page of the chat list (see `ContextStoreShape.chats`). */
export const listChats = (db: Db, query: ChatQuery): Effect.Effect<ChatPage, SqlError> =>
  Effect.gen(function*() {
    const limit = Math.max(1, Math.min(maxChatPage, Math.floor(query.limit)))
    // Chat ids order by code point, as in memory; PostgreSQL's default collation would not.
    const { C, contains } = db.dialect
    const search = query.search ?? ""
    const matching = search === "" ? [] : [or([contains("c.chat_id", search), contains("c.title_key", searchKey(search))])]
    const after = query.after
    const afterAt = after?.last_message_at ?? noMessages
    const page = after === undefined
      ? []
      : [sql`(p.last_at < ${afterAt} OR (p.last_at = ${afterAt} AND p.chat_id${C} > ${after.chat_id}))`]
    // The page is chosen first (one probe per chat for its newest message); the counts are read
    // for its chats alone.
    const rows = yield* db.query(sql`
      SELECT q.chat_id, q.title, q.is_forum, q.last_at,
        (SELECT count(*) FROM deixis_messages m WHERE m.chat_id = q.chat_id) AS messages,
        (SELECT count(*) FROM deixis_objects o WHERE o.chat_id = q.chat_id) AS objects
      FROM (
        SELECT p.chat_id, p.title, p.is_forum, p.last_at FROM (
          SELECT c.chat_id, c.title, c.is_forum, COALESCE((
            SELECT m.sent_at FROM deixis_messages m WHERE m.chat_id = c.chat_id ORDER BY m.id_len DESC, m.message_id DESC LIMIT 1
          ), ${raw(String(noMessages))}) AS last_at
          FROM deixis_chats c WHERE ${and(matching)}
        ) p
        WHERE ${
      and([
        sql`(p.last_at <> ${raw(String(noMessages))} OR EXISTS (SELECT 1 FROM deixis_objects o WHERE o.chat_id = p.chat_id))`,
        ...page
      ])
    }
        ORDER BY p.last_at DESC, p.chat_id${C}
        LIMIT CAST(${limit + 1} AS INTEGER)
      ) q
      ORDER BY q.last_at DESC, q.chat_id${C}`)
    const chats: Array<ChatSummary> = rows.slice(0, limit).map((r) => {
      const at = num(r["last_at"])
      return {
        chat_id: str(r["chat_id"]),
        title: strOrNull(r["title"]),
        is_forum: bool(r["is_forum"]),
        last_message_at: at === noMessages ? null : at,
        messages: num(r["messages"]),
        objects: num(r["objects"])
      }
    })
    const last = chats[chats.length - 1]
    return {
      chats,
      next: rows.length > limit && last !== undefined ? { last_message_at: last.last_message_at, chat_id: last.chat_id } : null
    }
  })
