/**
 * What both engines share: the errors, options and configuration, the retention sweep, and
 * every store over the `SqlClient` in context (`layerStores`). The engine entry points
 * (`Sqlite.ts`, `Pg.ts`) build on this module; it never imports them (`SqlStore.ts`, which
 * re-exports it, loads an engine when a layer over it is built).
 */
import type * as DeixisServices from "@deixis/chathistory/DeixisServices"
import type { HistoryStoreShape } from "@deixis/chathistory/HistoryStore"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import { defaultsOf, millis, positiveInt, retention } from "@deixis/core/ConfigKeys"
import { ContextStore, StoreError } from "@deixis/core/ContextStore"
import { ConversationStateStore } from "@deixis/core/ConversationState"
import { httpStatus } from "@deixis/core/Errors"
import { ReminderStore } from "@deixis/core/ReminderStore"
import { UnitOfWork } from "@deixis/core/UnitOfWork"
import { UpdateInbox } from "@deixis/core/UpdateInbox"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Supervisor from "@deixis/core/Supervisor"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { makeSqlReminderStore, makeSqlUpdateInbox } from "./botStores.js"
import { sqliteChanges } from "./changes.js"
import { makeSqlContextStore } from "./contextStore.js"
import { dbOf, describe } from "./db.js"
import { makeSqlHistoryStore } from "./historyStore.js"
import { isIdentifier, migrate, migrations, underMigrationLock } from "./migrations.js"
import { makeSqlStateStore } from "./stateStore.js"
import { raw } from "./statement.js"
import { makeUnitOfWork } from "./unit.js"

// -----------------------------------------------------------------------------
// Errors
// -----------------------------------------------------------------------------

/**
 * A SQLite layer asked for a setting that differs from the one its file is already open with in
 * this process. Layers over one file share its one writer thread and connections — one
 * `synchronous` setting, one busy timeout — so a second layer cannot change them: it fails
 * (`SqlStoreError` with this as `conflict`) instead of silently taking the other's. Give every
 * layer over a file the same settings, or close the first before opening it otherwise.
 *
 * @since 0.3.0
 * @category errors
 */
export class SettingsConflict extends Schema.Class<SettingsConflict>("@deixis/store-sql/SettingsConflict")({
  filename: Schema.String,
  setting: Schema.Literal("synchronous", "busy_timeout"),
  /** The setting the file is open with. */
  open: Schema.String,
  /** The setting the layer asked for. */
  requested: Schema.String
}) {}

/**
 * The store could not start: the database is unreachable, refused a setting, or a migration
 * failed. Failures of individual calls are the ports' own errors (core's `StoreError`, the
 * conversation state's store error).
 *
 * @since 0.1.0
 * @category errors
 */
export class SqlStoreError extends Schema.TaggedError<SqlStoreError>("@deixis/store-sql/SqlStoreError")(
  "SqlStoreError",
  {
    message: Schema.String,
    /** Set when a SQLite layer asked for other settings than its file is open with (see {@link SettingsConflict}). */
    conflict: Schema.optional(Schema.suspend((): Schema.Schema<SettingsConflict> => SettingsConflict))
  },
  httpStatus(503)
) {}

// -----------------------------------------------------------------------------
// Options and configuration
// -----------------------------------------------------------------------------

/**
 * Retention and sweep settings shared by both engines (durations in milliseconds; a retention
 * of 0 is off: kept without a time limit).
 *
 * The model: what deixis recorded of a conversation — messages, history items, the objects
 * they carry — is kept by default, whatever its age (an imported year-old chat stays readable);
 * an operator who must not keep it longer (a privacy policy) sets a retention, measured from
 * when each message was sent, which is what such a policy speaks of. Only bookkeeping has a
 * time limit by default: applied event ids and early poll closes (`event_retention`). Every
 * sweep that removes something says so at Info, per table.
 *
 * @since 0.1.0
 * @category models
 */
export interface RetentionOptions {
  /** How long an object is kept after it stops being active (or, never activated, after it was created); 0: kept. */
  readonly object_retention: number
  /** How long a message's metadata (reply chains, positions) is kept after it was sent; 0: kept. */
  readonly message_retention: number
  /** How long applied event ids and early poll closes are remembered (and poll ids, when objects have a retention). */
  readonly event_retention: number
  /** How long a history item is kept after it was sent; 0: kept. */
  readonly history_retention: number
  /** How often the layer sweeps; 0 turns the scheduled sweep off. */
  readonly sweep_interval: number
  /** Rows deleted per statement (and per transaction) by a sweep. */
  readonly sweep_batch: number
  /**
   * The context store's in-memory cache of active chats (candidate-pool rows, message metadata),
   * in MiB; 0 turns it off.
   */
  readonly cache_mb: number
}

