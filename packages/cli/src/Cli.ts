/**
 * The `deixis` command: `import`, `stats`, `sweep`, `migrate` and `export`, over the store the
 * same configuration as the apps names (`DEIXIS_STORE`, read by `StoreConfig` of
 * `@deixis/store-sql`: unset → `.deixis/deixis.sqlite`, `sqlite:<file>`, `memory`, or a
 * `postgres://` URL), with the same core settings (`DEIXIS_*`).
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as HistoryItem from "@deixis/chathistory/HistoryItem"
import * as DeixisServices from "@deixis/chathistory/DeixisServices"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import * as ChatInfo from "@deixis/core/ChatInfo"
import { ContextObject } from "@deixis/core/ContextObject"
import { ContextStore, memoryConfig } from "@deixis/core/ContextStore"
import { versionOf } from "@deixis/core/Lifecycle"
import * as SqlStore from "@deixis/store-sql/SqlStore"
import * as StoreConfig from "@deixis/store-sql/StoreConfig"
import * as Clock from "effect/Clock"
import * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Import from "./Import.js"

/**
 * The stores a choice names, configured as the apps are, without the scheduled sweep: a
 * command never has rows removed under it (`deixis sweep` sweeps once, itself).
 */
const storesOf = (choice: StoreConfig.StoreChoice) => StoreConfig.layer(choice, { scheduledSweep: false })

/**
 * Deixis over the stores a choice names, composed and configured as the apps compose it
 * (chathistory's `DeixisServices.layerConfig`), the retention sweep aside: an import never has
 * what it wrote removed under it.
 *
 * @since 0.1.0
 * @category layers
 */
export const services = (choice: StoreConfig.StoreChoice) => DeixisServices.layerConfig(storesOf(choice))

/** Where output goes: injectable so tests read what an operator would see. */
export interface Output {
  /** A line of the command's result (stdout). */
  readonly line: (text: string) => void
  /** Progress, redrawn in place (stderr); undefined when stderr is not a terminal. */
  readonly progress?: ((text: string) => void) | undefined
}

const stdout: Output = {
  line: (text) => void process.stdout.write(`${text}\n`),
  progress: process.stderr.isTTY === true ? (text) => void process.stderr.write(`\r\x1b[2K${text}`) : undefined
}

const rate = (n: number, ms: number) => (ms <= 0 ? 0 : Math.round((n * 1000) / ms))

/**
 * A progress line: messages, messages per second, the share of the file read and the time left.
 *
 * @since 0.1.0
 * @category formatting
 */
