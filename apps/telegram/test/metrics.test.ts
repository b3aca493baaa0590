/**
 * The bot's `/metrics` by the conventions: one registry holding everything the process
 * measures (the bot's counters, the store's cache counters, the URL reader's), counters typed
 * as counters, no chat or user id in any label, and `promtool check metrics` finds nothing;
 * `?name[]=…` gives only the metrics named.
 */
import { assert, describe, it } from "@effect/vitest"
import { checkMetrics } from "deixis-test-support/promtool"
import * as Effect from "effect/Effect"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Metrics from "../src/Metrics.js"
import * as Ops from "../src/Ops.js"
import { eventually, F, launch, message, setup, texts, withMemory } from "./utils/harness.js"

describe("apps/telegram: /metrics", () => {
  it.scoped("one registry with the store's and the URL reader's metrics, counters as counters, no chat id in a label; promtool check metrics passes", () =>
    Effect.gen(function*() {
      const { api, bot } = yield* setup()
      const running = yield* launch(bot, api.apiRoot)
      const registry = yield* Metrics.Registry
      yield* registry.probe({
        queue: () => ({ queued: running.intakeService.queued(), chats: running.dispatcher.depth().chats, deepest: running.dispatcher.depth().deepest[0]?.[1] ?? 0 }),
        reminders: () => Promise.resolve({ pending: 0, due: 0 })
      })
      const port = yield* Ops.serve({ port: 0, host: "127.0.0.1" }, { ready: SubscriptionRef.get(running.ready), healthy: Effect.succeed(true) })
      api.pushUpdates(message("/help"), message("/help", { chat: F.otherForum }))
      yield* eventually("both chats are answered", () => texts(api).length === 2)
      yield* running.dispatcher.idle
      const scrape = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()))
      for (const name of ["deixis_store_cache_hits_total", "deixis_store_cache_misses_total", "deixis_fetch_total", "deixis_bot_updates_total", "deixis_bot_reminders_sent_total"]) {
        assert.match(scrape, new RegExp(`^# TYPE ${name} counter$`, "m"), name)
      }
      assert.match(scrape, /^# TYPE deixis_fetch_duration_seconds histogram$/m)
      assert.match(scrape, /^deixis_bot_updates_total\{outcome="handled"\} [1-9]/m)
      // Nothing that names a chat: neither a label called so, nor a chat's id as a value.
      assert.notMatch(scrape, /chat="/)
      assert.notInclude(scrape, String(F.forum.id))
      assert.notInclude(scrape, String(F.otherForum.id))
      const checked = yield* Effect.promise(() => checkMetrics(scrape))
      assert.strictEqual(checked.code, 0, checked.output)
      assert.strictEqual(checked.output.trim(), "", checked.output)
      // `name[]` filters (a cheap scrape for a poller): only the metrics named, a name not held left out.
      const only = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/metrics?name[]=deixis_bot_updates_total&name[]=deixis_fetch_total&name[]=no_such_metric`).then((r) => r.text())
      )
      assert.deepStrictEqual([...only.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]), ["deixis_bot_updates_total", "deixis_fetch_total"])
      assert.match(only, /^deixis_bot_updates_total\{outcome="handled"\} [1-9]/m)
      assert.notInclude(only, "deixis_bot_process_")
      const onlyChecked = yield* Effect.promise(() => checkMetrics(only))
      assert.strictEqual(onlyChecked.code, 0, onlyChecked.output)
    }).pipe(withMemory))
})
