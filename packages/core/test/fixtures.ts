import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import { ActiveContext, ListRequest } from "../src/ActiveContext.js"
import { ContextIngest } from "../src/ContextIngest.js"
import type { ContextEventInput } from "../src/ContextEvent.js"
import * as Deixis from "../src/Deixis.js"
import { ReferenceResolver, ResolveRequest } from "../src/ReferenceResolver.js"

/** 2026-11-22T10:00:00Z, the start of every test's clock. */
export const T0 = Date.parse("2026-11-22T10:00:00Z")
export const minutes = (n: number) => n * 60_000
export const iso = (ms: number) => new Date(ms).toISOString()

/** The core over a fresh memory store, scheduled sweep off, clock at T0. */
export const withCore = <A, E, R>(effect: Effect.Effect<A, E, R>, options: Parameters<typeof Deixis.layerMemory>[0] = {}) =>
  TestClock.setTime(T0).pipe(
    Effect.zipRight(effect),
    Effect.provide(Deixis.layerMemory({ ...options, store: { sweep_interval: 0, ...options.store } }))
  )

export const advance = (ms: number) => TestClock.adjust(ms)

export const ingest = (...events: ReadonlyArray<ContextEventInput>) =>
  Effect.flatMap(ContextIngest, (i) => i.ingest(events))

export const resolve = (request: typeof ResolveRequest.Encoded) =>
  Effect.flatMap(ReferenceResolver, (r) => r.resolve(Schema.decodeUnknownSync(ResolveRequest)(request)))

export const list = (request: typeof ListRequest.Encoded) =>
  Effect.flatMap(ActiveContext, (a) => a.list(Schema.decodeUnknownSync(ListRequest)(request)))

type MessageOptions = Omit<Extract<ContextEventInput, { type: "message_observed" }>, "type" | "message_id" | "chat_id"> & {
  readonly chat_id?: string | number
}

/** A message observed in chat 1 (unless `chat_id` says otherwise), sent now. */
export const message = (id: number, options: MessageOptions = {}): ContextEventInput => ({
  type: "message_observed",
  chat_id: 1,
  message_id: id,
  sender_user_id: 100,
  ...options
})

let sequence = 0
/** An explicit activation of the object carried by (or created for) a message. */
export const activate = (
  reason: Extract<ContextEventInput, { type: "object_activated" }>["reason"],
  target: Omit<Extract<ContextEventInput, { type: "object_activated" }>, "type" | "event_id" | "chat_id" | "reason"> & {
    readonly chat_id?: string | number
    readonly event_id?: string
  }
): ContextEventInput => ({
  type: "object_activated",
  event_id: target.event_id ?? `e${++sequence}`,
  chat_id: 1,
  reason,
  ...target
})
