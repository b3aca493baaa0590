import { Cli, Import } from "@deixis/cli"
import { Effect } from "effect"
import * as fs from "node:fs"

// A two-message Telegram Desktop export (what "Export chat history → JSON" writes as result.json).
fs.writeFileSync("result.json", JSON.stringify({
  name: "Book Club",
  type: "private_supergroup",
  id: 1234567890,
  messages: [
    { id: 1, type: "message", date_unixtime: "1735725600", from: "Ann", from_id: "user11", text: "Next book: https://example.com/dune" },
    { id: 2, type: "message", date_unixtime: "1735725660", from: "Ben", from_id: "user12", reply_to_message_id: 1, text: "Ordered it" }
  ]
}))

// The same recording path as live updates, into a SQLite file; `deixis import result.json` does this.
const program = Import.importFile("result.json").pipe(
  Effect.provide(Cli.services({ _tag: "sqlite", filename: "deixis-import.db" })),
  Effect.tap((summary) => Effect.log(`imported ${summary.messages} messages into chat ${summary.chat_id}`))
)

Effect.runPromise(program)
