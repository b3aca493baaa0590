/**
 * What "this" means where the user pointed more precisely than a reply: a quote of one part of
 * the replied message, "my last photo", a reply to a pin notice. The fixture corpus (Telegram's
 * exact update shapes, without the group's upgrade, which moves the group's messages to the
 * supergroup) is recorded through the recorder on every store — memory, a SQLite file, a
 * PostgreSQL schema — and each decision is a row of a table, resolved the way the bot resolves
 * (the mapped scope) and the way an HTTP caller does (the ids as Telegram names them).
 */
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import { ContextIngest } from "@deixis/core/ContextIngest"
import * as ContextStore from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import * as ReminderStore from "@deixis/core/ReminderStore"
import * as UpdateInbox from "@deixis/core/UpdateInbox"
import type { ContextEventInput } from "@deixis/core/ContextEvent"
import { ReferenceResolver, ResolveRequest, type ResolveResult } from "@deixis/core/ReferenceResolver"
import * as Pg from "@deixis/store-sql/Pg"
import * as Sqlite from "@deixis/store-sql/Sqlite"
import * as SqlStore from "@deixis/store-sql/SqlStore"
import { assert, describe, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as DeixisTelegraf from "../src/DeixisTelegraf.js"
import * as TelegramRecorder from "../src/TelegramRecorder.js"
import { chats, corpus, options } from "../src/TelegramFixtures.js"
import { mapUpdate } from "../src/UpdateMapper.js"
import { pgUrl as testPgUrl } from "deixis-test-support/pg"

const pgUrl = testPgUrl()
// The corpus's messages are dated D; the tools run a minute later.
const now = (1_771_000_000 + 60) * 1000

const sqlite = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "deixis-telegraf-resolution-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ),
  (dir) => Sqlite.layer({ filename: path.join(dir, "deixis.db"), sweep_interval: 0 })
))

const postgres = Layer.suspend(() => {
  const schema = `deixis_telegraf_${Date.now().toString(36)}_${process.pid}_${Math.random().toString(36).slice(2, 6)}`
  const drop = Layer.scopedDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.addFinalizer(() => Effect.orDie(sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)))))
  return SqlStore.layerStores({ schema, sweep_interval: 0 }).pipe(
    Layer.provide(Layer.provideMerge(drop, Pg.layerClient({ url: pgUrl, schema, max_connections: 4 })))
  )
})

const S = String(chats.supergroup.id)
const F = String(chats.forum.id)
const P = String(chats.private.id)
const G = String(chats.group.id)

/** What each case does besides the corpus: objects activated elsewhere, the distractors of the pin cases. */
const distractors: ReadonlyArray<ContextEventInput> = [
  // "a photo inspected elsewhere in the chat": active, so without the reply it would win.
  { type: "object_activated", event_id: "inspect-82", chat_id: S, reason: "media_inspected", object_id: `${S}/82/media.image` },
  { type: "object_activated", event_id: "inspect-12", chat_id: P, reason: "media_inspected", object_id: `${P}/12/media.image` },
  { type: "object_activated", event_id: "fetch-40", chat_id: G, reason: "url_fetched", object_id: `${G}/40/link` },
  { type: "object_activated", event_id: "summary-501", chat_id: F, reason: "summarized", object_id: `${F}/501/link` }
]

/** The corpus recorded (the group's upgrade left out), then the distractors, at `now`. */
const recorded = Layer.effectDiscard(Effect.gen(function*() {
  yield* TestClock.setTime(now)
  for (const f of corpus) {
    if (f.expected.migration === undefined) yield* TelegramRecorder.record(f.update, { ...options, mode: "talkative" })
  }
  yield* Effect.flatMap(ContextIngest, (ingest) => ingest.ingest(distractors))
}))

const fixture = (name: string) => {
  const found = corpus.find((f) => f.name === name)
  if (found === undefined) throw new Error(`no fixture "${name}"`)
  return found
}

/** The request the bot makes for a fixture's message: its mapped scope. */
const scopeOf = (name: string) => {
  const scope = mapUpdate(fixture(name).update, options).scope!
  return {
    chat_id: scope.chat_id,
    topic_id: scope.topic_id,
    current_message_id: scope.message_id,
    reply_to_message_id: scope.reply_to_message_id,
    sender_user_id: scope.sender_user_id
  }
}

