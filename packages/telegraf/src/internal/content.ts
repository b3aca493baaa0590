/**
 * Bot API 9.1–10 content read leniently: a rich message's blocks and a checklist flattened to
 * text with link and mention entities (UTF-16 offsets into that text) and the media they carry.
 * A part of the wrong shape is left out (never failing the message); output is bounded.
 */

/** An entity of the flattened text, in the mapper's own entity form. */
export interface FlatEntity {
  readonly type: string
  readonly offset: number
  readonly length: number
  readonly url?: string
  readonly user?: { readonly id: number; readonly is_bot?: boolean; readonly first_name?: string; readonly username?: string }
}

/** A media item of a rich message. */
export interface FlatMedia {
  readonly type: "photo" | "video" | "animation" | "audio" | "voice"
  readonly file_id: string | undefined
  readonly name: string | undefined
  readonly caption: string
}

/** Text, entities and media flattened from a rich message or a checklist. */
export interface Flat {
  readonly text: string
  readonly entities: ReadonlyArray<FlatEntity>
  readonly media: ReadonlyArray<FlatMedia>
  /** Where each checklist task's line is (task id → its span), for a reply to one task. */
  readonly tasks: ReadonlyMap<number, { readonly offset: number; readonly length: number; readonly text: string }>
}

type Rec = Readonly<Record<string, unknown>>
const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v)
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined)
const int = (v: unknown): number | undefined => (typeof v === "number" && Number.isSafeInteger(v) ? v : undefined)

// Bounds: a rich message is at most what the mapper keeps of a text, read in at most this many nodes.
const maxNodes = 4096
const maxMedia = 50

class Writer {
  text = ""
  readonly entities: Array<FlatEntity> = []
  readonly media: Array<FlatMedia> = []
  readonly tasks = new Map<number, { offset: number; length: number; text: string }>()
  nodes = 0
  constructor(readonly maxLength: number) {}
  get full() {
    return this.text.length >= this.maxLength || this.nodes >= maxNodes
  }
  append(s: string) {
    if (this.full || s === "") return
    this.text += s.slice(0, this.maxLength - this.text.length)
  }
  /** Starts a new line (a block), unless the text is empty or already at a line's start. */
  line() {
    if (this.text !== "" && !this.text.endsWith("\n") && !this.full) this.text += "\n"
  }
  entity(type: string, start: number, extra: Partial<FlatEntity>) {
    const length = this.text.length - start
    if (length > 0 && this.entities.length < 200) this.entities.push({ type, offset: start, length, ...extra })
  }
}

const richText = (w: Writer, v: unknown): void => {
  if (w.full) return
  w.nodes++
  if (typeof v === "string") return w.append(v)
  if (Array.isArray(v)) {
    for (const part of v) richText(w, part)
    return
  }
  if (!isRec(v)) return
  const start = w.text.length
  switch (v["type"]) {
    case "custom_emoji":
      return w.append(str(v["alternative_text"]) ?? "")
    case "mathematical_expression":
      return w.append(str(v["expression"]) ?? "")
    case "anchor":
      return
    case "url": {
      richText(w, v["text"])
      const url = str(v["url"])
      if (url !== undefined) w.entity("text_link", start, { url })
      return
    }
    case "text_mention": {
      richText(w, v["text"])
      const user = isRec(v["user"]) ? v["user"] : undefined
      const id = user === undefined ? undefined : int(user["id"])
      if (user !== undefined && id !== undefined) {
        const first = str(user["first_name"])
        const username = str(user["username"])
        w.entity("text_mention", start, {
          user: {
            id,
            ...(typeof user["is_bot"] === "boolean" ? { is_bot: user["is_bot"] } : {}),
            ...(first === undefined ? {} : { first_name: first }),
            ...(username === undefined ? {} : { username })
          }
        })
      }
      return
    }
    case "mention": {
      richText(w, v["text"])
      if (w.text.slice(start).startsWith("@")) w.entity("mention", start, {})
      return
    }
    default:
      return richText(w, v["text"])
  }
}

const caption = (w: Writer, v: unknown) => {
  if (!isRec(v)) return
  richText(w, v["text"])
  if (v["credit"] !== undefined) {
    w.append(" — ")
    richText(w, v["credit"])
  }
}

