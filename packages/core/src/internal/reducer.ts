/**
 * The one place events become state. Every ContextStore adapter applies events through
 * `applyEvent`, over its own implementation of `StateWriter`, so adapters cannot drift. The
 * rules come from the TTL policy and the kind registry passed in, never from module functions.
 */
import type { ChatInfo } from "../ChatInfo.js"
import { effectiveTopic, unknownChat } from "../ChatInfo.js"
import type { ContextObject, MessageMeta } from "../ContextObject.js"
import { objectIdFor } from "../ContextObject.js"
import { addQuotedIn, partOf, selects } from "../Quote.js"
import type { ApplyResult, ContextEvent, MessageEdited, MessageObserved, ObjectActivated } from "../ContextEvent.js"
import type { Quote } from "../Quote.js"
import { defaultRegistry, type Registry } from "../KindRegistry.js"
import type { ObjectKind } from "../ObjectKind.js"
import type { TtlPolicyShape } from "../TtlPolicy.js"

/** Synchronous reads and writes an adapter offers the reducer, within one batch. */
export interface StateWriter {
  readonly message: (chatId: string, messageId: string) => MessageMeta | undefined
  readonly object: (chatId: string, objectId: string) => ContextObject | undefined
  readonly objectsOfMessage: (chatId: string, messageId: string) => ReadonlyArray<ContextObject>
  readonly pollObject: (pollId: string) => { readonly chat_id: string; readonly object_id: string } | undefined
  readonly seen: (chatId: string, eventId: string) => boolean
  readonly putMessage: (message: MessageMeta) => void
  /** `previous` is the stored version being replaced, undefined for a new object. */
  readonly putObject: (object: ContextObject, previous: ContextObject | undefined) => void
  readonly putPoll: (pollId: string, chatId: string, objectId: string) => void
  /** A close for a poll not seen yet, applied when the poll is seen. */
  readonly pendingPollClose: (pollId: string) => { readonly event_id: string; readonly at: number } | undefined
  readonly putPendingPollClose: (pollId: string, close: { readonly event_id: string; readonly at: number } | undefined) => void
  readonly markSeen: (chatId: string, eventId: string) => void
  /** What is known of a chat (forum, migration); undefined for a chat never recorded. */
  readonly chat: (chatId: string) => ChatInfo | undefined
  readonly putChat: (info: ChatInfo) => void
  /** Removes a stored object (an edit took away what it stood for). */
  readonly removeObject: (object: ContextObject) => void
  /**
   * The `edited_at` of the newest edit applied to a stored message: undefined when none was
   * (or the message is not stored). Kept with the message and gone with it.
   */
  readonly editedAt: (chatId: string, messageId: string) => number | undefined
  /** Records the `edited_at` of the edit just applied to a stored message. */
  readonly putEditedAt: (chatId: string, messageId: string, editedAt: number) => void
}

export type Outcome =
  | { readonly _tag: "applied" }
  | { readonly _tag: "duplicate" }
  | { readonly _tag: "skipped"; readonly path: string; readonly message: string }

/** The policy and the kinds a batch is applied under. */
interface Rules {
  readonly policy: TtlPolicyShape
  readonly kinds: Registry
}

const applied: Outcome = { _tag: "applied" }
const duplicate: Outcome = { _tag: "duplicate" }
/**
 * A skipped event's id is remembered like an applied one's, so replaying a batch changes
 * nothing; once its object exists, send it again under a new id.
 */
const skip = (w: StateWriter, chatId: string, eventId: string, path: string, message: string): Outcome => {
  w.markSeen(chatId, eventId)
  return { _tag: "skipped", path, message }
}

/** Applies a batch in order, counting what each event came to (skips carry their index). */
export const applyEvents = (
  w: StateWriter,
  events: ReadonlyArray<ContextEvent>,
  now: number,
  policy: TtlPolicyShape,
  kinds: Registry = defaultRegistry
): ApplyResult => {
  let applied = 0
  let duplicates = 0
  const skipped: Array<ApplyResult["skipped"][number]> = []
  for (let i = 0; i < events.length; i++) {
    const outcome = applyEvent(w, events[i]!, now, policy, kinds)
    if (outcome._tag === "applied") applied++
    else if (outcome._tag === "duplicate") duplicates++
    else skipped.push({ index: i, path: `[${i}].${outcome.path}`, message: outcome.message })
  }
  return { applied, duplicates, skipped }
}

