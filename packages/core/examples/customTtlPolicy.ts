/**
 * A TTL policy of a team's own: per-chat overrides over today's rules. Chat -1002 is busy, so
 * its objects stay active 10 minutes instead of 2 hours. Every store keeps what the policy
 * wrote. Run: `node --conditions=@deixis/source --import tsx examples/customTtlPolicy.ts`.
 */
import { ActiveContext, ContextIngest, ContextStore, Deixis, TtlPolicy } from "@deixis/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

const PerChatPolicy = Layer.sync(TtlPolicy.TtlPolicy, (): TtlPolicy.TtlPolicyShape => {
  const base = TtlPolicy.make(TtlPolicy.defaults)
  const busy = TtlPolicy.make({ ...TtlPolicy.defaults, medium: 10 * 60_000 })
  const pick = (chatId: string) => (chatId === "-1002" ? busy : base)
  return {
    classFor: base.classFor,
    ttlOf: (o) => pick(o.chat_id).ttlOf(o),
    activate: (o, reason, at) => pick(o.chat_id).activate(o, reason, at),
    pendingUntil: (o) => pick(o.chat_id).pendingUntil(o),
    closePoll: (o, at) => pick(o.chat_id).closePoll(o, at),
    fireReminder: (o, at) => pick(o.chat_id).fireReminder(o, at),
    cancelReminder: (o, at) => pick(o.chat_id).cancelReminder(o, at)
  }
})

const program = Effect.gen(function*() {
  const ingest = yield* ContextIngest.ContextIngest
  const active = yield* ActiveContext.ActiveContext
  const minutesLeft: Record<string, number> = {}
  for (const chat of [-1001, -1002]) {
    yield* ingest.ingest([
      { type: "message_observed", chat_id: chat, message_id: 1, links: [{ url: "https://example.com/a" }] },
      { type: "object_activated", event_id: "s", chat_id: chat, reason: "summarized", source_message_id: 1, kind: "link" }
    ])
    const listed = yield* active.list(Schema.decodeSync(ActiveContext.ListRequest)({ chat_id: chat, current_message_id: 2 }))
    const link = listed.objects[0]!
    minutesLeft[chat] = Math.round((link.active_until - listed.generated_at) / 60_000)
  }
  console.log(JSON.stringify({ minutes_left: minutesLeft }))
})

program.pipe(
  Effect.provide(Deixis.layerWithRules(ContextStore.layerMemory(), { policy: PerChatPolicy })),
  Effect.runPromise
)
