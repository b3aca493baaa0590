/**
 * Concurrency with order, after grammY runner's `sequentialize`: tasks with the same key (a
 * chat, or a forum topic of a chat) run one after another in submission order; tasks with
 * different keys run in parallel, at most `concurrency` at once; a chat-wide task (key
 * `<chat>/*`, see {@link chatWide}) also runs after every earlier task of its chat, in any topic; at most `capacity` tasks wait
 * or run in all (`submit` waits for room, `offer` says no). A slow or stuck task delays only
 * its own key. Built on Effect's semaphores, deferreds and a `FiberSet`.
 *
 * Closing the dispatcher's scope waits for the tasks (at most `shutdownTimeout`), then
 * interrupts those still running.
 *
 * @since 0.1.0
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Predicate from "effect/Predicate"
import type * as Scope from "effect/Scope"

/**
 * @since 0.1.0
 * @category models
 */
export interface Dispatcher {
  /**
   * Queues a task after the key's earlier ones, waiting while the dispatcher is full. An
   * `urgent` task (one that answers someone) runs under a bound of its own: it waits for its
   * key's earlier tasks, never for other keys' backlog of recording.
   */
  readonly submit: (key: string, task: Effect.Effect<void>, options?: { readonly urgent?: boolean }) => Effect.Effect<void>
  /** Queues a task if there is room now; false when full. */
  readonly offer: (key: string, task: Effect.Effect<void>) => Effect.Effect<boolean>
  /** Tasks waiting or running under one key. */
  readonly depthOf: (key: string) => number
  /** Tasks waiting or running, keys with any, and the ten deepest keys. */
  readonly depth: () => { readonly queued: number; readonly chats: number; readonly deepest: ReadonlyArray<readonly [string, number]> }
  /** Waits until no task waits or runs. */
  readonly idle: Effect.Effect<void>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DispatcherOptions {
  readonly concurrency: number
  readonly capacity: number
  readonly shutdownTimeout: Duration.DurationInput
}

/**
 * A dispatcher for the lifetime of the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: DispatcherOptions): Effect.Effect<Dispatcher, never, Scope.Scope> =>
  Effect.gen(function*() {
    const capacity = Math.max(1, options.capacity)
    const room = yield* Effect.makeSemaphore(capacity)
    const workers = yield* Effect.makeSemaphore(Math.max(1, options.concurrency))
    const urgentWorkers = yield* Effect.makeSemaphore(Math.max(1, options.concurrency))
    const fibers = yield* FiberSet.make<void, never>()
    const tails = new Map<string, { last: Deferred.Deferred<void>; count: number }>()
    let queued = 0

    const start = (key: string, task: Effect.Effect<void>, urgent = false) =>
      Effect.gen(function*() {
        const previous = tails.get(key)
        // A chat-wide task waits for the chat's own key and each of its topics' keys too.
        const chat = key.endsWith(chatWideSuffix) ? key.slice(0, -chatWideSuffix.length) : undefined
        const before = chat === undefined ? [] : [...tails].flatMap(([k, entry]) =>
          k !== key && (k === chat || k.startsWith(`${chat}/`)) ? [entry.last] : [])
        const mine = yield* Deferred.make<void>()
        tails.set(key, { last: mine, count: (previous?.count ?? 0) + 1 })
        queued++
        const finish = Effect.sync(() => {
          queued--
          const entry = tails.get(key)
          if (entry !== undefined) {
            entry.count--
            if (entry.count === 0 && entry.last === mine) tails.delete(key)
          }
        }).pipe(Effect.zipRight(Deferred.succeed(mine, undefined)), Effect.zipRight(room.release(1)))
        yield* FiberSet.run(
          fibers,
          (previous === undefined ? Effect.void : Deferred.await(previous.last)).pipe(
            Effect.zipRight(Effect.forEach(before, Deferred.await, { discard: true })),
            Effect.zipRight((urgent ? urgentWorkers : workers).withPermits(1)(
              task.pipe(Effect.catchAllCause((cause) => Effect.logError("task failed", cause).pipe(Effect.annotateLogs({ key }))))
            )),
            Effect.ensuring(finish)
          )
        )
      })

    // On close: the tasks get `shutdownTimeout` to finish, then the FiberSet interrupts them.
    yield* Effect.addFinalizer(() =>
      // Finalizers run uninterruptibly: the wait must be interruptible for the timeout to end it.
      Effect.interruptible(room.withPermits(capacity)(Effect.void)).pipe(
        Effect.timeout(options.shutdownTimeout),
        Effect.catchAll(() =>
          Effect.logWarning("shutdown timeout: interrupting updates still being handled").pipe(
            Effect.annotateLogs({ in_flight: queued })
          )
        ),
        Effect.zipRight(FiberSet.clear(fibers))
      )
    )

    return {
      submit: (key, task, submitOptions) => Effect.zipRight(room.take(1), start(key, task, submitOptions?.urgent === true)),
      offer: (key, task) =>
        Effect.suspend(() =>
          // `queued` counts exactly the permits taken (a permit is taken, then the task counted, in one step).
          queued >= capacity ? Effect.succeed(false) : Effect.zipRight(room.take(1), Effect.as(start(key, task), true))
        ),
      depthOf: (key) => tails.get(key)?.count ?? 0,
      depth: () => ({
        queued,
        chats: tails.size,
        deepest: [...tails].map(([k, e]) => [k, e.count] as const).sort((a, b) => b[1] - a[1]).slice(0, 10)
      }),
      idle: room.withPermits(capacity)(Effect.void)
    }
  })


const chatWideSuffix = "/*"

/**
 * The key of a chat-wide task (`<chat>/*`): it runs after every task of the chat submitted
 * before it, whatever its topic, and in order with the chat's other chat-wide tasks.
 *
 * @since 0.1.0
 * @category keys
 */
export const chatWide = (chatId: string): string => `${chatId}${chatWideSuffix}`

/**
 * The key an update is ordered by: its chat, and its forum topic when it is a topic message
 * (`<chat>` or `<chat>/<thread>`); a reaction chat-wide ({@link chatWide}: it names no topic,
 * only a message, and is placed in that message's topic once the message is recorded, so it
 * waits for the chat's earlier updates in every topic); a poll's updates by poll
 * (`poll:<id>`, they carry no chat); anything else shares one key.
 *
 * @since 0.1.0
 * @category keys
 */
export const keyOf = (update: unknown): string => {
  if (!Predicate.isRecord(update)) return "other"
  const callback = Predicate.isRecord(update["callback_query"]) ? update["callback_query"] : undefined
  const message = [update["message"], update["edited_message"], update["channel_post"], update["edited_channel_post"], callback?.["message"]]
    .find(Predicate.isRecord)
  if (message !== undefined && Predicate.isRecord(message["chat"])) {
    const chat = String(message["chat"]["id"])
    return message["is_topic_message"] === true && typeof message["message_thread_id"] === "number"
      ? `${chat}/${message["message_thread_id"]}`
      : chat
  }
  for (const field of ["message_reaction", "message_reaction_count"]) {
    const value = update[field]
    if (Predicate.isRecord(value) && Predicate.isRecord(value["chat"])) return chatWide(String(value["chat"]["id"]))
  }
  for (const field of ["my_chat_member", "chat_member", "chat_join_request", "chat_boost", "removed_chat_boost"]) {
    const value = update[field]
    if (Predicate.isRecord(value) && Predicate.isRecord(value["chat"])) return String(value["chat"]["id"])
  }
  if (Predicate.isRecord(update["poll"])) return `poll:${String(update["poll"]["id"])}`
  if (Predicate.isRecord(update["poll_answer"])) return `poll:${String(update["poll_answer"]["poll_id"])}`
  return "other"
}
