import { ContextIngest } from "@deixis/core/ContextIngest"
import * as Deixis from "@deixis/core/Deixis"
import * as Sqlite from "@deixis/store-sql/sqlite"
import { Effect, Layer } from "effect"

// A file next to the bot (or Pg.layer({ url: Redacted.make(process.env.DATABASE_URL!) }) from
// "@deixis/store-sql/pg"); only the engine imported here needs its driver installed.
const stores = Sqlite.layer({ filename: "deixis.db" })

// Core's services (ingest, resolve_reference_target, list_active_context_objects) over it;
// HistoryStore and ConversationStateStore come from the same layer.
const Live = Deixis.layerWith(stores).pipe(Layer.provideMerge(stores))

const program = Effect.gen(function*() {
  const ingest = yield* ContextIngest
  const result = yield* ingest.ingest([
    { type: "message_observed", chat_id: -1001, message_id: 42, links: [{ url: "https://example.com" }] }
  ])
  yield* Effect.log(`applied ${result.applied} event(s)`)
})

Effect.runPromise(program.pipe(Effect.provide(Live)))
