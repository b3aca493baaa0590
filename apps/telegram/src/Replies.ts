/**
 * The bot's answers, as pure functions of deixis results: compact, plain text, no words
 * guessed from the user's language.
 *
 * @since 0.1.0
 */
import type { ListResult } from "@deixis/core/ActiveContext"
import type { ObjectDescriptor } from "@deixis/core/ContextObject"
import type { ResolveResult } from "@deixis/core/ReferenceResolver"
import type { Reminder } from "./Reminders.js"

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

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.000Z$/, "Z")

const short = (s: string, max: number) => (Array.from(s).length <= max ? s : Array.from(s).slice(0, max - 1).join("") + "…")

/**
 * One object on one line: `kind · label`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const describe = (o: Pick<ObjectDescriptor, "kind" | "title_or_label" | "ref" | "source_message_id">): string =>
  `${o.kind} · ${short(o.title_or_label ?? o.ref ?? `message ${o.source_message_id}`, 60)}`

// Telegram refuses callback data over 64 bytes.
const callback = (prefix: string, id: string): string | null => {
  const data = `${prefix}:${id}`
  return Buffer.byteLength(data, "utf8") <= 64 ? data : null
}

/**
 * `/context`: the topic's active objects.
 *
 * @since 0.1.0
 * @category formatting
 */
export const context = (result: ListResult): Reply => ({
  text: result.objects.length === 0
    ? "Nothing is active here."
    : [
      `Active (${result.scope_used}):`,
      ...result.objects.map((o) => `• ${describe(o)} — until ${iso(o.active_until)}`),
      ...(result.truncated ? ["…"] : [])
    ].join("\n"),
  buttons: []
})

/**
 * `/what`: resolved, ambiguous (with a button per candidate, `w:<object_id>`), or not found.
 *
 * @since 0.1.0
 * @category formatting
 */
export const what = (result: ResolveResult): Reply => {
  switch (result.status) {
    case "resolved":
      return { text: `Resolved: ${describe(result.best_match!)}`, buttons: [] }
    case "ambiguous":
      return {
        text: ["Ambiguous — which one?", ...result.candidates.map((c, i) => `${i + 1}. ${describe(c)}`)].join("\n"),
        buttons: result.candidates.flatMap((c, i) => {
          const data = callback("w", c.object_id)
          return data === null ? [] : [[{ text: `${i + 1}. ${short(describe(c), 40)}`, callback_data: data }]]
        })
      }
    case "not_found":
      return { text: "Not found.", buttons: [] }
  }
}

/**
 * `/reminders`: the sender's first, then the rest of the chat's, each with a cancel button
 * (`rc:<object_id>`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const reminders = (list: ReadonlyArray<Reminder>, senderId: string | null): Reply => {
  if (list.length === 0) return { text: "No reminders.", buttons: [] }
  const ordered = [...list].sort((a, b) =>
    Number(b.created_by_user_id === senderId) - Number(a.created_by_user_id === senderId) || a.due_at - b.due_at
  )
  return {
    text: ["Reminders:", ...ordered.map((r, i) => `${i + 1}. ${iso(r.due_at)} — ${short(r.text, 80)}${r.created_by_user_id === senderId ? " (yours)" : ""}`)]
      .join("\n"),
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
export const fired = (reminder: Reminder): string => `⏰ ${reminder.text}`

/**
 * `/remind`'s confirmation.
 *
 * @since 0.1.0
 * @category formatting
 */
export const reminderSet = (reminder: Reminder): string => `Reminder set for ${iso(reminder.due_at)}: ${short(reminder.text, 200)}`

/**
 * `/poll question | option | option …`: the question and 2–10 options, or why not.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parsePoll = (payload: string): { readonly question: string; readonly options: ReadonlyArray<string> } | string => {
  const parts = payload.split("|").map((p) => p.trim()).filter((p) => p !== "")
  const [question, ...options] = parts
  if (question === undefined || options.length < 2) return "usage: /poll question | option | option"
  if (options.length > 10) return "at most 10 options"
  if (question.length > 300 || options.some((o) => o.length > 100)) return "question up to 300 characters, options up to 100"
  return { question, options }
}
