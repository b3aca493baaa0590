/**
 * Composition: stores → deixis services and the reminder store → the bot layer.
 *
 * @since 0.1.0
 */
import { DeixisTelegraf } from "@deixis/telegraf"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Bot from "./Bot.js"
import * as BotConfig from "./BotConfig.js"
import * as Reminders from "./Reminders.js"
import * as Stores from "./Stores.js"

/**
 * The bot's services over the given stores (the same store instance feeds all of them).
 *
 * @since 0.1.0
 * @category layers
 */
export const services = <E, R>(stores: Layer.Layer<DeixisTelegraf.Stores, E, R>): Layer.Layer<Bot.Services, E, R> =>
  Layer.merge(DeixisTelegraf.layerWith(stores), Reminders.layerPersistent.pipe(Layer.provide(stores)))

/**
 * The whole application from the environment: `BotConfig.config` and `Stores.config`.
 *
 * @since 0.1.0
 * @category layers
 */
export const Main = Layer.unwrapEffect(
  Effect.map(
    Effect.all([BotConfig.config, Stores.config]),
    ([bot, stores]) => Bot.layer(bot).pipe(Layer.provide(services(Stores.layer(stores))))
  )
)
