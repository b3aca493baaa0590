/**
 * What deixis does with every field of a Bot API `Update` and of a `Message` (Bot API 10.1):
 * a named decision per field, recorded as what or skipped why. The mapper reads its content
 * keys and its skipped update types from these tables, and `test/FieldDecisions.test.ts` holds
 * them to the specification's field lists (`test/fixtures/bot-api.json`): a field the
 * specification gains without a decision here fails that test.
 *
 * @since 0.4.0
 */

/**
 * The decision on one `Update` field (an update type).
 *
 * - `message`: a message-carrying update, mapped as a message (see `UpdateMapper.mapMessage`).
 * - `recorded`: mapped by its own rule (`as` says to what).
 * - `skipped`: maps to nothing; the mapped update's `skipped` is `"<type>: <why>"`.
 *
 * @since 0.4.0
 * @category models
 */
export type UpdateDecision =
  | { readonly kind: "message"; readonly as: string }
  | { readonly kind: "recorded"; readonly as: string }
  | { readonly kind: "skipped"; readonly why: string }

/**
 * The decision on one `Message` field.
 *
 * - `content`: what people write; a message carrying it is recorded, this field as `as`.
 * - `context`: read to place, attribute or link the message (its ids, sender, reply, topic).
 * - `migration`: a group's upgrade notice, recorded as the chat's migration.
 * - `ignored`: metadata deixis does not keep (`why`); it never decides whether a message is recorded.
 * - `notice`: a service notice that is not conversation: a message carrying only it maps to
 *   nothing (`skipped`: `service message (<field>): not conversation`).
 *
 * @since 0.4.0
 * @category models
 */
export type MessageFieldDecision =
  | { readonly kind: "content"; readonly as: string }
  | { readonly kind: "context"; readonly as: string }
  | { readonly kind: "migration"; readonly as: string }
  | { readonly kind: "ignored"; readonly why: string }
  | { readonly kind: "notice"; readonly why: string }

const message = (as: string): UpdateDecision => ({ kind: "message", as })
const skipped = (why: string): UpdateDecision => ({ kind: "skipped", why })

/**
 * Every `Update` field of Bot API 10.1 but `update_id`, with its decision.
 *
 * @since 0.4.0
 * @category decisions
 */
export const updateDecisions = {
  message: message("a message in its chat (and topic)"),
  edited_message: message("the message's new version (message_edited)"),
  channel_post: message("a post, spoken by the channel"),
  edited_channel_post: message("the post's new version (message_edited)"),
  business_message: message("a message of a connected business account's chat"),
  edited_business_message: message("the business message's new version (message_edited)"),
  guest_message: message("a message in the scope of the chat where the guest bot was summoned (`guest:<chat id>`), never the bot's own chat of that id"),
  poll: { kind: "recorded", as: "poll_closed by poll id when the poll is closed; an open poll's update is skipped (votes are not context events)" },
  poll_answer: { kind: "recorded", as: "nothing: it carries no chat, and votes are not context events (skipped with that reason)" },
  message_reaction: { kind: "recorded", as: "an inbound_reaction item of the actor's reactions now, or its retraction" },
  deleted_business_messages: skipped("deletions are not recorded"),
  business_connection: skipped("a business connection is not conversation"),
  message_reaction_count: skipped("anonymous reaction counts name no one"),
  inline_query: skipped("an inline query is not said in a chat"),
  chosen_inline_result: skipped("an inline result is recorded as the message it becomes"),
  callback_query: skipped("a button press is not a context event"),
  shipping_query: skipped("payments are not context events"),
  pre_checkout_query: skipped("payments are not context events"),
  purchased_paid_media: skipped("payments are not context events"),
  my_chat_member: skipped("a change of the bot's membership is not conversation"),
  chat_member: skipped("a membership change is a service event, not conversation"),
  chat_join_request: skipped("a join request is not conversation"),
  chat_boost: skipped("a boost is not conversation"),
  removed_chat_boost: skipped("a boost is not conversation"),
  managed_bot: skipped("a managed bot's creation, token or owner change is not conversation")
} as const satisfies Readonly<Record<string, UpdateDecision>>

