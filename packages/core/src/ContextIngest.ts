/**
 * The way in: applies events to the ContextStore at the Clock's time, with the TTL policy.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { type ApplyResult, type ContextEvent, decodeEvents } from "./ContextEvent.js"
import { ContextStore, type StoreError } from "./ContextStore.js"
import { InvalidEvent } from "./Errors.js"
import { KindRegistry, type Registry } from "./KindRegistry.js"
import { TtlPolicy } from "./TtlPolicy.js"

/**
 * The first event that names a kind nobody registered (a custom kind such as `x.ticket`
 * needs its descriptor in the `KindRegistry`), as the error that rejects its batch.
 *
 * @since 0.2.0
 * @category validation
 */
export const unregisteredKind = (kinds: Registry, events: ReadonlyArray<ContextEvent>): InvalidEvent | undefined => {
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!
    if (e.type === "object_activated" && e.kind !== undefined && kinds.get(e.kind) === undefined) {
      return new InvalidEvent({ path: `[${i}].kind`, message: `kind "${e.kind}" is not registered in the KindRegistry` })
    }
  }
  return undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ContextIngestShape {
  /**
   * Applies events, in order: the one way into the store, which every entrance takes (`ingest`,
   * the HTTP routes, the Telegram recorder, an agent's recorded actions). A batch naming a kind
   * the `KindRegistry` does not know ({@link unregisteredKind}) is refused whole, nothing
   * changed. The events are typed, so their Schema is not decoded again: untrusted input is
   * decoded first, by `ingest` or by the entrance with the same `ContextEventBatch` Schema.
   */
  readonly apply: (events: ReadonlyArray<ContextEvent>) => Effect.Effect<ApplyResult, InvalidEvent | StoreError>
  /**
   * Decodes untrusted input (one event or an array) and applies it; a malformed batch, or one
   * `apply` refuses, changes nothing.
   */
  readonly ingest: (input: unknown) => Effect.Effect<ApplyResult, InvalidEvent | StoreError>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ContextIngest extends Context.Tag("@deixis/core/ContextIngest")<ContextIngest, ContextIngestShape>() {}

const rejected = (error: InvalidEvent) =>
  Effect.logInfo("events rejected").pipe(
    Effect.annotateLogs({ path: error.path }),
    Effect.zipRight(Effect.fail(error))
  )

/**
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<ContextIngestShape, never, ContextStore | TtlPolicy> = Effect.gen(function*() {
  const store = yield* ContextStore
  const ttl = yield* TtlPolicy
  const kinds = yield* KindRegistry
  const write = (events: ReadonlyArray<ContextEvent>) =>
    Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => store.apply(events, { now, ttl, kinds })),
      Effect.tap((result) =>
        result.skipped.length === 0 ? Effect.void : Effect.logDebug("events skipped").pipe(
          Effect.annotateLogs({ skipped: result.skipped.length, first_path: result.skipped[0]!.path })
        )
      )
    )
  const apply = (events: ReadonlyArray<ContextEvent>): Effect.Effect<ApplyResult, InvalidEvent | StoreError> => {
    const refused = unregisteredKind(kinds, events)
    return refused === undefined ? write(events) : rejected(refused)
  }
  const ingest = (input: unknown) => Either.match(decodeEvents(input), { onLeft: rejected, onRight: apply })
  return { apply, ingest }
})

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ContextIngest, never, ContextStore | TtlPolicy> = Layer.effect(ContextIngest, make)