/**
 * `synchronous` settings of SQLite (WAL mode) that keep a committed (acknowledged) batch on
 * disk when the process dies (a crash, SIGKILL): `normal` (the default, as Rails 8.1 ships
 * SQLite for production) syncs the WAL at checkpoints only, so an OS crash or power loss may
 * drop the last commits; `full` syncs the WAL at every commit (one `fsync` per group-committed
 * batch), so they survive power loss too; `extra` is `full` plus a sync of the directory.
 *
 * @since 0.1.0
 * @category models
 */
export type SqliteSynchronous = "full" | "extra" | "normal"

/**
 * @since 0.1.0
 * @category models
 */
export interface SqliteOptions extends Partial<RetentionOptions> {
  /** The database file (created if missing; WAL mode). */
  readonly filename: string
  /** How long a write waits for another process's lock before failing, in milliseconds. */
  readonly busy_timeout?: number | undefined
  readonly synchronous?: SqliteSynchronous | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface PgOptions extends Partial<RetentionOptions> {
  /** `postgres://user:password@host:port/database` (keep it in a `Redacted`). */
  readonly url: string | Redacted.Redacted
  /**
   * The schema the tables live in (created if missing); the server's `search_path` when
   * unset. Letters, digits and `_` only.
   */
  readonly schema?: string | undefined
  /** The connection pool's size. */
  readonly max_connections?: number | undefined
}

/**
 * Retention settings from `DEIXIS_*` keys, each default written once, here:
 * `STORE_OBJECT_RETENTION` off, `STORE_MESSAGE_RETENTION` off, `STORE_EVENT_RETENTION` 7 days,
 * `HISTORY_STORE_RETENTION` off (a retention key takes a duration, or `off`),
 * `STORE_SWEEP_INTERVAL` 1 minute, `STORE_SWEEP_BATCH` 1000, `STORE_CACHE_MB` 64.
 *
 * @since 0.1.0
 * @category config
 */
export const retentionConfig: Config.Config<RetentionOptions> = Config.all({
  object_retention: retention("STORE_OBJECT_RETENTION", "off"),
  message_retention: retention("STORE_MESSAGE_RETENTION", "off"),
  event_retention: millis("STORE_EVENT_RETENTION", "7 days"),
  history_retention: retention("HISTORY_STORE_RETENTION", "off"),
  sweep_interval: millis("STORE_SWEEP_INTERVAL", "1 minute"),
  sweep_batch: positiveInt("STORE_SWEEP_BATCH", 1000),
  cache_mb: Config.integer("STORE_CACHE_MB").pipe(
    Config.withDefault(64),
    Config.validate({ message: "STORE_CACHE_MB must be a whole number of MiB, 0 (no cache) or more", validation: (n) => n >= 0 })
  )
}).pipe(Config.nested("DEIXIS"))

/**
 * The SQLite settings from `DEIXIS_*` keys: `SQLITE_FILENAME` (default `deixis.db`),
 * `SQLITE_BUSY_TIMEOUT` (5 seconds), `SQLITE_SYNCHRONOUS` (`normal`), and the retention keys.
 *
 * @since 0.1.0
 * @category config
 */
export const sqliteConfig: Config.Config<
  { readonly filename: string; readonly busy_timeout: number; readonly synchronous: SqliteSynchronous } & RetentionOptions
> = Config.all({
  filename: Config.string("SQLITE_FILENAME").pipe(Config.withDefault("deixis.db")),
  busy_timeout: millis("SQLITE_BUSY_TIMEOUT", "5 seconds"),
  synchronous: Config.literal("full", "extra", "normal")("SQLITE_SYNCHRONOUS").pipe(Config.withDefault("normal" as const))
}).pipe(
  Config.nested("DEIXIS"),
  Config.zipWith(retentionConfig, (sqlite, retention) => ({ ...retention, ...sqlite }))
)

/**
 * The PostgreSQL settings from `DEIXIS_*` keys: `PG_URL` (redacted; default
 * `postgres://postgres@127.0.0.1:5432/deixis`), `PG_SCHEMA` (unset: the server's
 * `search_path`), `PG_MAX_CONNECTIONS` (10), and the retention keys.
 *
 * @since 0.1.0
 * @category config
 */
export const pgConfig: Config.Config<
  {
    readonly url: Redacted.Redacted
    readonly schema: string | undefined
    readonly max_connections: number
  } & RetentionOptions
> = Config.all({
  url: Config.redacted("PG_URL").pipe(Config.withDefault(Redacted.make("postgres://postgres@127.0.0.1:5432/deixis"))),
  schema: Config.option(Config.string("PG_SCHEMA")).pipe(Config.map(Option.getOrUndefined)),
  max_connections: positiveInt("PG_MAX_CONNECTIONS", 10)
}).pipe(
  Config.nested("DEIXIS"),
  Config.zipWith(retentionConfig, (pg, retention) => ({ ...retention, ...pg }))
)

/**
 * The retention defaults: the configuration read with no keys set.
 *
 * @since 0.1.0
 * @category constants
 */
export const retentionDefaults: RetentionOptions = defaultsOf(retentionConfig)

// -----------------------------------------------------------------------------
// Retention
// -----------------------------------------------------------------------------

/**
 * What one sweep removed, per table: `objects` (`deixis_objects`), `messages`
 * (`deixis_messages`), `history_items` (`deixis_history`), `event_ids` (`deixis_events`),
 * `poll_ids` (`deixis_polls`) and `poll_closes` (`deixis_poll_closes`).
 *
 * @since 0.1.0
 * @category models
 */
export interface SweepResult {
  readonly objects: number
  /** @since 0.2.0 */
  readonly messages: number
  readonly history_items: number
  /** @since 0.2.0 */
  readonly event_ids: number
  /** @since 0.2.0 */
  readonly poll_ids: number
  /** @since 0.2.0 */
  readonly poll_closes: number
}

/**
 * A sweep that removed nothing.
 *
 * @since 0.2.0
 * @category constants
 */
export const nothingSwept: SweepResult = { objects: 0, messages: 0, history_items: 0, event_ids: 0, poll_ids: 0, poll_closes: 0 }

/**
 * A retention as the logs and the CLI write it: `off`, or a duration (`30d`).
 *
 * @since 0.2.0
 * @category formatting
 */
export const describeRetention = (ms: number): string => (ms <= 0 ? "off" : Duration.format(Duration.millis(ms)))

/**
 * @since 0.1.0
 * @category models
 */
export interface RetentionShape {
  /**
   * Removes, in batches of `sweep_batch` rows, objects past the object retention, messages,
   * event ids and poll mappings past theirs, and history items past the history retention
   * (a retention that is off removes nothing).
   */
  readonly sweep: (now: number) => Effect.Effect<SweepResult, StoreError>
}

/**
 * The retention sweep of the SQL stores, which the layers also run on a schedule.
 *
 * @since 0.1.0
 * @category tags
 */
export class Retention extends Context.Tag("@deixis/store-sql/Retention")<Retention, RetentionShape>() {}

// -----------------------------------------------------------------------------
// Layers over an SqlClient
// -----------------------------------------------------------------------------

/**
 * The services every engine layer provides: every store port (chathistory's
 * `DeixisServices.Stores`, the one store type) and the engine's own `Retention` and
 * `UnitOfWork` (one SQL transaction per unit).
 *
 * @since 0.1.0
 * @category models
 */
export type Stores = DeixisServices.Stores | Retention | UnitOfWork

/**
 * Runs the migrations over the `SqlClient` in context (on PostgreSQL, in `schema`, created
 * if missing). Returns the versions this call applied; idempotent.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrateSchema = (
  schema?: string | undefined
): Effect.Effect<ReadonlyArray<number>, SqlStoreError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    if (schema !== undefined && !isIdentifier(schema)) {
      return yield* new SqlStoreError({ message: `invalid schema name "${schema}": use letters, digits and _` })
    }
    const db = yield* dbOf
    return yield* migrate(db, schema).pipe(
      Effect.mapError((e) => new SqlStoreError({ message: `migrations failed: ${describe(e)}` }))
    )
  })

/**
 * The indexes only a retention sweep reads, each with the retention that needs it. These
 * retentions are off by default, and migration 21 dropped the indexes: a store whose retention
 * is on creates its index at start (`prepareSchema`). Turned off again, the retention leaves its
 * index in place (another process on the same database may still sweep with it); `DROP INDEX`
 * by its name removes it.
 */
const retentionIndexes = [
  { index: "deixis_messages_sent", table: "deixis_messages", column: "sent_at", retention: "message_retention" },
  { index: "deixis_history_sent", table: "deixis_history", column: "sent_at", retention: "history_retention" },
  { index: "deixis_objects_since", table: "deixis_objects", column: "since", retention: "object_retention" }
] as const

/**
 * Migrates, then creates the retention sweeps' indexes the settings need and the database lacks,
 * under the migrations' lock, each announced at Info first: on a large table it takes a while,
 * once.
 */
const prepareSchema = (settings: RetentionOptions, schema: string | undefined) =>
  Effect.gen(function*() {
    yield* migrateSchema(schema)
    const needed = retentionIndexes.filter((i) => settings[i.retention] > 0)
    if (needed.length === 0) return
    const db = yield* dbOf
    yield* underMigrationLock(db, schema, Effect.gen(function*() {
      for (const { column, index, retention, table } of needed) {
        if ((yield* db.query(db.dialect.indexExists(index))).length > 0) continue
        yield* Effect.logInfo("store creating the retention sweep's index").pipe(
          Effect.annotateLogs({ index, table, [retention]: describeRetention(settings[retention]) })
        )
        yield* db.query(raw(`CREATE INDEX ${index} ON ${table} (${column})`))
      }
    })).pipe(Effect.mapError((e) => new SqlStoreError({ message: `creating the retention indexes failed: ${describe(e)}` })))
  })

/**
 * The latest schema version these layers migrate to.
 *
 * @since 0.1.0
 * @category migrations
 */
export const schemaVersion: number = migrations.reduce((max, m) => Math.max(max, m.version), 0)

/**
 * The sweep, every `interval` while the layer lives: first one line at Info with the retention
 * in force, then, for each sweep that removed something, one line at Info with what it removed
 * per table (`store sweep removed rows objects=0 messages=120 history_items=118 …`). A sweep
 * that removed nothing says so at Debug only; one that failed is retried at the next tick.
 */
const scheduledSweep = (sweep: RetentionShape["sweep"], settings: RetentionOptions) =>
  settings.sweep_interval <= 0 ? Effect.void : Effect.logInfo("store retention").pipe(
    Effect.annotateLogs({
      objects: describeRetention(settings.object_retention),
      messages: describeRetention(settings.message_retention),
      history_items: describeRetention(settings.history_retention),
      event_ids: describeRetention(settings.event_retention),
      sweep_interval: Duration.format(Duration.millis(settings.sweep_interval))
    }),
    Effect.zipRight(
      Clock.currentTimeMillis.pipe(
        Effect.flatMap(sweep),
        Effect.flatMap((r) =>
          Object.values(r).some((n) => n > 0)
            ? Effect.logInfo("store sweep removed rows").pipe(Effect.annotateLogs({ ...r }))
            : Effect.logDebug("store sweep removed nothing")
        ),
        Effect.catchAll((e) => Effect.logWarning("store sweep failed").pipe(Effect.annotateLogs({ error: e.message }))),
        Effect.repeat(Schedule.spaced(Duration.millis(settings.sweep_interval))),
        // Supervised: a defect (a bug) restarts it, logged, rather than ending the sweeps quietly.
        (sweeping) => Supervisor.forkRestarting("the store sweep", sweeping)
      )
    ),
    Effect.asVoid
  )

const buildStores = (options: Partial<RetentionOptions>, schema: string | undefined) =>
  Effect.gen(function*() {
    const settings = { ...retentionDefaults, ...options }
    yield* prepareSchema(settings, schema)
    const sql = yield* SqlClient.SqlClient
    const db = yield* dbOf
    const context = makeSqlContextStore(db, settings, yield* sqliteChanges(sql))
    const history = makeSqlHistoryStore(db, settings)
    const retention: RetentionShape = {
      sweep: (now) =>
        Effect.zipWith(context.sweepTables(now), history.sweep(now), (swept, history_items) => ({ ...swept, history_items }))
    }
    yield* scheduledSweep(retention.sweep, settings)
    return {
      context,
      history: history.store,
      state: makeSqlStateStore(db),
      reminders: makeSqlReminderStore(db),
      inbox: makeSqlUpdateInbox(db),
      retention,
      unit: makeUnitOfWork(db)
    }
  })

/**
 * Every store over the `SqlClient` in context (SQLite or PostgreSQL, recognised by its
 * dialect): migrates, then provides the ports, the retention sweep (run on a schedule while the
 * layer lives) and core's `UnitOfWork`: one SQL transaction around everything run through it,
 * each chat's revision bumped once and the cache moved once the transaction committed.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStores = (
  options: Partial<RetentionOptions> & { readonly schema?: string | undefined } = {}
): Layer.Layer<Stores, SqlStoreError, SqlClient.SqlClient> =>
  Layer.scopedContext(
    Effect.map(buildStores(options, options.schema), (s) =>
      Context.make(ContextStore, s.context).pipe(
        Context.add(HistoryStore, s.history),
        Context.add(ConversationStateStore, s.state),
        Context.add(ReminderStore, s.reminders),
        Context.add(UpdateInbox, s.inbox),
        Context.add(Retention, s.retention),
        Context.add(UnitOfWork, s.unit)
      ))
  )

/**
 * The ContextStore alone over the `SqlClient` in context (migrates on start; sweeps objects,
 * messages and event ids on a schedule).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerContextStore = (
  options: Partial<RetentionOptions> & { readonly schema?: string | undefined } = {}
): Layer.Layer<ContextStore, SqlStoreError, SqlClient.SqlClient> =>
  Layer.scoped(
    ContextStore,
    Effect.gen(function*() {
      const settings = { ...retentionDefaults, ...options }
      yield* prepareSchema(settings, options.schema)
      const sql = yield* SqlClient.SqlClient
      const store = makeSqlContextStore(yield* dbOf, settings, yield* sqliteChanges(sql))
      yield* scheduledSweep((now) => Effect.map(store.sweepTables(now), (swept) => ({ ...nothingSwept, ...swept })), settings)
      return store
    })
  )

/**
 * The HistoryStore alone over the `SqlClient` in context (migrates on start; sweeps items
 * past the history retention on a schedule).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHistoryStore = (
  options: Partial<RetentionOptions> & { readonly schema?: string | undefined } = {}
): Layer.Layer<HistoryStore, SqlStoreError, SqlClient.SqlClient> =>
  Layer.scoped(
    HistoryStore,
    Effect.gen(function*() {
      const settings = { ...retentionDefaults, ...options }
      yield* prepareSchema(settings, options.schema)
      const history = makeSqlHistoryStore(yield* dbOf, settings)
      yield* scheduledSweep((now) => Effect.map(history.sweep(now), (items) => ({ ...nothingSwept, history_items: items })), settings)
      const store: HistoryStoreShape = history.store
      return store
    })
  )

/**
 * The ConversationStateStore alone over the `SqlClient` in context (migrates on start).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConversationStateStore = (
  options: { readonly schema?: string | undefined } = {}
): Layer.Layer<ConversationStateStore, SqlStoreError, SqlClient.SqlClient> =>
  Layer.effect(
    ConversationStateStore,
    Effect.gen(function*() {
      yield* migrateSchema(options.schema)
      return makeSqlStateStore(yield* dbOf)
    })
  )

/**
 * The ReminderStore alone over the `SqlClient` in context (migrates on start): due reminders
 * claimed with a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerReminderStore = (
  options: { readonly schema?: string | undefined } = {}
): Layer.Layer<ReminderStore, SqlStoreError, SqlClient.SqlClient> =>
  Layer.effect(
    ReminderStore,
    Effect.gen(function*() {
      yield* migrateSchema(options.schema)
      return makeSqlReminderStore(yield* dbOf)
    })
  )

/**
 * The UpdateInbox alone over the `SqlClient` in context (migrates on start).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerUpdateInbox = (
  options: { readonly schema?: string | undefined } = {}
): Layer.Layer<UpdateInbox, SqlStoreError, SqlClient.SqlClient> =>
  Layer.effect(
    UpdateInbox,
    Effect.gen(function*() {
      yield* migrateSchema(options.schema)
      return makeSqlUpdateInbox(yield* dbOf)
    })
  )

/**
 * Core's `StoreError`, which every call of the SQL stores fails with (the conversation state
 * store fails with its own port's error).
 *
 * @since 0.1.0
 * @category errors
 */
export { StoreError }