const content = (as: string): MessageFieldDecision => ({ kind: "content", as })
const context = (as: string): MessageFieldDecision => ({ kind: "context", as })
const ignored = (why: string): MessageFieldDecision => ({ kind: "ignored", why })
const notice = (why: string): MessageFieldDecision => ({ kind: "notice", why })
const notConversation = notice("a service notice, not conversation")
const payment = notice("payments are not conversation")
const suggested = notice("a suggested post's review is not conversation")

/**
 * Every `Message` field of Bot API 10.1, with its decision.
 *
 * @since 0.4.0
 * @category decisions
 */
export const messageFieldDecisions = {
  // Where and when it is, who said it.
  message_id: context("the message id"),
  message_thread_id: context("the topic, with is_topic_message (a forum's or a private chat's); otherwise only a reply chain"),
  direct_messages_topic: context("a channel direct-messages topic: its own deixis chat (`<chat id>:dm:<topic id>`), topic `<topic id>`"),
  from: context("the sender (outbound when it is the bot)"),
  sender_chat: context("the sender when a chat speaks (a channel, an anonymous admin)"),
  sender_boost_count: ignored("a boost count says nothing about the conversation"),
  sender_business_bot: ignored("which bot sent for a business account is not conversation"),
  sender_tag: ignored("a sender's custom title is not conversation"),
  date: context("sent_at"),
  guest_query_id: context("a guest message: its scope is `guest:<chat id>`; the bot answers with answerGuestQuery"),
  business_connection_id: ignored("the business connection is not part of the conversation"),
  chat: context("the chat (its id, type, title, forum and direct-messages flags)"),
  forward_origin: context("the forward's origin and date on the history item"),
  is_topic_message: context("whether message_thread_id is a topic"),
  is_automatic_forward: context("a linked channel's post in its discussion group (forward.automatic)"),
  reply_to_message: context("the reply target, recorded first as seen through the reply"),
  external_reply: context("a reply target only when it is a message of the same chat; its origin names the quoted person"),
  quote: context("the reply's quote (text, position)"),
  reply_to_story: ignored("a story is not a message of the chat"),
  reply_to_checklist_task_id: context("the task replied to: the reply's quote is that task's line of the checklist"),
  reply_to_poll_option_id: ignored("a poll option is no object of its own; the reply targets the poll's message"),
  via_bot: ignored("the inline bot that helped write it is not conversation"),
  guest_bot_caller_user: ignored("who summoned a guest bot is not the speaker"),
  guest_bot_caller_chat: ignored("where a guest bot was summoned from is not the speaker"),
  edit_date: context("edited_at"),
  has_protected_content: ignored("forwarding protection is not conversation"),
  is_from_offline: ignored("a scheduled or away message is still the message"),
  is_paid_post: ignored("payments are not conversation"),
  media_group_id: context("the album its media belong to"),
  author_signature: ignored("a post's signature is not its sender"),
  paid_star_count: ignored("payments are not conversation"),
  // What it says.
  text: content("the message text"),
  entities: context("links (url, text_link) and mentions of the text"),
  link_preview_options: ignored("a preview's layout is not content"),
  suggested_post_info: ignored("a suggested post's terms are not content"),
  effect_id: ignored("a message effect is decoration"),
  rich_message: content("its blocks flattened in order as the text; url spans as links, photos and media as media"),
  animation: content("media (an animation)"),
  audio: content("media (audio), its performer and title as its name"),
  document: content("media (a document, a pdf by name or type)"),
  live_photo: content("media through its static photo (Telegram sets `photo` beside it)"),
  paid_media: content("a message of paid media; the media themselves are not readable"),
  photo: content("media (the largest size)"),
  sticker: content("an attachment named by its emoji"),
  story: content("a message sharing a story"),
  video: content("media (a video)"),
  video_note: content("media (a video note)"),
  voice: content("media (a voice note)"),
  caption: content("the text, when there is no text; every media item is captioned by all of it"),
  caption_entities: context("links and mentions of the caption"),
  show_caption_above_media: ignored("layout"),
  has_media_spoiler: ignored("a spoiler cover is layout"),
  checklist: content("its title and tasks as text lines; the message is what a reply to a task points at"),
  contact: content("an attachment (contact)"),
  dice: content("an attachment named by its emoji"),
  game: content("a message sharing a game"),
  poll: content("the poll (by id), an attachment named by its question"),
  venue: content("an attachment (location) named by the venue"),
  location: content("an attachment (location)"),
  // Service notices.
  new_chat_members: notConversation,
  left_chat_member: notConversation,
  chat_owner_left: notConversation,
  chat_owner_changed: notConversation,
  new_chat_title: notice("a title change is not conversation (the chat title is read from chat)"),
  new_chat_photo: notConversation,
  delete_chat_photo: notConversation,
  group_chat_created: notConversation,
  supergroup_chat_created: notConversation,
  channel_chat_created: notConversation,
  message_auto_delete_timer_changed: notConversation,
  migrate_to_chat_id: { kind: "migration", as: "the group's move to its supergroup" },
  migrate_from_chat_id: { kind: "migration", as: "the supergroup's move from its group" },
  pinned_message: notice("a pin notice is not conversation; a reply to it means the pinned message"),
  invoice: content("a message carrying an invoice"),
  successful_payment: payment,
  refunded_payment: payment,
  users_shared: notConversation,
  chat_shared: notConversation,
  gift: notice("a gift is not conversation"),
  unique_gift: notice("a gift is not conversation"),
  gift_upgrade_sent: notice("a gift is not conversation"),
  connected_website: notConversation,
  write_access_allowed: notConversation,
  passport_data: notice("passport data is private and not conversation"),
  proximity_alert_triggered: notConversation,
  boost_added: notice("a boost is not conversation"),
  chat_background_set: notConversation,
  checklist_tasks_done: content("tasks marked done or not done, as text lines, a reply to the checklist's message"),
  checklist_tasks_added: content("the tasks added, as text lines, a reply to the checklist's message"),
  direct_message_price_changed: payment,
  forum_topic_created: notice("a topic's creation is not conversation; messages replying to it are in the topic, not replies"),
  forum_topic_edited: notConversation,
  forum_topic_closed: notConversation,
  forum_topic_reopened: notConversation,
  general_forum_topic_hidden: notConversation,
  general_forum_topic_unhidden: notConversation,
  giveaway_created: notConversation,
  giveaway: content("a message carrying a giveaway"),
  giveaway_winners: content("a message announcing a giveaway's winners"),
  giveaway_completed: notConversation,
  managed_bot_created: notConversation,
  paid_message_price_changed: payment,
  poll_option_added: notice("a poll's option change is not conversation"),
  poll_option_deleted: notice("a poll's option change is not conversation"),
  suggested_post_approved: suggested,
  suggested_post_approval_failed: suggested,
  suggested_post_declined: suggested,
  suggested_post_paid: suggested,
  suggested_post_refunded: suggested,
  video_chat_scheduled: notConversation,
  video_chat_started: notConversation,
  video_chat_ended: notConversation,
  video_chat_participants_invited: notConversation,
  web_app_data: notice("a web app's data is for the bot, not conversation"),
  reply_markup: ignored("buttons are not content")
} as const satisfies Readonly<Record<string, MessageFieldDecision>>

