/**
 * `deixis import`: streams a Telegram Desktop chat export into the stores through the same
 * recording path as live updates (`TelegramRecorder.recordBatch`), batch by batch. A batch is
 * decoded and mapped whole before anything of it is written, so a bad message stops the
 * import with nothing of its batch written (earlier batches stay: importing again, once the
 * file is fixed, changes nothing of them — recording is idempotent).
 *
 * @since 0.1.0
 */
import type * as WritePolicy from "@deixis/chathistory/WritePolicy"
import type { StoreError } from "@deixis/core/ContextStore"
import * as TelegramRecorder from "@deixis/telegraf/TelegramRecorder"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import { Scanner, ScanError } from "./internal/scanner.js"
import * as TelegramExport from "./TelegramExport.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface ImportOptions {
  /** Messages per write (one write per store per batch). Default 500. */
  readonly batchSize?: number | undefined
  /**
   * The write-policy mode the messages are recorded under. Default `talkative`: history is
   * what an import is for (in `strict` or `smart` mode a group's messages that did not address
   * the bot are not kept).
   */
  readonly mode?: WritePolicy.GroupMode | undefined
  /** Treat the chat as a forum from its first message (otherwise from its first `topic_created`). */
  readonly forum?: boolean | undefined
  /** The bot's user id: its messages in the export are recorded as its answers. */
  readonly botId?: string | undefined
  /** The bot's username, so messages addressing it are recognised. */
  readonly botUsername?: string | undefined
  /** Called after each batch is written. */
  readonly onProgress?: ((progress: Progress) => void) | undefined
  /** The largest message read, in characters (default 16 MiB): a bound on memory. */
  readonly maxMessageSize?: number | undefined
  /**
   * Times (ms since the epoch) to count messages against: the summary's `sent_before` says, for
   * each, how many of the messages (service messages aside) were sent at or before it — what a
   * retention measured from sending removes of them.
   */
  readonly horizons?: ReadonlyArray<number> | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Progress {
  readonly messages: number
  readonly bytes: number
  readonly total_bytes: number
  readonly elapsed_ms: number
}

/**
 * What an import did.
 *
 * @since 0.1.0
 * @category models
 */
export interface Summary {
  readonly chat_id: string
  readonly chat_type: TelegramExport.ChatType
  readonly name: string | null
  /** Messages read from the export (service messages included). */
  readonly messages: number
  /** Service messages (joins, pins, topic creations…): read, never recorded as conversation. */
  readonly service: number
  /** Forum topics found. */
  readonly topics: number
  /** History items written or replaced (a re-import rewrites equal copies in place: `duplicates` tells it apart). */
  readonly recorded: number
  /** Events core applied, and those it had already applied (a re-import: all of them). */
  readonly applied: number
  readonly duplicates: number
  readonly batches: number
  readonly elapsed_ms: number
  /** For each of the options' `horizons`, the messages (service messages aside) sent at or before it. */
  readonly sent_before: ReadonlyArray<number>
  /** When the newest message (service messages aside) was sent; null without any. */
  readonly newest_at: number | null
}

const defaultBatch = 500
const defaultMaxMessage = 16 * 1024 * 1024

/**
 * Imports the export at `path`. Fails with `NotAChatExport` for a file of another format,
 * `ExportError` naming the message number and field of a malformed or truncated export, or a
 * store's error.
 *
 * @since 0.1.0
 * @category importing
 */
export const importFile = (
  path: string,
  options: ImportOptions = {}
): Effect.Effect<
  Summary,
  TelegramExport.ExportError | TelegramExport.NotAChatExport | StoreError,
  TelegramRecorder.Services