/** The message a fixture's update replies to, as Telegram names it (a pin notice's own id). */
const telegramReplyId = (name: string): string => {
  const update = fixture(name).update as unknown as { message: { reply_to_message: { message_id: number } } }
  return String(update.message.reply_to_message.message_id)
}

const resolve = (request: typeof ResolveRequest.Encoded) =>
  Effect.flatMap(ReferenceResolver, (r) => Effect.flatMap(Schema.decodeUnknown(ResolveRequest)(request), r.resolve))

/** The outcome a row names: the winner's id and the reasons it must carry, or the candidates a tie lists. */
type Outcome =
  | { readonly resolved: string; readonly reasons?: ReadonlyArray<string> }
  | { readonly ambiguous: ReadonlyArray<string> }

const check = (result: ResolveResult, outcome: Outcome, why: string) => {
  if ("resolved" in outcome) {
    assert.strictEqual(result.status, "resolved", `${why}: ${result.status} ${result.candidates.map((c) => c.object_id).join(", ")}`)
    assert.strictEqual(result.best_match?.object_id, outcome.resolved, why)
    for (const reason of outcome.reasons ?? []) assert.include(result.reasons, reason, why)
  } else {
    assert.strictEqual(result.status, "ambiguous", `${why}: ${result.status} ${result.best_match?.object_id}`)
    assert.sameMembers(result.candidates.map((c) => c.object_id), [...outcome.ambiguous], why)
  }
}

const noQuoteMatch = (result: ResolveResult, why: string) => {
  for (const c of result.candidates) assert.notInclude(c.reasons, "quote_match", why)
  assert.notInclude(result.reasons, "quote_match", why)
}

interface QuoteRow {
  readonly name: string
  readonly request: typeof ResolveRequest.Encoded
  readonly outcome: Outcome
}

// Quotes select. The recorded quote (the bot's request, or any request for the recorded message)
// and a caller's own quote_text, against the same replied messages without a quote.
const quoteRows: ReadonlyArray<QuoteRow> = [
  {
    name: "a quote of the second of two links resolves to that link",
    request: scopeOf("supergroup: a reply quoting one of two links carries the quote's text and UTF-16 position"),
    outcome: { resolved: `${S}/93/link/1`, reasons: ["exact_reply_target", "quote_match"] }
  },
  {
    name: "the same reply target without a quote is ambiguous between its two links",
    request: { chat_id: S, current_message_id: 9001, reply_to_message_id: 93, sender_user_id: 1002 },
    outcome: { ambiguous: [`${S}/93/link`, `${S}/93/link/1`] }
  },
  {
    name: "a caller's quote_text (no position) of the first link resolves to it",
    request: { chat_id: S, current_message_id: 9001, reply_to_message_id: 93, sender_user_id: 1002, quote_text: "https://example.com/plan-a" },
    outcome: { resolved: `${S}/93/link`, reasons: ["quote_match"] }
  },
  {
    name: "a caller's quote_text with its UTF-16 position selects by position",
    request: { chat_id: S, current_message_id: 9001, reply_to_message_id: 93, sender_user_id: 1002, quote_text: "and https://exam", quote_position: 35 },
    outcome: { resolved: `${S}/93/link/1`, reasons: ["quote_match"] }
  },
  {
    name: "a caller's quote of both links keeps them both",
    request: { chat_id: S, current_message_id: 9001, reply_to_message_id: 93, sender_user_id: 1002, quote_text: "plan-a and https://example.com/plan-b", quote_position: 28 },
    outcome: { ambiguous: [`${S}/93/link`, `${S}/93/link/1`] }
  },
  {
    name: "a caller's quote that overlaps no part changes nothing",
    request: { chat_id: S, current_message_id: 9001, reply_to_message_id: 93, sender_user_id: 1002, quote_text: "Compare", quote_position: 0 },
    outcome: { ambiguous: [`${S}/93/link`, `${S}/93/link/1`] }
  },
  {
    name: "an album member's caption quoted resolves to the captioned photo",
    request: scopeOf("supergroup album: a reply quoting the words of a member's caption"),
    outcome: { resolved: `${S}/95/media.image`, reasons: ["quote_match"] }
  },
  {
    name: "the link inside the caption quoted (after an emoji: UTF-16 offsets) resolves to the link",
    request: scopeOf("supergroup album: a reply quoting the link inside a member's caption"),
    outcome: { resolved: `${S}/95/link`, reasons: ["quote_match"] }
  },
  {
    name: "the captioned member replied to without a quote is ambiguous between its photo and its link",
    request: { chat_id: S, current_message_id: 9002, reply_to_message_id: 95, sender_user_id: 1001 },
    outcome: { ambiguous: [`${S}/95/media.image`, `${S}/95/link`] }
  },
  {
    name: "a quote from another topic of the forum selects the link it overlaps",
    request: scopeOf("forum: a reply from another topic quoting one of the message's links"),
    outcome: { resolved: `${F}/526/link/1`, reasons: ["exact_reply_target", "quote_match"] }
  }
]