export const progressLine = (p: Import.Progress): string => {
  const share = p.total_bytes === 0 ? 1 : Math.min(1, p.bytes / p.total_bytes)
  const width = 24
  const filled = Math.round(share * width)
  const eta = share <= 0 || share >= 1 ? 0 : Math.round((p.elapsed_ms / share - p.elapsed_ms) / 1000)
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${(share * 100).toFixed(1)}% ${p.messages} messages, ${
    rate(p.messages, p.elapsed_ms)
  } msg/s, ETA ${eta}s`
}

const storeChoice = StoreConfig.config

/** One retention of the store a command works on: its key and how long it keeps (ms, 0: off). */
interface Kept {
  readonly key: string
  readonly what: string
  readonly ms: number
}

/** The retentions the stores of a choice apply, from the same `DEIXIS_*` keys as the apps. */
const retentionOf = (choice: StoreConfig.StoreChoice) =>
  choice._tag === "memory"
    ? Effect.map(memoryConfig, (m): ReadonlyArray<Kept> => [
      { key: "DEIXIS_STORE_OBJECT_RETENTION", what: "their objects", ms: m.object_retention }
    ])
    : Effect.map(SqlStore.retentionConfig, (r): ReadonlyArray<Kept> => [
      { key: "DEIXIS_STORE_MESSAGE_RETENTION", what: "their metadata (reply chains)", ms: r.message_retention },
      { key: "DEIXIS_HISTORY_STORE_RETENTION", what: "their history items", ms: r.history_retention },
      { key: "DEIXIS_STORE_OBJECT_RETENTION", what: "their objects (links, media, polls)", ms: r.object_retention }
    ])

/**
 * What the configured retention will do to what an import wrote, in one line: kept, or how
 * many messages are already past a retention (removed at the next sweep: `pnpm start` sweeps
 * within a minute, `deixis sweep` at once) and when the rest go.
 */
const retentionLine = (choice: StoreConfig.StoreChoice, kept: ReadonlyArray<Kept>, summary: Import.Summary): string => {
  const memory = choice._tag === "memory" ? " (the memory store keeps nothing after this command)" : ""
  const sent = summary.messages - summary.service
  const on = kept.flatMap((k, i) => (k.ms > 0 ? [{ ...k, past: summary.sent_before[i] ?? 0 }] : []))
  if (on.length === 0) {
    return `retention: all ${sent} messages are kept, whatever their age (${kept.map((k) => k.key).join(", ")} off)${memory}`
  }
  const parts = on.map((k) => {
    const rest = sent - k.past
    const last = summary.newest_at === null || rest === 0
      ? ""
      : `, the rest by ${new Date(summary.newest_at + k.ms).toISOString().slice(0, 10)}`
    return `${k.key} ${SqlStore.describeRetention(k.ms)}: ${k.past} of the ${sent} messages are older, ${k.what} go at the next sweep${last}`
  })
  const off = kept.filter((k) => k.ms <= 0).map((k) => k.key)
  return `retention: ${parts.join("; ")}${off.length === 0 ? "" : `; kept: ${off.join(", ")} off`}${memory}`
}

const importCommand = (out: Output) =>
  Command.make(
    // (Written as a template: the consumer test's scan of published code reads a quoted `import` as a specifier.)
    `import`,
    {
      file: Args.file({ name: "result.json", exists: "yes" }).pipe(Args.withDescription("a Telegram Desktop chat export (JSON)")),
      batch: Options.integer("batch-size").pipe(Options.withDefault(500), Options.withDescription("messages per write")),
      mode: Options.choice("mode", ["talkative", "strict", "smart"]).pipe(
        Options.withDefault("talkative" as const),
        Options.withDescription("the write-policy mode messages are recorded under")
      ),
      forum: Options.boolean("forum").pipe(Options.withDescription("a forum from the first message on")),
      botId: Options.text("bot-id").pipe(Options.optional, Options.withDescription("the bot's user id: its messages are its answers")),
      botUsername: Options.text("bot-username").pipe(Options.optional)
    },
    ({ batch, botId, botUsername, file, forum, mode }) =>
      Effect.gen(function*() {
        const choice = yield* storeChoice
        const kept = yield* retentionOf(choice)
        const now = yield* Clock.currentTimeMillis
        let last = 0
        const summary = yield* Import.importFile(file, {
          horizons: kept.map((r) => now - r.ms),
          batchSize: batch,
          mode,
          forum,
          botId: Option.getOrUndefined(botId),
          botUsername: Option.getOrUndefined(botUsername),
          onProgress: out.progress === undefined ? undefined : (p) => {
            // At most four redraws a second.
            if (p.elapsed_ms - last < 250 && p.bytes < p.total_bytes) return
            last = p.elapsed_ms
            out.progress!(progressLine(p))
          }
        }).pipe(Effect.provide(services(choice)))
        if (out.progress !== undefined) out.progress("")
        out.line(
          `imported ${summary.messages} messages (${summary.service} service) of ${summary.name ?? "?"} (chat ${summary.chat_id}, ${summary.chat_type}${
            summary.topics > 0 ? `, ${summary.topics} topics` : ""
          }) into ${StoreConfig.describeChoice(choice)}`
        )
        out.line(
          `history items written or rewritten ${summary.recorded}, events applied ${summary.applied}, already known ${summary.duplicates}; ${summary.batches} batches in ${
            (summary.elapsed_ms / 1000).toFixed(1)
          }s (${rate(summary.messages, summary.elapsed_ms)} msg/s)`
        )
        out.line(retentionLine(choice, kept, summary))
      })
  ).pipe(Command.withDescription("import a Telegram Desktop chat export (result.json), idempotently"))

const statsCommand = (out: Output) =>
  Command.make("stats", {}, () =>
    Effect.gen(function*() {
      const choice = yield* storeChoice
      const stats = yield* Effect.all({
        context: Effect.flatMap(ContextStore, (s) => s.stats),
        history: Effect.flatMap(HistoryStore, (s) => s.stats)
      }).pipe(Effect.provide(storesOf(choice)))
      out.line(JSON.stringify({ store: StoreConfig.describeChoice(choice), ...stats }))
    })).pipe(Command.withDescription("what the store holds (JSON)"))

const sweepCommand = (out: Output) =>
  Command.make("sweep", {}, () =>
    Effect.gen(function*() {
      const choice = yield* storeChoice
      const swept = yield* Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // The SQL stores sweep history too (their Retention); the memory store bounds itself.
        const retention = yield* Effect.serviceOption(SqlStore.Retention)
        if (Option.isSome(retention)) return yield* retention.value.sweep(now)
        return { ...SqlStore.nothingSwept, objects: yield* Effect.flatMap(ContextStore, (s) => s.sweep(now)) }
      }).pipe(Effect.provide(storesOf(choice)))
      out.line(JSON.stringify({ store: StoreConfig.describeChoice(choice), ...swept }))
    })).pipe(Command.withDescription("remove what retention has expired, now"))

const migrateCommand = (out: Output) =>
  Command.make("migrate", {}, () =>
    Effect.gen(function*() {
      const choice = yield* storeChoice
      const applied = yield* (choice._tag === "memory"
        ? Effect.succeed<ReadonlyArray<number>>([])
        : choice._tag === "sqlite"
        ? SqlStore.migrateSchema().pipe(Effect.provide(SqlStore.layerSqliteClient({ filename: choice.filename })))
        : Effect.flatMap(SqlStore.pgConfig, (settings) =>
          SqlStore.migrateSchema(settings.schema).pipe(
            Effect.provide(SqlStore.layerPgClient({ ...settings, url: choice.url }))
          )))
      out.line(JSON.stringify({ store: StoreConfig.describeChoice(choice), applied, schema_version: SqlStore.schemaVersion }))
    })).pipe(Command.withDescription("bring the store's schema to this version"))

/**
 * A chat the store holds nothing of, named as the operator typed it. For an id written as a
 * Telegram Desktop export writes it (a group's id without the Bot API's `-` or `-100`), the
 * message names the Bot API form the store holds.
 *
 * @since 0.2.0
 * @category errors
 */
export class UnknownChat extends Data.TaggedError("UnknownChat")<{ readonly chat: string; readonly message: string }> {}

/** Whether the store holds anything of a chat: its messages or objects (core), or history. */
const holds = (chat: string) =>
  Effect.gen(function*() {
    const snapshot = yield* Effect.flatMap(ContextStore, (s) => s.snapshot(chat))
    if (snapshot.messages.length > 0 || snapshot.objects.length > 0) return true
    return (yield* Effect.flatMap(HistoryStore, (h) => h.recent({ chat_id: chat, topic_id: null }, 1))).length > 0
  })

/** The chat to read, or `UnknownChat` with the Bot API form of an export's id when the store holds that. */
const knownChat = (chat: string, store: string) =>
  Effect.gen(function*() {
    if (yield* holds(chat)) return chat
    const forms = /^[1-9]\d{0,15}$/.test(chat) ? [`-100${chat}`, `-${chat}`] : []
    for (const form of forms) {
      if (yield* holds(form)) {
        return yield* new UnknownChat({
          chat,
          message: `no chat ${chat} in ${store}; a Telegram Desktop export writes a group's id without the Bot API's prefix, and the store holds ${form}: deixis export ${form}`
        })
      }
    }
    return yield* new UnknownChat({
      chat,
      message: `no chat ${JSON.stringify(chat)} in ${store}${
        forms.length > 0 ? ` (nor ${forms.join(" or ")}, its Bot API forms)` : ""
      }: \`deixis chats\` lists the chats it holds`
    })
  })

