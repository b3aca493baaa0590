/**
 * A corpus of real Telegram updates, in the Bot API's exact JSON, with what deixis records for
 * each: the events and history items `TelegramRecorder` writes (the mapper's output), a
 * migration, the bot's answers, whether the update addresses the bot, or why it was skipped.
 * Private chats, basic groups (and their upgrade to a supergroup), supergroups, forum
 * supergroups with their General topic, channels and their discussion groups; every update
 * type the Bot API sends to bots. Entrances (the Telegraf middleware, an HTTP endpoint) are
 * tested against it, so they are proven to record alike.
 *
 * Map with {@link options} (the bot's id and username).
 *
 * @since 0.1.0
 */
import type { ChatInfo } from "@deixis/core/ChatInfo"
import type { ContextEventInput } from "@deixis/core/ContextEvent"
import { type ChatSnapshot, ContextStore, type StoreError } from "@deixis/core/ContextStore"
import type { HistoryItem, HistoryItemEncoded } from "@deixis/chathistory/HistoryItem"
import { HistoryStore } from "@deixis/chathistory/HistoryStore"
import * as Effect from "effect/Effect"
import type { BotResponse, ChatMigration, Retraction } from "./UpdateMapper.js"

/**
 * One update and what recording it writes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Fixture {
  /** What the update is, as a test name. */
  readonly name: string
  /** The Update, as Telegram sends it. */
  readonly update: { readonly update_id: number } & Readonly<Record<string, unknown>>
  readonly expected: {
    readonly events: ReadonlyArray<ContextEventInput>
    readonly history: ReadonlyArray<HistoryItemEncoded>
    readonly addressed: boolean
    readonly migration?: ChatMigration
    readonly responses?: ReadonlyArray<BotResponse>
    /** Reactions withdrawn. */
    readonly retractions?: ReadonlyArray<Retraction>
    /** A word of the reason the update was skipped, when nothing is recorded. */
    readonly skipped?: string
  }
}

// -----------------------------------------------------------------------------
// People and chats
// -----------------------------------------------------------------------------

/**
 * The bot the corpus is recorded for.
 *
 * @since 0.1.0
 * @category constants
 */
export const bot = { id: 7000000001, is_bot: true, first_name: "Deixis", username: "deixis_bot" } as const

/**
 * The mapper options for the corpus: the bot's id and username.
 *
 * @since 0.1.0
 * @category constants
 */
export const options = { botId: String(bot.id), botUsername: bot.username } as const

const alice = { id: 1001, is_bot: false, first_name: "Alice", username: "alice", language_code: "en" } as const
const bob = { id: 1002, is_bot: false, first_name: "Bob", last_name: "Stone", language_code: "de" } as const
const carol = { id: 1003, is_bot: false, first_name: "Carol", username: "carol", is_premium: true } as const
const telegram = { id: 777000, is_bot: false, first_name: "Telegram" } as const
const anonymousBot = { id: 1087968824, is_bot: true, first_name: "Group", username: "GroupAnonymousBot" } as const

/**
 * The chats of the corpus.
 *
 * @since 0.1.0
 * @category constants
 */
export const chats = {
  private: { id: 1001, first_name: "Alice", username: "alice", type: "private" },
  group: { id: -4001234567, title: "Book club", type: "group" },
  upgraded: { id: -1004001234567, title: "Book club", type: "supergroup" },
  supergroup: { id: -1009876543210, title: "Plain group", type: "supergroup" },
  forum: { id: -1001234567890, title: "Team", is_forum: true, type: "supergroup" },
  channel: { id: -1005555555555, title: "News", username: "news", type: "channel" },
  discussion: { id: -1006666666666, title: "News chat", type: "supergroup" },
  elsewhere: { id: -1007777777777, title: "Elsewhere", username: "elsewhere", type: "supergroup" }
} as const

const D = 1_771_000_000
const iso = (seconds: number) => new Date(seconds * 1000).toISOString()

type Sender = HistoryItemEncoded["sender"]
const as = {
  alice: { user_id: "1001", username: "alice", nickname: "Alice", is_bot: false, display_ref: "[Alice](tg:@alice)" },
  bob: { user_id: "1002", username: null, nickname: "Bob Stone", is_bot: false, display_ref: "Bob Stone" },
  carol: { user_id: "1003", username: "carol", nickname: "Carol", is_bot: false, display_ref: "[Carol](tg:@carol)" },
  bot: { user_id: "7000000001", username: "deixis_bot", nickname: "Deixis", is_bot: true, display_ref: "[Deixis](tg:@deixis_bot)" },
  news: { user_id: "-1005555555555", username: "news", nickname: "News", is_bot: false, display_ref: "[News](tg:@news)" },
  plainGroup: { user_id: "-1009876543210", username: null, nickname: "Plain group", is_bot: false, display_ref: "Plain group" }
} satisfies Record<string, Sender>

// -----------------------------------------------------------------------------
// Expectation builders: the defaults every recorded message has, spelled once.
// -----------------------------------------------------------------------------

interface Where {
  readonly chat: { readonly id: number; readonly type: string }
  readonly id: number
  readonly date?: number
  readonly topic?: string | null
  readonly reply?: string | null
  readonly is_forum?: boolean
}

const event = (
  w: Where & {
    readonly sender: string | null
    readonly outbound?: boolean
    readonly extra?: Record<string, unknown>
    readonly edited?: number
  }
): ContextEventInput => ({
  type: w.edited === undefined ? "message_observed" : "message_edited",
  chat_id: String(w.chat.id),
  message_id: String(w.id),
  topic_id: w.topic ?? null,
  reply_to_message_id: w.reply ?? null,
  sender_user_id: w.sender,
  direction: w.outbound === true ? "outbound" : "inbound",
  sent_at: iso(w.date ?? D),
  is_forum: w.is_forum ?? false,
  ...(w.edited === undefined ? {} : { edited_at: iso(w.edited) }),
  ...w.extra
} as ContextEventInput)

const item = (
  w: Where & {
    readonly sender: Sender
    readonly text: string
    readonly kind?: HistoryItemEncoded["kind"]
    readonly extra?: Partial<HistoryItemEncoded>
  }
): HistoryItemEncoded => ({
  channel: "telegram",
  kind: w.kind ?? "inbound_user",
  chat_id: String(w.chat.id),
  topic_id: w.topic ?? null,
  chat_type: w.chat.type,
  message_id: String(w.id),
  reply_to_message_id: w.reply ?? null,
  bot_response_id: null,
  sent_at: iso(w.date ?? D),
  sender: w.sender,
  text: w.text,
  quote: null,
  attachments: [],
  ...w.extra
})

const skip = (name: string, update: Fixture["update"], reason: string): Fixture => ({
  name,
  update,
  expected: { events: [], history: [], addressed: false, skipped: reason }
})

const msg = (chat: { readonly id: number }, id: number, from: object | undefined, fields: Record<string, unknown>) => ({
  message_id: id,
  ...(from === undefined ? {} : { from }),
  chat,
  date: D,
  ...fields
})

const photoSizes = (id: string) => [
  { file_id: `${id}-s`, file_unique_id: `${id}s`, file_size: 1453, width: 90, height: 67 },
  { file_id: `${id}-m`, file_unique_id: `${id}m`, file_size: 19280, width: 320, height: 240 },
  { file_id: id, file_unique_id: `${id}x`, file_size: 81004, width: 1280, height: 960 }
]

// -----------------------------------------------------------------------------
// Private chats
// -----------------------------------------------------------------------------

