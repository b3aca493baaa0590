/**
 * Pool queries: the bounded candidate pool of the memory adapter with one indexed query (two
 * when the request's topic is unknown and the rest of the chat is searched): on SQLite a UNION
 * of bounded parts, on PostgreSQL the `deixis_pool` function (same parts, plans kept per connection).
 */
import { compareActivity, type ContextObject, isActive, type MessageMeta, messageObject, standsIn } from "@deixis/core/ContextObject"
import type { CandidatePool, PoolEntry, PoolQuery, PoolTier, StoreError } from "@deixis/core/ContextStore"
import { effectiveTopic, generalTopicId } from "@deixis/core/ChatInfo"
import { positionLength } from "@deixis/core/Ids"
import type { ObjectKind } from "@deixis/core/ObjectKind"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import type * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import type { ChangeProbe } from "./changes.js"
import { bool, num, type Row, str, topicKey } from "./db.js"
import { empty, type Fragment, join, limit, list, raw, sql } from "./statement.js"
import { type ContextSql, failStore, messageOf } from "./contextRows.js"
import { cacheEvictions, cacheHits, cacheMisses, type ChatEntry, type ContextCache } from "./contextCache.js"
import { storable } from "./ids.js"
import { StoreUnavailable } from "../Availability.js"

const unknownHead: Head = { revision: -1, isForum: false }

/** A scope's rows read before its need came (see `headAndScope`), with the kinds whose parts they hold (tagged `k` and their index). */
interface Preread {
  readonly rows: ReadonlyArray<Row>
  readonly kinds: ReadonlyArray<ObjectKind>
}

/**
 * What a scope's rows depend on besides the chat's revision and `now`: its parts but the
 * per-kind ones (kept apart, `kindKey`) and the reply chain (read apart, `readChain`).
 */
const scopeKey = (q: PoolQuery, fallback: boolean): string =>
  JSON.stringify([
    fallback,
    q.topic_id,
    q.sender_user_id,
    q.kinds ?? null,
    q.include_owned,
    q.active_only,
    q.limits.recent_objects,
    q.limits.recent_messages,
    q.limits.owned
  ])

/** What the newest objects of one kind in a scope depend on besides the chat's revision. */
const kindKey = (q: PoolQuery, fallback: boolean, kind: string): string =>
  JSON.stringify(["k", fallback, q.topic_id, kind, q.limits.recent_per_kind])

/** The kinds whose newest objects a scope has parts for, in the parts' order. */
const preferredOf = (q: PoolQuery): ReadonlyArray<ObjectKind> => {
  if (q.active_only) return []
  const kinds = q.kinds
  return kinds === undefined ? q.prefer_kinds : [...new Set([...q.prefer_kinds, ...kinds])].filter((k) => kinds.includes(k))
}

/** Messages of a topic's recent window read with a chain (once per topic and revision). */
const windowSize = 64
/** Object rows read with a window at most (beyond, the window's messages' objects are not kept). */
const windowObjects = 1024
/** Object rows of a chain at most (the statement's limit; a walk from memory applies it too). */
const chainObjectsLimit = 256

/** A reply chain: its messages by depth, each with whether it is the source of objects, and those objects' rows. */
interface ChainLink {
  readonly depth: number
  readonly meta: MessageMeta
  readonly hasObjects: boolean
}
interface Chain {
  readonly links: ReadonlyArray<ChainLink>
  /** The object rows of the links, by depth then `seq`, at most `chainObjectsLimit`. */
  readonly objects: ReadonlyArray<Row>
}

/**
 * The query as read for every request of its scope: the current message is left in the plain
 * messages (one more of them read) and taken out by `servedAt`, so one read serves every message
 * of the scope.
 */
const shared = (q: PoolQuery): PoolQuery => ({
  ...q,
  current_message_id: "",
  limits: { ...q.limits, recent_messages: q.limits.recent_messages > 0 ? q.limits.recent_messages + 1 : q.limits.recent_messages }
})

/**
 * A scope's rows (read by `shared(q)` at some time not after `q.now`) as the database answers `q`
 * at `q.now`: without the current message and within the plain-message limit, and without the
 * active objects whose activity ended since. (Those are the lowest of the active part, ordered by
 * `active_until` descending, so what remains is exactly the newer read's part.)
 */
const servedAt = (
  rows: ReadonlyArray<Row>,
  q: PoolQuery,
  objectOf: ContextSql["objectOf"]
): ReadonlyArray<Row> => {
  let messages = 0
  // The rows themselves when every one is served (the usual case for objects), so that what is
  // kept per rows read (`byActivity`) is found again.
  let served: Array<Row> | undefined
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!
    const part = r["part"]
    let keep = true
    if (part === "m") {
      keep = r["mid"] !== q.current_message_id && messages < q.limits.recent_messages
      if (keep) messages++
    } else if (part === "a") {
      const o = objectOf(r["body"])
      keep = Either.isLeft(o) || (o.right.active_until !== null && o.right.active_until > q.now)
    }
    if (served !== undefined) {
      if (keep) served.push(r)
    } else if (!keep) {
      served = rows.slice(0, i)
    }
  }
  return served ?? rows
}

/** Rows by their part, in the order the parts first appear. */
const byPart = (rows: ReadonlyArray<Row>) => {
  const parts = new Map<string, Array<Row>>()
  for (const r of rows) {
    const tag = str(r["part"])
    const list = parts.get(tag)
    if (list === undefined) parts.set(tag, [r])
    else list.push(r)
  }
  return parts
}

const noChain: Chain = { links: [], objects: [] }

/** A scope's rows by part. */
type Parts = ReadonlyMap<string, ReadonlyArray<Row>>

/** A chat's revision and whether it is a forum. */
interface Head {
  readonly revision: number
  readonly isForum: boolean
}

/** What assembling a pool asks for (see `assemblePool`): a scope's parts, the reply chain, or some messages' metadata. */
type Need =
  | { readonly _tag: "scope"; readonly q: PoolQuery; readonly fallback: boolean }
  | { readonly _tag: "chain"; readonly q: PoolQuery }
  | { readonly _tag: "messages"; readonly ids: ReadonlyArray<string> }
type Answer = Parts | Chain | ReadonlyMap<string, MessageMeta>

/** Chats whose revision is known without a read, at most (then forgotten, all at once). */
const maxHeads = 10_000