export const applyEvent = (
  w: StateWriter,
  event: ContextEvent,
  now: number,
  policy: TtlPolicyShape,
  kinds: Registry = defaultRegistry
): Outcome => {
  const rules: Rules = { policy, kinds }
  switch (event.type) {
    case "message_observed":
      return observeMessage(w, event, now, rules)
    case "message_edited":
      return editMessage(w, event, now, rules)
    case "object_activated":
      return activateObject(w, event, now, rules)
    case "poll_closed": {
      const ref = event.poll_id !== undefined ? w.pollObject(event.poll_id) : undefined
      const chatId = ref?.chat_id ?? event.chat_id
      const objectId = ref?.object_id ?? event.object_id
      if (chatId === undefined || objectId === undefined) {
        // poll updates carry no chat and may arrive before the poll: keep the close for later.
        const pollId = event.poll_id!
        if (w.pendingPollClose(pollId)?.event_id === event.event_id) return duplicate
        w.putPendingPollClose(pollId, { event_id: event.event_id, at: event.at ?? now })
        return applied
      }
      if (w.seen(chatId, event.event_id)) return duplicate
      const object = w.object(chatId, objectId)
      if (object === undefined || object.kind !== "poll") {
        return skip(w, chatId, event.event_id, "object_id", `no poll object "${objectId}" in chat ${chatId}`)
      }
      w.putObject(policy.closePoll(object, event.at ?? now), object)
      w.markSeen(chatId, event.event_id)
      return applied
    }
    case "reminder_updated":
    case "reminder_fired":
    case "reminder_cancelled": {
      if (w.seen(event.chat_id, event.event_id)) return duplicate
      const object = w.object(event.chat_id, event.object_id)
      if (object === undefined || object.kind !== "reminder") {
        return skip(w, event.chat_id, event.event_id, "object_id", `no reminder "${event.object_id}" in chat ${event.chat_id}`)
      }
      const at = event.at ?? now
      let next: ContextObject
      if (event.type === "reminder_updated") {
        const edited: ContextObject = {
          ...object,
          ...(event.title_or_label === undefined ? {} : { title_or_label: event.title_or_label }),
          ...(object.reminder === undefined && event.due_at === undefined
            ? {}
            : {
              reminder: {
                due_at: event.due_at ?? object.reminder!.due_at,
                status: "scheduled" as const
              }
            })
        }
        next = policy.activate(edited, "reminder_updated", at)
      } else if (event.type === "reminder_fired") {
        next = policy.fireReminder(object, at)
      } else {
        next = policy.cancelReminder(object, at)
      }
      w.putObject(next, object)
      w.markSeen(event.chat_id, event.event_id)
      return applied
    }
  }
}

/**
 * Remembers what a message says of its chat (whether it is a forum, its title) and returns
 * whether the chat is a forum as far as is known now.
 */
const noteChat = (w: StateWriter, chatId: string, isForum: boolean | undefined, title: string | undefined): boolean => {
  const known = w.chat(chatId)
  const forumChanged = isForum !== undefined && (known?.is_forum ?? false) !== isForum
  const titleChanged = title !== undefined && (known?.title ?? null) !== title
  if (forumChanged || titleChanged) {
    w.putChat({
      ...(known ?? unknownChat(chatId)),
      ...(forumChanged ? { is_forum: isForum } : {}),
      ...(titleChanged ? { title } : {})
    })
  }
  return isForum ?? known?.is_forum ?? false
}

/** An object a message carries: known, not active, in the class the policy gives it. */
const knownObject = (
  rules: Rules,
  e: MessageObserved | MessageEdited,
  topicId: string | null,
  sentAt: number,
  kind: ObjectKind,
  index: number,
  title: string | undefined,
  ref: string | undefined,
  album: string | undefined,
  span: ContextObject["span"],
  poll: ContextObject["poll"]
): ContextObject => {
  // Built field by field (this runs for every link and file ingested): no object per optional
  // field, no spread of an `extra`; the fields come in the order the spread form gave them.
  const object: { -readonly [K in keyof ContextObject]: ContextObject[K] } = {
    object_id: objectIdFor(e.chat_id, e.message_id, kind, index),
    kind,
    chat_id: e.chat_id,
    topic_id: topicId,
    source_message_id: e.message_id,
    created_at: sentAt,
    last_touched_at: sentAt,
    activation_reasons: []
  } as unknown as { -readonly [K in keyof ContextObject]: ContextObject[K] }
  if (e.sender_user_id !== null) object.created_by_user_id = e.sender_user_id
  object.created_by_bot = e.direction === "outbound"
  object.ttl_class = "short"
  object.active_until = null
  object.activated_at = null
  if (title !== undefined) object.title_or_label = title
  if (ref !== undefined) object.ref = ref
  if (album !== undefined) object.album_id = album
  if (span !== undefined) object.span = span
  if (poll !== undefined) object.poll = poll
  object.ttl_class = rules.policy.classFor(kind, undefined, object)
  return object
}