const P = chats.private
const pinnedPrivate = msg(P, 18, alice, {
  text: "Boarding pass: https://example.com/flights/LH123",
  entities: [{ offset: 15, length: 33, type: "url" }]
})
const privateChat: ReadonlyArray<Fixture> = [
  {
    name: "private chat: a text message addresses the bot",
    update: { update_id: 1, message: msg(P, 10, alice, { text: "hello there" }) },
    expected: {
      events: [event({ chat: P, id: 10, sender: "1001" })],
      history: [item({ chat: P, id: 10, sender: as.alice, text: "hello there" })],
      addressed: true
    }
  },
  {
    name: "private chat: /start",
    update: {
      update_id: 2,
      message: msg(P, 11, alice, { text: "/start", entities: [{ offset: 0, length: 6, type: "bot_command" }] })
    },
    expected: {
      events: [event({ chat: P, id: 11, sender: "1001" })],
      history: [item({ chat: P, id: 11, sender: as.alice, text: "/start" })],
      addressed: true
    }
  },
  {
    name: "private chat: a photo with a caption is an image known by its largest size",
    update: { update_id: 3, message: msg(P, 12, alice, { photo: photoSizes("AgACAgIAAxkBAAIBc2"), caption: "my cat" }) },
    expected: {
      events: [event({ chat: P, id: 12, sender: "1001", extra: { media: [{ kind: "media.image", file_id: "AgACAgIAAxkBAAIBc2", label: "my cat", span: { offset: 0, length: 6 } }] } })],
      history: [item({ chat: P, id: 12, sender: as.alice, text: "my cat", extra: { attachments: [{ kind: "photo" }] } })],
      addressed: true
    }
  },
  {
    name: "private chat: a PDF document",
    update: {
      update_id: 4,
      message: msg(P, 13, alice, {
        document: { file_name: "Q3 report.pdf", mime_type: "application/pdf", file_id: "BQACAgIAAxkBAAIBd2", file_unique_id: "AgADpd", file_size: 183211 }
      })
    },
    expected: {
      events: [event({ chat: P, id: 13, sender: "1001", extra: { media: [{ kind: "media.pdf", file_id: "BQACAgIAAxkBAAIBd2", label: "Q3 report.pdf" }] } })],
      history: [item({ chat: P, id: 13, sender: as.alice, text: "", extra: { attachments: [{ kind: "document", name: "Q3 report.pdf" }] } })],
      addressed: true
    }
  },
  {
    name: "private chat: a voice message",
    update: {
      update_id: 5,
      message: msg(P, 14, alice, { voice: { duration: 3, mime_type: "audio/ogg", file_id: "AwACAgIAAxkBAAIBe2", file_unique_id: "AgADve", file_size: 9172 } })
    },
    expected: {
      events: [event({ chat: P, id: 14, sender: "1001", extra: { media: [{ kind: "media.voice", file_id: "AwACAgIAAxkBAAIBe2" }] } })],
      history: [item({ chat: P, id: 14, sender: as.alice, text: "", extra: { attachments: [{ kind: "voice" }] } })],
      addressed: true
    }
  },
  {
    name: "private chat: a shared location",
    update: { update_id: 6, message: msg(P, 15, alice, { location: { latitude: 52.520008, longitude: 13.404954 } }) },
    expected: {
      events: [event({ chat: P, id: 15, sender: "1001" })],
      history: [item({ chat: P, id: 15, sender: as.alice, text: "", extra: { attachments: [{ kind: "location" }] } })],
      addressed: true
    }
  },
  {
    name: "private chat: a shared contact",
    update: { update_id: 7, message: msg(P, 16, alice, { contact: { phone_number: "+491701234567", first_name: "Dora", user_id: 1004 } }) },
    expected: {
      events: [event({ chat: P, id: 16, sender: "1001" })],
      history: [item({ chat: P, id: 16, sender: as.alice, text: "", extra: { attachments: [{ kind: "contact" }] } })],
      addressed: true
    }
  },
  {
    name: "private chat: a sticker is named by its emoji, not a media object",
    update: {
      update_id: 8,
      message: msg(P, 17, alice, {
        sticker: {
          width: 512, height: 512, emoji: "😂", set_name: "HotCherry", is_animated: true, is_video: false, type: "regular",
          file_id: "CAACAgIAAxkBAAIBf2", file_unique_id: "AgADsf", file_size: 40112
        }
      })
    },
    expected: {
      events: [event({ chat: P, id: 17, sender: "1001" })],
      history: [item({ chat: P, id: 17, sender: as.alice, text: "", extra: { attachments: [{ kind: "sticker", name: "😂" }] } })],
      addressed: true
    }
  },
  {
    name: "private chat: an edit is recorded as the edited message",
    update: {
      update_id: 9,
      edited_message: msg(P, 10, alice, { edit_date: D + 40, text: "hello there, bot" })
    },
    expected: {
      events: [event({ chat: P, id: 10, sender: "1001", edited: D + 40 })],
      history: [item({ chat: P, id: 10, sender: as.alice, text: "hello there, bot", extra: { edited_at: iso(D + 40) } })],
      addressed: true
    }
  }
,
  {
    name: "private chat: a reply to a pin notice means the pinned message",
    update: {
      update_id: 10,
      message: msg(P, 20, alice, { reply_to_message: msg(P, 19, alice, { pinned_message: pinnedPrivate }), text: "when is this?" })
    },
    expected: {
      events: [
        event({ chat: P, id: 18, sender: "1001", extra: { links: [{ url: "https://example.com/flights/LH123", span: { offset: 15, length: 33 } }] } }),
        event({ chat: P, id: 20, sender: "1001", reply: "18" })
      ],
      history: [
        item({ chat: P, id: 18, sender: as.alice, text: "Boarding pass: https://example.com/flights/LH123", extra: { seen_via: "reply" } }),
        item({ chat: P, id: 20, sender: as.alice, reply: "18", text: "when is this?" })
      ],
      addressed: true
    }
  }
]

// -----------------------------------------------------------------------------
// Basic groups (privacy mode on: commands, mentions, replies to the bot, service notices)
// -----------------------------------------------------------------------------

const G = chats.group
const linkMessage = msg(G, 40, bob, {
  text: "the chapter list: https://example.com/books/dune",
  entities: [{ offset: 18, length: 30, type: "url" }]
})
const pinnedInGroup = msg(G, 52, bob, {
  text: "Reading list: https://example.com/books/week",
  entities: [{ offset: 14, length: 30, type: "url" }]
})
const groups: ReadonlyArray<Fixture> = [
  {
    name: "group: a mention of the bot addresses it",
    update: {
      update_id: 20,
      message: msg(G, 41, alice, { text: "@deixis_bot what is on tonight?", entities: [{ offset: 0, length: 11, type: "mention" }] })
    },
    expected: {
      events: [event({ chat: G, id: 41, sender: "1001" })],
      history: [item({ chat: G, id: 41, sender: as.alice, text: "[@deixis_bot](tg:@deixis_bot) what is on tonight?" })],
      addressed: true
    }
  },
  {
    name: "group (privacy mode): /what sent as a reply to a link the bot never saw records that message, seen through the reply",
    update: {
      update_id: 21,
      message: msg(G, 42, alice, {
        reply_to_message: linkMessage,
        text: "/what@deixis_bot",
        entities: [{ offset: 0, length: 16, type: "bot_command" }]
      })
    },
    expected: {
      events: [
        event({ chat: G, id: 40, sender: "1002", extra: { links: [{ url: "https://example.com/books/dune", span: { offset: 18, length: 30 } }] } }),
        event({ chat: G, id: 42, sender: "1001", reply: "40" })
      ],
      history: [
        item({ chat: G, id: 40, sender: as.bob, text: "the chapter list: https://example.com/books/dune", extra: { seen_via: "reply" } }),
        item({ chat: G, id: 42, sender: as.alice, reply: "40", text: "/what@deixis_bot" })
      ],
      addressed: true
    }
  },
  {
    name: "group: a reply to the bot's own message addresses it; the bot's message is outbound",
    update: {
      update_id: 22,
      message: msg(G, 44, bob, {
        reply_to_message: msg(G, 43, bot, { text: "Tonight: chapter 3." }),
        text: "and after that?"
      })
    },
    expected: {
      events: [
        event({ chat: G, id: 43, sender: "7000000001", outbound: true }),
        event({ chat: G, id: 44, sender: "1002", reply: "43" })
      ],
      history: [
        item({ chat: G, id: 43, sender: as.bot, kind: "outbound_agent", text: "Tonight: chapter 3.", extra: { seen_via: "reply" } }),
        item({ chat: G, id: 44, sender: as.bob, reply: "43", text: "and after that?" })
      ],
      addressed: true
    }
  },
  skip("group: new members joined (service notice)", {
    update_id: 23,
    message: msg(G, 45, alice, { new_chat_participant: carol, new_chat_member: carol, new_chat_members: [carol] })
  }, "service message"),
  skip("group: a member left (service notice)", {
    update_id: 24,
    message: msg(G, 46, carol, { left_chat_participant: carol, left_chat_member: carol })
  }, "service message"),
  skip("group: the title changed (service notice)", { update_id: 25, message: msg(G, 47, alice, { new_chat_title: "Book club 2026" }) }, "service message"),
  skip("group: a new photo (service notice)", {
    update_id: 26,
    message: msg(G, 48, alice, { new_chat_photo: photoSizes("AgACAgIAAxkDAAIBh2") })
  }, "service message"),
  skip("group: the photo was removed (service notice)", { update_id: 27, message: msg(G, 49, alice, { delete_chat_photo: true }) }, "service message"),
  skip("group: the group was created (service notice)", { update_id: 28, message: msg(G, 1, alice, { group_chat_created: true }) }, "service message"),
  skip("group: the auto-delete timer changed (service notice)", {
    update_id: 29,
    message: msg(G, 50, alice, { message_auto_delete_timer_changed: { message_auto_delete_time: 86400 } })
  }, "service message"),
  {
    name: "group: a reply to a pin notice means the pinned message",
    update: {
      update_id: 18,
      message: msg(G, 54, carol, {
        reply_to_message: msg(G, 53, alice, { pinned_message: pinnedInGroup }),
        text: "/what@deixis_bot",
        entities: [{ offset: 0, length: 16, type: "bot_command" }]
      })
    },
    expected: {
      events: [
        event({ chat: G, id: 52, sender: "1002", extra: { links: [{ url: "https://example.com/books/week", span: { offset: 14, length: 30 } }] } }),
        event({ chat: G, id: 54, sender: "1003", reply: "52" })
      ],
      history: [
        item({ chat: G, id: 52, sender: as.bob, text: "Reading list: https://example.com/books/week", extra: { seen_via: "reply" } }),
        item({ chat: G, id: 54, sender: as.carol, reply: "52", text: "/what@deixis_bot" })
      ],
      addressed: true
    }
  },
  {
    name: "group: upgraded to a supergroup — the old group's notice names the new id",
    update: { update_id: 30, message: msg(G, 51, alice, { migrate_to_chat_id: chats.upgraded.id }) },
    expected: {
      events: [],
      history: [],
      addressed: false,
      migration: { from_chat_id: String(G.id), to_chat_id: String(chats.upgraded.id) }
    }
  },
  {
    name: "group: upgraded to a supergroup — the new supergroup's first message names the old id",
    update: {
      update_id: 31,
      message: { message_id: 1, from: anonymousBot, sender_chat: chats.upgraded, chat: chats.upgraded, date: D, migrate_from_chat_id: G.id }
    },
    expected: {
      events: [],
      history: [],
      addressed: false,
      migration: { from_chat_id: String(G.id), to_chat_id: String(chats.upgraded.id) }
    }
  },
  {
    name: "upgraded supergroup: its own message 2 is a new message, not the old group's",
    update: {
      update_id: 32,
      message: msg(chats.upgraded, 2, alice, { text: "/what@deixis_bot", entities: [{ offset: 0, length: 16, type: "bot_command" }] })
    },
    expected: {
      events: [event({ chat: chats.upgraded, id: 2, sender: "1001" })],
      history: [item({ chat: chats.upgraded, id: 2, sender: as.alice, text: "/what@deixis_bot" })],
      addressed: true
    }
  }
]