interface PinRow {
  readonly name: string
  readonly fixture: string
  readonly pinned: string
}

// Pin notices everywhere: the reply means the pinned message, in every kind of chat.
const pinRows: ReadonlyArray<PinRow> = [
  { name: "private chat", fixture: "private chat: a reply to a pin notice means the pinned message", pinned: `${P}/18/link` },
  { name: "group", fixture: "group: a reply to a pin notice means the pinned message", pinned: `${G}/52/link` },
  { name: "supergroup", fixture: "supergroup: a reply to a pin notice means the pinned message", pinned: `${S}/60/link` },
  {
    name: "supergroup reply thread",
    fixture: "supergroup reply thread: a reply to a pin notice carries the notice's thread id and means the pinned message",
    pinned: `${S}/90/link`
  },
  { name: "forum topic", fixture: "forum topic: a reply to a pin notice in the topic means the pinned message", pinned: `${F}/520/link` },
  { name: "forum General topic", fixture: "forum General topic: a reply to a pin notice means the pinned message", pinned: `${F}/523/link` }
]

interface OwnershipRow {
  readonly name: string
  readonly sender: number
  readonly hints: Record<string, string>
  readonly outcome: Outcome
}

// Ownership scopes ordinals, in the supergroup (messages of one date: ids order them). Images:
// Carol's 70, 71 (an album) and 95; Alice's 82. Bob's objects: the link of 61, the animation of
// 78, the file of 81, the link of 90.
const ownershipRows: ReadonlyArray<OwnershipRow> = [
  {
    name: "my last photo is the sender's own, though others posted photos since",
    sender: 1001,
    hints: { ownership_hint: "mine", ordinal_hint: "last", target_kind_hint: "image" },
    outcome: { resolved: `${S}/82/media.image`, reasons: ["owned_by_sender", "positional_match", "kind_match"] }
  },
  {
    name: "their last photo is the newest photo not the sender's",
    sender: 1001,
    hints: { ownership_hint: "others", ordinal_hint: "last", target_kind_hint: "image" },
    outcome: { resolved: `${S}/95/media.image`, reasons: ["positional_match", "kind_match"] }
  },
  {
    name: "my first photo counts from the sender's oldest",
    sender: 1003,
    hints: { ownership_hint: "mine", ordinal_hint: "first", target_kind_hint: "image" },
    outcome: { resolved: `${S}/70/media.image`, reasons: ["positional_match"] }
  },
  {
    name: "my second photo is the sender's second",
    sender: 1003,
    hints: { ownership_hint: "mine", ordinal_hint: "second", target_kind_hint: "image" },
    outcome: { resolved: `${S}/71/media.image`, reasons: ["positional_match"] }
  },
  {
    name: "their first photo, for Carol, is Alice's",
    sender: 1003,
    hints: { ownership_hint: "others", ordinal_hint: "first", target_kind_hint: "image" },
    outcome: { resolved: `${S}/82/media.image`, reasons: ["positional_match"] }
  },
  {
    name: "my last file is the sender's own file",
    sender: 1002,
    hints: { ownership_hint: "mine", ordinal_hint: "last", target_kind_hint: "file" },
    outcome: { resolved: `${S}/81/media.document`, reasons: ["owned_by_sender", "kind_match"] }
  },
  {
    name: "my latest link is the sender's newest link, though others posted links since",
    sender: 1002,
    hints: { ownership_hint: "mine", positional_hint: "latest", target_kind_hint: "link" },
    outcome: { resolved: `${S}/90/link`, reasons: ["owned_by_sender", "positional_match"] }
  },
  {
    name: "their previous link is the one before others' newest",
    sender: 1003,
    hints: { ownership_hint: "others", positional_hint: "previous", target_kind_hint: "link" },
    outcome: { resolved: `${S}/93/link`, reasons: ["positional_match"] }
  }
]

