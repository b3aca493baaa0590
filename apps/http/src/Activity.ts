/**
 * What this process records, for the inspector: a live feed of each message recorded, which
 * `GET /v1/inspect/live` streams as server-sent events, bounded by a sliding buffer per
 * subscriber (a slow reader loses the oldest, never holds memory) and by the number of readers.
 * (The inspector's chat list is the store's: `ContextStore.chats`.)
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import type * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

/**
 * One message recorded: where, which, and through which route.
 *
 * @since 0.2.0
 * @category models
 */
export interface LiveEvent {
  readonly chat_id: string
  readonly topic_id: string | null
  readonly message_id: string | null
  readonly source: "telegram" | "sent" | "events"
  readonly at: number
}

/**
 * @since 0.2.0
 * @category models
 */
export interface ActivityShape {
  readonly note: (events: ReadonlyArray<LiveEvent>) => Effect.Effect<void>
  /** Whether another reader may subscribe now. */
  readonly available: Effect.Effect<boolean>
  /** A subscription to the feed for the scope; none when `limits.readers` are already reading. */
  readonly subscribe: Effect.Effect<Queue.Dequeue<LiveEvent> | undefined, never, Scope.Scope>
}

/**
 * @since 0.2.0
 * @category tags
 */
export class Activity extends Context.Tag("@deixis/http/Activity")<Activity, ActivityShape>() {}

/** How many live readers at once, and each reader's buffer. */
export const limits = { readers: 32, buffer: 256 } as const

/**
 * The activity of this process, in memory.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<Activity> = Layer.scoped(
  Activity,
  Effect.gen(function*() {
    const hub = yield* Effect.acquireRelease(PubSub.sliding<LiveEvent>(limits.buffer), PubSub.shutdown)
    let readers = 0
    return {
      note: (events) => events.length === 0 ? Effect.void : PubSub.publishAll(hub, events),
      available: Effect.sync(() => readers < limits.readers),
      subscribe: Effect.suspend(() => {
        if (readers >= limits.readers) return Effect.succeed(undefined)
        readers++
        return Effect.zipRight(
          Effect.addFinalizer(() => Effect.sync(() => void readers--)),
          PubSub.subscribe(hub)
        )
      })
    }
  })
)
