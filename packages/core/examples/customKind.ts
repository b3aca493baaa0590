/**
 * A team's own kind: `x.ticket`, registered with a descriptor, accepted by ingest and returned
 * by both tools. Run: `node --conditions=@deixis/source --import tsx examples/customKind.ts`.
 */
import { ActiveContext, ContextIngest, ContextStore, Deixis, KindRegistry, ReferenceResolver } from "@deixis/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

// A ticket stays active 45 minutes (short_medium); "the file" hints find it too.
const ticket = KindRegistry.custom({ kind: "x.ticket", ttl_class: "short_medium", hints: ["file"] })

const program = Effect.gen(function*() {
  const ingest = yield* ContextIngest.ContextIngest
  const resolver = yield* ReferenceResolver.ReferenceResolver
  const active = yield* ActiveContext.ActiveContext
  yield* ingest.ingest([
    { type: "message_observed", chat_id: -1001, message_id: 20, sender_user_id: 42 },
    // The bot opened a ticket from message 20.
    {
      type: "object_activated", event_id: "ticket-1", chat_id: -1001, reason: "followup_attached",
      source_message_id: 20, kind: "x.ticket", title_or_label: "TCK-42: login fails"
    },
    { type: "message_observed", chat_id: -1001, message_id: 21, sender_user_id: 42 }
  ])
  const resolved = yield* resolver.resolve(Schema.decodeSync(ReferenceResolver.ResolveRequest)({
    chat_id: -1001, current_message_id: 21, normalized_reference_hints: { target_kind_hint: "x.ticket" }
  }))
  const listed = yield* active.list(Schema.decodeSync(ActiveContext.ListRequest)({
    chat_id: -1001, current_message_id: 21, allowed_kinds: ["x.ticket"]
  }))
  console.log(JSON.stringify({
    status: resolved.status,
    kind: resolved.best_match?.kind,
    label: resolved.best_match?.title_or_label,
    listed: listed.objects.map((o) => o.kind)
  }))
})

program.pipe(
  Effect.provide(Deixis.layerWithRules(ContextStore.layerMemory(), { kinds: [ticket] })),
  Effect.runPromise
)
