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
import { refused, storable } from "./ids.js"
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
  const sql = db.run
  const currentRevision = (scope: ConversationScope) =>
    Effect.map(
      sql`SELECT revision FROM deixis_conversation_state WHERE chat_id = ${scope.chat_id} AND topic = ${topicKey(scope.topic_id)}`,
      (rows) => (rows[0] === undefined ? 0 : num(rows[0]["revision"]))
    )

  const read = (scope: ConversationScope) =>
    sql`SELECT revision, state, updated_at, updated_by FROM deixis_conversation_state
      WHERE chat_id = ${scope.chat_id} AND topic = ${topicKey(scope.topic_id)}`.pipe(
      Effect.flatMap((rows) =>
        rows[0] === undefined
          ? Effect.succeed(Option.none<ConversationStateSnapshot>())
          : Effect.map(snapshotOf(scope, rows[0]), Option.some)
      )
    )

  // Compare-and-set inside the caller's transaction: the write happens only if the stored
  // revision is the one before; RETURNING says whether it did.
  const write = (snapshot: ConversationStateSnapshot) =>
    Effect.gen(function*() {
      const topic = topicKey(snapshot.topic_id)
      const state = JSON.stringify(snapshot.state)
      const written = snapshot.revision === 1
        ? yield* sql`INSERT INTO deixis_conversation_state (chat_id, topic, revision, state, updated_at, updated_by)
           VALUES (${snapshot.chat_id}, ${topic}, 1, ${state}, ${snapshot.updated_at}, ${snapshot.updated_by})
           ON CONFLICT (chat_id, topic) DO NOTHING RETURNING revision`
        : snapshot.revision > 1
        ? yield* sql`UPDATE deixis_conversation_state
           SET revision = ${snapshot.revision}, state = ${state}, updated_at = ${snapshot.updated_at}, updated_by = ${snapshot.updated_by}
           WHERE chat_id = ${snapshot.chat_id} AND topic = ${topic} AND revision = ${snapshot.revision - 1} RETURNING revision`
        : []
      if (written.length === 1) return
      const current = yield* currentRevision(snapshot)
      return yield* Effect.fail(conflict(snapshot, snapshot.revision - 1, current))
    })

  // The scope's write lock for the rest of the transaction. PostgreSQL: an advisory lock on
  // the scope (a row lock cannot cover a row not written yet); SQLite: `BEGIN IMMEDIATE`
  // already holds the database's write lock.
  const lockOf = (scope: ConversationScope) =>
    db.dialect.transactionLock(`deixis/conversation_state/${JSON.stringify([scope.chat_id, topicKey(scope.topic_id)])}`)
  const lockScope = (scope: ConversationScope) => {
    const lock = lockOf(scope)
    return lock === undefined ? Effect.void : Effect.asVoid(db.query(lock))
  }

  // A scope whose ids the rule refuses was never written; writing one is refused.
  const invalid = (scope: ConversationScope) => refused({ chat_id: scope.chat_id, topic_id: scope.topic_id })

  return {
    get: (scope) =>
      storable(scope.chat_id, scope.topic_id)
        ? read(scope).pipe(Effect.mapError(fail("get")))
        : Effect.succeed(Option.none()),
    put: (snapshot) =>
      invalid(snapshot) !== undefined ? Effect.fail(fail("put")(invalid(snapshot)!)) : db.transaction(write(snapshot)).pipe(
        Effect.catchTag("SqlError", (e) => Effect.fail(fail("put")(e)))
      ),
    modify: (scope, f) =>
      invalid(scope) !== undefined ? Effect.fail(fail("modify")(invalid(scope)!)) : db.transaction(Effect.gen(function*() {
        yield* lockScope(scope)
        const stored = yield* read(scope).pipe(Effect.mapError((e) => typeof e === "string" ? fail("modify")(e) : e))
        const [result, next] = yield* f(stored)
        if (Option.isSome(next)) yield* write(next.value)
        return result
      })).pipe(
        Effect.catchIf(
          (e): e is SqlError => typeof e === "object" && e !== null && "_tag" in e && e._tag === "SqlError",
          (e) => Effect.fail(fail("modify")(e))
        )
      ),
    migrateChat: (from, to) =>
      from === to ? Effect.succeed(0) : db.transaction(Effect.gen(function*() {
        // A scope the new chat already has keeps its own (newer) state.
        const moved = yield* sql`INSERT INTO deixis_conversation_state (chat_id, topic, revision, state, updated_at, updated_by)
           SELECT ${to}, topic, revision, state, updated_at, updated_by FROM deixis_conversation_state WHERE chat_id = ${from}
           ON CONFLICT (chat_id, topic) DO NOTHING RETURNING revision`
        yield* sql`DELETE FROM deixis_conversation_state WHERE chat_id = ${from}`
        return moved.length
      })).pipe(Effect.mapError(fail("migrateChat")))
  }
}