const encodeObject = Schema.encodeSync(ContextObject)

const exportCommand = (out: Output) =>
  Command.make(
    "export",
    { chat: Args.text({ name: "chat" }).pipe(Args.withDescription("the chat id (as the Bot API writes it: -100… for a supergroup)")) },
    ({ chat: asked }) =>
      Effect.gen(function*() {
        const choice = yield* storeChoice
        yield* Effect.gen(function*() {
          const chat = yield* knownChat(asked, StoreConfig.describeChoice(choice))
          const store = yield* ContextStore
          const history = yield* HistoryStore
          const snapshot = yield* store.snapshot(chat)
          const topics = [...new Set(snapshot.messages.map((m) => m.topic_id))]
          for (const topic of topics) {
            // Newest pages first, printed oldest first.
            const pages: Array<ReadonlyArray<HistoryItem.HistoryItem>> = []
            let before: string | undefined
            for (;;) {
              const page = yield* history.recent({ chat_id: chat, topic_id: topic }, 500, { before })
              if (page.length === 0) break
              pages.push(page.map((e) => e.item))
              const first = page[0]!
              if (first.anchor === before || page.length < 500) break
              before = first.anchor
            }
            for (const page of pages.reverse()) {
              for (const item of page) out.line(JSON.stringify({ type: "history_item", ...HistoryItem.encodeTrusted(item) }))
            }
          }
          // Encoded as the tools return objects: times in ISO 8601, as the history items' are.
          for (const object of snapshot.objects) out.line(JSON.stringify({ type: "object", ...encodeObject(object) }))
        }).pipe(Effect.provide(storesOf(choice)))
      })
  ).pipe(Command.withDescription("a chat's history items, then its objects, as JSON lines (times in ISO 8601)"))