/** The links and media objects a message's content derives, in their deterministic ids. */
const derivedObjects = (
  rules: Rules,
  e: MessageObserved | MessageEdited,
  topicId: string | null,
  sentAt: number
): Array<ContextObject> => {
  const out: Array<ContextObject> = []
  for (let i = 0; i < e.links.length; i++) {
    const link = e.links[i]!
    const label = rules.kinds.label("link", { title: link.title, url: link.url })
    out.push(knownObject(rules, e, topicId, sentAt, "link", i, label, link.url, undefined, link.span, undefined))
  }
  if (e.media.length === 0) return out
  const perKind = new Map<ObjectKind, number>()
  for (const media of e.media) {
    const index = perKind.get(media.kind) ?? 0
    perKind.set(media.kind, index + 1)
    const label = rules.kinds.label(media.kind, { title: media.label, url: undefined })
    out.push(knownObject(rules, e, topicId, sentAt, media.kind, index, label, media.file_id, e.media_group_id, media.span, undefined))
  }
  return out
}

/**
 * Maps a poll id to its object, unless the id already names another poll object that still
 * exists: Telegram forwards a poll as the same poll (same id), and the poll's closes belong to
 * the message where it was first seen, not to the latest forward of it.
 */
const claimPoll = (w: StateWriter, pollId: string, chatId: string, objectId: string): void => {
  const known = w.pollObject(pollId)
  if (known !== undefined && (known.chat_id !== chatId || known.object_id !== objectId) && w.object(known.chat_id, known.object_id) !== undefined) {
    return
  }
  w.putPoll(pollId, chatId, objectId)
}

const observeMessage = (w: StateWriter, e: MessageObserved | MessageEdited, now: number, rules: Rules): Outcome => {
  if (w.message(e.chat_id, e.message_id) !== undefined) {
    noteChat(w, e.chat_id, e.is_forum, e.chat_title)
    return duplicate
  }
  const topicId = effectiveTopic(e.topic_id, noteChat(w, e.chat_id, e.is_forum, e.chat_title))
  const sentAt = e.sent_at ?? now
  const fromBot = e.direction === "outbound"
  const message: MessageMeta = {
    chat_id: e.chat_id,
    message_id: e.message_id,
    topic_id: topicId,
    reply_to_message_id: e.reply_to_message_id,
    sender_user_id: e.sender_user_id,
    from_bot: fromBot,
    sent_at: sentAt
  }
  w.putMessage(message)
  for (const o of derivedObjects(rules, e, topicId, sentAt)) putKnown(w, o)
  if (e.quote !== undefined && e.reply_to_message_id !== null) noteQuote(w, e.chat_id, e.reply_to_message_id, e.message_id, e.quote)
  if (e.poll !== undefined) {
    const label = rules.kinds.label("poll", { title: e.poll.question })
    const poll = e.poll.is_closed
      ? { poll_id: e.poll.poll_id, state: "closed" as const, closed_at: sentAt }
      : { poll_id: e.poll.poll_id, state: "open" as const }
    const o = knownObject(rules, e, topicId, sentAt, "poll", 0, label, undefined, undefined, undefined, poll)
    putKnown(w, o)
    claimPoll(w, e.poll.poll_id, e.chat_id, o.object_id)
    const close = w.pendingPollClose(e.poll.poll_id)
    if (close !== undefined) {
      w.putPendingPollClose(e.poll.poll_id, undefined)
      if (!w.seen(e.chat_id, close.event_id)) {
        const open = w.object(e.chat_id, o.object_id)!
        w.putObject(rules.policy.closePoll(open, close.at), open)
        w.markSeen(e.chat_id, close.event_id)
      }
    }
  }
  return applied
}

/**
 * A reply's quote: the replied message's objects it selects remember the reply (`quoted_in`).
 * Kept on the quoted objects, which a resolution for the reply reads anyway as its reply
 * target, so no store keeps anything more per message.
 */
