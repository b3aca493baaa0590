/**
 * Time as people say it: `/remind`'s "when" in natural language (chrono-node, every language
 * it supports, tried in turn) and short forms ("10min", "1h30m", "2d"), in the chat's time
 * zone; and times written back in local time ("today 18:30, Europe/Berlin"), never raw ISO.
 *
 * @since 0.1.0
 */
import * as chrono from "chrono-node"
import * as Either from "effect/Either"

/**
 * The furthest ahead a reminder may be set.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxAheadMillis = 366 * 24 * 60 * 60 * 1000

/**
 * Whether `zone` is an IANA time zone name this runtime knows (`Europe/Berlin`, `UTC`).
 *
 * @since 0.1.0
 * @category zones
 */
export const isTimeZone = (zone: string): boolean => {
  if (zone.trim() === "" || zone.length > 64) return false
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/**
 * The canonical spelling of a zone name (`europe/berlin` → `Europe/Berlin`).
 *
 * @since 0.1.0
 * @category zones
 */
export const canonicalZone = (zone: string): string => new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone

const partsIn = (ms: number, zone: string) => {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    weekday: "short"
  }).formatToParts(new Date(ms))
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? ""
  return {
    year: Number(get("year")),
    month: Number(get("month")),
    day: Number(get("day")),
    hour: Number(get("hour")),
    minute: Number(get("minute")),
    second: Number(get("second")),
    weekday: get("weekday")
  }
}

/**
 * The zone's offset from UTC at an instant, in minutes (Berlin in summer: 120).
 *
 * @since 0.1.0
 * @category zones
 */
export const offsetMinutes = (ms: number, zone: string): number => {
  const p = partsIn(ms, zone)
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second)
  return Math.round((asUtc - Math.floor(ms / 1000) * 1000) / 60_000)
}

const pad = (n: number) => String(n).padStart(2, "0")
const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

const dayNumber = (p: { year: number; month: number; day: number }) => Date.UTC(p.year, p.month - 1, p.day) / 86_400_000

/**
 * A time as a person reads it in `zone`, relative to `now`: `today 18:30`, `tomorrow 09:00`,
 * `Fri 18:30` (within a week), `Fri 13 Mar 18:30`, or with the year when it is another year;
 * followed by the zone name.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatLocal = (ms: number, now: number, zone: string): string => {
  const at = partsIn(ms, zone)
  const today = partsIn(now, zone)
  const days = dayNumber(at) - dayNumber(today)
  const clock = `${pad(at.hour)}:${pad(at.minute)}`
  const day = days === 0
    ? "today"
    : days === 1
    ? "tomorrow"
    : days === -1
    ? "yesterday"
    : days > 1 && days < 7
    ? at.weekday
    : at.year === today.year
    ? `${at.weekday} ${at.day} ${months[at.month - 1]}`
    : `${at.weekday} ${at.day} ${months[at.month - 1]} ${at.year}`
  return `${day} ${clock}, ${zone}`
}

/**
 * A duration in words: `10 minutes`, `1 hour 30 minutes`, `2 days`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatDuration = (ms: number): string => {
  const minutes = Math.max(0, Math.round(ms / 60_000))
  if (minutes === 0) return `${Math.max(1, Math.round(ms / 1000))} seconds`
  const d = Math.floor(minutes / 1440)
  const h = Math.floor((minutes % 1440) / 60)
  const m = minutes % 60
  const part = (n: number, unit: string) => (n === 0 ? [] : [`${n} ${unit}${n === 1 ? "" : "s"}`])
  return [...part(d, "day"), ...part(h, "hour"), ...part(m, "minute")].join(" ")
}

const shortUnits: Record<string, number> = {
  s: 1000,
  sec: 1000,
  secs: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  d: 86_400_000,
  w: 7 * 86_400_000
}

// "10min", "1h30m", "1h 30m", "in 2d", "90s": one or more <number><unit> parts, first in the text.
const shortForm = /^(?:in\s+)?((?:\d{1,6}\s?(?:secs|sec|s|mins|min|m|hrs|hr|h|d|w)(?![\p{L}\p{N}])\s*)+)/iu
const shortPart = /(\d{1,6})\s?(secs|sec|s|mins|min|m|hrs|hr|h|d|w)/giu

/**
 * The natural-language parsers tried, in order (English first; the others chrono-node ships).
 *
 * @since 0.1.0
 * @category constants
 */
export const locales: ReadonlyArray<readonly [string, chrono.Chrono]> = [
  ["en", chrono.casual],
  ["de", chrono.de.casual],
  ["fr", chrono.fr.casual],
  ["es", chrono.es.casual],
  ["pt", chrono.pt.casual],
  ["it", chrono.it.casual],
  ["nl", chrono.nl.casual],
  ["sv", chrono.sv.casual],
  ["fi", chrono.fi.casual],
  ["ru", chrono.ru.casual],
  ["uk", chrono.uk.casual],
  ["ja", chrono.ja.casual],
  ["zh", chrono.zh.casual]
]

/**
 * Why a "when" was refused (the bot words each for people).
 *
 * @since 0.1.0
 * @category models
 */
export type WhenProblem = "no_time" | "past" | "too_far" | "no_text"

/**
 * A parsed `/remind`: when, and what is left of the text.
 *
 * @since 0.1.0
 * @category models
 */
export interface ParsedWhen {
  readonly due_at: number
  readonly text: string
  /** The words that said when. */
  readonly matched: string
}

const clean = (text: string) => text.replace(/^[\s,:;.\-–—]+|[\s,:;\-–—]+$/g, "").replace(/^(?:to|that|um|à|a|de|que|dass)\s+/i, "").trim()

const check = (due: number, now: number, text: string, matched: string): Either.Either<ParsedWhen, WhenProblem> =>
  due <= now
    ? Either.left("past")
    : due - now > maxAheadMillis
    ? Either.left("too_far")
    : text === ""
    ? Either.left("no_text")
    : Either.right({ due_at: due, text, matched })

/**
 * `/remind`'s argument: a time ("in 10 minutes", "10min", "1h30m", "tomorrow 9:00",
 * "friday 18:30", "morgen um 9", "demain 9h"…) first or last, and the reminder's text.
 * Dates without a zone are read in `zone`; `now` is epoch milliseconds.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseWhen = (payload: string, now: number, zone: string): Either.Either<ParsedWhen, WhenProblem> => {
  const input = payload.trim()
  const short = shortForm.exec(input)
  if (short !== null) {
    let total = 0
    for (const part of short[1]!.matchAll(shortPart)) total += Number(part[1]) * shortUnits[part[2]!.toLowerCase()]!
    if (total > 0) return check(now + total, now, clean(input.slice(short[0].length)), short[0].trim())
  }
  for (const [, parser] of locales) {
    const offset = offsetMinutes(now, zone)
    const results = parser.parse(input, { instant: new Date(now), timezone: offset }, { forwardDate: true })
    const found = results.find((r) => r.index === 0) ??
      results.find((r) => r.index + r.text.length === input.length)
    if (found === undefined) continue
    let due = found.start.date().getTime()
    // The reference offset is now's; a wall-clock time across a DST change needs that day's.
    if (found.start.isCertain("hour") && !found.start.isCertain("timezoneOffset")) {
      const actual = offsetMinutes(due, zone)
      if (actual !== offset) due -= (actual - offset) * 60_000
    }
    const text = clean(input.slice(0, found.index) + " " + input.slice(found.index + found.text.length))
    return check(due, now, text, found.text.trim())
  }
  return Either.left("no_time")
}
