// Derives test/fixtures/bot-api.json from the machine-readable Bot API specification
// (github.com/PaulSonOfLars/telegram-bot-api-spec, api.json): the fields of Update and Message,
// and of the types the mapper reads inside them, with their types — nothing else.
//   node scripts/bot-api-fixture.mjs <path to api.json> <commit of that repository>
import * as fs from "node:fs"

const [, , file, commit] = process.argv
if (file === undefined || commit === undefined) {
  console.error("usage: node scripts/bot-api-fixture.mjs <api.json> <commit>")
  process.exit(2)
}
const spec = JSON.parse(fs.readFileSync(file, "utf8"))
// The types the mapper reads a field of; any other type is opaque to it (generated as an object).
const read = [
  "Update", "Message", "User", "Chat", "MessageEntity", "PhotoSize", "Animation", "Audio", "Document", "Video",
  "VideoNote", "Voice", "Sticker", "Poll", "TextQuote", "ExternalReplyInfo", "DirectMessagesTopic", "Checklist",
  "ChecklistTask", "ChecklistTasksDone", "ChecklistTasksAdded", "RichMessage", "RichBlockCaption", "RichBlockListItem",
  "RichBlockTableCell", "Venue", "Dice", "MessageReactionUpdated", "PollAnswer", "MessageOrigin", "ReactionType",
  "RichText", "RichBlock", "MaybeInaccessibleMessage", "LivePhoto"
]
const types = {}
const unions = {}
const add = (name) => {
  if (types[name] !== undefined || unions[name] !== undefined) return
  const t = spec.types[name]
  if (t === undefined) throw new Error(`no type ${name}`)
  if (t.subtypes !== undefined) {
    unions[name] = t.subtypes
    for (const s of t.subtypes) if (spec.types[s] !== undefined) add(s)
    return
  }
  types[name] = (t.fields ?? []).map((f) => {
    const always = f.name === "type" ? /always "([^"]+)"/.exec(f.description) : null
    return always === null
      ? [f.name, f.types.join(" | "), f.required]
      : [f.name, f.types.join(" | "), f.required, always[1]]
  })
}
for (const name of read) add(name)
const out = {
  source: `github.com/PaulSonOfLars/telegram-bot-api-spec api.json at ${commit}`,
  version: spec.version,
  release_date: spec.release_date,
  changelog: spec.changelog,
  note: "Derived facts (field names, types, required, the constant of a `type` field) of the types the mapper reads; regenerate with scripts/bot-api-fixture.mjs.",
  unions,
  types
}
fs.writeFileSync(new URL("../test/fixtures/bot-api.json", import.meta.url), JSON.stringify(out, null, 1) + "\n")
console.log(`${Object.keys(types).length} types, ${Object.keys(unions).length} unions`)
