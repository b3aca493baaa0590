/**
 * How the PostgreSQL schema distributes on a sharded PostgreSQL (Citus), declared once: every
 * table the migrations create, with its distribution. The store-sql README explains it; a test
 * over the PostgreSQL catalog checks it (every table of the migrated schema is classified, and
 * every distributed table's primary key and unique indexes lead with its distribution column).
 * A migration that adds a table adds it here.
 */

/** How one table is placed on a distributed PostgreSQL. */
export type Distribution =
  /** Distributed by `chat_id`, colocated with `deixis_chats`: everything one chat owns lives on one node. */
  | { readonly _tag: "chat" }
  /**
   * Distributed by another column (`column`), because the rows are found by a key that names no
   * chat (a poll answer carries only its poll id; an inbox is keyed by its source).
   */
  | { readonly _tag: "key"; readonly column: string; readonly why: string }
  /** A reference table: small, replicated to every node, read with any chat's rows. */
  | { readonly _tag: "reference"; readonly why: string }

const chat: Distribution = { _tag: "chat" }

/** Every table of the schema, by name. */
export const distribution: Readonly<Record<string, Distribution>> = {
  deixis_chats: chat,
  deixis_messages: chat,
  deixis_objects: chat,
  deixis_events: chat,
  deixis_history_chats: chat,
  deixis_history: chat,
  deixis_conversation_state: chat,
  deixis_reminders: chat,
  deixis_chat_migrations: chat,
  deixis_polls: {
    _tag: "key",
    column: "poll_id",
    why: "a poll answer or close carries only its poll id: this lookup names the chat, then the chat's node is asked"
  },
  deixis_poll_closes: {
    _tag: "key",
    column: "poll_id",
    why: "a close that arrived before its poll is kept by poll id, colocated with deixis_polls"
  },
  deixis_updates: {
    _tag: "key",
    column: "source",
    why: "a bot's update inbox is keyed by the bot (its source) and update id: one process reads a page of every chat's updates at once"
  },
  deixis_update_chats: {
    _tag: "key",
    column: "source",
    why: "a bot's per-chat claims, colocated with its inbox (deixis_updates): a claim and the chat's pending updates change together"
  },
  deixis_migrations: { _tag: "reference", why: "the schema version, one row per migration, read at start" }
}

/** The distribution column of a table distributed by one, else undefined. */
export const distributionColumn = (d: Distribution): string | undefined =>
  d._tag === "chat" ? "chat_id" : d._tag === "key" ? d.column : undefined