// No scheduled sweep: the test clock jumps to `now`, and a sweep every minute would run for every minute since 1970.
const memory = Layer.mergeAll(
  ContextStore.layerMemory({ sweep_interval: 0 }),
  HistoryStore.layerMemory({ sweep_interval: 0 }),
  ConversationState.layerMemory,
  ReminderStore.layerMemory,
  UpdateInbox.layerMemory
)

const stores = [
  ["memory", DeixisTelegraf.layerWith(memory)],
  ["sqlite", DeixisTelegraf.layerWith(sqlite)],
  ["postgres", DeixisTelegraf.layerWith(postgres)]
] as const

for (const [store, services] of stores) {
  describe(`resolution over the corpus, ${store}`, () => {
    layer(Layer.provideMerge(recorded, services), { timeout: "120 seconds" })((it) => {
      describe("quotes select", () => {
        for (const row of quoteRows) {
          it.effect(row.name, () =>
            Effect.gen(function*() {
              yield* TestClock.setTime(now)
              check(yield* resolve(row.request), row.outcome, row.name)
            }))
        }

        it.effect("a quote that overlaps no part of the replied message (across topics) changes nothing", () =>
          Effect.gen(function*() {
            yield* TestClock.setTime(now)
            const quoted = scopeOf("forum: a reply to a message of another topic of the same chat is a reply")
            const withQuote = yield* resolve(quoted)
            const without = yield* resolve({ ...quoted, current_message_id: "9003" })
            noQuoteMatch(withQuote, "the quote \"v2 notes\" overlaps no link")
            assert.deepStrictEqual(
              [withQuote.status, withQuote.best_match?.object_id, withQuote.reasons],
              [without.status, without.best_match?.object_id, without.reasons]
            )
          }))

        it.effect("a quote of a message of another chat (external_reply) has no reply target here and changes nothing", () =>
          Effect.gen(function*() {
            yield* TestClock.setTime(now)
            const quoted = scopeOf("supergroup: a reply to a message of another chat never names a message of this chat")
            assert.isNull(quoted.reply_to_message_id)
            const result = yield* resolve(quoted)
            noQuoteMatch(result, "no reply target")
            const plain = yield* resolve({ ...quoted, current_message_id: "9004" })
            assert.deepStrictEqual([result.status, result.best_match?.object_id], [plain.status, plain.best_match?.object_id])
          }))
      })

      describe("a reply to a pin notice means the pinned message", () => {
        for (const row of pinRows) {
          it.effect(`${row.name}: as the bot resolves it (the mapped reply target)`, () =>
            Effect.gen(function*() {
              yield* TestClock.setTime(now)
              const result = yield* resolve(scopeOf(row.fixture))
              check(result, { resolved: row.pinned, reasons: ["exact_reply_target"] }, row.name)
              assert.strictEqual(result.scope_used, "reply_chain")
            }))

          it.effect(`${row.name}: as Telegram names it (the notice's own id as the reply target)`, () =>
            Effect.gen(function*() {
              yield* TestClock.setTime(now)
              const result = yield* resolve({ ...scopeOf(row.fixture), reply_to_message_id: telegramReplyId(row.fixture) })
              check(result, { resolved: row.pinned, reasons: ["exact_reply_target"] }, row.name)
              assert.strictEqual(result.scope_used, "reply_chain")
            }))
        }
      })

      describe("ownership scopes ordinals", () => {
        for (const row of ownershipRows) {
          it.effect(row.name, () =>
            Effect.gen(function*() {
              yield* TestClock.setTime(now)
              const result = yield* resolve({ chat_id: S, current_message_id: 9100, sender_user_id: row.sender, normalized_reference_hints: row.hints })
              check(result, row.outcome, row.name)
            }))
        }
      })
    })
  })
}