const largestPhoto = (sizes: unknown): string | undefined => {
  if (!Array.isArray(sizes)) return undefined
  let best: { id: string; area: number } | undefined
  for (const s of sizes) {
    if (!isRec(s)) continue
    const id = str(s["file_id"])
    if (id === undefined) continue
    const area = (int(s["width"]) ?? 0) * (int(s["height"]) ?? 0)
    if (best === undefined || area >= best.area) best = { id, area }
  }
  return best?.id
}

const mediaBlock = (w: Writer, type: FlatMedia["type"], file: unknown, name: string | undefined, v: Rec) => {
  const start = w.text.length
  caption(w, v["caption"])
  const fileId = type === "photo" ? largestPhoto(file) : isRec(file) ? str(file["file_id"]) : undefined
  if (w.media.length < maxMedia) w.media.push({ type, file_id: fileId, name, caption: w.text.slice(start) })
}

const blocks = (w: Writer, v: unknown): void => {
  if (!Array.isArray(v)) return
  for (const b of v) {
    if (w.full) return
    block(w, b)
  }
}

const block = (w: Writer, b: unknown): void => {
  w.nodes++
  if (!isRec(b)) return
  w.line()
  switch (b["type"]) {
    case "divider":
    case "anchor":
      return
    case "mathematical_expression":
      return w.append(str(b["expression"]) ?? "")
    case "list":
      if (!Array.isArray(b["items"])) return
      for (const item of b["items"]) {
        if (!isRec(item) || w.full) continue
        w.line()
        const label = str(item["label"])
        const check = item["has_checkbox"] === true ? (item["is_checked"] === true ? "[x] " : "[ ] ") : ""
        w.append(`${label === undefined || label === "" ? "•" : label} ${check}`)
        // The item's first block continues its label's line.
        const inner = Array.isArray(item["blocks"]) ? item["blocks"] : []
        inner.forEach((x, i) => (i === 0 && isRec(x) ? richText(w, x["text"] ?? "") : block(w, x)))
      }
      return
    case "blockquote":
      blocks(w, b["blocks"])
      if (b["credit"] !== undefined) {
        w.line()
        w.append("— ")
        richText(w, b["credit"])
      }
      return
    case "pullquote":
      richText(w, b["text"])
      if (b["credit"] !== undefined) {
        w.append(" — ")
        richText(w, b["credit"])
      }
      return
    case "collage":
    case "slideshow":
      blocks(w, b["blocks"])
      w.line()
      return caption(w, b["caption"])
    case "table": {
      const rows = Array.isArray(b["cells"]) ? b["cells"] : []
      for (const row of rows) {
        if (!Array.isArray(row) || w.full) continue
        w.line()
        row.forEach((cell, i) => {
          if (i > 0) w.append(" | ")
          if (isRec(cell)) richText(w, cell["text"] ?? "")
        })
      }
      if (b["caption"] !== undefined) {
        w.line()
        richText(w, b["caption"])
      }
      return
    }
    case "details":
      richText(w, b["summary"])
      return blocks(w, b["blocks"])
    case "map":
      return caption(w, b["caption"])
    case "photo":
      return mediaBlock(w, "photo", b["photo"], undefined, b)
    case "video":
      return mediaBlock(w, "video", b["video"], isRec(b["video"]) ? str(b["video"]["file_name"]) : undefined, b)
    case "animation":
      return mediaBlock(w, "animation", b["animation"], isRec(b["animation"]) ? str(b["animation"]["file_name"]) : undefined, b)
    case "audio": {
      const a = isRec(b["audio"]) ? b["audio"] : {}
      const title = [str(a["performer"]), str(a["title"])].filter((s) => s !== undefined && s !== "").join(" – ")
      return mediaBlock(w, "audio", a, title !== "" ? title : str(a["file_name"]), b)
    }
    case "voice_note":
      return mediaBlock(w, "voice", b["voice_note"], undefined, b)
    default:
      // paragraph, heading, pre, footer, thinking, and block types yet to come that have a text.
      return richText(w, b["text"])
  }
}

const trimmed = (w: Writer): Flat => {
  // Lines end without trailing blanks; a trailing newline goes (offsets before it stay valid).
  const text = w.text.endsWith("\n") ? w.text.slice(0, -1) : w.text
  return { text, entities: w.entities.filter((e) => e.offset + e.length <= text.length), media: w.media, tasks: w.tasks }
}

/**
 * A `rich_message` flattened: each block on its own line, in order; lists by their labels,
 * tables by rows (cells joined by ` | `); url spans as `text_link` entities; photos and media
 * with their captions. Undefined when it is not an object with blocks.
 */
