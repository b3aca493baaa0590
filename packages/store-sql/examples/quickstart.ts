/**
 * The README's example: core's services over a SQLite file, with the history and
 * conversation-state stores from the same layer. Run: `node --conditions=@deixis/source
 * --import tsx examples/quickstart.ts` (writes deixis-example.db in the working directory).
 */
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { ContextIngest } from "@deixis/core/ContextIngest"
import * as Deixis from "@deixis/core/Deixis"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { SqlStore } from "../src/index.js"

const stores = SqlStore.layerSqlite({ filename: "deixis-example.db" })
const Live = Deixis.layerWith(stores).pipe(Layer.provideMerge(stores))

const program = Effect.gen(function*() {
  const ingest = yield* ContextIngest
  const result = yield* ingest.ingest([
    { type: "message_observed", chat_id: -1001, message_id: 42, links: [{ url: "https://example.com" }] }
  ])
  const history = yield* HistoryStore
  yield* Effect.log("applied", result.applied, "history items", (yield* history.stats).items)
})

Effect.runPromise(program.pipe(Effect.provide(Live)))
