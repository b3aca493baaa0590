import { DeixisGrammy } from "@deixis/grammy"
import { run, sequentialize } from "@grammyjs/runner"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { Bot, type BotConfig } from "grammy"

type Context = DeixisGrammy.DeixisContext

/** The bot: every update recorded in chat order, /context and /what answered from deixis. */
export const createBot = (token: string, deixis: DeixisGrammy.DeixisRuntime, config?: BotConfig<Context>) => {
  const bot = new Bot<Context>(token, config)
  bot.use(sequentialize(DeixisGrammy.sequentializeKey))
  bot.use(DeixisGrammy.deixis(deixis, { mode: "talkative" }))
  bot.command("context", async (ctx) => {
    const { objects } = await ctx.deixis.listActive()
    const lines = objects.map((o) => `• ${o.kind} · ${o.title_or_label ?? o.ref ?? o.object_id}`)
    await ctx.deixis.reply(lines.join("\n") || "Nothing is active here.")
  })
  bot.command("what", async (ctx) => {
    const result = await ctx.deixis.resolve()
    await ctx.deixis.reply(result.best_match ? `→ ${result.best_match.kind} ${result.best_match.ref ?? ""}` : result.status)
  })
  return bot
}

// Started when run as a program, never on import.
if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1])) {
  const deixis = ManagedRuntime.make(DeixisGrammy.layerMemory())
  const runner = run(createBot(process.env["BOT_TOKEN"] ?? "", deixis))
  process.once("SIGTERM", () => void runner.stop().then(() => deixis.dispose()))
}
