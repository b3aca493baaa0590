/**
 * Updates of every Bot API 10.1 shape, generated from the specification's fields and types
 * (test/fixtures/bot-api.json): every update type, and messages carrying each Message field
 * that decides whether a message is recorded, in every kind of place (a chat, a forum or
 * private-chat topic, a direct-messages topic, a guest's chat), recorded through the recorder
 * on every store. None is rejected, none crashes, and each is recorded as FieldDecisions says.
 */
import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as fc from "fast-check"
import type { MessageFieldDecision, UpdateDecision } from "../src/FieldDecisions.js"
import { messageFieldDecisions, updateDecisions } from "../src/FieldDecisions.js"
import * as TelegramRecorder from "../src/TelegramRecorder.js"
import { directMessagesChatId, guestChatId, topicIdOf } from "../src/UpdateMapper.js"
import * as spec from "./utils/BotApiSpec.js"
import { stores } from "./utils/Stores.js"

type Arb = fc.Arbitrary<unknown>
const scalars: Readonly<Record<string, Arb>> = {
  Integer: fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
  Float: fc.double({ min: -1e6, max: 1e6, noNaN: true }),
  String: fc.oneof(fc.string({ maxLength: 24 }), fc.string({ unit: "grapheme", maxLength: 12 })),
  Boolean: fc.boolean(),
  True: fc.constant(true)
}
// A type the mapper never reads inside: any small object.
const opaque: Arb = fc.dictionary(fc.constantFrom("id", "text", "type", "date"), fc.oneof(fc.integer(), fc.string({ maxLength: 8 })), {
  maxKeys: 3
})

/** A value of a type as the specification writes it (`Array of PhotoSize`, `Integer | String`, `RichText`). */
const ofType = (type: string, depth: number): Arb => {
  const alternatives = type.split(" | ")
  if (alternatives.length > 1) return fc.oneof(...alternatives.map((t) => ofType(t, depth)))
  if (type.startsWith("Array of ")) {
    return depth > 4 ? fc.constant([]) : fc.array(ofType(type.slice("Array of ".length), depth + 1), { maxLength: 3 })
  }
  const scalar = scalars[type]
  if (scalar !== undefined) return scalar
  // Messages nested in messages (a reply, a pin, a checklist's message) are one level deep, as Telegram sends them.
  if (type === "Message" || type === "MaybeInaccessibleMessage") return depth > 1 ? fc.constant(undefined) : messageArb("content", depth + 1)
  const union = spec.unions[type]
  if (union !== undefined) {
    // Deep rich text ends in a string (Telegram's own nesting is shallow; core bounds depth anyway).
    if (depth > 5 && union.includes("String")) return scalars["String"]!
    return fc.oneof(...union.map((t) => ofType(t, depth + 1)))
  }
  if (spec.types[type] !== undefined) return struct(type, depth)
  return opaque
}

const struct = (type: string, depth: number): Arb => {
  const fields = spec.fieldsOf(type)
  const record: Record<string, Arb> = {}
  for (const [name, ft, , constant] of fields) record[name] = constant !== undefined ? fc.constant(constant) : ofType(ft, depth + 1)
  return fc.record(record, { requiredKeys: fields.filter(([, , required]) => required).map(([name]) => name) })
}

// Unique ids per generated message, so a check finds the message it generated and no other.
let next = 1
const chats = fc.constantFrom(
  { id: 501, type: "private", first_name: "Alice" },
  { id: -1001, type: "group", title: "Group" },
  { id: -1002, type: "supergroup", title: "Forum", is_forum: true },
  { id: -1003, type: "supergroup", title: "Channel DMs", is_direct_messages: true },
  { id: -1004, type: "channel", title: "Channel" }
)
const placeFields: ReadonlyArray<string> = ["message_thread_id", "is_topic_message", "direct_messages_topic", "guest_query_id", "from", "reply_to_message"]

/**
 * A message whose deciding field is one of `kind` (a content field, a notice, a migration), or
 * the field `only`, in any place.
 */
const messageArb = (kind: MessageFieldDecision["kind"], depth = 0, only?: string): Arb => {
  const fields = spec.fieldsOf("Message")
  const deciding = fields.filter(([name]) =>
    only !== undefined ? name === only : (messageFieldDecisions as Record<string, MessageFieldDecision>)[name]?.kind === kind
  )
  const type = (name: string) => fields.find(([n]) => n === name)![1]
  const place: Record<string, Arb> = {}
  for (const name of placeFields) if (depth === 0 || name !== "reply_to_message") place[name] = ofType(type(name), depth + 1)
  if (place["direct_messages_topic"] !== undefined) {
    place["direct_messages_topic"] = fc.record({ topic_id: fc.integer({ min: 1, max: 2 ** 52 }), user: ofType("User", depth + 1) })
  }
  // A group's upgrade goes from a chat of its own to a new one, leaving the other chats where they are.
  const own = kind === "migration"
  return fc.record({
    chat: own ? fc.constant(null) : chats,
    date: fc.integer({ min: 1_600_000_000, max: 1_900_000_000 }),
    place: fc.record(place, { requiredKeys: [] }),
    field: fc.constantFrom(...deciding).chain(([name, ft]) => fc.tuple(fc.constant(name), ofType(ft, depth + 1)))
  }).map(({ chat, date, field: [name, value], place }) => {
    const id = next++
    return {
      message_id: id,
      date,
      chat: chat ?? { id: -2_000_000 - id, type: "group", title: "Upgraded" },
      ...place,
      ...(value === undefined ? {} : { [name]: own ? -3_000_000 - id : value })
    }
  })
}

interface Generated {
  readonly update: Record<string, unknown>
  readonly type: string
}