// -----------------------------------------------------------------------------
// Supergroups
// -----------------------------------------------------------------------------

const S = chats.supergroup
const albumPhoto = (update_id: number, id: number, file: string, caption?: string) => ({
  update_id,
  message: msg(S, id, carol, { media_group_id: "13886372836251736", photo: photoSizes(file), ...(caption === undefined ? {} : { caption }) })
})
const pinned = msg(S, 60, carol, {
  text: "Meetup moved to https://example.com/meetup/42",
  entities: [{ offset: 16, length: 29, type: "url" }]
})
const pinnedAgenda = msg(S, 90, bob, { text: "Agenda: https://example.com/agenda", entities: [{ offset: 8, length: 26, type: "url" }] })
const twoPlans = msg(S, 93, alice, {
  text: "Compare https://example.com/plan-a and https://example.com/plan-b",
  entities: [{ offset: 8, length: 26, type: "url" }, { offset: 39, length: 26, type: "url" }]
})
// An album member whose caption holds a link; the emoji before the link counts two UTF-16 units.
const trailMap = msg(S, 95, carol, {
  media_group_id: "13886372836251999",
  photo: photoSizes("AgACAgIAAxkBAAIBt1"),
  caption: "Trail map 🥾 https://example.com/trail",
  caption_entities: [{ offset: 13, length: 25, type: "url" }]
})
const trailEvent = event({
  chat: S, id: 95, sender: "1003",
  extra: {
    links: [{ url: "https://example.com/trail", span: { offset: 13, length: 25 } }],
    media: [{ kind: "media.image", file_id: "AgACAgIAAxkBAAIBt1", label: "Trail map 🥾 https://example.com/trail", span: { offset: 0, length: 38 } }],
    media_group_id: "13886372836251999"
  }
})
const trailItem = item({
  chat: S, id: 95, sender: as.carol, text: "Trail map 🥾 https://example.com/trail",
  extra: { attachments: [{ kind: "photo" }], album_id: "13886372836251999", seen_via: "reply" }
})
const supergroups: ReadonlyArray<Fixture> = [
  {
    name: "supergroup: links from url and text_link entities by UTF-16 offsets, and a normalised mention",
    update: {
      update_id: 100,
      message: msg(S, 52, alice, {
        text: "😀 see https://example.com/rust and the spec, cc @carol",
        entities: [
          { offset: 7, length: 24, type: "url" },
          { offset: 40, length: 4, type: "text_link", url: "https://example.com/spec" },
          { offset: 49, length: 6, type: "mention" }
        ]
      })
    },
    expected: {
      events: [event({
        chat: S, id: 52, sender: "1001",
        extra: { links: [{ url: "https://example.com/rust", span: { offset: 7, length: 24 } }, { url: "https://example.com/spec", title: "spec", span: { offset: 40, length: 4 } }] }
      })],
      history: [item({ chat: S, id: 52, sender: as.alice, text: "😀 see https://example.com/rust and the spec, cc [@carol](tg:@carol)" })],
      addressed: false
    }
  },
  {
    name: "supergroup: a plain reply chain carries a thread id, which is not a topic",
    update: {
      update_id: 101,
      message: msg(S, 54, bob, {
        message_thread_id: 53,
        reply_to_message: msg(S, 53, alice, { message_thread_id: 53, text: "and?" }),
        text: "this one"
      })
    },
    expected: {
      events: [event({ chat: S, id: 53, sender: "1001" }), event({ chat: S, id: 54, sender: "1002", reply: "53" })],
      history: [
        item({ chat: S, id: 53, sender: as.alice, text: "and?", extra: { seen_via: "reply" } }),
        item({ chat: S, id: 54, sender: as.bob, reply: "53", text: "this one" })
      ],
      addressed: false
    }
  },
  {
    name: "supergroup: a reply quoting part of the replied message keeps the quote and its author",
    update: {
      update_id: 102,
      message: msg(S, 55, bob, {
        reply_to_message: msg(S, 52, alice, {
          text: "😀 see https://example.com/rust and the spec, cc @carol",
          entities: [{ offset: 7, length: 24, type: "url" }]
        }),
        quote: { text: "see https://example.com/rust", position: 3, is_manual: true },
        text: "what does it say about async?"
      })
    },
    expected: {
      events: [
        event({ chat: S, id: 52, sender: "1001", extra: { links: [{ url: "https://example.com/rust", span: { offset: 7, length: 24 } }] } }),
        event({ chat: S, id: 55, sender: "1002", reply: "52", extra: { quote: { text: "see https://example.com/rust", position: 3 } } })
      ],
      history: [
        item({ chat: S, id: 52, sender: as.alice, text: "😀 see https://example.com/rust and the spec, cc @carol", extra: { seen_via: "reply" } }),
        item({
          chat: S, id: 55, sender: as.bob, reply: "52", text: "what does it say about async?",
          extra: {
            quote: {
              sender_ref: "[Alice](tg:@alice)",
              text: "see https://example.com/rust",
              markdown_block: "> [Alice](tg:@alice): see https://example.com/rust"
            }
          }
        })
      ],
      addressed: false
    }
  },
  {
    name: "supergroup: a reply to a message of another chat never names a message of this chat",
    update: {
      update_id: 103,
      message: msg(S, 56, alice, {
        external_reply: {
          origin: { type: "channel", chat: chats.channel, message_id: 52, date: D - 3600 },
          chat: chats.channel,
          message_id: 52,
          link_preview_options: { is_disabled: true }
        },
        quote: { text: "rates go up in May", position: 0 },
        text: "does this affect us?"
      })
    },
    expected: {
      events: [event({ chat: S, id: 56, sender: "1001" })],
      history: [item({
        chat: S, id: 56, sender: as.alice, text: "does this affect us?",
        extra: { quote: { sender_ref: "[News](tg:@news)", text: "rates go up in May", markdown_block: "> [News](tg:@news): rates go up in May" } }
      })],
      addressed: false
    }
  },
  {
    name: "supergroup: a forward from a user keeps its origin; the forwarder is the sender",
    update: {
      update_id: 104,
      message: msg(S, 57, alice, {
        forward_origin: { type: "user", sender_user: carol, date: D - 86400 },
        forward_from: carol,
        forward_date: D - 86400,
        text: "see you at 8"
      })
    },
    expected: {
      events: [event({ chat: S, id: 57, sender: "1001" })],
      history: [item({
        chat: S, id: 57, sender: as.alice, text: "see you at 8",
        extra: { forward: { origin: "user", sender_ref: "[Carol](tg:@carol)", sent_at: iso(D - 86400), automatic: false } }
      })],
      addressed: false
    }
  },
  {
    name: "supergroup: a forward from a user who hides their account",
    update: {
      update_id: 105,
      message: msg(S, 58, alice, {
        forward_origin: { type: "hidden_user", sender_user_name: "Dora Q", date: D - 7200 },
        forward_sender_name: "Dora Q",
        forward_date: D - 7200,
        text: "the venue changed"
      })
    },
    expected: {
      events: [event({ chat: S, id: 58, sender: "1001" })],
      history: [item({
        chat: S, id: 58, sender: as.alice, text: "the venue changed",
        extra: { forward: { origin: "hidden_user", sender_ref: "Dora Q", sent_at: iso(D - 7200), automatic: false } }
      })],
      addressed: false
    }
  },
  {
    name: "supergroup: a forward of an anonymous admin's message in a group",
    update: {
      update_id: 106,
      message: msg(S, 59, bob, {
        forward_origin: { type: "chat", sender_chat: chats.elsewhere, date: D - 600, author_signature: "Admin" },
        forward_from_chat: chats.elsewhere,
        forward_date: D - 600,
        text: "rules updated"
      })
    },
    expected: {
      events: [event({ chat: S, id: 59, sender: "1002" })],
      history: [item({
        chat: S, id: 59, sender: as.bob, text: "rules updated",
        extra: { forward: { origin: "chat", sender_ref: "[Elsewhere](tg:@elsewhere)", sent_at: iso(D - 600), automatic: false } }
      })],
      addressed: false
    }
  },
  {
    name: "supergroup: a forward from a channel, with its link",
    update: {
      update_id: 107,
      message: msg(S, 61, bob, {
        forward_origin: { type: "channel", chat: chats.channel, message_id: 900, date: D - 1800 },
        forward_from_chat: chats.channel,
        forward_from_message_id: 900,
        forward_date: D - 1800,
        text: "Rates explained: https://example.com/rates",
        entities: [{ offset: 17, length: 25, type: "url" }]
      })
    },
    expected: {
      events: [event({ chat: S, id: 61, sender: "1002", extra: { links: [{ url: "https://example.com/rates", span: { offset: 17, length: 25 } }] } })],
      history: [item({
        chat: S, id: 61, sender: as.bob, text: "Rates explained: https://example.com/rates",
        extra: { forward: { origin: "channel", sender_ref: "[News](tg:@news)", sent_at: iso(D - 1800), automatic: false } }
      })],
      addressed: false
    }
  },
  {
    name: "supergroup: an anonymous admin speaks as the group",
    update: {
      update_id: 108,
      message: msg(S, 62, anonymousBot, { sender_chat: S, author_signature: "Mod", text: "pinned the rules" })
    },
    expected: {
      events: [event({ chat: S, id: 62, sender: String(S.id) })],
      history: [item({ chat: S, id: 62, sender: as.plainGroup, text: "pinned the rules" })],
      addressed: false
    }
  },
  {
    name: "supergroup: a message sent on behalf of a channel is spoken by the channel",
    update: {
      update_id: 109,
      message: msg(S, 63, { id: 136817688, is_bot: true, first_name: "Channel", username: "Channel_Bot" }, { sender_chat: chats.channel, text: "hi from News" })
    },
    expected: {
      events: [event({ chat: S, id: 63, sender: "-1005555555555" })],
      history: [item({ chat: S, id: 63, sender: as.news, text: "hi from News" })],
      addressed: false
    }
  },
  skip("supergroup: a pin notice is not conversation", {
    update_id: 110,
    message: msg(S, 64, carol, { pinned_message: pinned })
  }, "service message"),
  {
    name: "supergroup: a reply to a pin notice means the pinned message",
    update: {
      update_id: 111,
      message: msg(S, 65, alice, {
        reply_to_message: msg(S, 64, carol, { pinned_message: pinned }),
        text: "/what@deixis_bot",
        entities: [{ offset: 0, length: 16, type: "bot_command" }]
      })
    },
    expected: {
      events: [
        event({ chat: S, id: 60, sender: "1003", extra: { links: [{ url: "https://example.com/meetup/42", span: { offset: 16, length: 29 } }] } }),
        event({ chat: S, id: 65, sender: "1001", reply: "60" })
      ],
      history: [
        item({ chat: S, id: 60, sender: as.carol, text: "Meetup moved to https://example.com/meetup/42", extra: { seen_via: "reply" } }),
        item({ chat: S, id: 65, sender: as.alice, reply: "60", text: "/what@deixis_bot" })
      ],
      addressed: true
    }
  },
  {
    name: "supergroup: a reply to a join notice names it but records no notice",
    update: {
      update_id: 112,
      message: msg(S, 67, bob, {
        reply_to_message: msg(S, 66, carol, { new_chat_members: [carol], new_chat_member: carol, new_chat_participant: carol }),
        text: "welcome!"
      })
    },
    expected: {
      events: [event({ chat: S, id: 67, sender: "1002", reply: "66" })],
      history: [item({ chat: S, id: 67, sender: as.bob, reply: "66", text: "welcome!" })],
      addressed: false
    }
  },
  {
    name: "supergroup album: the first photo, with the album's caption",
    update: albumPhoto(113, 70, "AgACAgIAAxkBAAIBj1", "Saturday hike"),
    expected: {
      events: [event({
        chat: S, id: 70, sender: "1003",
        extra: { media: [{ kind: "media.image", file_id: "AgACAgIAAxkBAAIBj1", label: "Saturday hike", span: { offset: 0, length: 13 } }], media_group_id: "13886372836251736" }
      })],
      history: [item({
        chat: S, id: 70, sender: as.carol, text: "Saturday hike",
        extra: { attachments: [{ kind: "photo" }], album_id: "13886372836251736" }
      })],
      addressed: false
    }
  },
  {
    name: "supergroup album: the second photo, without a caption",
    update: albumPhoto(114, 71, "AgACAgIAAxkBAAIBj2"),
    expected: {
      events: [event({
        chat: S, id: 71, sender: "1003",
        extra: { media: [{ kind: "media.image", file_id: "AgACAgIAAxkBAAIBj2" }], media_group_id: "13886372836251736" }
      })],
      history: [item({ chat: S, id: 71, sender: as.carol, text: "", extra: { attachments: [{ kind: "photo" }], album_id: "13886372836251736" } })],
      addressed: false
    }
  },
  {
    name: "supergroup album: a video in the same album",
    update: {
      update_id: 115,
      message: msg(S, 72, carol, {
        media_group_id: "13886372836251736",
        video: { duration: 8, width: 1080, height: 1920, file_name: "summit.mp4", mime_type: "video/mp4", file_id: "BAACAgIAAxkBAAIBj3", file_unique_id: "AgADj3", file_size: 4821033 }
      })
    },
    expected: {
      events: [event({
        chat: S, id: 72, sender: "1003",
        extra: { media: [{ kind: "media.video", file_id: "BAACAgIAAxkBAAIBj3", label: "summit.mp4" }], media_group_id: "13886372836251736" }
      })],
      history: [item({ chat: S, id: 72, sender: as.carol, text: "", extra: { attachments: [{ kind: "video", name: "summit.mp4" }], album_id: "13886372836251736" } })],
      addressed: false
    }
  },
  {
    name: "supergroup album: a reply to the second photo is a reply to that photo",
    update: {
      update_id: 116,
      message: msg(S, 73, alice, {
        reply_to_message: msg(S, 71, carol, { media_group_id: "13886372836251736", photo: photoSizes("AgACAgIAAxkBAAIBj2") }),
        text: "@deixis_bot what is in this one?",
        entities: [{ offset: 0, length: 11, type: "mention" }]
      })
    },
    expected: {
      events: [
        event({
          chat: S, id: 71, sender: "1003",
          extra: { media: [{ kind: "media.image", file_id: "AgACAgIAAxkBAAIBj2" }], media_group_id: "13886372836251736" }
        }),
        event({ chat: S, id: 73, sender: "1001", reply: "71" })
      ],
      history: [
        item({
          chat: S, id: 71, sender: as.carol, text: "",
          extra: { attachments: [{ kind: "photo" }], album_id: "13886372836251736", seen_via: "reply" }
        }),
        item({ chat: S, id: 73, sender: as.alice, reply: "71", text: "[@deixis_bot](tg:@deixis_bot) what is in this one?" })
      ],
      addressed: true
    }
  },
  {
    name: "supergroup: an edit changes the message's link",
    update: {
      update_id: 117,
      edited_message: msg(S, 52, alice, {
        edit_date: D + 90,
        text: "see https://example.com/rust-2026",
        entities: [{ offset: 4, length: 29, type: "url" }]
      })
    },
    expected: {
      events: [event({ chat: S, id: 52, sender: "1001", edited: D + 90, extra: { links: [{ url: "https://example.com/rust-2026", span: { offset: 4, length: 29 } }] } })],
      history: [item({ chat: S, id: 52, sender: as.alice, text: "see https://example.com/rust-2026", extra: { edited_at: iso(D + 90) } })],
      addressed: false
    }
  },
  {
    name: "supergroup album: an edited caption",
    update: {
      update_id: 118,
      edited_message: msg(S, 70, carol, {
        edit_date: D + 120,
        media_group_id: "13886372836251736",
        photo: photoSizes("AgACAgIAAxkBAAIBj1"),
        caption: "Saturday hike, part 1"
      })
    },
    expected: {
      events: [event({
        chat: S, id: 70, sender: "1003", edited: D + 120,
        extra: { media: [{ kind: "media.image", file_id: "AgACAgIAAxkBAAIBj1", label: "Saturday hike, part 1", span: { offset: 0, length: 21 } }], media_group_id: "13886372836251736" }
      })],
      history: [item({
        chat: S, id: 70, sender: as.carol, text: "Saturday hike, part 1",
        extra: { attachments: [{ kind: "photo" }], album_id: "13886372836251736", edited_at: iso(D + 120) }
      })],
      addressed: false
    }
  },
  {
    name: "supergroup: a user's poll",
    update: {
      update_id: 119,
      message: msg(S, 74, alice, {
        poll: {
          id: "5368324170671202286", question: "Lunch?",
          options: [{ text: "Pizza", voter_count: 0 }, { text: "Sushi", voter_count: 0 }],
          total_voter_count: 0, is_closed: false, is_anonymous: true, type: "regular", allows_multiple_answers: false
        }
      })
    },
    expected: {
      events: [event({ chat: S, id: 74, sender: "1001", extra: { poll: { poll_id: "5368324170671202286", question: "Lunch?", is_closed: false } } })],
      history: [item({ chat: S, id: 74, sender: as.alice, text: "", extra: { attachments: [{ kind: "poll", name: "Lunch?" }] } })],
      addressed: false
    }
  },
  {
    name: "supergroup: a quiz",
    update: {
      update_id: 120,
      message: msg(S, 75, bob, {
        poll: {
          id: "5368324170671202287", question: "Capital of Australia?",
          options: [{ text: "Sydney", voter_count: 0 }, { text: "Canberra", voter_count: 0 }],
          total_voter_count: 0, is_closed: false, is_anonymous: false, type: "quiz", allows_multiple_answers: false, correct_option_id: 1
        }
      })
    },
    expected: {
      events: [event({ chat: S, id: 75, sender: "1002", extra: { poll: { poll_id: "5368324170671202287", question: "Capital of Australia?", is_closed: false } } })],
      history: [item({ chat: S, id: 75, sender: as.bob, text: "", extra: { attachments: [{ kind: "poll", name: "Capital of Australia?" }] } })],
      addressed: false
    }
  },
  {
    name: "supergroup: a dice roll",
    update: { update_id: 121, message: msg(S, 76, bob, { dice: { emoji: "🎲", value: 5 } }) },
    expected: {
      events: [event({ chat: S, id: 76, sender: "1002" })],
      history: [item({ chat: S, id: 76, sender: as.bob, text: "", extra: { attachments: [{ kind: "other", name: "🎲" }] } })],
      addressed: false
    }
  },
  {
    name: "supergroup: a venue",
    update: {
      update_id: 122,
      message: msg(S, 77, carol, {
        location: { latitude: 48.137154, longitude: 11.576124 },
        venue: { location: { latitude: 48.137154, longitude: 11.576124 }, title: "Café Luitpold", address: "Brienner Str. 11" }
      })
    },
    expected: {
      events: [event({ chat: S, id: 77, sender: "1003" })],
      history: [item({ chat: S, id: 77, sender: as.carol, text: "", extra: { attachments: [{ kind: "location", name: "Café Luitpold" }] } })],
      addressed: false
    }
  },
  {
    name: "supergroup: an animation is a video (Telegram also sends it as a document)",
    update: {
      update_id: 123,
      message: msg(S, 78, bob, {
        animation: { file_name: "party.mp4", mime_type: "video/mp4", duration: 2, width: 320, height: 320, file_id: "CgACAgIAAxkBAAIBk1", file_unique_id: "AgADk1", file_size: 120331 },
        document: { file_name: "party.mp4", mime_type: "video/mp4", file_id: "CgACAgIAAxkBAAIBk1", file_unique_id: "AgADk1", file_size: 120331 }
      })
    },
    expected: {
      events: [event({ chat: S, id: 78, sender: "1002", extra: { media: [{ kind: "media.video", file_id: "CgACAgIAAxkBAAIBk1", label: "party.mp4" }] } })],
      history: [item({ chat: S, id: 78, sender: as.bob, text: "", extra: { attachments: [{ kind: "animation", name: "party.mp4" }] } })],
      addressed: false
    }
  },
  {
    name: "supergroup: a round video note",
    update: {
      update_id: 124,
      message: msg(S, 79, alice, { video_note: { duration: 6, length: 384, file_id: "DQACAgIAAxkBAAIBl1", file_unique_id: "AgADl1", file_size: 301223 } })
    },
    expected: {
      events: [event({ chat: S, id: 79, sender: "1001", extra: { media: [{ kind: "media.video", file_id: "DQACAgIAAxkBAAIBl1" }] } })],
      history: [item({ chat: S, id: 79, sender: as.alice, text: "", extra: { attachments: [{ kind: "video_note" }] } })],
      addressed: false
    }
  },
  {
    name: "supergroup: an audio track is named by performer and title",
    update: {
      update_id: 125,
      message: msg(S, 80, carol, {
        audio: { duration: 241, performer: "Nina Simone", title: "Feeling Good", mime_type: "audio/mpeg", file_id: "CQACAgIAAxkBAAIBm1", file_unique_id: "AgADm1", file_size: 5711203 }
      })
    },
    expected: {
      events: [event({ chat: S, id: 80, sender: "1003", extra: { media: [{ kind: "media.voice", file_id: "CQACAgIAAxkBAAIBm1", label: "Nina Simone – Feeling Good" }] } })],
      history: [item({ chat: S, id: 80, sender: as.carol, text: "", extra: { attachments: [{ kind: "audio", name: "Nina Simone – Feeling Good" }] } })],
      addressed: false
    }
  },
  {
    name: "supergroup: a zip file is a document",
    update: {
      update_id: 126,
      message: msg(S, 81, bob, { document: { file_name: "data.zip", mime_type: "application/zip", file_id: "BQACAgIAAxkBAAIBn1", file_unique_id: "AgADn1", file_size: 982113 } })
    },
    expected: {
      events: [event({ chat: S, id: 81, sender: "1002", extra: { media: [{ kind: "media.document", file_id: "BQACAgIAAxkBAAIBn1", label: "data.zip" }] } })],
      history: [item({ chat: S, id: 81, sender: as.bob, text: "", extra: { attachments: [{ kind: "document", name: "data.zip" }] } })],
      addressed: false
    }
  },
  {
    name: "supergroup: a picture sent as a file is an image",
    update: {
      update_id: 127,
      message: msg(S, 82, alice, {
        document: { file_name: "diagram.png", mime_type: "image/png", file_id: "BQACAgIAAxkBAAIBo1", file_unique_id: "AgADo1", file_size: 221003 },
        caption: "the architecture"
      })
    },
    expected: {
      events: [event({ chat: S, id: 82, sender: "1001", extra: { media: [{ kind: "media.image", file_id: "BQACAgIAAxkBAAIBo1", label: "diagram.png", span: { offset: 0, length: 16 } }] } })],
      history: [item({ chat: S, id: 82, sender: as.alice, text: "the architecture", extra: { attachments: [{ kind: "document", name: "diagram.png" }] } })],
      addressed: false
    }
  },
  {
    name: "supergroup: a command for another bot does not address this one",
    update: {
      update_id: 128,
      message: msg(S, 83, bob, { text: "/start@other_bot", entities: [{ offset: 0, length: 16, type: "bot_command" }] })
    },
    expected: {
      events: [event({ chat: S, id: 83, sender: "1002" })],
      history: [item({ chat: S, id: 83, sender: as.bob, text: "/start@other_bot" })],
      addressed: false
    }
  },
  {
    name: "supergroup: a reaction points at the reacted message, identified so a redelivery is kept once",
    update: {
      update_id: 129,
      message_reaction: {
        chat: S, message_id: 52, user: bob, date: D + 5,
        old_reaction: [], new_reaction: [{ type: "emoji", emoji: "👍" }, { type: "custom_emoji", custom_emoji_id: "5368324170671202286" }]
      }
    },
    expected: {
      events: [],
      history: [{
        ...item({ chat: S, id: 0, date: D + 5, sender: as.bob, kind: "inbound_reaction", reply: "52", text: "👍 :custom_emoji:" }),
        message_id: null,
        event_id: `telegram:reaction:${S.id}:52:1002`
      }],
      addressed: false
    }
  },
  {
    name: "supergroup: a paid star reaction by an anonymous channel",
    update: {
      update_id: 130,
      message_reaction: { chat: S, message_id: 61, actor_chat: chats.channel, date: D + 6, old_reaction: [], new_reaction: [{ type: "paid" }] }
    },
    expected: {
      events: [],
      history: [{
        ...item({ chat: S, id: 0, date: D + 6, sender: as.news, kind: "inbound_reaction", reply: "61", text: "⭐" }),
        message_id: null,
        event_id: `telegram:reaction:${S.id}:61:chat${chats.channel.id}`
      }],
      addressed: false
    }
  },
  {
    name: "supergroup: a reaction taken back withdraws the reaction's item",
    update: {
      update_id: 131,
      message_reaction: {
        chat: S, message_id: 52, user: bob, date: D + 7,
        old_reaction: [{ type: "emoji", emoji: "👍" }, { type: "custom_emoji", custom_emoji_id: "5368324170671202286" }], new_reaction: []
      }
    },
    expected: {
      events: [],
      history: [],
      addressed: false,
      retractions: [{ chat_id: String(S.id), chat_type: "supergroup", event_id: `telegram:reaction:${S.id}:52:1002`, at: (D + 7) * 1000 }]
    }
  },
  skip("supergroup: anonymous reaction counts", {
    update_id: 132,
    message_reaction_count: { chat: S, message_id: 52, date: D + 8, reactions: [{ type: { type: "emoji", emoji: "🔥" }, total_count: 4 }] }
  }, "message_reaction_count"),
  {
    name: "supergroup: the bot's own message (a reply to a user's command) is outbound and answers that command",
    update: {
      update_id: 133,
      message: msg(S, 84, bot, {
        reply_to_message: msg(S, 83, bob, { text: "/start@other_bot", entities: [{ offset: 0, length: 16, type: "bot_command" }] }),
        text: "That command is for another bot."
      })
    },
    expected: {
      events: [event({ chat: S, id: 83, sender: "1002" }), event({ chat: S, id: 84, sender: "7000000001", outbound: true, reply: "83" })],
      history: [
        item({ chat: S, id: 83, sender: as.bob, text: "/start@other_bot", extra: { seen_via: "reply" } }),
        item({ chat: S, id: 84, sender: as.bot, kind: "outbound_agent", reply: "83", text: "That command is for another bot." })
      ],
      addressed: false,
      responses: [{ chat_id: String(S.id), topic_id: null, message_id: "83", response_id: "84" }]
    }
  },
  {
    name: "supergroup reply thread: a reply to a pin notice carries the notice's thread id and means the pinned message",
    update: {
      update_id: 134,
      message: msg(S, 92, carol, {
        message_thread_id: 91,
        reply_to_message: msg(S, 91, bob, { pinned_message: pinnedAgenda }),
        text: "is this final?"
      })
    },
    expected: {
      events: [
        event({ chat: S, id: 90, sender: "1002", extra: { links: [{ url: "https://example.com/agenda", span: { offset: 8, length: 26 } }] } }),
        event({ chat: S, id: 92, sender: "1003", reply: "90" })
      ],
      history: [
        item({ chat: S, id: 90, sender: as.bob, text: "Agenda: https://example.com/agenda", extra: { seen_via: "reply" } }),
        item({ chat: S, id: 92, sender: as.carol, reply: "90", text: "is this final?" })
      ],
      addressed: false
    }
  },
  {
    name: "supergroup: a reply quoting one of two links carries the quote's text and UTF-16 position",
    update: {
      update_id: 135,
      message: msg(S, 94, bob, {
        reply_to_message: twoPlans,
        quote: { text: "https://example.com/plan-b", position: 39, is_manual: true },
        text: "open this"
      })
    },
    expected: {
      events: [
        event({
          chat: S, id: 93, sender: "1001",
          extra: { links: [{ url: "https://example.com/plan-a", span: { offset: 8, length: 26 } }, { url: "https://example.com/plan-b", span: { offset: 39, length: 26 } }] }
        }),
        event({ chat: S, id: 94, sender: "1002", reply: "93", extra: { quote: { text: "https://example.com/plan-b", position: 39 } } })
      ],
      history: [
        item({ chat: S, id: 93, sender: as.alice, text: "Compare https://example.com/plan-a and https://example.com/plan-b", extra: { seen_via: "reply" } }),
        item({
          chat: S, id: 94, sender: as.bob, reply: "93", text: "open this",
          extra: {
            quote: {
              sender_ref: "[Alice](tg:@alice)",
              text: "https://example.com/plan-b",
              markdown_block: "> [Alice](tg:@alice): https://example.com/plan-b"
            }
          }
        })
      ],
      addressed: false
    }
  },
  {
    name: "supergroup album: a reply quoting the words of a member's caption",
    update: {
      update_id: 136,
      message: msg(S, 97, alice, { reply_to_message: trailMap, quote: { text: "Trail map", position: 0, is_manual: true }, text: "where was this?" })
    },
    expected: {
      events: [trailEvent, event({ chat: S, id: 97, sender: "1001", reply: "95", extra: { quote: { text: "Trail map", position: 0 } } })],
      history: [
        trailItem,
        item({
          chat: S, id: 97, sender: as.alice, reply: "95", text: "where was this?",
          extra: { quote: { sender_ref: "[Carol](tg:@carol)", text: "Trail map", markdown_block: "> [Carol](tg:@carol): Trail map" } }
        })
      ],
      addressed: false
    }
  },
  {
    name: "supergroup album: a reply quoting the link inside a member's caption",
    update: {
      update_id: 137,
      message: msg(S, 98, bob, {
        reply_to_message: trailMap,
        quote: { text: "https://example.com/trail", position: 13, is_manual: true },
        text: "open this"
      })
    },
    expected: {
      events: [trailEvent, event({ chat: S, id: 98, sender: "1002", reply: "95", extra: { quote: { text: "https://example.com/trail", position: 13 } } })],
      history: [
        trailItem,
        item({
          chat: S, id: 98, sender: as.bob, reply: "95", text: "open this",
          extra: {
            quote: { sender_ref: "[Carol](tg:@carol)", text: "https://example.com/trail", markdown_block: "> [Carol](tg:@carol): https://example.com/trail" }
          }
        })
      ],
      addressed: false
    }
  }
]

