/**
 * The service's `/metrics` by the conventions: one registry holding everything the process
 * measures (requests, the store's cache counters, the URL reader's metrics), counters typed as
 * counters (the stores' eviction totals included), no chat id in any label, and `promtool check
 * metrics` finds nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { checkMetrics } from "deixis-test-support/promtool"
import * as Effect from "effect/Effect"
import { start } from "./harness.js"

describe("apps/http: /metrics", () => {
  it.scoped("one registry with the store's and the URL reader's metrics, counters as counters, no chat id in a label; promtool check metrics passes", () =>
    Effect.gen(function*() {
      const api = yield* start()
      yield* Effect.promise(() =>
        api.json("/v1/events", [{ type: "message_observed", chat_id: -1009876, topic_id: 7, message_id: 1, sender_user_id: 4242 }]))
      yield* Effect.promise(() => api.fetch("/v1/chats/-1009876/objects"))
      const scrape = yield* Effect.promise(() => api.fetch("/metrics").then((r) => r.text()))
      for (const name of ["deixis_store_cache_hits_total", "deixis_store_cache_misses_total", "deixis_fetch_total", "deixis_http_requests_total", "deixis_context_evicted_chats_total", "deixis_history_evicted_items_total"]) {
        assert.match(scrape, new RegExp(`^# TYPE ${name} counter$`, "m"), name)
      }
      assert.match(scrape, /^# TYPE deixis_fetch_duration_seconds histogram$/m)
      assert.notMatch(scrape, /chat(_id)?="/)
      assert.notInclude(scrape, "9876")
      assert.notInclude(scrape, "4242")
      const checked = yield* Effect.promise(() => checkMetrics(scrape))
      assert.strictEqual(checked.code, 0, checked.output)
      assert.strictEqual(checked.output.trim(), "", checked.output)
    }))
})