export const makePool = ({ bulk, d, db, objectOf, probe }: ContextSql, cache: ContextCache, changes: ChangeProbe | undefined) => {
  /** Cached rows by part, grouped once per rows read (the rows are kept as read, never changed). */
  const grouped = new WeakMap<ReadonlyArray<Row>, Map<string, Array<Row>>>()
  const partsOf = (rows: ReadonlyArray<Row>) => {
    let parts = grouped.get(rows)
    if (parts === undefined) {
      parts = byPart(rows)
      grouped.set(rows, parts)
    }
    return parts
  }
  /** Active objects' rows decoded and in the fallback's order (`compareActivity`), once per rows read; a body that does not decode is the failure. */
  const activity = new WeakMap<ReadonlyArray<Row>, ReadonlyArray<ContextObject> | string>()
  const byActivity = (rows: ReadonlyArray<Row>): ReadonlyArray<ContextObject> | string => {
    let known = activity.get(rows)
    if (known === undefined) {
      const objects: Array<ContextObject> = []
      for (const r of rows) {
        const o = objectOf(r["body"])
        if (Either.isLeft(o)) {
          known = o.left
          break
        }
        objects.push(o.right)
      }
      known ??= objects.sort(compareActivity)
      activity.set(rows, known)
    }
    return known
  }
  // Typed NULLs: PostgreSQL resolves UNION column types arm by arm and cannot match text with numbers.
  const nulls =
    "CAST(NULL AS TEXT) AS mid, CAST(NULL AS TEXT) AS topic, CAST(NULL AS TEXT) AS reply_to, CAST(NULL AS TEXT) AS sender, " +
    "CAST(NULL AS INTEGER) AS from_bot, CAST(NULL AS BIGINT) AS sent_at, CAST(NULL AS INTEGER) AS depth, CAST(NULL AS INTEGER) AS has_objects"
  const objectPart = (tag: string, from: Fragment) =>
    sql`${raw(`SELECT '${tag}' AS part, body, ${nulls} FROM (`)}${from}${raw(`) AS p_${tag}`)}`
  const messagePart = (tag: string, from: Fragment) =>
    sql`${
      raw(`SELECT '${tag}' AS part, CAST(NULL AS TEXT) AS body, message_id AS mid, topic, reply_to, sender, CAST(from_bot AS INTEGER) AS from_bot, sent_at,
       CAST(NULL AS INTEGER) AS depth, CAST(NULL AS INTEGER) AS has_objects FROM (`)
    }${from}${raw(`) AS p_${tag}`)}`
  const hasObjects = (alias: string) =>
    raw(`EXISTS (SELECT 1 FROM deixis_objects o WHERE o.chat_id = ${alias}.chat_id AND o.source_message_id = ${alias}.message_id)`)
  const unionAll = (parts: ReadonlyArray<Fragment>) => join(parts, "\nUNION ALL\n")
  /**
   * Where the messages' topic index holds only rows in a topic (`Dialect.topicIndexesPartial`):
   * its predicate, spelled out in a read of topic `topic` so the planner may use it (a bound
   * topic proves nothing); nothing for no topic, read off the primary key instead.
   */
  const inTopicIndex = (topic: string) => d.topicIndexesPartial && topic !== "" ? raw(" AND topic <> ''") : empty

  /**
   * SQLite: the bodies of the objects a window picks, read for those alone. `picks` selects
   * `rid` (the row id) and `seq`, newest first; the window itself reads an index where it can (an
   * index holds the row id), so a window of n×8 reads n bodies instead of n×8. Ordered by the
   * picks' own `seq`, which SQLite takes in the picks' order (by `o.seq` it sorted them again,
   * in a temporary B-tree).
   */
  const bodiesOf = (picks: Fragment) =>
    sql`SELECT o.body, k.seq FROM (${picks}) AS k CROSS JOIN deixis_objects o ON o.rowid = k.rid ORDER BY k.seq DESC`

  /**
   * The newest objects of each of `prefer` in a scope (parts `k0`, `k1`, … in that order): a
   * window of the newest n×8 of the kind, those of the scope taken. Plain SQL on both engines.
   */
  const kindParts = (q: PoolQuery, home: boolean, prefer: ReadonlyArray<ObjectKind>, parts: Array<Fragment>) => {
    const topic = topicKey(q.topic_id)
    const n = Math.max(0, q.limits.recent_per_kind)
    prefer.forEach((kind, i) => {
      const window = (inner: string, outer: string) =>
        sql`SELECT ${raw(outer)} FROM (SELECT ${raw(inner)}, topic FROM deixis_objects
           WHERE chat_id = CAST(${q.chat_id} AS TEXT)${home ? sql` AND topic = CAST(${topic} AS TEXT)` : empty} AND kind = CAST(${kind} AS TEXT)
           ORDER BY seq DESC LIMIT CAST(${n * 8} AS INTEGER)) AS w
         WHERE ${home ? sql`topic = CAST(${topic} AS TEXT)` : sql`topic <> CAST(${topic} AS TEXT)`} ORDER BY seq DESC LIMIT CAST(${n} AS INTEGER)`
      parts.push(objectPart(`k${i}`, d.rowid ? bodiesOf(window("rowid AS rid, seq", "rid, seq")) : window("body, seq", "body, seq")))
    })
  }

  /** The parts of one scope: the request's topic (`home`), or the rest of the chat (`fallback`). */
  const scopeParts = (
    q: PoolQuery,
    home: boolean,
    prefer: ReadonlyArray<ObjectKind>,
    parts: Array<Fragment>
  ) => {
    const topic = topicKey(q.topic_id)
    const inScope = home ? sql`topic = ${topic}` : sql`topic <> ${topic}`
    const kinds = q.kinds
    const kindFilter = kinds === undefined ? empty : kinds.length === 0 ? raw(" AND 1 = 0") : sql` AND kind IN ${list(kinds)}`
    const scoped = home ? sql`chat_id = ${q.chat_id} AND topic = ${topic}` : sql`chat_id = ${q.chat_id}`
    // Active objects of the scope (bounded: an active set is small by construction).
    parts.push(objectPart(
      "a",
      sql`SELECT body FROM deixis_objects WHERE ${scoped} AND active_until > ${q.now} AND ${inScope}${kindFilter} ORDER BY active_until DESC LIMIT 64`
    ))
    if (q.active_only) return
    const window = (n: number) => Math.max(0, n) * 8
    // The most recent objects: a window of the newest n×8, filtered, n taken (as the memory adapter scans).
    // (Without a kind filter, a home window reads only the index on topic and seq.)
    const kindColumn = raw(kinds === undefined ? "" : ", kind")
    parts.push(objectPart(
      "r",
      bodiesOf(sql`SELECT rid, seq FROM (SELECT rowid AS rid, seq, topic${kindColumn} FROM deixis_objects WHERE ${scoped} ORDER BY seq DESC ${
        limit(window(q.limits.recent_objects))
      }) AS w
       WHERE ${inScope}${kindFilter} ORDER BY seq DESC ${limit(q.limits.recent_objects)}`)
    ))
    kindParts(q, home, prefer, parts)
    if (q.include_owned && q.sender_user_id !== null) {
      parts.push(objectPart(
        "o",
        bodiesOf(sql`SELECT rid, seq FROM (SELECT rowid AS rid, seq, topic${kindColumn} FROM deixis_objects WHERE chat_id = ${q.chat_id} AND created_by = ${q.sender_user_id} ORDER BY seq DESC ${
          limit(window(q.limits.owned))
        }) AS w
         WHERE ${inScope}${kindFilter} ORDER BY seq DESC ${limit(q.limits.owned)}`)
      ))
    }
    const wantsMessages = kinds === undefined || kinds.includes("message") || kinds.includes("bot_message")
    if (wantsMessages && q.limits.recent_messages > 0) {
      const bot = kinds === undefined || (kinds.includes("message") && kinds.includes("bot_message"))
        ? ""
        : kinds.includes("message")
        ? " AND w.from_bot = 0"
        : " AND w.from_bot = 1"
      // Plain messages by position, in a window of the newest 64: not the current one, and not one
      // that carries objects (those objects stand for it). A topic the topic index leaves out (no
      // topic, `Dialect.topicIndexesPartial`) is read off the primary key, the table itself.
      const byTopic = home && !(d.topicIndexesPartial && topic === "")
      const messagesScoped = home ? sql`${scoped}${inTopicIndex(topic)}` : scoped
      if (byTopic && bot === "") {
        // The window read off the topic index alone; the columns read for the messages taken.
        parts.push(messagePart(
          "m",
          sql`SELECT m.* FROM (SELECT w.id_len, w.message_id FROM (SELECT chat_id, id_len, message_id, topic FROM deixis_messages INDEXED BY deixis_messages_topic
             WHERE ${messagesScoped} ORDER BY id_len DESC, message_id DESC LIMIT 64) AS w
           WHERE w.${inScope} AND w.message_id <> ${q.current_message_id} AND NOT ${hasObjects("w")}
           ORDER BY w.id_len DESC, w.message_id DESC ${limit(q.limits.recent_messages)}) AS k
           CROSS JOIN deixis_messages m ON m.chat_id = ${q.chat_id} AND m.id_len = k.id_len AND m.message_id = k.message_id
           ORDER BY m.id_len DESC, m.message_id DESC`
        ))
      } else {
        parts.push(messagePart(
          "m",
          sql`SELECT * FROM (SELECT chat_id, id_len, message_id, topic, reply_to, sender, from_bot, sent_at FROM deixis_messages${
            byTopic ? raw(" INDEXED BY deixis_messages_topic") : empty
          }
             WHERE ${messagesScoped} ORDER BY id_len DESC, message_id DESC LIMIT 64) AS w
           WHERE w.${inScope} AND w.message_id <> ${q.current_message_id}${raw(bot)} AND NOT ${hasObjects("w")}
           ORDER BY w.id_len DESC, w.message_id DESC ${limit(q.limits.recent_messages)}`
        ))
      }
    }
  }

  /**
   * A topic's newest `windowSize` messages (`w`) and those messages' objects (`wo`): two parts of
   * a statement.
   */
  const windowParts = (chatId: string, topic: string): Fragment => {
    const J = d.orderedJoin
    const recent = (columns: string) =>
      sql`SELECT ${raw(columns)} FROM deixis_messages${d.topicIndexesPartial && topic === "" ? empty : d.indexedBy("deixis_messages_topic")}
      WHERE chat_id = CAST(${chatId} AS TEXT) AND topic = CAST(${topic} AS TEXT)${inTopicIndex(topic)} ORDER BY id_len DESC, message_id${d.C} DESC LIMIT ${
        raw(String(windowSize))
      }`
    // Whether a window message is a source of objects is read off `wo` (complete unless it hit its
    // limit), each object row with its source message (`mid`), so keeping them decodes nothing.
    return sql`SELECT 'w' AS part, CAST(NULL AS TEXT) AS body, w.message_id AS mid, w.topic, w.reply_to, w.sender, CAST(w.from_bot AS INTEGER) AS from_bot,
         w.sent_at, CAST(NULL AS INTEGER) AS depth, CAST(NULL AS INTEGER) AS has_objects
       FROM (${recent("message_id, topic, reply_to, sender, from_bot, sent_at")}) AS w
      UNION ALL
      SELECT 'wo' AS part, body, source AS mid, CAST(NULL AS TEXT) AS topic, CAST(NULL AS TEXT) AS reply_to, CAST(NULL AS TEXT) AS sender,
         CAST(NULL AS INTEGER) AS from_bot, CAST(NULL AS BIGINT) AS sent_at, CAST(NULL AS INTEGER) AS depth, CAST(NULL AS INTEGER) AS has_objects
       FROM (SELECT o.body, o.seq, o.source_message_id AS source FROM (${recent("chat_id, message_id")}) AS w
         ${J} deixis_objects o ON o.chat_id = w.chat_id AND o.source_message_id = w.message_id
       ORDER BY o.seq LIMIT ${raw(String(windowObjects))}) AS p_wo`
  }

  /** A topic's recent window alone (see `windowParts`). */
  const readWindow = (chatId: string, topic: string): Effect.Effect<ReadonlyArray<Row>, SqlError> =>
    db.query(windowParts(chatId, topic))

  /**
   * The reply target and its chain (`c`) with their objects (`co`), one statement on both engines,
   * read apart from the scope so a scope's rows serve every reply target. On SQLite CROSS JOIN
   * fixes the join order: walk from the chain into the tables, never the reverse. With `window`
   * (a topic as stored), the same statement also reads that topic's recent window (`windowParts`).
   */
  const readChain = (q: PoolQuery, window?: string): Effect.Effect<ReadonlyArray<Row>, SqlError> => {
    const reply = q.reply_to_message_id
    if (reply === null || q.limits.chain_depth <= 0) return Effect.succeed([])
    const J = d.orderedJoin
    return db.query(
      sql`WITH RECURSIVE chain(depth, id_len, message_id) AS (
        SELECT 1, CAST(${positionLength(reply)} AS INTEGER), CAST(${reply} AS TEXT)${d.C}
        UNION ALL
        SELECT c.depth + 1, m.reply_len, m.reply_to FROM chain c
          ${J} deixis_messages m ON m.chat_id = ${q.chat_id} AND m.id_len = c.id_len AND m.message_id = c.message_id
        WHERE c.depth < ${q.limits.chain_depth} AND m.reply_to IS NOT NULL
      )
      SELECT 'c' AS part, CAST(NULL AS TEXT) AS body, m.message_id AS mid, m.topic, m.reply_to, m.sender, CAST(m.from_bot AS INTEGER) AS from_bot,
         m.sent_at, c.depth AS depth,
         CASE WHEN ${hasObjects("m")} THEN 1 ELSE 0 END AS has_objects
       FROM chain c ${J} deixis_messages m ON m.chat_id = ${q.chat_id} AND m.id_len = c.id_len AND m.message_id = c.message_id
      UNION ALL
      ${
        objectPart(
          "co",
          sql`SELECT o.body, o.seq FROM chain c
         ${J} deixis_messages m ON m.chat_id = ${q.chat_id} AND m.id_len = c.id_len AND m.message_id = c.message_id
         ${J} deixis_objects o ON o.chat_id = ${q.chat_id} AND o.source_message_id = m.message_id
       ORDER BY c.depth, o.seq LIMIT ${raw(String(chainObjectsLimit))}`
        )
      }${window === undefined ? empty : sql`\n      UNION ALL\n      ${windowParts(q.chat_id, window)}`}`
    )
  }

  const existsPart = (q: PoolQuery, parts: Array<Fragment>) => {
    const topic = topicKey(q.topic_id)
    parts.push(
      sql`SELECT 'e' AS part, CAST(NULL AS TEXT) AS body, ${
        raw(nulls)
      } WHERE EXISTS (SELECT 1 FROM deixis_messages WHERE chat_id = ${q.chat_id} AND topic = ${topic}${inTopicIndex(topic)})
         OR EXISTS (SELECT 1 FROM deixis_objects WHERE chat_id = ${q.chat_id} AND topic = ${topic})`
    )
  }

  /**
   * PostgreSQL: the `deixis_pool` call for a scope, its topic argument `topic`. No reply target:
   * the chain is read apart (readChain), so its rows serve every reply.
   */
  const poolCall = (q: PoolQuery, fallback: boolean, prefer: ReadonlyArray<ObjectKind>, topic: Fragment) =>
    sql`deixis_pool(CAST(${q.chat_id} AS TEXT), ${topic}, CAST(${
          fallback ? "true" : "false"
        } AS BOOLEAN), CAST(${q.current_message_id} AS TEXT), CAST(${null} AS TEXT),
           CAST(${null} AS INTEGER), CAST(${q.limits.chain_depth} AS INTEGER), CAST(${q.sender_user_id} AS TEXT), CAST(${
          q.kinds ?? null
        } AS TEXT[]), CAST(${prefer} AS TEXT[]), CAST(${q.include_owned ? "true" : "false"} AS BOOLEAN),
           CAST(${q.active_only ? "true" : "false"} AS BOOLEAN), CAST(${q.now} AS BIGINT), CAST(${
          Math.max(0, q.limits.recent_objects)
        } AS INTEGER), CAST(${Math.max(0, q.limits.recent_per_kind)} AS INTEGER), CAST(${
          Math.max(0, q.limits.recent_messages)
        } AS INTEGER), CAST(${Math.max(0, q.limits.owned)} AS INTEGER))`

  /**
   * PostgreSQL: the chat's head (a part `h` row: `sent_at` its revision, `from_bot` 1 in a forum;
   * no such row for a chat never seen) and the rows of the request's own scope read by `shared(q)`
   * with the parts of `kinds`, in one statement — one snapshot, one round trip. The scope's
   * topic is settled in the statement from the same row (`settled`): a request without a topic
   * in a forum is in the General topic. The same statement reads the rest of the chat's active
   * objects too (its parts tagged `f` before theirs): what `assemblePool` reads next when the
   * scope has no active object but something is known of it — a command's answer in a quiet
   * topic — read whether it is needed or not, in the round trip already paid for.
   */
  const headAndScope = (q: PoolQuery, kinds: ReadonlyArray<ObjectKind>) => {
    const forum = sql`COALESCE((SELECT is_forum FROM deixis_chats WHERE chat_id = ${q.chat_id}), 0) <> 0`
    const topic = q.topic_id === null
      ? sql`CASE WHEN ${forum} THEN CAST(${topicKey(generalTopicId)} AS TEXT) ELSE CAST(${topicKey(null)} AS TEXT) END`
      : sql`CAST(${topicKey(q.topic_id)} AS TEXT)`
    return db.query(
      sql`SELECT 'h' AS part, CAST(NULL AS TEXT) AS body, CAST(NULL AS TEXT) AS mid, CAST(NULL AS TEXT) AS topic,
         CAST(NULL AS TEXT) AS reply_to, CAST(NULL AS TEXT) AS sender, CAST(is_forum AS INTEGER) AS from_bot,
         revision AS sent_at, CAST(NULL AS INTEGER) AS depth, CAST(NULL AS INTEGER) AS has_objects
       FROM deixis_chats WHERE chat_id = ${q.chat_id}
      UNION ALL
      SELECT * FROM ${poolCall(shared(q), false, kinds, topic)}
      UNION ALL
      SELECT 'f' || part, body, mid, topic, reply_to, sender, from_bot, sent_at, depth, has_objects
        FROM ${poolCall(shared({ ...q, active_only: true }), true, kinds, topic)}`
    )
  }

  /** The rows of the pool's parts for the request's scope, or for the rest of the chat, with kind parts for `prefer`. */
  const scopeRows = (q: PoolQuery, fallback: boolean, prefer: ReadonlyArray<ObjectKind>, window?: string) => {
    if (d.poolFunction) return db.query(sql`SELECT * FROM ${poolCall(q, fallback, prefer, sql`CAST(${topicKey(q.topic_id)} AS TEXT)`)}`)
    const parts: Array<Fragment> = []
    if (!fallback) existsPart(q, parts)
    scopeParts(q, !fallback, prefer, parts)
    // SQLite: the topic's recent window in the same statement (see `scopeOf`).
    if (window !== undefined) parts.push(windowParts(q.chat_id, window))
    return db.query(unionAll(parts))
  }

  /** Only the kind parts of a scope, for `prefer`. */
  const kindRows = (q: PoolQuery, fallback: boolean, prefer: ReadonlyArray<ObjectKind>) => {
    const parts: Array<Fragment> = []
    kindParts(q, !fallback, prefer, parts)
    return db.query(unionAll(parts))
  }

  /**
   * The pool of `q` (its topic settled) as its needs are answered: each need — a scope's parts,
   * the reply chain, some messages' metadata — is yielded and its answer given back, so the same
   * assembly runs from the cache alone, with no effect at all (`fromMemory`), or with reads
   * (`drive`). A body that does not decode is returned as the failure.
   */
  function* assemblePool(q: PoolQuery): Generator<Need, Either.Either<CandidatePool, string>, Answer> {
    const out = new Map<string, PoolEntry>()
    const kindOk = (kind: ObjectKind) => q.kinds === undefined || q.kinds.includes(kind)
    const expired = (o: ContextObject) => q.keep_expired !== true && o.active_until !== null && o.active_until <= q.now
    // An expired object stands aside for its message (resolved below), whatever the kind filter says of it.
    const accept = (o: ContextObject) => (q.active_only ? kindOk(o.kind) && isActive(o, q.now) : kindOk(o.kind) || expired(o))
    const add = (o: ContextObject, tier: PoolTier) => {
      if (!out.has(o.object_id)) out.set(o.object_id, { object: o, tier })
    }
    /** Adds the accepted objects of `rows`; a row that does not decode is returned as the failure. */
    const collectObjects = (rows: ReadonlyArray<Row>, tier: PoolTier): string | undefined => {
      for (const r of rows) {
        const o = objectOf(r["body"])
        if (Either.isLeft(o)) return o.left
        if (accept(o.right)) add(o.right, tier)
      }
      return undefined
    }
    const collectMessages = (rows: ReadonlyArray<Row>, tier: PoolTier) => {
      for (const r of rows) {
        const o = messageObject(messageOf(q.chat_id, r))
        if (kindOk(o.kind)) add(o, tier)
      }
    }
    const collectScope = (parts: Parts, tier: PoolTier): string | undefined => {
      for (const [tag, rows] of parts) {
        if (tag === "a" && tier === "fallback") {
          // Elsewhere in the chat, only the longest-lived of what is active (as the memory store takes them).
          const ordered = byActivity(rows)
          if (typeof ordered === "string") return ordered
          let taken = 0
          for (const o of ordered) {
            if (taken >= q.limits.fallback_active) break
            if (!accept(o)) continue
            add(o, tier)
            taken++
          }
        } else if (tag === "a" || tag === "r" || tag === "o" || tag.startsWith("k")) {
          const failure = collectObjects(rows, tier)
          if (failure !== undefined) return failure
        }
      }
      collectMessages(parts.get("m") ?? [], tier)
      return undefined
    }

    const rows = (yield { _tag: "scope", q, fallback: false }) as Parts

    // 1. The reply target and its chain, whatever topic they are in.
    const walked = (yield { _tag: "chain", q }) as Chain
    const chainObjects = new Map<string, Array<ContextObject>>()
    for (const r of walked.objects) {
      const o = objectOf(r["body"])
      if (Either.isLeft(o)) return Either.left(o.left)
      const list = chainObjects.get(o.right.source_message_id)
      if (list === undefined) chainObjects.set(o.right.source_message_id, [o.right])
      else list.push(o.right)
    }
    const chain: Array<string> = []
    for (const link of walked.links) {
      const m = link.meta
      if (chain.includes(m.message_id)) break
      const tier: PoolTier = chain.length === 0 ? "reply_target" : "reply_chain"
      chain.push(m.message_id)
      for (const o of chainObjects.get(m.message_id) ?? []) if (accept(o)) add(o, tier)
      if (!q.active_only && m.message_id !== q.current_message_id && !link.hasObjects) {
        const o = messageObject(m)
        if (kindOk(o.kind)) add(o, tier)
      }
    }

    // 2. The request's own scope.
    const home = collectScope(rows, "home")
    if (home !== undefined) return Either.left(home)

    // 3. The rest of the chat when the request's own scope has no active object: everything when
    // nothing at all is known of it, otherwise only what is active there.
    const homeActive = (rows.get("a") ?? []).some((r) => {
      const o = objectOf(r["body"])
      return Either.isRight(o) && kindOk(o.right.kind) && isActive(o.right, q.now)
    })
    const fallback = !homeActive
    if (fallback) {
      const everything = !rows.has("e")
      const f: PoolQuery = everything ? q : { ...q, active_only: true }
      const failure = collectScope((yield { _tag: "scope", q: f, fallback: true }) as Parts, "fallback")
      if (failure !== undefined) return Either.left(failure)
    }

    // Objects whose activity expired give way to the messages they came from.
    const entries = [...out.values()]
    const stale = entries.filter((e) => expired(e.object) && e.object.source_message_id !== q.current_message_id)
    const sources = stale.length === 0
      ? new Map<string, MessageMeta>()
      : (yield { _tag: "messages", ids: [...new Set(stale.map((e) => e.object.source_message_id))] }) as ReadonlyMap<string, MessageMeta>
    const final: Array<PoolEntry> = []
    const taken = new Set<string>()
    for (const e of entries) {
      let entry = e
      if (expired(e.object)) {
        const m = sources.get(e.object.source_message_id)
        if (m === undefined || m.message_id === q.current_message_id || !standsIn(e.object, m, e.tier)) continue
        const stand = messageObject(m)
        if (!kindOk(stand.kind)) continue
        entry = { object: stand, tier: e.tier }
      }
      if (taken.has(entry.object.object_id)) continue
      taken.add(entry.object.object_id)
      final.push(entry)
    }
    return Either.right({ entries: final, chain, fallback, topic_id: q.topic_id })
  }

  /**
   * The pool from the chat's cache entry alone, when it holds every need (their hits added to
   * `tally`); undefined at the first need it does not hold, or when a body does not decode (the
   * reading path reports it).
   */
  const fromMemory = (entry: ChatEntry, q: PoolQuery, tally: { hits: number }): CandidatePool | undefined => {
    const assembly = assemblePool(q)
    let step = assembly.next()
    while (step.done !== true) {
      const need = step.value
      const answer: Answer | undefined = need._tag === "scope"
        ? cachedScope(entry, need.q, need.fallback, tally)
        : need._tag === "chain"
        ? cachedChain(entry, need.q, tally)
        : cachedMessages(entry, need.ids, tally)
      if (answer === undefined) return undefined
      step = assembly.next(answer)
    }
    return Either.isRight(step.value) ? step.value.right : undefined
  }

  /**
   * The pool with each need answered by the cache or read (and then kept); `home`: the rows of
   * the request's own scope already read with the revision (`headAndScope`), the answer to its
   * need; `rest`: the rest of the chat's active objects, read with them, the answer to the
   * fallback's need when it asks for active objects only.
   */
  const drive = (
    entry: ChatEntry | undefined,
    revision: number,
    q: PoolQuery,
    home?: Preread,
    rest?: Preread
  ): Effect.Effect<CandidatePool, string | SqlError> => {
    const assembly = assemblePool(q)
    const go = (step: IteratorResult<Need, Either.Either<CandidatePool, string>>): Effect.Effect<CandidatePool, string | SqlError> => {
      if (step.done === true) return Either.isRight(step.value) ? Effect.succeed(step.value.right) : Effect.fail(step.value.left)
      const need = step.value
      const answer: Effect.Effect<Answer, SqlError> = need._tag === "scope"
        ? scopeOf(entry, revision, need.q, need.fallback, need.fallback ? (need.q.active_only ? rest : undefined) : home)
        : need._tag === "chain"
        ? chainOf(entry, revision, need.q)
        : messagesFor(entry, revision, q.chat_id, need.ids)
      return Effect.flatMap(answer, (a) => go(assembly.next(a)))
    }
    return Effect.suspend(() => go(assembly.next()))
  }

  /** `query` with its topic settled: in a forum, a request without a topic is in the General topic. */
  const settled = (query: PoolQuery, head: Head): PoolQuery => {
    const topicId = effectiveTopic(query.topic_id, query.topic_id === null ? head.isForum : false)
    return topicId === query.topic_id ? query : { ...query, topic_id: topicId }
  }

  /**
   * A pool wholly served from the cache runs no effect and records no span (on SQLite, while
   * nothing was committed, not even the chat's revision is read: `headNow`); any read it needs
   * runs in the `SqlContextStore.pool` span. Inside a transaction the reads see its uncommitted
   * writes, which the cache must never keep: no cache there.
   */
  const pool = (query: PoolQuery): Effect.Effect<CandidatePool, StoreError> =>
    Effect.withFiberRuntime((fiber) => {
      if (!storable(query.chat_id, query.topic_id, query.current_message_id, query.reply_to_message_id, query.sender_user_id)) {
        return Effect.succeed({ entries: [], chain: [], fallback: false, topic_id: query.topic_id })
      }
      const cached = cache.enabled && Option.isNone(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))
      /** The pool from memory at `head`, counted; undefined when the cache lacks a need. */
      const served = (head: Head): CandidatePool | undefined => {
        const entry = cache.entry(query.chat_id, head.revision)
        if (entry === undefined) return undefined
        const tally = { hits: 0 }
        const result = fromMemory(entry, settled(query, head), tally)
        if (result !== undefined) record(fiber.getFiberRef(FiberRef.currentMetricLabels), tally.hits, 0)
        return result
      }
      // The database cannot be reached: the pool the cache holds for the request, as last read,
      // is served (stale-if-error) rather than no answer; a request it cannot serve fails.
      const orStale = (effect: Effect.Effect<CandidatePool, StoreError>) =>
        cached
          ? Effect.catchIf(effect, (e) => e instanceof StoreUnavailable, (e) => {
            const entry = cache.current(query.chat_id)
            const stale = entry === undefined ? undefined : served({ revision: entry.revision, isForum: forums.get(query.chat_id) ?? false })
            return stale === undefined ? Effect.fail(e) : Effect.succeed(stale)
          })
          : effect
      const known = cached ? headNow(query.chat_id) : undefined
      const fast = known === undefined ? undefined : served(known)
      if (fast !== undefined) return Effect.succeed(fast)
      // PostgreSQL, when the chat's revision must be read and the cache lacks the request's own
      // scope even at the revision it holds: the revision and that scope in one statement
      // (`headAndScope`), the scope's rows kept at the revision read with them.
      const headRead = cached ? known === undefined : query.topic_id === null
      if (d.poolFunction && headRead && !(cached && homeKept(query))) {
        return Effect.suspend(() => {
          const token = headsToken()
          // The kinds asked of the chat before come along, as when the scope is read alone (`scopeOf`).
          const kinds = withAsked(cached ? cache.current(query.chat_id) : undefined, query, preferredOf(query), () => true)
          const read = Effect.flatMap(headAndScope(query, kinds), (rows) => {
            let h: Row | undefined
            const home: Array<Row> = []
            const rest: Array<Row> = []
            for (const r of rows) {
              const part = str(r["part"])
              if (part === "h") h = r
              else if (part.startsWith("f")) rest.push({ ...r, part: part.slice(1) })
              else home.push(r)
            }
            const head = keepHead(query.chat_id, token, h === undefined ? unknownHead : { revision: num(h["sent_at"]), isForum: num(h["from_bot"]) !== 0 })
            const entry = cached ? cache.entry(query.chat_id, head.revision) : undefined
            return drive(entry, head.revision, settled(query, head), { rows: home, kinds }, { rows: rest, kinds })
          })
          return Effect.withSpan(read, "SqlContextStore.pool", { captureStackTrace: false })
        }).pipe(Effect.mapError(failStore("pool")), orStale)
      }
      return Effect.flatMap(
        cached ? knownHead(query.chat_id) : query.topic_id === null ? headOf(query.chat_id) : Effect.succeed(unknownHead),
        (head) => {
          // From memory, unless just tried at this revision.
          const again = cached && head.revision !== known?.revision ? served(head) : undefined
          if (again !== undefined) return Effect.succeed(again)
          const entry = cached ? cache.entry(query.chat_id, head.revision) : undefined
          // No stack trace captured for the span: the trace is only of use on a failure, which names itself (StoreError).
          return Effect.withSpan(drive(entry, head.revision, settled(query, head)), "SqlContextStore.pool", { captureStackTrace: false })
        }
      ).pipe(Effect.mapError(failStore("pool")), orStale)
    })

  /** A chat's revision and whether it is a forum (a chat never seen: revision -1, not a forum). */
  const headOf = (chatId: string) =>
    Effect.map(
      db.query(sql`SELECT revision, is_forum FROM deixis_chats WHERE chat_id = ${chatId}`),
      (rows) => rows[0] === undefined ? unknownHead : { revision: num(rows[0]["revision"]), isForum: bool(rows[0]["is_forum"]) }
    )

  /** Whether chats were last seen to be forums (whatever was committed since), for `homeKept`. */
  const forums = new Map<string, boolean>()
  /**
   * Whether the chat's cache entry, at the revision it was filled at, keeps the rows of the
   * request's own scope (the chat as last seen, a forum or not): then the revision alone is read
   * first, and at most the parts the entry lacks after it (a kind's part, a chain), which are
   * smaller reads than the scope.
   */
  const homeKept = (query: PoolQuery): boolean => {
    const entry = cache.current(query.chat_id)
    const isForum = query.topic_id === null ? forums.get(query.chat_id) : false
    if (entry === undefined || isForum === undefined) return false
    const q = settled(query, { revision: entry.revision, isForum })
    const kept = cache.scope(entry, scopeKey(q, false))
    return kept !== undefined && kept.now <= q.now
  }

  /**
   * Revisions read since the last commit the probe saw (by any process): while its token stays
   * the same, a chat's revision is the one read then, and the cache is checked against it
   * without a statement. A token is read before the statement whose answer it labels, and an
   * answer is kept only while the token it was read under is still the latest one seen.
   */
  const heads = new Map<string, Head>()
  let headsAt: string | undefined
  /** The chat's revision when known without a statement (nothing committed since it was read), else undefined. */
  const headNow = (chatId: string): Head | undefined => {
    const token = changes?.token()
    return token !== undefined && token === headsAt ? heads.get(chatId) : undefined
  }
  /** The probe's token now, the revisions read under an older one forgotten. */
  const headsToken = () => {
    const token = changes?.token()
    if (token === undefined || token !== headsAt) {
      heads.clear()
      headsAt = token
    }
    return token
  }
  /** Keeps `head`, read under `token`, while that token is still the latest one seen. */
  const keepHead = (chatId: string, token: string | undefined, head: Head): Head => {
    if (forums.size >= maxHeads) forums.clear()
    forums.set(chatId, head.isForum)
    if (token !== undefined && token === headsAt) {
      if (heads.size >= maxHeads) heads.clear()
      heads.set(chatId, head)
    }
    return head
  }
  const knownHead = (chatId: string) =>
    Effect.suspend(() => {
      const token = headsToken()
      const known = heads.get(chatId)
      return known !== undefined ? Effect.succeed(known) : Effect.map(headOf(chatId), (head) => keepHead(chatId, token, head))
    })

  /** Counts lookups served from memory (`hits`) and read from the database (`misses`), and the chats evicted meanwhile. */
  const record = (labels: ReadonlyArray<MetricLabel.MetricLabel>, hits: number, misses: number) => {
    const evicted = cache.takeEvictions()
    if (hits > 0) cacheHits.unsafeUpdate(hits, labels)
    if (misses > 0) cacheMisses.unsafeUpdate(misses, labels)
    if (evicted > 0) cacheEvictions.unsafeUpdate(evicted, labels)
  }
  /** `record` as an effect, with the fiber's metric labels (as `Metric.incrementBy` takes them). */
  const count = (hits: number, misses: number) =>
    FiberRef.getWith(FiberRef.currentMetricLabels, (labels) => Effect.sync(() => record(labels, hits, misses)))
  /** A need answered by the cache alone (`cachedScope`, `cachedChain`, `cachedMessages`), its hits counted; undefined on a miss. */
  const hitOf = <A>(lookup: (tally: { hits: number }) => A | undefined): Effect.Effect<A> | undefined => {
    const tally = { hits: 0 }
    const hit = lookup(tally)
    return hit === undefined ? undefined : Effect.as(count(tally.hits, 0), hit)
  }

  /**
   * A scope's parts as served at `q.now` (see `servedAt`) from its kept rows and its preferred
   * kinds' parts (each placed as the statement places it: before the scope's older objects).
   */
  const assembleScope = (
    q: PoolQuery,
    prefer: ReadonlyArray<ObjectKind>,
    kinds: ReadonlyMap<string, ReadonlyArray<Row>>,
    baseRows: ReadonlyArray<Row>
  ): Parts => {
    const out = new Map<string, ReadonlyArray<Row>>()
    let kindsIn = false
    const addKinds = () => {
      kindsIn = true
      prefer.forEach((k, i) => {
        const rows = kinds.get(k)
        if (rows !== undefined && rows.length > 0) out.set(`k${i}`, rows)
      })
    }
    for (const [tag, all] of partsOf(baseRows)) {
      const rows = tag === "a" || tag === "m" ? servedAt(all, q, objectOf) : all
      if (rows.length === 0) continue
      if (!kindsIn && (tag === "o" || tag === "m")) addKinds()
      out.set(tag, rows)
    }
    if (!kindsIn) addKinds()
    return out
  }

  /** A scope's parts from the cache entry alone (every part kept, read at or before `q.now`), its hits added to `tally`. */
  const cachedScope = (entry: ChatEntry, q: PoolQuery, fallback: boolean, tally: { hits: number }): Parts | undefined => {
    const kept = cache.scope(entry, scopeKey(q, fallback))
    if (kept === undefined || kept.now > q.now) return undefined
    const prefer = preferredOf(q)
    const kinds = new Map<string, ReadonlyArray<Row>>()
    for (const k of prefer) {
      const part = cache.scope(entry, kindKey(q, fallback, k))
      if (part === undefined) return undefined
      kinds.set(k, part.rows)
    }
    for (const k of prefer) cache.askedKind(entry, k)
    tally.hits += 1 + prefer.length
    return assembleScope(q, prefer, kinds, kept.rows)
  }

  /** The reply chain from the cache entry alone (`noChain` without a reply), its hit added to `tally`. */
  const cachedChain = (entry: ChatEntry, q: PoolQuery, tally: { hits: number }): Chain | undefined => {
    const reply = q.reply_to_message_id
    if (reply === null || q.limits.chain_depth <= 0) return noChain
    const walked = walk(entry, q, reply)
    if (walked !== undefined) tally.hits++
    return walked
  }

  /** Messages' metadata from the cache entry alone (the absent ones left out), its hit added to `tally`. */
  const cachedMessages = (entry: ChatEntry, ids: ReadonlyArray<string>, tally: { hits: number }): ReadonlyMap<string, MessageMeta> | undefined => {
    const out = new Map<string, MessageMeta>()
    for (const id of ids) {
      const known = entry.messages.get(id)
      if (known === undefined) return undefined
      if (known !== null) out.set(id, known)
    }
    tally.hits++
    return out
  }

  /**
   * `first`, then the other kinds asked of the chat (`entry.kinds`) that the scope `q` can hold
   * and `wanted` accepts: the kinds whose parts a read of the scope brings along.
   */
  const withAsked = (entry: ChatEntry | undefined, q: PoolQuery, first: ReadonlyArray<ObjectKind>, wanted: (kind: ObjectKind) => boolean) => {
    const out = [...first]
    if (entry === undefined || q.active_only) return out
    for (const k of entry.kinds) {
      const kind = k as ObjectKind
      if (!out.includes(kind) && (q.kinds === undefined || q.kinds.includes(kind)) && wanted(kind)) out.push(kind)
    }
    return out
  }

  /**
   * A scope's parts (by part, in the statement's order) as the database answers `q` at `q.now`:
   * the scope's rows and each preferred kind's part from the chat's cache entry where it holds
   * them (the scope's read at or before `q.now`), the rest read in one statement — with the
   * parts of the other kinds asked of the chat, when the scope itself is read — and kept.
   * `read`: the scope's rows with the parts of `read.kinds` (every preferred kind first), already
   * read with the chat's revision (`headAndScope`), kept as read.
   */
  const scopeOf = (
    entry: ChatEntry | undefined,
    revision: number,
    q: PoolQuery,
    fallback: boolean,
    read?: Preread
  ): Effect.Effect<ReadonlyMap<string, ReadonlyArray<Row>>, SqlError> => {
    const prefer = preferredOf(q)
    if (entry === undefined) {
      return Effect.map(read === undefined ? scopeRows(shared(q), fallback, prefer) : Effect.succeed(read.rows), (rows) => byPart(servedAt(rows, q, objectOf)))
    }
    const hit = read === undefined ? hitOf((tally) => cachedScope(entry, q, fallback, tally)) : undefined
    if (hit !== undefined) return hit
    for (const k of prefer) cache.askedKind(entry, k)
    const key = scopeKey(q, fallback)
    // What the rows depend on, for a write to tell whether it changed them (ContextCache.wrote).
    const topic = topicKey(q.topic_id)
    const owner = q.include_owned && !q.active_only ? q.sender_user_id : null
    const kept = cache.scope(entry, key)
    const base = read === undefined && kept !== undefined && kept.now <= q.now ? kept.rows : undefined
    const kinds = new Map<string, ReadonlyArray<Row>>()
    const missing: Array<ObjectKind> = []
    for (const k of prefer) {
      const part = read === undefined ? cache.scope(entry, kindKey(q, fallback, k)) : undefined
      if (part === undefined) missing.push(k)
      else kinds.set(k, part.rows)
    }
    /** Keeps the kind parts of rows read for `fetched` (tagged by their index); the other rows are the scope's. */
    const split = (rows: ReadonlyArray<Row>, fetched: ReadonlyArray<ObjectKind>) => {
      const own: Array<Row> = []
      const byKind = new Map<string, Array<Row>>(fetched.map((k) => [k, []]))
      for (const r of rows) {
        const tag = str(r["part"])
        const kind = tag.startsWith("k") ? fetched[Number(tag.slice(1))] : undefined
        if (kind === undefined) own.push(r)
        else byKind.get(kind)!.push(r)
      }
      for (const [k, part] of byKind) {
        kinds.set(k, part)
        cache.putScope(entry, revision, kindKey(q, fallback, k), { now: q.now, rows: part, topic, fallback, activeOnly: q.active_only, owner: null })
      }
      return own
    }
    const hits = (base === undefined ? 0 : 1) + prefer.length - missing.length
    if (base !== undefined) {
      // Some kind parts are missing (with none, `cachedScope` answered).
      return Effect.flatMap(kindRows(q, fallback, missing), (rows) => {
        split(rows, missing)
        return Effect.as(count(hits, missing.length), assembleScope(q, prefer, kinds, base))
      })
    }
    // The scope is read: with it, the parts of the kinds asked of this chat that are not kept,
    // and, for a reply whose topic's recent window is not kept, the window (SQLite: in the same
    // statement; PostgreSQL: at the same time, on another connection), so that its chain is
    // walked in memory right after instead of read after the scope. Rows already `read` came
    // with the parts of their kinds and no window.
    const fetch = read !== undefined
      ? read.kinds
      : withAsked(entry, q, missing, (kind) => !kinds.has(kind) && cache.scope(entry, kindKey(q, fallback, kind)) === undefined)
    const withWindow = read === undefined && !fallback && q.reply_to_message_id !== null && q.limits.chain_depth > 0 && !entry.windows.has(topic)
    const reading = read !== undefined
      ? Effect.succeed(read.rows)
      : !withWindow
      ? scopeRows(shared(q), fallback, fetch)
      : d.pooled
      ? Effect.map(
        Effect.all([scopeRows(shared(q), fallback, fetch), readWindow(q.chat_id, topic)], { concurrency: 2 }),
        ([rows, windowRows]) => [...rows, ...windowRows]
      )
      : scopeRows(shared(q), fallback, fetch, topic)
    return Effect.flatMap(reading, (all) => {
      const rows: Array<Row> = []
      const windowRows: Array<Row> = []
      const windowObjectRows: Array<Row> = []
      for (const r of all) {
        const part = r["part"]
        if (part === "w") windowRows.push(r)
        else if (part === "wo") windowObjectRows.push(r)
        else rows.push(r)
      }
      const own = split(rows, fetch)
      cache.putScope(entry, revision, key, { now: q.now, rows: own, topic, fallback, activeOnly: q.active_only, owner })
      if (withWindow) keepChain(entry, revision, q, null, noChain, windowRows, windowObjectRows, topic)
      return Effect.as(count(hits, 1 + missing.length), assembleScope(q, prefer, kinds, own))
    })
  }

  /** Windows being read in the background, by chat entry: `revision` and topic. */
  const prefetching = new WeakMap<ChatEntry, Set<string>>()

  /**
   * PostgreSQL: reads a topic's recent window in the background (a fiber of its own, another
   * connection; a failure only leaves the window unread) and keeps it, as read after the chat was
   * seen at `revision`: the first reply into a topic pays for its chain alone, the replies after
   * it walk theirs in memory.
   */
  const prefetchWindow = (entry: ChatEntry, revision: number, q: PoolQuery, topic: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      let pending = prefetching.get(entry)
      if (pending === undefined) {
        pending = new Set()
        prefetching.set(entry, pending)
      }
      const key = `${revision}:${topic}`
      if (pending.has(key)) return Effect.void
      pending.add(key)
      const done = pending
      return Effect.asVoid(Effect.forkDaemon(
        readWindow(q.chat_id, topic).pipe(
          Effect.map((rows) => {
            const parts = byPart(rows)
            keepChain(entry, revision, q, null, noChain, parts.get("w") ?? [], parts.get("wo") ?? [], topic)
          }),
          Effect.ignore,
          Effect.ensuring(Effect.sync(() => done.delete(key)))
        )
      ))
    })

  /**
   * The reply chain of `q`: walked in memory when the chat's cache entry knows every link (its
   * metadata and, at this revision, the objects it is the source of), else read and kept, with
   * the request topic's recent window when not read yet at this revision.
   */
  const chainOf = (entry: ChatEntry | undefined, revision: number, q: PoolQuery): Effect.Effect<Chain, SqlError> => {
    const reply = q.reply_to_message_id
    if (reply === null || q.limits.chain_depth <= 0) return Effect.succeed(noChain)
    const hit = entry === undefined ? undefined : hitOf((tally) => cachedChain(entry, q, tally))
    if (hit !== undefined) return hit
    // Without the topic's recent window: SQLite reads it in the chain's statement (its driver is
    // synchronous, a read in the background would take the same time from some request);
    // PostgreSQL reads the chain alone and the window in the background, on another connection.
    const topic = topicKey(q.topic_id)
    const window = entry !== undefined && !entry.windows.has(topic) ? topic : undefined
    return Effect.flatMap(readChain(q, d.pooled ? undefined : window), (rows) => {
      const parts = byPart(rows)
      const links: Array<ChainLink> = (parts.get("c") ?? [])
        .map((r) => ({ depth: num(r["depth"]), meta: messageOf(q.chat_id, r), hasObjects: num(r["has_objects"]) !== 0 }))
        .sort((a, b) => a.depth - b.depth)
      const chain: Chain = { links, objects: parts.get("co") ?? [] }
      if (entry === undefined) return Effect.succeed(chain)
      return Effect.as(
        Effect.suspend(() => {
          if (!d.pooled) {
            keepChain(entry, revision, q, reply, chain, parts.get("w") ?? [], parts.get("wo") ?? [], window)
            return count(0, 1)
          }
          keepChain(entry, revision, q, reply, chain, [], [], undefined)
          return Effect.zipRight(window === undefined ? Effect.void : prefetchWindow(entry, revision, q, window), count(0, 1))
        }),
        chain
      )
    })
  }

  /** The chain of `q` from the cache entry alone, exactly as `readChain` reads it; undefined when a link is not known. */
  const walk = (entry: ChatEntry, q: PoolQuery, reply: string): Chain | undefined => {
    const links: Array<ChainLink> = []
    const objects: Array<Row> = []
    let id = reply
    for (let depth = 1;; depth++) {
      const meta = entry.messages.get(id)
      if (meta === undefined) return undefined
      if (meta === null) break
      const sourced = entry.sourced.get(id)
      if (sourced === undefined) return undefined
      links.push({ depth, meta, hasObjects: sourced.rows.length > 0 })
      for (const r of sourced.rows) {
        if (objects.length >= chainObjectsLimit) break
        objects.push(r)
      }
      if (depth >= q.limits.chain_depth || meta.reply_to_message_id === null) break
      id = meta.reply_to_message_id
    }
    return { links, objects }
  }

  /**
   * Keeps what a chain read brought: the links' metadata (and, where the walk stopped at a
   * message the database does not have, that it is absent), the window's messages, and, where
   * they are known to be complete, the objects each message is the source of.
   */
  const keepChain = (
    entry: ChatEntry,
    revision: number,
    q: PoolQuery,
    reply: string | null,
    chain: Chain,
    windowRows: ReadonlyArray<Row>,
    windowObjectRows: ReadonlyArray<Row>,
    window: string | undefined
  ) => {
    const messages: Array<readonly [string, MessageMeta | null]> = []
    const sourced: Array<readonly [string, ReadonlyArray<Row>]> = []
    /** Object rows by source message (each object once), or undefined when a body does not decode. */
    const bySource = (rows: ReadonlyArray<Row>) => {
      const out = new Map<string, Array<Row>>()
      const seen = new Set<string>()
      for (const r of rows) {
        const o = objectOf(r["body"])
        if (Either.isLeft(o)) return undefined
        if (seen.has(o.right.object_id)) continue
        seen.add(o.right.object_id)
        const list = out.get(o.right.source_message_id)
        if (list === undefined) out.set(o.right.source_message_id, [r])
        else list.push(r)
      }
      return out
    }
    /** Keeps a message's objects when known complete (`hasObjects` undefined: `objects` is complete for it). */
    const known = (
      id: string,
      hasObjects: boolean | undefined,
      objects: Map<string, Array<Row>> | undefined
    ) => {
      if (objects === undefined) return
      const rows = objects.get(id) ?? []
      if (hasObjects === undefined || (rows.length > 0) === hasObjects) sourced.push([id, rows])
    }
    const chainObjects = chain.objects.length < chainObjectsLimit ? bySource(chain.objects) : undefined
    for (const link of chain.links) {
      messages.push([link.meta.message_id, link.meta])
      known(link.meta.message_id, link.hasObjects, chainObjects)
    }
    const last = chain.links[chain.links.length - 1]
    if (last === undefined) {
      if (reply !== null) messages.push([reply, null])
    }
    else if (last.depth < q.limits.chain_depth && last.meta.reply_to_message_id !== null && last.depth === chain.links.length) {
      messages.push([last.meta.reply_to_message_id, null])
    }
    let windowObjects_: Map<string, Array<Row>> | undefined
    if (windowObjectRows.length < windowObjects) {
      windowObjects_ = new Map()
      for (const r of windowObjectRows) {
        const source = str(r["mid"])
        const list = windowObjects_.get(source)
        if (list === undefined) windowObjects_.set(source, [r])
        else list.push(r)
      }
    }
    for (const r of windowRows) {
      const meta = messageOf(q.chat_id, r)
      messages.push([meta.message_id, meta])
      known(meta.message_id, undefined, windowObjects_)
    }
    cache.putChain(entry, revision, messages, sourced, window)
  }

  /** The stored metadata of some messages of one chat, from the cache entry where it holds them. */
  const messagesFor = (entry: ChatEntry | undefined, revision: number, chatId: string, ids: ReadonlyArray<string>) => {
    if (entry === undefined) return messagesOf(chatId, ids)
    const hit = hitOf((tally) => cachedMessages(entry, ids, tally))
    if (hit !== undefined) return hit
    const out = new Map<string, MessageMeta>()
    const missing: Array<string> = []
    for (const id of ids) {
      const known = entry.messages.get(id)
      if (known === undefined) missing.push(id)
      else if (known !== null) out.set(id, known)
    }
    return Effect.flatMap(messagesOf(chatId, missing), (found) => {
      for (const [id, m] of found) out.set(id, m)
      cache.putMessages(entry, revision, missing.map((id) => [id, found.get(id) ?? null] as const))
      return Effect.as(count(0, 1), out)
    })
  }

  /** The stored metadata of some messages of one chat, by id. */
  const messagesOf = (chatId: string, ids: ReadonlyArray<string>) =>
    Effect.map(
      bulk(
        [["chat_id", "TEXT"], ["id_len", "INTEGER"], ["message_id", "TEXT"]],
        ids.map((id) => [chatId, positionLength(id), id]),
        (from) =>
          sql`SELECT m.message_id, m.topic, m.reply_to, m.sender, m.from_bot, m.sent_at FROM ${from}
           ${probe("deixis_messages", "m", "m.chat_id = k.chat_id AND m.id_len = k.id_len AND m.message_id = k.message_id")}`
      ),
      (rows) => {
        const out = new Map<string, MessageMeta>()
        for (const r of rows) {
          const m = messageOf(chatId, r)
          out.set(m.message_id, m)
        }
        return out
      }
    )

  return pool
}