// -----------------------------------------------------------------------------
// Forum supergroups
// -----------------------------------------------------------------------------

const F = chats.forum
const inTopic = (id: number, from: object, thread: number, fields: Record<string, unknown>) =>
  msg(F, id, from, { message_thread_id: thread, is_topic_message: true, ...fields })
const topicCreated = (thread: number, name: string) =>
  msg(F, thread, alice, { message_thread_id: thread, forum_topic_created: { name, icon_color: 7322096 }, is_topic_message: true })
const pinnedChecklist = inTopic(520, alice, 500, {
  text: "Release checklist: https://example.com/checklist",
  entities: [{ offset: 19, length: 29, type: "url" }]
})
const pinnedRules = msg(F, 523, alice, { text: "House rules: https://example.com/rules", entities: [{ offset: 13, length: 25, type: "url" }] })
const forums: ReadonlyArray<Fixture> = [
  skip("forum: a topic was created (service notice)", { update_id: 200, message: topicCreated(500, "Releases") }, "service message"),
  {
    name: "forum: a topic message is in its topic, not a reply to the topic's creation",
    update: {
      update_id: 201,
      message: inTopic(501, alice, 500, {
        reply_to_message: topicCreated(500, "Releases"),
        text: "v2 notes: https://example.com/v2",
        entities: [{ offset: 10, length: 22, type: "url" }]
      })
    },
    expected: {
      events: [event({ chat: F, id: 501, topic: "500", sender: "1001", is_forum: true, extra: { links: [{ url: "https://example.com/v2", span: { offset: 10, length: 22 } }] } })],
      history: [item({ chat: F, id: 501, topic: "500", sender: as.alice, text: "v2 notes: https://example.com/v2" })],
      addressed: false
    }
  },
  {
    name: "forum: a message without a thread is in the General topic",
    update: { update_id: 202, message: msg(F, 502, bob, { text: "anyone around?" }) },
    expected: {
      events: [event({ chat: F, id: 502, topic: "1", sender: "1002", is_forum: true })],
      history: [item({ chat: F, id: 502, topic: "1", sender: as.bob, text: "anyone around?" })],
      addressed: false
    }
  },
  {
    name: "forum: an explicit reply inside a topic",
    update: {
      update_id: 203,
      message: inTopic(503, bob, 500, {
        reply_to_message: inTopic(501, alice, 500, { text: "v2 notes: https://example.com/v2", entities: [{ offset: 10, length: 22, type: "url" }] }),
        text: "@deixis_bot summarise this",
        entities: [{ offset: 0, length: 11, type: "mention" }]
      })
    },
    expected: {
      events: [
        event({ chat: F, id: 501, topic: "500", sender: "1001", is_forum: true, extra: { links: [{ url: "https://example.com/v2", span: { offset: 10, length: 22 } }] } }),
        event({ chat: F, id: 503, topic: "500", reply: "501", sender: "1002", is_forum: true })
      ],
      history: [
        item({ chat: F, id: 501, topic: "500", sender: as.alice, text: "v2 notes: https://example.com/v2", extra: { seen_via: "reply" } }),
        item({ chat: F, id: 503, topic: "500", reply: "501", sender: as.bob, text: "[@deixis_bot](tg:@deixis_bot) summarise this" })
      ],
      addressed: true
    }
  },
  {
    name: "forum: a reply to a message of another topic of the same chat is a reply",
    update: {
      update_id: 204,
      message: inTopic(504, carol, 600, {
        external_reply: { origin: { type: "user", sender_user: alice, date: D }, chat: F, message_id: 501 },
        quote: { text: "v2 notes", position: 0 },
        text: "moving this here"
      })
    },
    expected: {
      events: [event({ chat: F, id: 504, topic: "600", reply: "501", sender: "1003", is_forum: true, extra: { quote: { text: "v2 notes", position: 0 } } })],
      history: [item({
        chat: F, id: 504, topic: "600", reply: "501", sender: as.carol, text: "moving this here",
        extra: { quote: { sender_ref: "[Alice](tg:@alice)", text: "v2 notes", markdown_block: "> [Alice](tg:@alice): v2 notes" } }
      })],
      addressed: false
    }
  },
  skip("forum: a topic was renamed (service notice)", {
    update_id: 205,
    message: inTopic(505, alice, 500, { forum_topic_edited: { name: "Releases 2026" } })
  }, "service message"),
  skip("forum: a topic was closed (service notice)", {
    update_id: 206,
    message: inTopic(506, alice, 500, { forum_topic_closed: {} })
  }, "service message"),
  skip("forum: a topic was reopened (service notice)", {
    update_id: 207,
    message: inTopic(507, alice, 500, { forum_topic_reopened: {} })
  }, "service message"),
  skip("forum: the General topic was hidden (service notice)", {
    update_id: 208,
    message: msg(F, 508, alice, { general_forum_topic_hidden: {} })
  }, "service message"),
  {
    name: "forum: a reaction (placed in the reacted message's topic when recorded)",
    update: {
      update_id: 209,
      message_reaction: { chat: F, message_id: 501, user: carol, date: D + 9, old_reaction: [], new_reaction: [{ type: "emoji", emoji: "🎉" }] }
    },
    expected: {
      events: [],
      history: [{
        ...item({ chat: F, id: 0, date: D + 9, sender: as.carol, kind: "inbound_reaction", reply: "501", text: "🎉" }),
        message_id: null,
        event_id: `telegram:reaction:${F.id}:501:1003`
      }],
      addressed: false
    }
  },
  {
    name: "forum: a command in the General topic addresses the bot",
    update: {
      update_id: 210,
      message: msg(F, 509, alice, { text: "/context", entities: [{ offset: 0, length: 8, type: "bot_command" }] })
    },
    expected: {
      events: [event({ chat: F, id: 509, topic: "1", sender: "1001", is_forum: true })],
      history: [item({ chat: F, id: 509, topic: "1", sender: as.alice, text: "/context" })],
      addressed: true
    }
  },
  {
    name: "forum topic: a reply to a pin notice in the topic means the pinned message",
    update: {
      update_id: 211,
      message: inTopic(522, carol, 500, { reply_to_message: inTopic(521, bob, 500, { pinned_message: pinnedChecklist }), text: "is this still current?" })
    },
    expected: {
      events: [
        event({ chat: F, id: 520, topic: "500", sender: "1001", is_forum: true, extra: { links: [{ url: "https://example.com/checklist", span: { offset: 19, length: 29 } }] } }),
        event({ chat: F, id: 522, topic: "500", reply: "520", sender: "1003", is_forum: true })
      ],
      history: [
        item({ chat: F, id: 520, topic: "500", sender: as.alice, text: "Release checklist: https://example.com/checklist", extra: { seen_via: "reply" } }),
        item({ chat: F, id: 522, topic: "500", reply: "520", sender: as.carol, text: "is this still current?" })
      ],
      addressed: false
    }
  },
  {
    name: "forum General topic: a reply to a pin notice means the pinned message",
    update: {
      update_id: 212,
      message: msg(F, 525, carol, { reply_to_message: msg(F, 524, bob, { pinned_message: pinnedRules }), text: "where are these kept?" })
    },
    expected: {
      events: [
        event({ chat: F, id: 523, topic: "1", sender: "1001", is_forum: true, extra: { links: [{ url: "https://example.com/rules", span: { offset: 13, length: 25 } }] } }),
        event({ chat: F, id: 525, topic: "1", reply: "523", sender: "1003", is_forum: true })
      ],
      history: [
        item({ chat: F, id: 523, topic: "1", sender: as.alice, text: "House rules: https://example.com/rules", extra: { seen_via: "reply" } }),
        item({ chat: F, id: 525, topic: "1", reply: "523", sender: as.carol, text: "where are these kept?" })
      ],
      addressed: false
    }
  },
  {
    name: "forum: a topic message with two links",
    update: {
      update_id: 213,
      message: inTopic(526, alice, 500, {
        text: "Builds: https://example.com/linux and https://example.com/mac",
        entities: [{ offset: 8, length: 25, type: "url" }, { offset: 38, length: 23, type: "url" }]
      })
    },
    expected: {
      events: [event({
        chat: F, id: 526, topic: "500", sender: "1001", is_forum: true,
        extra: { links: [{ url: "https://example.com/linux", span: { offset: 8, length: 25 } }, { url: "https://example.com/mac", span: { offset: 38, length: 23 } }] }
      })],
      history: [item({ chat: F, id: 526, topic: "500", sender: as.alice, text: "Builds: https://example.com/linux and https://example.com/mac" })],
      addressed: false
    }
  },
  {
    name: "forum: a reply from another topic quoting one of the message's links",
    update: {
      update_id: 214,
      message: inTopic(527, carol, 600, {
        external_reply: { origin: { type: "user", sender_user: alice, date: D }, chat: F, message_id: 526 },
        quote: { text: "https://example.com/mac", position: 38, is_manual: true },
        text: "this one fails on my machine"
      })
    },
    expected: {
      events: [event({ chat: F, id: 527, topic: "600", reply: "526", sender: "1003", is_forum: true, extra: { quote: { text: "https://example.com/mac", position: 38 } } })],
      history: [item({
        chat: F, id: 527, topic: "600", reply: "526", sender: as.carol, text: "this one fails on my machine",
        extra: { quote: { sender_ref: "[Alice](tg:@alice)", text: "https://example.com/mac", markdown_block: "> [Alice](tg:@alice): https://example.com/mac" } }
      })],
      addressed: false
    }
  }
]