export const flattenRich = (v: unknown, maxLength: number): Flat | undefined => {
  if (!isRec(v) || !Array.isArray(v["blocks"])) return undefined
  const w = new Writer(maxLength)
  blocks(w, v["blocks"])
  return trimmed(w)
}

const entitiesOf = (w: Writer, v: unknown, shift: number, length: number) => {
  if (!Array.isArray(v)) return
  for (const e of v) {
    if (!isRec(e) || w.entities.length >= 200) continue
    const type = str(e["type"])
    const offset = int(e["offset"])
    const len = int(e["length"])
    if (type === undefined || offset === undefined || len === undefined || offset < 0 || len <= 0 || offset + len > length) continue
    const url = str(e["url"])
    w.entities.push({ type, offset: offset + shift, length: len, ...(url === undefined ? {} : { url }) })
  }
}

const taskLine = (w: Writer, task: Rec) => {
  const id = int(task["id"])
  const text = str(task["text"]) ?? ""
  const done = (int(task["completion_date"]) ?? 0) > 0 || task["completed_by_user"] !== undefined || task["completed_by_chat"] !== undefined
  w.line()
  w.append(done ? "[x] " : "[ ] ")
  const start = w.text.length
  w.append(text)
  if (w.text.length - start === text.length) entitiesOf(w, task["text_entities"], start, text.length)
  if (id !== undefined && !w.tasks.has(id)) w.tasks.set(id, { offset: start, length: w.text.length - start, text: w.text.slice(start) })
}

/**
 * A `checklist`: its title, then one line per task (`[x] ` when done, `[ ] ` otherwise), with
 * the title's and tasks' entities, and where each task's text is.
 */
export const flattenChecklist = (v: unknown, maxLength: number): Flat | undefined => {
  if (!isRec(v)) return undefined
  const w = new Writer(maxLength)
  const title = str(v["title"]) ?? ""
  w.append(title)
  if (w.text.length === title.length) entitiesOf(w, v["title_entities"], 0, title.length)
  if (Array.isArray(v["tasks"])) for (const t of v["tasks"].slice(0, 100)) if (isRec(t)) taskLine(w, t)
  return trimmed(w)
}

const taskTexts = (checklistMessage: unknown): ReadonlyMap<number, string> => {
  const out = new Map<number, string>()
  const list = isRec(checklistMessage) && isRec(checklistMessage["checklist"]) ? checklistMessage["checklist"]["tasks"] : undefined
  if (Array.isArray(list)) {
    for (const t of list.slice(0, 100)) {
      const id = isRec(t) ? int(t["id"]) : undefined
      const text = isRec(t) ? str(t["text"]) : undefined
      if (id !== undefined && text !== undefined) out.set(id, text)
    }
  }
  return out
}

/**
 * A `checklist_tasks_done` notice as text: a line per task marked done (`[x] `) or not done
 * (`[ ] `), named by its text when the checklist's message is embedded, else by `#<id>`.
 */
export const flattenTasksDone = (v: unknown, maxLength: number): Flat | undefined => {
  if (!isRec(v)) return undefined
  const w = new Writer(maxLength)
  const names = taskTexts(v["checklist_message"])
  const lines = (ids: unknown, mark: string) => {
    if (!Array.isArray(ids)) return
    for (const id of ids.slice(0, 100)) {
      const n = int(id)
      if (n === undefined) continue
      w.line()
      w.append(`${mark}${names.get(n) ?? `#${n}`}`)
    }
  }
  lines(v["marked_as_done_task_ids"], "[x] ")
  lines(v["marked_as_not_done_task_ids"], "[ ] ")
  return trimmed(w)
}

/** A `checklist_tasks_added` notice as text: a line per task added (`+ <text>`). */
export const flattenTasksAdded = (v: unknown, maxLength: number): Flat | undefined => {
  if (!isRec(v)) return undefined
  const w = new Writer(maxLength)
  if (Array.isArray(v["tasks"])) {
    for (const t of v["tasks"].slice(0, 100)) {
      if (!isRec(t)) continue
      w.line()
      w.append(`+ ${str(t["text"]) ?? ""}`)
    }
  }
  return trimmed(w)
}

/** Where a checklist message's task is: its text's span in the flattened checklist. */
export const taskSpan = (checklistMessage: unknown, taskId: number, maxLength: number) => {
  const list = isRec(checklistMessage) ? checklistMessage["checklist"] : undefined
  return flattenChecklist(list, maxLength)?.tasks.get(taskId)
}
