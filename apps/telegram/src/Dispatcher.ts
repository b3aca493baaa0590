/**
 * Concurrency with order, after grammY runner's `sequentialize`: tasks with the same key (a
 * chat, or a forum topic of a chat) run one after another in submission order; tasks with
 * different keys run in parallel, at most a lane's bound at once; a chat-wide task (key
 * `<chat>/*`, see {@link chatWide}) also runs after every earlier task of its chat, in any topic; at most `capacity` tasks wait
 * or run in all (`submit` waits for room, `offer` says no). A slow or stuck task delays only
 * its own key. Each key's tasks wait in a plain queue; keys whose next task is ready take turns
 * on a lane's workers (at most its bound of fibers of a `FiberSet`, started on demand, then
 * kept), so a task costs no fiber, semaphore or deferred of its own. A key holding an answer (`urgent`) moves to
 * the urgent lane with its earlier tasks, ahead of other keys' recording; while answers run,
 * recording runs one task at a time and lets I/O in every millisecond (else every few), and it can
 * be held while intake reads a backlog (`hold`). A key
 * whose next task is a `send` (the reminder sender's: mostly a wait on Telegram) takes a worker
 * of a third lane (`sendConcurrency`), so slow calls never take recording's few workers.
 *
 * Closing the dispatcher's scope waits for the tasks (at most `shutdownTimeout`), then
 * interrupts those still running.
 *
 * @since 0.1.0
 */
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
   * key's earlier tasks, never for other keys' backlog of recording. A `send` task (one that
   * mostly waits on a call out) runs, in its key's order, under the send lane's own bound.
   */
  readonly submit: (
    key: string,
    task: Effect.Effect<void>,
    options?: { readonly urgent?: boolean | undefined; readonly send?: boolean | undefined }
  ) => Effect.Effect<void>
  /** Queues a task if there is room now; false when full. */
  readonly offer: (key: string, task: Effect.Effect<void>) => Effect.Effect<boolean>
  /** Tasks waiting or running under one key. */
  readonly depthOf: (key: string) => number
  /** Tasks waiting or running, keys with any, and the ten deepest keys. */
  readonly depth: () => { readonly queued: number; readonly chats: number; readonly deepest: ReadonlyArray<readonly [string, number]> }
  /**
   * Holds the tasks that are not urgent (urgent ones, and their keys' earlier tasks, go on)
   * while intake reads a backlog, for at most `holdMillis` of real time after the last call:
   * a burst is read first — its commands answered without waiting for it — then recorded in
   * large runs. `false` lets them go at once.
   */
  readonly hold: (held: boolean) => void
  /** Waits until no task waits or runs. */
  readonly idle: Effect.Effect<void>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DispatcherOptions {
  /** Workers of the urgent lane (answers), and of the others unless given. */
  readonly concurrency: number
  /** Workers of the recording lane (default: `concurrency`). */
  readonly recordingConcurrency?: number | undefined
  /** Workers of the send lane (default: `concurrency`). */
  readonly sendConcurrency?: number | undefined
  readonly capacity: number
  readonly shutdownTimeout: Duration.DurationInput
  /** How long a `hold` lasts unless renewed (real time; default 200 ms). */
  readonly holdMillis?: number | undefined
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
    const concurrency = Math.max(1, options.concurrency)
    const room = yield* Effect.makeSemaphore(capacity)
    const fibers = yield* FiberSet.make<void, never>()
    // Workers run in the dispatcher's own context (that of its creator), whoever submitted.
    const fork = yield* FiberSet.runtime(fibers)<never>()
    const keys = new Map<string, Key>()
    const normal: Lane = { max: Math.max(1, options.recordingConcurrency ?? concurrency), running: 0, ready: [], head: 0, idle: [] }
    const urgent: Lane = { max: concurrency, running: 0, ready: [], head: 0, idle: [] }
    const sends: Lane = { max: Math.max(1, options.sendConcurrency ?? concurrency), running: 0, ready: [], head: 0, idle: [] }
    let queued = 0
    let held = false
    let holdTimer: ReturnType<typeof setTimeout> | undefined
    const holdMillis = options.holdMillis ?? 200
    const sliceMillis = 4

    // The lane a key waits in: the urgent one while it holds an answer, else its next task's.
    const enqueue = (k: Key) => {
      if (k.running || k.at >= k.entries.length || k.entries[k.at]!.blockers > 0) return
      const lane = k.urgent > 0 ? urgent : k.entries[k.at]!.send ? sends : normal
      if (k.queuedIn === lane) return
      // Promoted: its place in the other lane is skipped when reached.
      k.queuedIn = lane
      lane.ready.push(k)
      pump(lane)
    }
    // Wakes an idle worker for each ready key, or starts one while the lane has fewer than
    // its bound (workers then stay, idle, for the dispatcher's lifetime: no fiber per task).
    const pump = (lane: Lane) => {
      if (lane === normal && (held || answersWaiting() || (answering > 0 && recording > 0))) return
      for (let ready = lane.ready.length - lane.head; ready > 0; ready--) {
        const idle = lane.idle.pop()
        if (idle !== undefined) idle()
        else if (lane.running < lane.max) {
          lane.running++
          // Scheduled, not run in place: the submitter goes on (a batch is queued whole first).
          fork(worker(lane), { immediate: false })
        } else return
      }
    }
    const idleIn = (lane: Lane) =>
      Effect.async<void>((resume) => {
        const wake = () => resume(Effect.void)
        lane.idle.push(wake)
        return Effect.sync(() => {
          const at = lane.idle.indexOf(wake)
          if (at >= 0) lane.idle.splice(at, 1)
        })
      })
    const hold = (on: boolean) => {
      if (holdTimer !== undefined) clearTimeout(holdTimer)
      holdTimer = undefined
      held = on
      if (on) {
        // Real time, not the Clock: a scheduling matter. Never keeps the process alive.
        holdTimer = setTimeout(() => hold(false), holdMillis)
        holdTimer.unref?.()
      } else pump(normal)
    }
    // The lane of recording yields to I/O every `sliceMillis`: its fibers run on the microtask
    // queue, which Node drains before it looks for I/O — a backlog of recording would otherwise
    // hold back a getUpdates page, a webhook request, or an answer's call to Telegram.
    let sliceEnds = 0
    // Answers running (the urgent lane's tasks) and runs being recorded (the recording lane's).
    let answering = 0
    let recording = 0
    let sliceWaiters: Array<() => void> = []
    const nextSlice = Effect.async<void>((resume) => {
      sliceWaiters.push(() => resume(Effect.void))
      if (sliceWaiters.length === 1) {
        setImmediate(() => {
          // While answers run, recording lets them in sooner.
          sliceEnds = performance.now() + (answering > 0 ? 1 : sliceMillis)
          const waiting = sliceWaiters
          sliceWaiters = []
          for (const wake of waiting) wake()
        })
      }
    })
    // Recording yields to answers: while a key with an answer waits in the urgent lane for a
    // worker, the other lane starts nothing (its running tasks go on); while answers run, it
    // runs one task at a time. A priority, not only a separate lane: under saturation the lanes'
    // fibers would otherwise share the event loop evenly, and an answer's every step (its
    // record's write, its reads, its call to Telegram) would wait behind up to
    // `recordingConcurrency` runs' work.
    const answersWaiting = () => urgent.ready.length - urgent.head > 0
    const next = (lane: Lane): Key | undefined => {
      if (lane === normal && (held || answersWaiting() || (answering > 0 && recording > 0))) return undefined
      while (lane.head < lane.ready.length) {
        const k = lane.ready[lane.head]!
        lane.ready[lane.head++] = undefined as unknown as Key
        if (lane.head > 1024 && lane.head * 2 > lane.ready.length) {
          lane.ready = lane.ready.slice(lane.head)
          lane.head = 0
        }
        if (k.queuedIn === lane) {
          k.queuedIn = undefined
          // The last waiting answer taken: recording may start again.
          if (lane === urgent && !answersWaiting()) pump(normal)
          return k
        }
      }
      return undefined
    }
    const finish = (k: Key, entry: Entry) => {
      k.running = false
      k.entries[k.at++] = undefined as unknown as Entry
      if (k.at >= k.entries.length) {
        k.entries.length = 0
        k.at = 0
      } else if (k.at > 1024 && k.at * 2 > k.entries.length) {
        k.entries = k.entries.slice(k.at)
        k.at = 0
      }
      queued--
      if (entry.urgent) k.urgent--
      if (k.entries.length === 0) keys.delete(k.key)
      else enqueue(k)
      for (const later of entry.after) {
        later.blockers--
        if (later.blockers === 0) {
          const owner = keys.get(later.key)
          if (owner !== undefined) enqueue(owner)
        }
      }
    }
    // A worker runs ready keys' first tasks, a key at a time (a key with more goes to the back
    // of its lane: keys take turns); with none ready, it waits until one is.
    const worker = (lane: Lane): Effect.Effect<void> =>
      Effect.gen(function*() {
        for (;;) {
          if (lane === normal && performance.now() >= sliceEnds) yield* nextSlice
          const k = next(lane)
          if (k === undefined) {
            yield* idleIn(lane)
            continue
          }
          const entry = k.entries[k.at]!
          k.running = true
          if (lane === urgent) answering++
          else if (lane === normal) recording++
          yield* Effect.ensuring(
            entry.task.pipe(Effect.catchAllCause((cause) => Effect.logError("task failed", cause).pipe(Effect.annotateLogs({ key: k.key })))),
            Effect.zipRight(Effect.sync(() => {
              if (lane === urgent) {
                // The last answer done: recording runs at its full bound again.
                if (--answering === 0) pump(normal)
              } else if (lane === normal) recording--
              finish(k, entry)
            }), room.release(1))
          )
        }
      }).pipe(Effect.ensuring(Effect.sync(() => void lane.running--)))

    const start = (key: string, task: Effect.Effect<void>, isUrgent: boolean, send: boolean) =>
      Effect.sync(() => {
        const entry: Entry = { key, task, urgent: isUrgent, send, blockers: 0, after: [] }
        // A chat-wide task waits for the chat's own key and each of its topics' keys too.
        if (key.endsWith(chatWideSuffix)) {
          const chat = key.slice(0, -chatWideSuffix.length)
          for (const [other, k] of keys) {
            if (other !== key && (other === chat || other.startsWith(`${chat}/`)) && k.at < k.entries.length) {
              k.entries[k.entries.length - 1]!.after.push(entry)
              entry.blockers++
            }
          }
        }
        let k = keys.get(key)
        if (k === undefined) {
          k = { key, entries: [], at: 0, running: false, urgent: 0, queuedIn: undefined }
          keys.set(key, k)
        }
        k.entries.push(entry)
        queued++
        if (isUrgent) k.urgent++
        enqueue(k)
      })

    // On close: the tasks get `shutdownTimeout` to finish, then the FiberSet interrupts them.
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(Effect.sync(() => hold(false)),
      // Finalizers run uninterruptibly: the wait must be interruptible for the timeout to end it.
      Effect.interruptible(room.withPermits(capacity)(Effect.void)).pipe(
        Effect.timeout(options.shutdownTimeout),
        Effect.catchAll(() =>
          Effect.logWarning("shutdown timeout: interrupting updates still being handled").pipe(
            Effect.annotateLogs({ in_flight: queued })
          )
        ),
        Effect.zipRight(FiberSet.clear(fibers))
      ))
    )

    return {
      submit: (key, task, submitOptions) =>
        Effect.zipRight(room.take(1), start(key, task, submitOptions?.urgent === true, submitOptions?.send === true)),
      offer: (key, task) =>
        Effect.suspend(() =>
          // `queued` counts exactly the permits taken (a permit is taken, then the task counted, in one step).
          queued >= capacity ? Effect.succeed(false) : Effect.zipRight(room.take(1), Effect.as(start(key, task, false, false), true))
        ),
      depthOf: (key) => {
        const k = keys.get(key)
        return k === undefined ? 0 : k.entries.length - k.at
      },
      depth: () => ({
        queued,
        chats: keys.size,
        deepest: [...keys.values()].map((k) => [k.key, k.entries.length - k.at] as const).sort((a, b) => b[1] - a[1]).slice(0, 10)
      }),
      hold,
      idle: room.withPermits(capacity)(Effect.void)
    }
  })

/** A task waiting or running. */
interface Entry {
  readonly key: string
  readonly task: Effect.Effect<void>
  readonly urgent: boolean
  /** Runs in the send lane (unless its key holds an answer). */
  readonly send: boolean
  /** Tasks of other keys it waits for (a chat-wide task: its chat's earlier ones). */
  blockers: number
  /** Chat-wide tasks waiting for this one. */
  readonly after: Array<Entry>
}

/** A key's tasks in order (from `at`), whether the first runs, and how many answer someone. */
interface Key {
  readonly key: string
  entries: Array<Entry>
  at: number
  running: boolean
  urgent: number
  queuedIn: Lane | undefined
}

/** Keys whose first task is ready, in turn, and the workers taking them. */
interface Lane {
  /** Workers at most. */
  readonly max: number
  /** Workers started (running a task or idle). */
  running: number
  ready: Array<Key>
  head: number
  /** Idle workers' wake-ups. */
  readonly idle: Array<() => void>
}


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
