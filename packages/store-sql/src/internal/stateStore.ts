/**
 * The ConversationStateStore over SQL: one row per scope, written by compare-and-set on its
 * revision in a single statement, so concurrent writers (in any process) cannot both win.
 */
import {
  conflict,
  type ConversationScope,
  type ConversationStateSnapshot,
  ConversationStateStoreError,
  type ConversationStateStoreService,
  JsonObject
} from "@deixis/core/ConversationState"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type Db, describe, num, numOrNull, type Row, str, strOrNull, topicKey } from "./db.js"

const decodeState = Schema.decodeUnknownEither(JsonObject)

const fail = (what: string) => (error: SqlError | string) =>
  new ConversationStateStoreError({
    message: `conversation state ${what} failed: ${typeof error === "string" ? error : describe(error)}`,
    cause: error
  })

const snapshotOf = (scope: ConversationScope, row: Row): Either.Either<ConversationStateSnapshot, string> =>
  Either.flatMap(
    Either.try({ try: (): unknown => JSON.parse(str(row["state"])), catch: () => "invalid JSON" }),
    (json) =>
      Either.map(Either.mapLeft(decodeState(json), (e) => e.message), (state) => ({
        chat_id: scope.chat_id,
        topic_id: scope.topic_id,
        state,
        revision: num(row["revision"]),
        updated_at: numOrNull(row["updated_at"]),
        updated_by: strOrNull(row["updated_by"])
      }))
  )

export const makeSqlStateStore = (db: Db): ConversationStateStoreService => {
  const currentRevision = (scope: ConversationScope) =>
    Effect.map(
      db.query(`SELECT revision FROM deixis_conversation_state WHERE chat_id = ? AND topic = ?`, [
        scope.chat_id,
        topicKey(scope.topic_id)
      ]),
      (rows) => (rows[0] === undefined ? 0 : num(rows[0]["revision"]))
    )

  return {
    get: (scope) =>
      db.query(
        `SELECT revision, state, updated_at, updated_by FROM deixis_conversation_state WHERE chat_id = ? AND topic = ?`,
        [scope.chat_id, topicKey(scope.topic_id)]
      ).pipe(
        Effect.flatMap((rows) =>
          rows[0] === undefined
            ? Effect.succeed(Option.none<ConversationStateSnapshot>())
            : Effect.map(snapshotOf(scope, rows[0]), Option.some)
        ),
        Effect.mapError(fail("get"))
      ),
    put: (snapshot) =>
      db.transaction(Effect.gen(function*() {
        const topic = topicKey(snapshot.topic_id)
        const state = JSON.stringify(snapshot.state)
        // The write happens only if the stored revision is the one before; RETURNING says whether it did.
        const written = snapshot.revision === 1
          ? yield* db.query(
            `INSERT INTO deixis_conversation_state (chat_id, topic, revision, state, updated_at, updated_by)
             VALUES (?, ?, 1, ?, ?, ?) ON CONFLICT (chat_id, topic) DO NOTHING RETURNING revision`,
            [snapshot.chat_id, topic, state, snapshot.updated_at, snapshot.updated_by]
          )
          : snapshot.revision > 1
          ? yield* db.query(
            `UPDATE deixis_conversation_state SET revision = ?, state = ?, updated_at = ?, updated_by = ?
             WHERE chat_id = ? AND topic = ? AND revision = ? RETURNING revision`,
            [snapshot.revision, state, snapshot.updated_at, snapshot.updated_by, snapshot.chat_id, topic, snapshot.revision - 1]
          )
          : []
        if (written.length === 1) return
        const current = yield* currentRevision(snapshot)
        return yield* Effect.fail(conflict(snapshot, snapshot.revision - 1, current))
      })).pipe(
        Effect.catchTag("SqlError", (e) => Effect.fail(fail("put")(e)))
      ),
    migrateChat: (from, to) =>
      from === to ? Effect.succeed(0) : db.transaction(Effect.gen(function*() {
        // A scope the new chat already has keeps its own (newer) state.
        const moved = yield* db.query(
          `INSERT INTO deixis_conversation_state (chat_id, topic, revision, state, updated_at, updated_by)
           SELECT ?, topic, revision, state, updated_at, updated_by FROM deixis_conversation_state WHERE chat_id = ?
           ON CONFLICT (chat_id, topic) DO NOTHING RETURNING revision`,
          [to, from]
        )
        yield* db.query(`DELETE FROM deixis_conversation_state WHERE chat_id = ?`, [from])
        return moved.length
      })).pipe(Effect.mapError(fail("migrateChat")))
  }
}