// -----------------------------------------------------------------------------
// Channels and discussion groups
// -----------------------------------------------------------------------------

const C = chats.channel
const X = chats.discussion
const post = msg(C, 900, undefined, {
  sender_chat: C,
  author_signature: "Editor",
  text: "Rates go up in May: https://example.com/rates",
  entities: [{ offset: 20, length: 25, type: "url" }]
})
const autoForward = msg(X, 3100, telegram, {
  sender_chat: C,
  is_automatic_forward: true,
  forward_origin: { type: "channel", chat: C, message_id: 900, date: D, author_signature: "Editor" },
  forward_from_chat: C,
  forward_from_message_id: 900,
  forward_date: D,
  text: "Rates go up in May: https://example.com/rates",
  entities: [{ offset: 20, length: 25, type: "url" }]
})
const channels: ReadonlyArray<Fixture> = [
  {
    name: "channel: a post is spoken by the channel",
    update: { update_id: 300, channel_post: post },
    expected: {
      events: [event({ chat: C, id: 900, sender: "-1005555555555", extra: { links: [{ url: "https://example.com/rates", span: { offset: 20, length: 25 } }] } })],
      history: [item({ chat: C, id: 900, sender: as.news, text: "Rates go up in May: https://example.com/rates" })],
      addressed: false
    }
  },
  {
    name: "channel: an edited post",
    update: {
      update_id: 301,
      edited_channel_post: { ...post, edit_date: D + 300, text: "Rates go up in June: https://example.com/rates-june", entities: [{ offset: 21, length: 30, type: "url" }] }
    },
    expected: {
      events: [event({ chat: C, id: 900, sender: "-1005555555555", edited: D + 300, extra: { links: [{ url: "https://example.com/rates-june", span: { offset: 21, length: 30 } }] } })],
      history: [item({
        chat: C, id: 900, sender: as.news, text: "Rates go up in June: https://example.com/rates-june",
        extra: { edited_at: iso(D + 300) }
      })],
      addressed: false
    }
  },
  {
    name: "discussion group: the channel's post, forwarded automatically, works as the channel post",
    update: { update_id: 302, message: autoForward },
    expected: {
      events: [event({ chat: X, id: 3100, sender: "-1005555555555", extra: { links: [{ url: "https://example.com/rates", span: { offset: 20, length: 25 } }] } })],
      history: [item({
        chat: X, id: 3100, sender: as.news, text: "Rates go up in May: https://example.com/rates",
        extra: { forward: { origin: "channel", sender_ref: "[News](tg:@news)", sent_at: iso(D), automatic: true } }
      })],
      addressed: false
    }
  },
  {
    name: "discussion group: a comment replies to the automatic forward",
    update: {
      update_id: 303,
      message: msg(X, 3101, bob, {
        message_thread_id: 3100,
        reply_to_message: autoForward,
        text: "@deixis_bot how much?",
        entities: [{ offset: 0, length: 11, type: "mention" }]
      })
    },
    expected: {
      events: [
        event({ chat: X, id: 3100, sender: "-1005555555555", extra: { links: [{ url: "https://example.com/rates", span: { offset: 20, length: 25 } }] } }),
        event({ chat: X, id: 3101, reply: "3100", sender: "1002" })
      ],
      history: [
        item({
          chat: X, id: 3100, sender: as.news, text: "Rates go up in May: https://example.com/rates",
          extra: { forward: { origin: "channel", sender_ref: "[News](tg:@news)", sent_at: iso(D), automatic: true }, seen_via: "reply" }
        }),
        item({ chat: X, id: 3101, reply: "3100", sender: as.bob, text: "[@deixis_bot](tg:@deixis_bot) how much?" })
      ],
      addressed: true
    }
  },
  skip("channel: the channel was created (service notice)", {
    update_id: 304,
    channel_post: msg(C, 1, undefined, { sender_chat: C, channel_chat_created: true })
  }, "service message")
]

