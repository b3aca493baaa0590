/**
 * The store port (compare-and-set on the revision) and its memory adapter.
 * Part of `ConversationState`, which re-exports it.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as internal from "../conversationState.js"
import { ConversationScope, ConversationStateSnapshot, Revision } from "./model.js"
import { ConversationStateConflict, ConversationStateStoreError } from "./errors.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface ConversationStateStoreService {
  /** The stored snapshot of exactly this scope, if it was ever written. */
  readonly get: (scope: ConversationScope) => Effect.Effect<Option.Option<ConversationStateSnapshot>, ConversationStateStoreError>
  /**
   * Compare-and-set: stores `snapshot` for its scope if the stored revision is
   * `snapshot.revision - 1` (0 when nothing is stored), atomically; otherwise fails with
   * {@link ConversationStateConflict} carrying the stored revision and writes nothing.
   */
  readonly put: (snapshot: ConversationStateSnapshot) => Effect.Effect<void, ConversationStateConflict | ConversationStateStoreError>
  /**
   * Optional read-modify-write: runs `f` on the stored snapshot of `scope` (none if never
   * written) while holding the scope's write lock against every other writer — in any process
   * — and stores the snapshot `f` returns (none: nothing is written). With it, a patch
   * without `expected_revision` cannot meet a conflict at all; without it the service reads,
   * then compare-and-sets with {@link put}, and retries (bounded) when another writer got in
   * between.
   */
  readonly modify?: <A, E>(
    scope: ConversationScope,
    f: (current: Option.Option<ConversationStateSnapshot>) => Effect.Effect<readonly [A, Option.Option<ConversationStateSnapshot>], E>
  ) => Effect.Effect<A, E | ConversationStateConflict | ConversationStateStoreError>
  /**
   * Moves every scope of chat `from` to chat `to` (a Telegram group upgraded to a
   * supergroup), atomically, keeping each state, revision and author. A scope `to` already
   * holds keeps its own state (it is the newer); the old one is dropped. Returns how many
   * states moved; a second call moves nothing.
   */
  readonly migrateChat: (from: string, to: string) => Effect.Effect<number, ConversationStateStoreError>
}

/**
 * The storage port for conversation state. Adapters: {@link layerMemory} here, SQL in
 * `@deixis/store-sql`; all run the contract suite in `@deixis/core/ConversationStateTesting`.
 *
 * @since 0.1.0
 * @category tags
 */
export class ConversationStateStore extends Context.Tag("@deixis/core/ConversationStateStore")<
  ConversationStateStore,
  ConversationStateStoreService
>() {}

/**
 * The store's conflict, built the same way by every adapter.
 *
 * @since 0.1.0
 * @category constructors
 */
export const conflict = (
  scope: ConversationScope,
  expected_revision: number,
  current_revision: Revision
): ConversationStateConflict =>
  new ConversationStateConflict({
    chat_id: scope.chat_id,
    topic_id: scope.topic_id,
    expected_revision,
    current_revision,
    message: `expected revision ${expected_revision}, but the state is at revision ${current_revision}`
  })

/**
 * An in-memory {@link ConversationStateStore}: one map per built layer, lost on restart.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<ConversationStateStore> = Layer.sync(ConversationStateStore, () => {
  const rows = new Map<string, ConversationStateSnapshot>()
  const withLock = internal.makeKeyedLock()
  // One synchronous step: nothing can interleave between the check and the write.
  const put = (snapshot: ConversationStateSnapshot) =>
    Effect.suspend(() => {
      const key = internal.scopeKey(snapshot)
      const current = rows.get(key)?.revision ?? 0
      if (current !== snapshot.revision - 1) {
        return Effect.fail(conflict(snapshot, snapshot.revision - 1, current))
      }
      rows.set(key, snapshot)
      return Effect.void
    })
  return ConversationStateStore.of({
    get: (scope) => Effect.sync(() => Option.fromNullable(rows.get(internal.scopeKey(scope)))),
    put,
    modify: (scope, f) =>
      withLock(internal.scopeKey(scope))(
        Effect.flatMap(
          Effect.suspend(() => f(Option.fromNullable(rows.get(internal.scopeKey(scope))))),
          ([result, next]) => Option.isSome(next) ? Effect.as(put(next.value), result) : Effect.succeed(result)
        )
      ),
    migrateChat: (from, to) =>
      Effect.sync(() => {
        if (from === to) return 0
        let moved = 0
        for (const [key, snapshot] of [...rows]) {
          if (snapshot.chat_id !== from) continue
          rows.delete(key)
          const target = { ...snapshot, chat_id: to }
          const targetKey = internal.scopeKey(target)
          if (rows.has(targetKey)) continue
          rows.set(targetKey, target)
          moved++
        }
        return moved
      })
  })
})
