import { DeixisTelegraf } from "@deixis/telegraf"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { Telegraf } from "telegraf"

const deixis = ManagedRuntime.make(DeixisTelegraf.layerMemory())
const bot = new Telegraf<DeixisTelegraf.DeixisContext>(process.env["BOT_TOKEN"] ?? "")

// Records every update (events + history) and sets ctx.deixis.
bot.use(DeixisTelegraf.middleware(deixis, { mode: "talkative" }))

bot.command("context", async (ctx) => {
  const { objects } = await ctx.deixis.listActive()
  const lines = objects.map((o) => `• ${o.kind} · ${o.title_or_label ?? o.ref ?? o.object_id}`)
  await ctx.deixis.reply(lines.join("\n") || "Nothing is active here.")
})

bot.command("what", async (ctx) => {
  const hint = ctx.payload.trim() === "poll" ? { target_kind_hint: "poll" as const } : {}
  const result = await ctx.deixis.resolve({ normalized_reference_hints: hint })
  await ctx.deixis.reply(result.best_match ? `→ ${result.best_match.kind} ${result.best_match.ref ?? ""}` : result.status)
})

bot.command("history", async (ctx) => {
  const items = await ctx.deixis.history()
  await ctx.deixis.reply(items.map((i) => `${i.sender.nickname}: ${i.text}`).join("\n") || "(empty)")
})

void bot.launch({ allowedUpdates: ["message", "edited_message", "poll", "message_reaction", "callback_query"] })
process.once("SIGTERM", () => (bot.stop("SIGTERM"), void deixis.dispose()))
