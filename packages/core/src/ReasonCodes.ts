/**
 * The reason codes each tool returns, named as in its spec, from the one scorer's features.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { ActivationReason } from "./ContextObject.js"
import { features, type Scored } from "./Scoring.js"

/**
 * resolve_reference_target's reason codes.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResolveReason = Schema.Literal(
  "exact_reply_target",
  "same_reply_chain",
  "same_topic",
  "currently_active",
  "kind_match",
  "kind_mismatch",
  "positional_match",
  "quote_match",
  "bot_created",
  "owned_by_sender",
  "ownership_mismatch",
  "open_poll",
  "future_reminder",
  "touched_in_interaction",
  "recent_object",
  "weak_scope_fallback",
  "stale_penalty",
  "near_equal_scores",
  "whole_album",
  "no_candidates",
  "below_min_score"
).annotations({ identifier: "ResolveReason" })

/**
 * @since 0.1.0
 * @category models
 */
export type ResolveReason = typeof ResolveReason.Type

/**
 * list_active_context_objects' `why_active` codes.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ActiveReason = Schema.Literal(
  "same_reply_chain",
  "same_topic",
  "activated_by_summary",
  "activated_by_url_fetch",
  "activated_by_media_inspection",
  "activated_by_poll_create",
  "activated_by_poll_list",
  "activated_by_reminder_create",
  "activated_by_reminder_list",
  "activated_by_reminder_update",
  "activated_by_resolver",
  "activated_by_followup",
  "touched_recently",
  "open_poll",
  "future_reminder",
  "sender_owned",
  "kind_match",
  "chat_scope_fallback",
  "near_expiry"
).annotations({ identifier: "ActiveReason" })

/**
 * @since 0.1.0
 * @category models
 */
export type ActiveReason = typeof ActiveReason.Type

/**
 * The `why_active` code of each activation reason.
 *
 * @since 0.1.0
 * @category constants
 */
export const activationCode: { readonly [R in ActivationReason]: ActiveReason } = {
  summarized: "activated_by_summary",
  summary_generated: "activated_by_summary",
  summary_reused: "activated_by_summary",
  url_fetched: "activated_by_url_fetch",
  media_inspected: "activated_by_media_inspection",
  media_described: "activated_by_media_inspection",
  media_transcribed: "activated_by_media_inspection",
  poll_created: "activated_by_poll_create",
  poll_listed: "activated_by_poll_list",
  reminder_created: "activated_by_reminder_create",
  reminder_listed: "activated_by_reminder_list",
  reminder_updated: "activated_by_reminder_update",
  resolver_touch: "activated_by_resolver",
  followup_attached: "activated_by_followup"
}

// Recency counts as a reason only while it is worth a quarter of its weight (two half-lives).
const recencyCounts = (value: number, recencyWeight: number) => recencyWeight > 0 && value >= recencyWeight / 4

/**
 * A candidate's resolve reason codes, in feature order.
 *
 * @since 0.1.0
 * @category reasons
 */
export const resolveReasons = (scored: Scored, topicId: string | null, recencyWeight: number): Array<ResolveReason> => {
  const out: Array<ResolveReason> = []
  for (let i = 0; i < features.length; i++) {
    const value = scored.values[i]!
    if (value === 0) continue
    const feature = features[i]!
    switch (feature) {
      case "reply_target":
        out.push("exact_reply_target")
        break
      case "reply_chain":
        out.push("same_reply_chain")
        break
      case "same_scope":
        if (topicId !== null) out.push("same_topic")
        break
      case "active":
        out.push("currently_active")
        break
      case "position_match":
        out.push("positional_match")
        break
      case "recency":
        if (recencyCounts(value, recencyWeight)) out.push("recent_object")
        break
      case "scope_fallback":
        out.push("weak_scope_fallback")
        break
      case "stale":
        out.push("stale_penalty")
        break
      default:
        out.push(feature)
    }
  }
  return out
}

/**
 * An active object's `why_active` codes, in feature order; an activation contributes one
 * code per distinct activation reason.
 *
 * @since 0.1.0
 * @category reasons
 */
export const activeReasons = (scored: Scored, topicId: string | null, recencyWeight: number): Array<ActiveReason> => {
  const out: Array<ActiveReason> = []
  const push = (code: ActiveReason) => {
    if (!out.includes(code)) out.push(code)
  }
  for (let i = 0; i < features.length; i++) {
    const value = scored.values[i]!
    if (value === 0) continue
    const feature = features[i]!
    switch (feature) {
      case "reply_target":
      case "reply_chain":
        push("same_reply_chain")
        break
      case "same_scope":
        if (topicId !== null) push("same_topic")
        break
      case "active":
        for (const reason of scored.entry.object.activation_reasons) push(activationCode[reason])
        break
      case "recency":
        if (recencyCounts(value, recencyWeight)) push("touched_recently")
        break
      case "open_poll":
      case "future_reminder":
      case "kind_match":
        push(feature)
        break
      case "owned_by_sender":
        push("sender_owned")
        break
      case "scope_fallback":
        push("chat_scope_fallback")
        break
      case "stale":
        push("near_expiry")
        break
    }
  }
  return out
}
