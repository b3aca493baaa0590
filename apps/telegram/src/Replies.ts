/**
 * The bot's answers, as pure functions: plain language a group member understands (reason
 * codes translated, objects described as a person would), local times, and an apology with a
 * hint whenever something fails.
 *
 * @since 0.1.0
 */
import type { ListResult } from "@deixis/core/ActiveContext"
import type { ObjectDescriptor } from "@deixis/core/ContextObject"
import type { Reminder } from "@deixis/core/ReminderStore"
import type { ResolveResult } from "@deixis/core/ReferenceResolver"
import * as Times from "./Times.js"

/**
 * An inline keyboard button.
 *
 * @since 0.1.0
 * @category models
 */
export interface Button {
  readonly text: string
  readonly callback_data: string
}

/**
 * A reply: text and optional button rows.
 *
 * @since 0.1.0
 * @category models
 */
export interface Reply {
  readonly text: string
  readonly buttons: ReadonlyArray<ReadonlyArray<Button>>
}

const plain = (text: string): Reply => ({ text, buttons: [] })

/**
 * Cuts `s` to `max` characters (code points), with an ellipsis.
 *
 * @since 0.1.0
 * @category formatting
 */
export const short = (s: string, max: number): string => {
  const chars = Array.from(s)
  return chars.length <= max ? s : chars.slice(0, max - 1).join("") + "…"
}

const quoted = (s: string | null | undefined, max = 50) => (s === null || s === undefined || s.trim() === "" ? "" : ` “${short(s.trim(), max)}”`)

const linkLabel = (ref: string) => {
  try {
    const url = new URL(ref)
    return short(`${url.hostname.replace(/^www\./, "")}${url.pathname === "/" ? "" : url.pathname}`, 50)
  } catch {
    return short(ref, 50)
  }
}

/**
 * An object as a person would name it: `the link example.com/rust`, `the photo “the cat”`,
 * `the poll “Lunch?”`, `my message`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const describe = (
  o: Pick<ObjectDescriptor, "kind"> & Partial<Pick<ObjectDescriptor, "title_or_label" | "ref" | "created_by_bot">>
): string => {
  const label = o.title_or_label
  switch (o.kind) {
    case "link":
      return o.ref !== null && o.ref !== undefined ? `the link ${linkLabel(o.ref)}` : `the link${quoted(label)}`
    case "article":
      return `the article${quoted(label ?? (o.ref === null || o.ref === undefined ? null : linkLabel(o.ref)))}`
    case "media.image":
      return `the photo${quoted(label)}`
    case "media.video":
      return `the video${quoted(label)}`
    case "media.voice":
      return `the voice message${quoted(label)}`
    case "media.document":
      return `the file${quoted(label)}`
    case "media.pdf":
      return `the PDF${quoted(label)}`
    case "poll":
      return `the poll${quoted(label)}`
    case "reminder":
      return `the reminder${quoted(label)}`
    case "summary":
      return `the summary${quoted(label)}`
    case "bot_message":
      return `my message${quoted(label)}`
    case "message":
      return o.created_by_bot ? `my message${quoted(label)}` : `the message${quoted(label)}`
    default:
      // A team's own kind (`x.ticket`): named by what follows its namespace.
      return `the ${o.kind.slice(o.kind.indexOf(".") + 1)}${quoted(label)}`
  }
}

const resolveWhy: Partial<Record<string, string>> = {
  exact_reply_target: "you replied to it",
  same_reply_chain: "it is in this reply thread",
  same_topic: "it is in this topic",
  currently_active: "we were just working with it",
  kind_match: "it is the kind you asked for",
  positional_match: "it is the one you pointed at",
  quote_match: "you quoted it",
  bot_created: "I posted it",
  owned_by_sender: "it is yours",
  open_poll: "the poll is still open",
  future_reminder: "it has not gone off yet",
  touched_in_interaction: "it came up just now",
  recent_object: "it is recent",
  weak_scope_fallback: "it is from another topic"
}

const activeWhy: Partial<Record<string, string>> = {
  activated_by_summary: "summarized",
  activated_by_url_fetch: "opened",
  activated_by_media_inspection: "looked at",
  activated_by_poll_create: "poll created",
  activated_by_poll_list: "polls listed",
  activated_by_reminder_create: "reminder set",
  activated_by_reminder_list: "reminders listed",
  activated_by_reminder_update: "reminder changed",
  activated_by_resolver: "asked about",
  activated_by_followup: "followed up",
  open_poll: "open",
  future_reminder: "pending",
  near_expiry: "about to drop out of focus",
  chat_scope_fallback: "another topic"
}

/**
 * Reason codes in words, joined: `you replied to it and it is in this topic`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const because = (reasons: ReadonlyArray<string>): string => {
  const words = reasons.flatMap((r) => resolveWhy[r] ?? [])
  return words.length <= 1 ? (words[0] ?? "") : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`
}

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

/**
 * `/context`: what is in focus here, or — when nothing is — what was seen here and how
 * things come into focus.
 *
 * @since 0.1.0
 * @category formatting
 */