/**
 * An update type deixis has a decision on.
 *
 * @since 0.4.0
 * @category models
 */
export type UpdateType = keyof typeof updateDecisions

/**
 * A `Message` field deixis has a decision on.
 *
 * @since 0.4.0
 * @category models
 */
export type MessageField = keyof typeof messageFieldDecisions

const entries = <K extends string, V>(record: Readonly<Record<K, V>>) => Object.entries(record) as Array<[K, V]>

/**
 * The message-carrying update types, in the order the mapper looks for them.
 *
 * @since 0.4.0
 * @category decisions
 */
export const messageUpdateTypes: ReadonlyArray<UpdateType> = entries<UpdateType, UpdateDecision>(updateDecisions)
  .filter(([, d]) => d.kind === "message").map(([k]) => k)

/**
 * The `Message` fields that make a message one people wrote (anything else is a service notice).
 *
 * @since 0.4.0
 * @category decisions
 */
export const contentFields: ReadonlyArray<MessageField> = entries<MessageField, MessageFieldDecision>(messageFieldDecisions)
  .filter(([, d]) => d.kind === "content").map(([k]) => k)

/**
 * The `Message` fields that neither carry content nor are a notice (metadata, placement).
 *
 * @since 0.4.0
 * @category decisions
 */
export const metadataFields: ReadonlyArray<MessageField> = entries<MessageField, MessageFieldDecision>(messageFieldDecisions)
  .filter(([, d]) => d.kind === "context" || d.kind === "ignored").map(([k]) => k)
