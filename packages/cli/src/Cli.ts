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
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import * as WritePolicy from "@deixis/chathistory/WritePolicy"
import { ContextStore } from "@deixis/core/ContextStore"
import * as ConversationState from "@deixis/core/ConversationState"
import * as Deixis from "@deixis/core/Deixis"
import * as SqlStore from "@deixis/store-sql/SqlStore"
import * as StoreConfig from "@deixis/store-sql/StoreConfig"
import * as Clock from "effect/Clock"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Import from "./Import.js"

/**
 * The services recording needs over the stores a choice names, configured as the apps are.
 *
 * @since 0.1.0
 * @category layers
 */
export const services = (choice: StoreConfig.StoreChoice) => {
  const stores = StoreConfig.layer(choice)
  return Layer.mergeAll(ConversationState.layerConfig(), WritePolicy.layerConfig).pipe(
    Layer.provideMerge(Layer.merge(Deixis.layerWithConfig(stores), stores))
  )
}

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
        let last = 0
        const summary = yield* Import.importFile(file, {
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
      })
  ).pipe(Command.withDescription("import a Telegram Desktop chat export (result.json), idempotently"))

const statsCommand = (out: Output) =>
  Command.make("stats", {}, () =>
    Effect.gen(function*() {
      const choice = yield* storeChoice
      const stats = yield* Effect.all({
        context: Effect.flatMap(ContextStore, (s) => s.stats),
        history: Effect.flatMap(HistoryStore, (s) => s.stats)
      }).pipe(Effect.provide(StoreConfig.layer(choice)))
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
        return { objects: yield* Effect.flatMap(ContextStore, (s) => s.sweep(now)), history_items: 0 }
      }).pipe(Effect.provide(StoreConfig.layer(choice)))
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

const exportCommand = (out: Output) =>
  Command.make(
    "export",
    { chat: Args.text({ name: "chat" }).pipe(Args.withDescription("the chat id (as the Bot API writes it)")) },
    ({ chat }) =>
      Effect.gen(function*() {
        const choice = yield* storeChoice
        yield* Effect.gen(function*() {
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
          for (const object of snapshot.objects) out.line(JSON.stringify({ type: "object", ...object }))
        }).pipe(Effect.provide(StoreConfig.layer(choice)))
      })
  ).pipe(Command.withDescription("a chat's history items, then its objects, as JSON lines"))

/**
 * The `deixis` command and its subcommands, writing to `out`.
 *
 * @since 0.1.0
 * @category commands
 */
export const command = (out: Output = stdout) =>
  Command.make("deixis").pipe(
    Command.withDescription("operate a deixis store"),
    Command.withSubcommands([importCommand(out), statsCommand(out), sweepCommand(out), migrateCommand(out), exportCommand(out)])
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
 * Runs the command on `argv` (without the node and script paths).
 *
 * @since 0.1.0
 * @category running
 */
export const run = (argv: ReadonlyArray<string>, out: Output = stdout) =>
  Command.run(command(out), { name: "deixis", version: "0.1.0" })(["node", "deixis", ...argv])