export const context = (result: ListResult, now: number, zone: string): Reply => {
  if (result.objects.length === 0) {
    const seen = (result.inactive_debug ?? []).slice(0, 5)
    return plain([
      "Nothing is in focus here right now.",
      ...(seen.length === 0 ? [] : ["", "Seen here recently:", ...seen.map((o) => `• ${capital(describe(o))}`)]),
      "",
      "Things come into focus when someone works with them: reply to one with /what, or use /poll or /remind."
    ].join("\n"))
  }
  return plain([
    result.scope_used === "chat" ? "In focus in this chat:" : result.scope_used === "reply_chain" ? "In focus in this thread:" : "In focus in this topic:",
    ...result.objects.map((o) => {
      const notes = o.why_active.flatMap((r) => activeWhy[r] ?? [])
      const until = Times.formatLocal(o.active_until, now, zone).replace(/, .*$/, "")
      return `• ${capital(describe(o))}${notes.length === 0 ? "" : ` (${[...new Set(notes)].join(", ")})`} — until ${until}`
    }),
    ...(result.truncated ? ["…and more."] : [])
  ].join("\n"))
}

/**
 * `/what`: the object meant, the candidates to choose from (a button each, `w:<object_id>`),
 * or what to do when nothing fits.
 *
 * @since 0.1.0
 * @category formatting
 */
export const what = (result: ResolveResult): Reply => {
  switch (result.status) {
    case "resolved": {
      const why = because(result.reasons)
      return plain(`You mean ${describe(result.best_match!)}${why === "" ? "." : ` — ${why}.`}`)
    }
    case "ambiguous":
      return {
        text: ["That could be more than one thing — which one?", ...result.candidates.map((c, i) => `${i + 1}. ${capital(describe(c))}`)].join("\n"),
        buttons: result.candidates.flatMap((c, i) => {
          const data = callback("w", c.object_id)
          return data === null ? [] : [[{ text: `${i + 1}. ${short(capital(describe(c)), 40)}`, callback_data: data }]]
        })
      }
    case "not_found":
      return plain("I can't tell what that refers to. Reply to the message you mean with /what, or name a kind: /what poll, /what link, /what photo…")
  }
}

/**
 * Callback data, or null when over Telegram's 64 bytes.
 *
 * @since 0.1.0
 * @category formatting
 */
export const callback = (prefix: string, id: string): string | null => {
  const data = `${prefix}:${id}`
  return Buffer.byteLength(data, "utf8") <= 64 ? data : null
}

/**
 * `/reminders`: this topic's first (the store orders them), each with a cancel button
 * (`rc:<object_id>`); the sender's marked.
 *
 * @since 0.1.0
 * @category formatting
 */
