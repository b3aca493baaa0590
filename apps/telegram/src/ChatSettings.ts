/**
 * Per-chat settings of the bot (the time zone `/timezone` sets), kept as a small document in
 * the deployment's `ConversationStateStore` — as durable and as shared as the rest of its
 * state — under a topic id no Telegram topic can have (topic ids are integers).
 *
 * @since 0.1.0
 */
import * as ConversationState from "@deixis/core/ConversationState"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Times from "./Times.js"

/**
 * The topic id of the settings document.
 *
 * @since 0.1.0
 * @category constants
 */
export const settingsTopic = "deixis.telegram-bot.settings"

/**
 * A chat's time zone, `fallback` until one is set (or when the stored one is unknown here).
 *
 * @since 0.1.0
 * @category settings
 */
export const timeZone = (chatId: string, fallback: string) =>
  Effect.flatMap(ConversationState.ConversationStateStore, (store) => store.get({ chat_id: chatId, topic_id: settingsTopic })).pipe(
    Effect.map((found) =>
      Option.match(found, {
        onNone: () => fallback,
        onSome: (snapshot) => {
          const zone = snapshot.state["time_zone"]
          return typeof zone === "string" && Times.isTimeZone(zone) ? zone : fallback
        }
      })
    ),
    Effect.tapError((error) => Effect.logWarning("chat settings not read; using the default time zone", error)),
    Effect.orElseSucceed(() => fallback)
  )

/**
 * Sets a chat's time zone (compare-and-set on the document's revision, retried on a race).
 *
 * @since 0.1.0
 * @category settings
 */
export const setTimeZone = (chatId: string, zone: string, by: string | null) =>
  Effect.gen(function*() {
    const store = yield* ConversationState.ConversationStateStore
    const scope = { chat_id: chatId, topic_id: settingsTopic }
    const current = yield* store.get(scope)
    const state = Option.match(current, { onNone: () => ({}), onSome: (s) => s.state })
    yield* store.put({
      ...scope,
      state: { ...state, time_zone: zone },
      revision: Option.match(current, { onNone: () => 1, onSome: (s) => s.revision + 1 }),
      updated_at: yield* Clock.currentTimeMillis,
      updated_by: by
    })
  }).pipe(Effect.retry({ times: 3 }))