// -----------------------------------------------------------------------------
// Every other update type
// -----------------------------------------------------------------------------

const others: ReadonlyArray<Fixture> = [
  {
    name: "poll: a closed poll's update closes it by poll id",
    update: {
      update_id: 400,
      poll: {
        id: "5368324170671202286", question: "Lunch?",
        options: [{ text: "Pizza", voter_count: 3 }, { text: "Sushi", voter_count: 1 }],
        total_voter_count: 4, is_closed: true, is_anonymous: true, type: "regular", allows_multiple_answers: false
      }
    },
    expected: {
      events: [{ type: "poll_closed", event_id: "telegram:poll_closed:5368324170671202286", poll_id: "5368324170671202286" }],
      history: [],
      addressed: false
    }
  },
  skip("poll: an open poll's vote count changed", {
    update_id: 401,
    poll: {
      id: "5368324170671202287", question: "Capital of Australia?",
      options: [{ text: "Sydney", voter_count: 1 }, { text: "Canberra", voter_count: 2 }],
      total_voter_count: 3, is_closed: false, is_anonymous: false, type: "quiz", allows_multiple_answers: false, correct_option_id: 1
    }
  }, "still open"),
  skip("poll_answer: a vote carries no chat", { update_id: 402, poll_answer: { poll_id: "5368324170671202287", user: bob, option_ids: [1] } }, "carries no chat"),
  skip("callback_query: a button press", {
    update_id: 403,
    callback_query: {
      id: "4382bfdwdsb323b2d9", from: alice, chat_instance: "-7283746210293847",
      message: msg(S, 84, bot, { text: "Which one?", reply_markup: { inline_keyboard: [[{ text: "A", callback_data: "w:a" }]] } }),
      data: "w:a"
    }
  }, "button press"),
  skip("inline_query: typed after @deixis_bot in any chat", {
    update_id: 404,
    inline_query: { id: "1284091", from: alice, query: "dune", offset: "", chat_type: "sender" }
  }, "inline_query"),
  skip("chosen_inline_result: an inline result was sent", {
    update_id: 405,
    chosen_inline_result: { result_id: "r1", from: alice, query: "dune", inline_message_id: "AAAAAAAAAAAAAAAA" }
  }, "chosen_inline_result"),
  skip("my_chat_member: the bot was added to a group", {
    update_id: 406,
    my_chat_member: {
      chat: S, from: alice, date: D,
      old_chat_member: { user: bot, status: "left" },
      new_chat_member: { user: bot, status: "member" }
    }
  }, "my_chat_member"),
  skip("chat_member: a member was promoted", {
    update_id: 407,
    chat_member: {
      chat: S, from: alice, date: D,
      old_chat_member: { user: bob, status: "member" },
      new_chat_member: { user: bob, status: "administrator", can_be_edited: false, can_manage_chat: true }
    }
  }, "chat_member"),
  skip("chat_join_request: someone asked to join", {
    update_id: 408,
    chat_join_request: { chat: S, from: carol, user_chat_id: 1003, date: D }
  }, "chat_join_request"),
  skip("chat_boost: the chat was boosted", {
    update_id: 409,
    chat_boost: { chat: C, boost: { boost_id: "b1", add_date: D, expiration_date: D + 86400 * 30, source: { source: "premium", user: carol } } }
  }, "chat_boost"),
  skip("shipping_query: payments are not conversation", {
    update_id: 410,
    shipping_query: { id: "s1", from: alice, invoice_payload: "p", shipping_address: { country_code: "DE", state: "", city: "Berlin", street_line1: "x", street_line2: "", post_code: "10115" } }
  }, "shipping_query"),
  skip("an update type this mapper does not know yet", { update_id: 411, some_future_update: { chat: S, id: 1 } }, "unknown update type")
]