const noteQuote = (w: StateWriter, chatId: string, repliedId: string, messageId: string, quote: Quote) => {
  const parts = w.objectsOfMessage(chatId, repliedId)
  if (parts.length === 0) return
  const chosen = selects(parts.map(partOf), quote)
  for (const o of parts) {
    if (chosen.includes(o.object_id)) w.putObject({ ...o, quoted_in: addQuotedIn(o.quoted_in, messageId) }, o)
  }
}

// FNV-1a (32 bits) of a string: a short, stable digest for default event ids.
const fnv1a = (text: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0).toString(16).padStart(8, "0")
}

/**
 * The id of an edit sent without one: the message, the edit's time and a digest of what the
 * reducer derives from it (links, media, album). Telegram stamps edits in whole seconds, so two
 * edits of one second differ only by content: each is a new arrival, while a redelivered copy
 * of either is a duplicate.
 */
export const defaultEditId = (e: MessageEdited): string => {
  let content = e.media_group_id ?? ""
  for (const l of e.links) content += `\u0001${l.url}\u0000${l.title ?? ""}`
  for (const m of e.media) content += `\u0002${m.kind}\u0000${m.file_id ?? ""}\u0000${m.label ?? ""}`
  return `message_edited:${e.message_id}:${e.edited_at}:${fnv1a(content)}`
}

/**
 * An edit: the message's links and media are derived again. An object whose reference is the
 * same keeps its state (and takes the new label); one whose reference changed starts afresh;
 * one the new content no longer carries goes, with any article fetched from a link now gone.
 *
 * Edits apply in `edited_at` order, whatever order they arrive in (two bot processes, a
 * webhook retry, a late client): an edit older than the newest one applied is superseded and
 * counted as a duplicate. An edit as old as it (the same second, Telegram's resolution) is
 * applied: the later arrival wins, the only order left to go by.
 */
const editMessage = (w: StateWriter, e: MessageEdited, now: number, rules: Rules): Outcome => {
  const eventId = e.event_id ?? defaultEditId(e)
  if (w.seen(e.chat_id, eventId)) return duplicate
  const stored = w.message(e.chat_id, e.message_id)
  if (stored === undefined) {
    observeMessage(w, e, now, rules)
    w.putEditedAt(e.chat_id, e.message_id, e.edited_at)
    w.markSeen(e.chat_id, eventId)
    return applied
  }
  const newest = w.editedAt(e.chat_id, e.message_id)
  if (newest !== undefined && e.edited_at < newest) {
    noteChat(w, e.chat_id, e.is_forum, e.chat_title)
    w.markSeen(e.chat_id, eventId)
    return duplicate
  }
  noteChat(w, e.chat_id, e.is_forum, e.chat_title)
  const wanted = derivedObjects(rules, e, stored.topic_id, stored.sent_at)
  const wantedIds = new Set(wanted.map((o) => o.object_id))
  const current = w.objectsOfMessage(e.chat_id, e.message_id)
  const urls = new Set(e.links.map((l) => l.url))
  for (const o of current) {
    const gone = rules.kinds.get(o.kind)?.derived === true
      ? !wantedIds.has(o.object_id)
      : o.kind === "article" && o.ref !== undefined && !urls.has(o.ref)
    if (gone) w.removeObject(o)
  }
  for (const next of wanted) {
    const existing = w.object(e.chat_id, next.object_id)
    if (existing === undefined) {
      w.putObject(next, undefined)
    } else if (existing.ref === next.ref) {
      const label = next.title_or_label ?? existing.title_or_label
      // The edited text places it anew (or, without a span now, nowhere known).
      const { span: _span, ...kept } = existing
      w.putObject({
        ...kept,
        ...(label === undefined ? {} : { title_or_label: label }),
        ...(next.album_id === undefined ? {} : { album_id: next.album_id }),
        ...(next.span === undefined ? {} : { span: next.span })
      }, existing)
    } else {
      // Another link or file under the same slot: a new object, not yet active.
      w.removeObject(existing)
      w.putObject(next, undefined)
    }
  }
  if (newest !== e.edited_at) w.putEditedAt(e.chat_id, e.message_id, e.edited_at)
  w.markSeen(e.chat_id, eventId)
  return applied
}

/**
 * Stores an object a message carries. When an activation already created it (events can
 * arrive out of order), its activation state stays; the message contributes where the
 * object is, and what the activation did not say.
 */