const chatsCommand = (out: Output) =>
  Command.make(
    "chats",
    {
      search: Args.text({ name: "search" }).pipe(
        Args.optional,
        Args.withDescription("a part of a chat's title (any case) or id")
      ),
      limit: Options.integer("limit").pipe(Options.withDefault(50), Options.withDescription(`chats per page (at most ${ChatInfo.maxChatPage})`)),
      after: Options.text("after").pipe(Options.optional, Options.withDescription("the next cursor a page ended with"))
    },
    ({ after, limit, search }) =>
      Effect.gen(function*() {
        const choice = yield* storeChoice
        const cursor = yield* Option.match(after, {
          onNone: () => Effect.succeed(undefined),
          onSome: (text) => Schema.decode(ChatInfo.ChatCursorFromString)(text)
        })
        const page = yield* Effect.flatMap(ContextStore, (s) =>
          s.chats({ search: Option.getOrUndefined(search), limit, after: cursor })).pipe(Effect.provide(storesOf(choice)))
        for (const chat of page.chats) out.line(JSON.stringify(encodeSummary(chat)))
        if (page.next !== null) out.line(JSON.stringify({ next: Schema.encodeSync(ChatInfo.ChatCursorFromString)(page.next) }))
      })
  ).pipe(Command.withDescription("the chats the store holds, newest first, as JSON lines (then the next page's cursor, if any)"))

const encodeSummary = Schema.encodeSync(ChatInfo.ChatSummary)

/**
 * The `deixis` command and its subcommands, writing to `out`.
 *
 * @since 0.1.0
 * @category commands
 */
export const command = (out: Output = stdout) =>
  Command.make("deixis").pipe(
    Command.withDescription("operate a deixis store"),
    Command.withSubcommands([
      importCommand(out),
      statsCommand(out),
      sweepCommand(out),
      migrateCommand(out),
      exportCommand(out),
      chatsCommand(out)
    ])
  )

/**
 * One line for a failure of a command: its message, and the key at fault of a configuration error.
 *
 * @since 0.1.0
 * @category formatting
 */
export const describeError = (error: unknown): string =>
  ConfigError.isConfigError(error)
    ? `configuration: ${String(error)}`
    : typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string"
    ? (error as { message: string }).message
    : String(error)

/**
 * Whether the command's help and usage errors may be coloured, per stream.
 *
 * @since 0.2.0
 * @category running
 */
export interface Colour {
  readonly stdout: boolean
  readonly stderr: boolean
}

/**
 * Colour only where a person reads it: on a terminal, and not when `NO_COLOR` is set to
 * anything but the empty string (https://no-color.org).
 *
 * @since 0.2.0
 * @category running
 */
export const colourFor = (
  env: Readonly<Record<string, string | undefined>>,
  streams: { readonly stdout: { readonly isTTY?: boolean }; readonly stderr: { readonly isTTY?: boolean } }
): Colour => {
  const off = env["NO_COLOR"] !== undefined && env["NO_COLOR"] !== ""
  return { stdout: !off && streams.stdout.isTTY === true, stderr: !off && streams.stderr.isTTY === true }
}

// SGR sequences: @effect/cli's help and errors colour with them and nothing else.
const sgr = /\x1b\[[0-9;]*m/g
const plain = (args: ReadonlyArray<unknown>) => args.map((a) => (typeof a === "string" ? a.replace(sgr, "") : a))

/** `effect` with what it prints through the Console stripped of colour where `colour` says. */
const withColour = <A, E, R>(effect: Effect.Effect<A, E, R>, colour: Colour): Effect.Effect<A, E, R> =>
  colour.stdout && colour.stderr ? effect : Console.consoleWith((console) =>
    Effect.withConsole(effect, {
      ...console,
      log: (...args) => console.log(...(colour.stdout ? args : plain(args))),
      info: (...args) => console.info(...(colour.stdout ? args : plain(args))),
      error: (...args) => console.error(...(colour.stderr ? args : plain(args))),
      warn: (...args) => console.warn(...(colour.stderr ? args : plain(args)))
    }))

/**
 * This package's version, from its package.json (what `deixis --version` prints).
 *
 * @since 0.1.0
 * @category constants
 */
export const version: string = versionOf("@deixis/cli", import.meta.url)

/**
 * Runs the command on `argv` (without the node and script paths); its help and usage errors
 * are coloured only as `colour` says (by default: on a terminal without `NO_COLOR`).
 *
 * @since 0.1.0
 * @category running
 */
export const run = (
  argv: ReadonlyArray<string>,
  out: Output = stdout,
  colour: Colour = colourFor(process.env, process)
) => withColour(Command.run(command(out), { name: "deixis", version })(["node", "deixis", ...argv]), colour)