const updateFields = spec.fieldsOf("Update").filter(([n]) => n !== "update_id")
const updateOf = ([type, ft]: spec.Field): fc.Arbitrary<Generated> => {
  const decision = (updateDecisions as Record<string, UpdateDecision>)[type]!
  const value = decision.kind === "message" ? messageArb("content") : ofType(ft, 0)
  return value.map((v) => ({ type, update: { update_id: next++, [type]: v } }))
}
const updateArb: fc.Arbitrary<Generated> = fc.constantFrom(...updateFields).chain(updateOf)
/** One message of each Message field that decides whether a message is recorded. */
const fieldArbs = Object.entries(messageFieldDecisions as Record<string, MessageFieldDecision>)
  .filter(([, d]) => d.kind !== "context" && d.kind !== "ignored")
  .map(([name, d]) => messageArb(d.kind, 0, name).map((m): Generated => ({ type: "message", update: { update_id: next++, message: m } })))
// Messages of every deciding kind: content, a service notice, a group's migration.
const serviceArb: fc.Arbitrary<Generated> = fc.constantFrom("notice", "migration").chain((kind) =>
  messageArb(kind as MessageFieldDecision["kind"]).map((m) => ({ type: "message", update: { update_id: next++, message: m } }))
)

/** Where a generated message must be recorded: its deixis chat and topic. */
interface PlacedMessage {
  readonly chat: { readonly id: number; readonly is_forum?: boolean }
  readonly guest_query_id?: unknown
  readonly direct_messages_topic?: { readonly topic_id: number }
  readonly is_topic_message?: boolean
  readonly message_thread_id?: number
}
const placeOf = (type: string, m: PlacedMessage) => {
  const chat = String(m.chat.id)
  if (type === "guest_message" || (typeof m.guest_query_id === "string" && m.guest_query_id !== "")) {
    return { chat_id: guestChatId(chat), topic_id: topicIdOf(m) }
  }
  if (m.direct_messages_topic !== undefined) {
    const topic = String(m.direct_messages_topic.topic_id)
    return { chat_id: directMessagesChatId(chat, topic), topic_id: topic }
  }
  return { chat_id: chat, topic_id: topicIdOf(m) }
}

const deciding = (m: Record<string, unknown>) =>
  Object.keys(m).filter((k) => {
    const d = (messageFieldDecisions as Record<string, MessageFieldDecision>)[k]
    return d !== undefined && d.kind !== "context" && d.kind !== "ignored"
  })

/** The update recorded on the store in context, held to its decision. */
const check = ({ type, update }: Generated) =>
  Effect.gen(function*() {
    const result = yield* TelegramRecorder.record(update, { botId: "999", botUsername: "deixis_bot", mode: "talkative" })
    const mapped = result.mapped
    const decision = (updateDecisions as Record<string, UpdateDecision>)[type]!
    assert.strictEqual(mapped.update_type, type)
    if (decision.kind === "skipped") {
      assert.strictEqual(mapped.skipped, `${type}: ${decision.why}`)
      return
    }
    if (decision.kind === "recorded") {
      // Its own rule: a closed poll, a reaction; an open poll or a vote is skipped by name.
      if (mapped.skipped !== undefined) assert.match(mapped.skipped, /^(poll: still open|poll_answer: carries no chat|malformed poll: id)/)
      else assert.isTrue(mapped.events.length + mapped.history.length + (mapped.retractions?.length ?? 0) > 0)
      return
    }
    const m = update[type] as Record<string, unknown>
    const kinds = deciding(m).map((k) => (messageFieldDecisions as Record<string, MessageFieldDecision>)[k]!.kind)
    if (kinds.includes("content")) {
      assert.isUndefined(mapped.skipped, mapped.skipped)
      const place = placeOf(type, m as unknown as PlacedMessage)
      assert.deepStrictEqual([mapped.scope?.chat_id, mapped.scope?.topic_id], [place.chat_id, place.topic_id])
      assert.isAtLeast(result.recorded, 1)
      const found = yield* Effect.flatMap(HistoryStore.HistoryStore, (h) => h.lookup(place, String(m["message_id"])))
      assert.isTrue(Option.isSome(found), `message ${m["message_id"]} not found in ${place.chat_id}/${place.topic_id}`)
      assert.include(["inbound_user", "outbound_agent"], Option.getOrThrow(found).item.kind)
    } else if (kinds.includes("migration")) {
      assert.isTrue(mapped.migration !== undefined || mapped.skipped?.startsWith("service message") === true)
    } else {
      assert.strictEqual(mapped.skipped, `service message (${deciding(m)[0]}): not conversation`)
      assert.strictEqual(result.recorded, 0)
    }
  })

const generated = fc.oneof({ weight: 4, arbitrary: updateArb }, { weight: 1, arbitrary: serviceArb })

for (const [store, services] of stores("shapes")) {
  describe(`Bot API 10.1 shapes generated from the specification, ${store}`, () => {
    layer(services, { timeout: "300 seconds" })((it) => {
      it.effect("none rejected, none crashing, each recorded as its decision says (property)", () =>
        Effect.gen(function*() {
          const runtime = yield* Effect.runtime<TelegramRecorder.Services>()
          const run = Runtime.runPromise(runtime)
          // Every update type and every deciding Message field at least twice, then any mix of them.
          for (const arb of [...updateFields.map(updateOf), ...fieldArbs]) {
            for (const g of fc.sample(arb, 2)) yield* check(g)
          }
          yield* Effect.promise(() =>
            fc.assert(fc.asyncProperty(generated, (g) => run(check(g))), { numRuns: store === "memory" ? 600 : 250 })
          )
        }), { timeout: 300_000 })
    })
  })
}