export const reminders = (
  list: ReadonlyArray<Reminder>,
  options: { readonly senderId: string | null; readonly topicId: string | null; readonly now: number; readonly zone: string; readonly more: boolean }
): Reply => {
  if (list.length === 0) return plain("No reminders pending in this chat. Set one with /remind in 10 minutes check the oven")
  const here = list.filter((r) => r.topic_id === options.topicId)
  const elsewhere = list.filter((r) => r.topic_id !== options.topicId)
  const line = (r: Reminder, i: number) =>
    `${i + 1}. ${Times.formatLocal(r.due_at, options.now, options.zone).replace(/, .*$/, "")} — ${short(r.text, 80)}${r.created_by_user_id !== null && r.created_by_user_id === options.senderId ? " (yours)" : ""}`
  const ordered = [...here, ...elsewhere]
  return {
    text: [
      ...(here.length === 0 ? [] : ["Reminders here:", ...here.map(line)]),
      ...(elsewhere.length === 0 ? [] : [here.length === 0 ? "Reminders in this chat:" : "Elsewhere in this chat:", ...elsewhere.map((r, i) => line(r, i + here.length))]),
      ...(options.more ? ["…and more."] : []),
      `Times in ${options.zone}.`
    ].join("\n"),
    buttons: ordered.flatMap((r, i) => {
      const data = callback("rc", r.object_id)
      return data === null ? [] : [[{ text: `Cancel ${i + 1}`, callback_data: data }]]
    })
  }
}

/**
 * The message a due reminder posts.
 *
 * @since 0.1.0
 * @category formatting
 */
export const fired = (reminder: Reminder): string => `⏰ Reminder: ${reminder.text}`

/**
 * `/remind`'s confirmation.
 *
 * @since 0.1.0
 * @category formatting
 */
export const reminderSet = (reminder: Reminder, now: number, zone: string): string =>
  `Okay — I'll remind you ${Times.formatLocal(reminder.due_at, now, zone)} (in ${Times.formatDuration(reminder.due_at - now)}): ${short(reminder.text, 200)}`

/**
 * `/remind` without a usable time, in words.
 *
 * @since 0.1.0
 * @category formatting
 */
export const remindProblem = (problem: Times.WhenProblem, zone: string): string => {
  const examples = "For example: /remind in 10 minutes check the oven · /remind 1h30m call Anna · /remind tomorrow 9:00 stand-up · /remind friday 18:30 retro"
  switch (problem) {
    case "no_time":
      return `I couldn't find a time in that. ${examples}`
    case "past":
      return `That time has already passed (times are in ${zone}; change it with /timezone). ${examples}`
    case "too_far":
      return "That is more than a year ahead — I can remind you at most a year from now."
    case "no_text":
      return "What should I remind you of? Put it after the time: /remind in 10 minutes check the oven"
  }
}

/**
 * `/start` and `/help`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const help = (botUsername: string | undefined, privacyMode: boolean, llm: boolean): string =>
  [
    "I keep track of what this chat is talking about — links, photos, files, polls, reminders — so follow-ups like “what about that one?” work.",
    "",
    "/context — what is in focus in this topic",
    "/what — reply to a message with it: what it refers to (or /what poll, /what link…)",
    "/remind <when> <what> — e.g. /remind in 10 minutes check the oven, /remind tomorrow 9:00 stand-up",
    "/reminders — pending reminders, this topic's first, with cancel buttons",
    "/poll question | option | option — a poll; its creator or an admin can close it",
    "/timezone Europe/Berlin — the time zone for this chat's reminders",
    "/state — this topic's saved conversation state",
    ...(llm ? ["", `Mention me${botUsername === undefined ? "" : ` (@${botUsername})`} or reply to my message to ask me anything.`] : []),
    ...(privacyMode
      ? ["", "In groups I only see commands, mentions of me and replies to my messages (Telegram's privacy mode). Make me an admin, or turn privacy mode off with @BotFather, so I can follow the whole conversation."]
      : [])
  ].join("\n")

/**
 * The apology when a command failed on the bot's side.
 *
 * @since 0.1.0
 * @category formatting
 */
export const sorry = (command: string): string =>
  `Sorry — something went wrong on my side while doing /${command}. Nothing was lost; please try again in a minute.`

/**
 * `/poll question | option | option …`: the question and 2–10 options, or why not.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parsePoll = (payload: string): { readonly question: string; readonly options: ReadonlyArray<string> } | string => {
  const parts = payload.split("|").map((p) => p.trim()).filter((p) => p !== "")
  const [question, ...options] = parts
  if (question === undefined || options.length < 2) return "Write the question and at least two options, separated by |: /poll Lunch? | pizza | sushi"
  if (options.length > 10) return "A poll can have at most 10 options."
  if (Array.from(question).length > 300 || options.some((o) => Array.from(o).length > 100)) {
    return "The question can be up to 300 characters and each option up to 100."
  }
  return { question, options }
}
