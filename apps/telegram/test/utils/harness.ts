/**
 * What the bot's tests share: a configuration pointing at the fake Bot API, update builders,
 * the memory stores, and waiting helpers.
 */
import type * as Supervisor from "@deixis/core/Supervisor"
import { StoreConfig } from "@deixis/store-sql"
import * as FakeBotApi from "@deixis/telegraf/testing"
import { assert } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as App from "../../src/App.js"
import * as Bot from "../../src/Bot.js"
import { type BotConfig, defaults } from "../../src/BotConfig.js"
import * as Dispatcher from "../../src/Dispatcher.js"
import type * as Metrics from "../../src/Metrics.js"
import * as Reminders from "../../src/Reminders.js"
import * as Runner from "../../src/Runner.js"
import * as F from "./fixtures.js"

export { F, FakeBotApi }

export const now = 1_771_000_100_000 // 2026-02-13T16:28:20Z
export const chat = String(F.forum.id)

export const config = (apiRoot: string, overrides: Partial<BotConfig> = {}): BotConfig => ({
  token: Redacted.make("123:TEST"),
  apiRoot,
  mode: "talkative",
  transport: { _tag: "polling" },
  send: { maxAttempts: 3, baseDelay: Duration.seconds(1), maxDelay: Duration.seconds(30), timeout: Duration.seconds(15) },
  polling: { timeout: Duration.seconds(1), conflictTimeout: Duration.minutes(5) },
  concurrency: 8,
  recordingConcurrency: 8,
  queueCapacity: 1000,
  updateLease: Duration.minutes(5),
  updateRetention: Duration.days(2),
  updateMaxAttempts: 5,
  reminderRetryDelay: Duration.minutes(1),
  reminderLease: Duration.minutes(2),
  reminderPollInterval: Duration.seconds(5),
  timeZone: "UTC",
  ops: { port: 0, host: "127.0.0.1" },
  logging: defaults.logging,
  shutdownTimeout: Duration.seconds(10),
  llm: Option.none(),
  ...overrides
})

let nextId = 1000
export const freshId = () => nextId++

type Person = typeof F.alice | typeof F.bob
type Chat = typeof F.forum | typeof F.otherForum

export const message = (
  text: string,
  options: { thread?: number | null; from?: Person; chat?: Chat; extra?: Record<string, unknown>; id?: number } = {}
) => {
  const id = options.id ?? freshId()
  const command = /^\/[\w@]+/.exec(text)
  const thread = options.thread === undefined ? 7 : options.thread
  return {
    update_id: id,
    message: {
      message_id: id,
      from: options.from ?? F.alice,
      chat: options.chat ?? F.forum,
      date: Math.floor(now / 1000),
      ...(thread === null ? {} : { message_thread_id: thread, is_topic_message: true }),
      text,
      ...(command === null ? {} : { entities: [{ type: "bot_command", offset: 0, length: command[0].length }] }),
      ...options.extra
    }
  }
}

export const press = (
  data: string,
  options: { from?: Person; thread?: number; messageId?: number; chat?: Chat } = {}
) => ({
  update_id: freshId(),
  callback_query: {
    id: `cb-${nextId}`,
    from: options.from ?? F.alice,
    chat_instance: "-1",
    data,
    message: {
      message_id: options.messageId ?? 10_000,
      from: F.bot,
      chat: options.chat ?? F.forum,
      date: Math.floor(now / 1000),
      message_thread_id: options.thread ?? 7,
      is_topic_message: true,
      text: "…"
    }
  }
})

export const setup = (
  overrides: Partial<BotConfig> = {},
  apiOptions: Parameters<typeof FakeBotApi.make>[0] = {},
  tables: Bot.Tables = {}
) =>
  Effect.gen(function*() {
    const api = yield* FakeBotApi.make({ botId: F.botId, username: F.botUsername, ...apiOptions })
    const bot = yield* Bot.make({ ...config(api.apiRoot, overrides), ...tables })
    return { api, bot, feed: bot.handle }
  })

/** The reminder sender over a dispatcher, as launch starts it. */
export const startReminders = (bot: Bot.Bot, overrides: Partial<BotConfig> = {}, owner = "test-owner") =>
  Effect.gen(function*() {
    const c = config("", overrides)
    const dispatcher = yield* Dispatcher.make({ concurrency: 4, capacity: 100, shutdownTimeout: "1 second" })
    const sender = yield* Reminders.start(dispatcher, {
      owner,
      lease: c.reminderLease,
      retryDelay: c.reminderRetryDelay,
      pollInterval: c.reminderPollInterval,
      maxInFlight: 16,
      keyOf: (r) => r.chat_id,
      send: bot.fireReminder
    })
    return sender
  })

export const launch = (bot: Bot.Bot, apiRoot: string, overrides: Partial<BotConfig> = {}, owner = "test-owner") =>
  Runner.launch(bot, { ...config(apiRoot, overrides), owner })

export const texts = (api: FakeBotApi.FakeBotApi) => api.callsOf("sendMessage").map((c) => String(c.payload["text"]))
export const lastSent = (api: FakeBotApi.FakeBotApi) => api.callsOf("sendMessage").at(-1)!.payload
export const buttonsOf = (payload: Record<string, unknown>) =>
  (payload["reply_markup"] as { inline_keyboard: Array<Array<{ callback_data: string; text: string }>> }).inline_keyboard

/** What a test gets from `App.services` (and its scope). */
export type Services = Bot.Services | Supervisor.Supervisor | Metrics.Registry | Scope.Scope

// The clock is set before the stores exist: the memory store sweeps every minute, and moving
// a TestClock across 56 years would run every one of those sweeps.
export const withMemory = <A, E, R extends Services>(effect: Effect.Effect<A, E, R>) =>
  Effect.zipRight(TestClock.setTime(now), Effect.provide(effect, App.services(StoreConfig.layerMemory)))

/** The memory stores on the real clock (`it.live` tests). */
export const withMemoryLive = <A, E, R extends Services>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(effect, App.services(StoreConfig.layerMemory))

/** Real-time polling until `check` holds (bounded: fails the test after ~4 s). */
export const eventually = (what: string, check: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 800; i++) {
      if (check()) return
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
    }
    assert.fail(`never happened: ${what}`)
  })

/** Real-time polling until the effect says true (bounded: fails the test after ~4 s). */
export const eventuallyEffect = <E, R>(what: string, check: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 800; i++) {
      if (yield* check) return
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
    }
    assert.fail(`never happened: ${what}`)
  })

/** Waits (in real time: the sleep starts after real I/O) until some fiber sleeps on the TestClock until exactly `duration` from now. */
export const sleeperIn = (duration: Duration.DurationInput) =>
  Effect.gen(function*() {
    const at = (yield* TestClock.currentTimeMillis) + Duration.toMillis(duration)
    for (let i = 0; i < 800; i++) {
      if (Chunk.some(yield* TestClock.sleeps(), (t) => t === at)) return
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
    }
    assert.fail(`nothing sleeps until ${Duration.format(duration)} from now`)
  })