/**
 * The whole corpus, in the order the updates would arrive.
 *
 * @since 0.1.0
 * @category constants
 */
export const corpus: ReadonlyArray<Fixture> = [...privateChat, ...groups, ...supergroups, ...forums, ...channels, ...others]

/**
 * Every chat id the corpus names.
 *
 * @since 0.1.0
 * @category constants
 */
export const chatIds: ReadonlyArray<string> = Object.values(chats).map((c) => String(c.id))

/**
 * What the stores hold for some chats: core's messages and objects and what it knows of the
 * chat, and the history of every topic the chat's messages are in (and of the topicless
 * scope), oldest first. Two entrances that recorded the same updates hold the same state.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordedChat {
  readonly info: ChatInfo
  readonly snapshot: ChatSnapshot
  readonly history: Readonly<Record<string, ReadonlyArray<HistoryItem>>>
}

/**
 * Reads {@link RecordedChat} for each chat, keyed by chat id.
 *
 * @since 0.1.0
 * @category testing
 */
export const recordedState = (
  ids: ReadonlyArray<string> = chatIds
): Effect.Effect<Readonly<Record<string, RecordedChat>>, StoreError, ContextStore | HistoryStore> =>
  Effect.gen(function*() {
    const store = yield* ContextStore
    const history = yield* HistoryStore
    const out: Record<string, RecordedChat> = {}
    for (const id of ids) {
      const snapshot = yield* store.snapshot(id)
      const topics = [...new Set<string | null>([null, ...snapshot.messages.map((m) => m.topic_id)])]
      const items: Record<string, ReadonlyArray<HistoryItem>> = {}
      for (const topic of topics) {
        const entries = yield* history.recent({ chat_id: id, topic_id: topic }, 10_000)
        if (entries.length > 0) items[topic ?? "(none)"] = entries.map((e) => e.item)
      }
      out[id] = { info: yield* store.chat(id), snapshot, history: items }
    }
    return out
  })
