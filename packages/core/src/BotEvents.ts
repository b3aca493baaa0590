/**
 * Typed constructors for the events a bot's own actions produce — a poll it sent, a reminder
 * it scheduled, listed, fired or cancelled, a summary it posted, an object it inspected or
 * resolved — so apps never hand-build event objects. Each event id is derived from what the
 * action is about, so recording the same action twice (a redelivered update, a retried
 * handler) changes nothing. The results are decoded events, for `ContextIngest.apply`.
 *
 * @since 0.1.0
 */
import type { ActivationReason } from "./ContextObject.js"
import type { ObjectActivated, ReminderCancelled, ReminderFired, ReminderUpdated } from "./ContextEvent.js"
import type { ObjectKind } from "./ObjectKind.js"

/**
 * Who acted, and where, for every constructor: the chat; optionally the user whose request
 * it was, and the time (the Clock's now when absent).
 *
 * @since 0.1.0
 * @category models
 */
export interface Actor {
  readonly chat_id: string
  readonly actor_user_id?: string | null | undefined
  /** Epoch ms. */
  readonly at?: number | undefined
}

const actorFields = (actor: Actor) => ({
  ...(actor.actor_user_id === undefined || actor.actor_user_id === null ? {} : { actor_user_id: actor.actor_user_id }),
  ...(actor.at === undefined ? {} : { at: actor.at })
})

/**
 * An explicit activation of a stored object, by its id. `because_of` names what caused it
 * (the message that asked, a button press id), so the same cause activates once.
 *
 * @since 0.1.0
 * @category constructors
 */
export const activated = (
  reason: ActivationReason,
  target: Actor & { readonly object_id: string; readonly because_of: string }
): ObjectActivated => ({
  type: "object_activated",
  event_id: `bot:${reason}:${target.because_of}:${target.object_id}`,
  chat_id: target.chat_id,
  reason,
  object_id: target.object_id,
  ...actorFields(target)
})

/**
 * An explicit activation of the object of `kind` a message carries — created when it carries
 * none yet (a summary the bot just posted). Once per message and kind.
 *
 * @since 0.1.0
 * @category constructors
 */
export const activatedIn = (
  reason: ActivationReason,
  target: Actor & {
    readonly source_message_id: string
    readonly kind: ObjectKind
    readonly topic_id?: string | null | undefined
    readonly title_or_label?: string | undefined
    readonly created_by_bot?: boolean | undefined
    readonly created_by_user_id?: string | null | undefined
  }
): ObjectActivated => ({
  type: "object_activated",
  event_id: `bot:${reason}:${target.source_message_id}:${target.kind}`,
  chat_id: target.chat_id,
  reason,
  source_message_id: target.source_message_id,
  kind: target.kind,
  ...(target.topic_id === undefined ? {} : { topic_id: target.topic_id }),
  ...(target.title_or_label === undefined ? {} : { title_or_label: target.title_or_label }),
  ...(target.created_by_bot === undefined ? {} : { created_by_bot: target.created_by_bot }),
  ...(target.created_by_user_id === undefined || target.created_by_user_id === null
    ? {}
    : { created_by_user_id: target.created_by_user_id }),
  ...actorFields(target)
})

/**
 * The bot sent a poll (message `message_id`, Telegram poll `poll_id`): the poll is created by
 * the bot and active while open.
 *
 * @since 0.1.0
 * @category constructors
 */
export const pollCreated = (
  poll: Actor & {
    readonly message_id: string
    readonly poll_id: string
    readonly question?: string | undefined
    readonly topic_id?: string | null | undefined
  }
): ObjectActivated => ({
  ...activatedIn("poll_created", {
    ...poll,
    source_message_id: poll.message_id,
    kind: "poll",
    created_by_bot: true,
    ...(poll.question === undefined ? {} : { title_or_label: poll.question })
  }),
  poll_id: poll.poll_id
})

/**
 * The bot scheduled a reminder asked for in message `source_message_id`, due at `due_at`
 * (epoch ms). Once per message.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reminderCreated = (
  reminder: Actor & {
    readonly source_message_id: string
    readonly due_at: number
    readonly label?: string | undefined
    readonly topic_id?: string | null | undefined
    readonly created_by_user_id?: string | null | undefined
  }
): ObjectActivated => ({
  ...activatedIn("reminder_created", {
    ...reminder,
    kind: "reminder",
    created_by_bot: false,
    ...(reminder.label === undefined ? {} : { title_or_label: reminder.label }),
    created_by_user_id: reminder.created_by_user_id ?? reminder.actor_user_id
  }),
  due_at: reminder.due_at
})

/**
 * The bot listed reminders in answer to message `listed_in`: each is activated for reminder
 * management.
 *
 * @since 0.1.0
 * @category constructors
 */
export const remindersListed = (
  listing: Actor & { readonly object_ids: ReadonlyArray<string>; readonly listed_in: string }
): ReadonlyArray<ObjectActivated> =>
  listing.object_ids.map((object_id) => activated("reminder_listed", { ...listing, object_id, because_of: listing.listed_in }))

/**
 * A reminder was changed (a new due time or label) in answer to message `because_of`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reminderUpdated = (
  update: Actor & {
    readonly object_id: string
    readonly because_of: string
    readonly due_at?: number | undefined
    readonly label?: string | undefined
  }
): ReminderUpdated => ({
  type: "reminder_updated",
  event_id: `bot:reminder_updated:${update.because_of}:${update.object_id}`,
  chat_id: update.chat_id,
  object_id: update.object_id,
  ...(update.due_at === undefined ? {} : { due_at: update.due_at }),
  ...(update.label === undefined ? {} : { title_or_label: update.label }),
  ...actorFields(update)
})

/**
 * The bot posted a due reminder. Once per reminder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reminderFired = (reminder: Actor & { readonly object_id: string }): ReminderFired => ({
  type: "reminder_fired",
  event_id: `bot:reminder_fired:${reminder.object_id}`,
  chat_id: reminder.chat_id,
  object_id: reminder.object_id,
  ...(reminder.at === undefined ? {} : { at: reminder.at })
})

/**
 * A reminder was cancelled. Once per reminder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reminderCancelled = (reminder: Actor & { readonly object_id: string }): ReminderCancelled => ({
  type: "reminder_cancelled",
  event_id: `bot:reminder_cancelled:${reminder.object_id}`,
  chat_id: reminder.chat_id,
  object_id: reminder.object_id,
  ...actorFields(reminder)
})

/**
 * The bot posted a summary (message `message_id`): a summary object, created by the bot.
 *
 * @since 0.1.0
 * @category constructors
 */
export const summaryGenerated = (
  summary: Actor & { readonly message_id: string; readonly label?: string | undefined; readonly topic_id?: string | null | undefined }
): ObjectActivated =>
  activatedIn("summary_generated", {
    ...summary,
    source_message_id: summary.message_id,
    kind: "summary",
    created_by_bot: true,
    ...(summary.label === undefined ? {} : { title_or_label: summary.label })
  })

/**
 * A resolver touch of a stored object, caused by `because_of` (a request message, a button
 * press). `ReferenceResolver`'s `record_touch` records the same for a resolution.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolverTouch = (target: Actor & { readonly object_id: string; readonly because_of: string }): ObjectActivated =>
  activated("resolver_touch", target)