> =>
  Effect.gen(function*() {
    const total = yield* Effect.try({
      try: () => fs.statSync(path).size,
      catch: (e) => new TelegramExport.NotAChatExport({ message: `cannot read ${path}: ${e instanceof Error ? e.message : String(e)}` })
    })
    const started = Date.now()
    const batchSize = Math.max(1, options.batchSize ?? defaultBatch)
    const record: TelegramRecorder.RecordOptions = {
      mode: options.mode ?? "talkative",
      botId: options.botId,
      botUsername: options.botUsername
    }
    const scanner = new Scanner("messages", options.maxMessageSize ?? defaultMaxMessage)
    const fields = new Map<string, unknown>()
    const state = TelegramExport.initialState(options.forum ?? false)
    let head: TelegramExport.ChatHead | null = null
    let batch: Array<Record<string, unknown>> = []
    const counts = { messages: 0, service: 0, recorded: 0, applied: 0, duplicates: 0, batches: 0 }
    const horizons = options.horizons ?? []
    const sentBefore = horizons.map(() => 0)
    let newestAt: number | null = null
    let bytes = 0

    const flush = Effect.suspend(() => {
      if (batch.length === 0) return Effect.void
      const updates = batch
      batch = []
      return Effect.map(TelegramRecorder.recordBatch(updates, record), (result) => {
        counts.recorded += result.recorded
        counts.applied += result.applied.applied
        counts.duplicates += result.applied.duplicates
        counts.batches++
        options.onProgress?.({ messages: counts.messages, bytes, total_bytes: total, elapsed_ms: Date.now() - started })
      })
    })

    const fail = (e: unknown): TelegramExport.ExportError | TelegramExport.NotAChatExport => {
      if (e instanceof TelegramExport.ExportError || e instanceof TelegramExport.NotAChatExport) return e
      if (e instanceof ScanError) {
        if (e.reason === "not-object") return new TelegramExport.NotAChatExport({ message: `not a Telegram Desktop chat export: ${e.message}` })
        const number = e.element === null ? null : e.element + 1
        return new TelegramExport.ExportError({
          message: number === null ? e.message : `message ${number}: ${e.message}`,
          number,
          id: null,
          field: e.reason === "truncated" ? "(truncated)" : e.reason === "too-large" ? "(size)" : "(json)"
        })
      }
      return new TelegramExport.ExportError({ message: String(e), number: null, id: null, field: null })
    }

    // One chunk: its complete values, in order; a full batch is written before reading on.
    const onChunk = (chunk: string) =>
      Effect.gen(function*() {
        bytes += Buffer.byteLength(chunk)
        const tokens = yield* Effect.try({ try: () => scanner.feed(chunk), catch: fail })
        for (const token of tokens) {
          switch (token._tag) {
            case "Field": {
              if (token.key === "chats" || token.key === "personal_information") {
                return yield* new TelegramExport.NotAChatExport({
                  message: `not a Telegram Desktop chat export: ${TelegramExport.fullExport}`
                })
              }
              fields.set(token.key, yield* Effect.try({ try: () => JSON.parse(token.raw) as unknown, catch: () => fail(new ScanError("syntax", `field "${token.key}": not JSON`, null)) }))
              break
            }
            case "ArrayStart": {
              const read = TelegramExport.readHead(fields)
              if (Either.isLeft(read)) return yield* read.left
              head = read.right
              break
            }
            case "Element": {
              const number = token.index + 1
              const raw = yield* Effect.try({
                try: () => JSON.parse(token.raw) as unknown,
                catch: (e) =>
                  new TelegramExport.ExportError({
                    message: `message ${number}: not JSON (${e instanceof Error ? e.message : String(e)})`,
                    number,
                    id: null,
                    field: "(json)"
                  })
              })
              const message = TelegramExport.decode(raw, number)
              if (Either.isLeft(message)) return yield* message.left
              counts.messages++
              if (message.right.type === "service") {
                counts.service++
              } else {
                const at = TelegramExport.sentAt(message.right)
                for (let i = 0; i < horizons.length; i++) if (at <= horizons[i]!) sentBefore[i]!++
                if (newestAt === null || at > newestAt) newestAt = at
              }
              batch.push(TelegramExport.toUpdate(head!, message.right, state))
              // An album is never cut by a write: its first message is marked when the second is read.
              if (batch.length >= batchSize && state.album === null) yield* flush
              break
            }
            case "ArrayEnd":
              yield* flush
              break
          }
        }
      })

    yield* Stream.fromAsyncIterable(
      fs.createReadStream(path, { encoding: "utf8", highWaterMark: 1 << 20 }) as AsyncIterable<string>,
      (e) => new TelegramExport.NotAChatExport({ message: `cannot read ${path}: ${e instanceof Error ? e.message : String(e)}` })
    ).pipe(Stream.runForEach(onChunk))
    yield* Effect.try({ try: () => scanner.end(), catch: fail })
    if (head === null) {
      const read = TelegramExport.readHead(fields)
      return yield* Either.isLeft(read)
        ? read.left
        : new TelegramExport.NotAChatExport({ message: "not a Telegram Desktop chat export: it has no \"messages\" array" })
    }
    const chat: TelegramExport.ChatHead = head
    return {
      chat_id: String(TelegramExport.botApiChatId(chat)),
      chat_type: chat.type,
      name: chat.name,
      ...counts,
      topics: state.topics.size,
      elapsed_ms: Date.now() - started,
      sent_before: sentBefore,
      newest_at: newestAt
    }
  })
