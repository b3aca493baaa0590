/**
 * A forum topic, a few messages, one explicit activation, and both tools' answers.
 * Run: `pnpm example` at the repository root (or here).
 */
import { ActiveContext, ContextIngest, Deixis, ReferenceResolver } from "@deixis/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

const program = Effect.gen(function*() {
  const ingest = yield* ContextIngest.ContextIngest
  const resolver = yield* ReferenceResolver.ReferenceResolver
  const active = yield* ActiveContext.ActiveContext

  // Events are the only way in: what was said (metadata, links, media)... Times default to
  // the Clock's now; real events carry sent_at / at (RFC 3339).
  yield* ingest.ingest([
    {
      type: "message_observed", chat_id: -1001, topic_id: 7, message_id: 10, sender_user_id: 42,
      links: [{ url: "https://example.com/rust-2026", title: "Rust in 2026" }]
    },
    {
      type: "message_observed", chat_id: -1001, topic_id: 7, message_id: 11, sender_user_id: 43, media: [{ kind: "media.image", file_id: "AgAD-cat", label: "cat.jpg" }]
    },
    {
      type: "message_observed", chat_id: -1001, topic_id: 8, message_id: 12, sender_user_id: 44, links: [{ url: "https://example.com/other-topic" }]
    },
    // ...and what the bot did: it summarized the article. Only this makes an object active.
    {
      type: "object_activated", event_id: "summary-1", chat_id: -1001, reason: "summarized",
      source_message_id: 10, kind: "link"
    },
    {
      type: "message_observed", chat_id: -1001, topic_id: 7, message_id: 13, sender_user_id: 43
    }
  ])

  // "What does the article say about async?" — the caller's upstream step normalized the words.
  const resolved = yield* resolver.resolve(Schema.decodeSync(ReferenceResolver.ResolveRequest)({
    chat_id: -1001, topic_id: 7, current_message_id: 13, sender_user_id: 43,
    raw_user_text: "what does the article say about async?",
    normalized_reference_hints: { target_kind_hint: "article" }
  }))
  const listed = yield* active.list(Schema.decodeSync(ActiveContext.ListRequest)({
    chat_id: -1001, topic_id: 7, current_message_id: 13, sender_user_id: 43
  }))
  const { diagnostics: _, ...answer } = Schema.encodeSync(ReferenceResolver.ResolveResult)(resolved)
  console.log("resolve_reference_target →", JSON.stringify(answer, null, 2))
  console.log("list_active_context_objects →", JSON.stringify(Schema.encodeSync(ActiveContext.ListResult)(listed), null, 2))
})

program.pipe(
  Effect.provide(Deixis.layerMemory()),
  Effect.runPromise
)