const putKnown = (w: StateWriter, carried: ContextObject) => {
  const existing = w.object(carried.chat_id, carried.object_id)
  if (existing === undefined) return w.putObject(carried, undefined)
  const title = existing.title_or_label ?? carried.title_or_label
  const ref = existing.ref ?? carried.ref
  const poll = existing.poll ?? carried.poll
  w.putObject({
    ...existing,
    topic_id: carried.topic_id,
    ...(title === undefined ? {} : { title_or_label: title }),
    ...(ref === undefined ? {} : { ref }),
    ...(poll === undefined ? {} : { poll }),
    ...(existing.album_id === undefined && carried.album_id !== undefined ? { album_id: carried.album_id } : {}),
    ...(existing.span === undefined && carried.span !== undefined ? { span: carried.span } : {}),
    ...(existing.created_by_user_id === undefined && carried.created_by_user_id !== undefined
      ? { created_by_user_id: carried.created_by_user_id }
      : {})
  }, existing)
}

const activateObject = (w: StateWriter, e: ObjectActivated, now: number, rules: Rules): Outcome => {
  if (w.seen(e.chat_id, e.event_id)) return duplicate
  const at = e.at ?? now
  let object: ContextObject | undefined
  if (e.object_id !== undefined) object = w.object(e.chat_id, e.object_id)
  if (object === undefined && e.object_id === undefined && e.source_message_id !== undefined && e.kind !== undefined) {
    object = w.objectsOfMessage(e.chat_id, e.source_message_id).find((o) => o.kind === e.kind)
  }
  const previous = object
  if (object === undefined) {
    if (e.source_message_id === undefined || e.kind === undefined) {
      return skip(w, e.chat_id, e.event_id, "object_id", `no object "${e.object_id}" in chat ${e.chat_id}; send source_message_id and kind to create it`)
    }
    if (e.kind === "reminder" && e.due_at === undefined) {
      return skip(w, e.chat_id, e.event_id, "due_at", "creating a reminder needs due_at")
    }
    const source = w.message(e.chat_id, e.source_message_id)
    const siblings = w.objectsOfMessage(e.chat_id, e.source_message_id)
    const existing = siblings.filter((o) => o.kind === e.kind).length
    // An article fetched from a link the message carried keeps that link's URL and title.
    const link = e.kind === "article" ? siblings.find((o) => o.kind === "link") : undefined
    const title = e.title_or_label ?? link?.title_or_label
    const ref = e.ref ?? link?.ref
    const createdBy = e.created_by_user_id ?? source?.sender_user_id ?? e.actor_user_id
    object = {
      object_id: e.object_id ?? objectIdFor(e.chat_id, e.source_message_id, e.kind, existing),
      kind: e.kind,
      chat_id: e.chat_id,
      topic_id: source?.topic_id ?? effectiveTopic(e.topic_id ?? null, w.chat(e.chat_id)?.is_forum ?? false),
      source_message_id: e.source_message_id,
      ...(title === undefined ? {} : { title_or_label: title }),
      ...(ref === undefined ? {} : { ref }),
      created_at: at,
      last_touched_at: at,
      activation_reasons: [],
      ...(createdBy === undefined || createdBy === null ? {} : { created_by_user_id: createdBy }),
      created_by_bot: e.created_by_bot ?? source?.from_bot ?? false,
      ttl_class: rules.policy.classFor(e.kind, e.reason),
      active_until: null,
      activated_at: null,
      ...(e.kind === "reminder" && e.due_at !== undefined ? { reminder: { due_at: e.due_at, status: "scheduled" as const } } : {}),
      ...(e.kind === "poll" ? { poll: { ...(e.poll_id === undefined ? {} : { poll_id: e.poll_id }), state: "open" as const } } : {})
    }
    if (e.kind === "poll" && e.poll_id !== undefined) claimPoll(w, e.poll_id, e.chat_id, object.object_id)
  } else if (object.kind === "reminder" && e.due_at !== undefined) {
    object = { ...object, reminder: { due_at: e.due_at, status: "scheduled" } }
  }
  // A title the activation brings fills an object without a label, and replaces one that only
  // repeats its URL (a fetched page's title says more than its address).
  if (
    e.title_or_label !== undefined &&
    (object.title_or_label === undefined ||
      (object.ref !== undefined && object.title_or_label === rules.kinds.label(object.kind, { url: object.ref })))
  ) {
    object = { ...object, title_or_label: e.title_or_label }
  }
  w.putObject(rules.policy.activate(object, e.reason, at), previous)
  w.markSeen(e.chat_id, e.event_id)
  return applied
}
