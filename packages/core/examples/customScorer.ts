/**
 * A scorer feature of a team's own: similarity of each candidate to the request, from the
 * team's embeddings. It adds to the built-in features and shows in diagnostics under its
 * name. Run: `node --conditions=@deixis/source --import tsx examples/customScorer.ts`.
 */
import { ContextIngest, ContextStore, Deixis, ReferenceResolver, Scoring } from "@deixis/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

// Stand-ins for the team's embedding store: one vector per object, and the request's.
const vectors: Record<string, ReadonlyArray<number>> = {
  "-1001/10/link": [0.9, 0.1],
  "-1001/11/link": [0.1, 0.9]
}
const asked: ReadonlyArray<number> = [1, 0]
const cosine = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => {
  const dot = a.reduce((sum, x, i) => sum + x * b[i]!, 0)
  return dot / (Math.hypot(...a) * Math.hypot(...b))
}

const embedding: Scoring.CustomFeature = {
  name: "x.embedding",
  // Up to 40 points for a close match; 0 (not fired) without a vector.
  value: (entry) => {
    const v = vectors[entry.object.object_id]
    return v === undefined ? 0 : Math.round(40 * cosine(v, asked))
  }
}

const program = Effect.gen(function*() {
  const ingest = yield* ContextIngest.ContextIngest
  const resolver = yield* ReferenceResolver.ReferenceResolver
  yield* ingest.ingest([
    { type: "message_observed", chat_id: -1001, message_id: 10, links: [{ url: "https://example.com/rust" }] },
    { type: "object_activated", event_id: "s1", chat_id: -1001, reason: "summarized", source_message_id: 10, kind: "link" },
    { type: "message_observed", chat_id: -1001, message_id: 11, links: [{ url: "https://example.com/go" }] },
    { type: "object_activated", event_id: "s2", chat_id: -1001, reason: "summarized", source_message_id: 11, kind: "link" },
    { type: "message_observed", chat_id: -1001, message_id: 12 }
  ])
  const resolved = yield* resolver.resolve(Schema.decodeSync(ReferenceResolver.ResolveRequest)({
    chat_id: -1001, current_message_id: 12, normalized_reference_hints: { target_kind_hint: "link" }
  }))
  console.log(JSON.stringify({
    status: resolved.status,
    best: resolved.best_match?.object_id,
    embedding: resolved.diagnostics.scored[0]?.features["x.embedding"]
  }))
})

program.pipe(
  Effect.provide(Deixis.layerWithRules(ContextStore.layerMemory(), { scorer: Scoring.layer({}, [embedding]) })),
  Effect.runPromise
)
