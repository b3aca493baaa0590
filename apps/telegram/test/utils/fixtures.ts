/**
 * Real-shaped Telegram updates for the bot's tests (fields as Telegram sends them).
 */
export const botId = 7000000001
export const botUsername = "deixis_bot"
export const forum = { id: -1001234567890, title: "Team", is_forum: true, type: "supergroup" } as const
export const otherForum = { id: -1005550000000, title: "Other", is_forum: true, type: "supergroup" } as const
export const alice = { id: 1001, is_bot: false, first_name: "Alice", username: "alice", language_code: "en" } as const
export const bob = { id: 1002, is_bot: false, first_name: "Bob", last_name: "Stone" } as const
export const bot = { id: botId, is_bot: true, first_name: "Deixis", username: botUsername } as const

export const date = 1_771_000_000

const inTopic = (update_id: number, message_id: number, extra: Record<string, unknown>) => ({
  update_id,
  message: { message_id, from: alice, chat: forum, date, message_thread_id: 7, is_topic_message: true, ...extra }
})

/** A forum topic message with a url, a text_link and a mention (UTF-16 offsets after an emoji). */
export const topicTextWithLinks = inTopic(100, 50, {
  text: "😀 see https://example.com/rust and the spec, cc @bob",
  entities: [
    { type: "url", offset: 7, length: 24 },
    { type: "text_link", offset: 40, length: 4, url: "https://example.com/spec" },
    { type: "mention", offset: 49, length: 4 }
  ]
})

export const photo = inTopic(110, 60, {
  photo: [
    { file_id: "AgAC-small", file_unique_id: "s", file_size: 1200, width: 90, height: 60 },
    { file_id: "AgAC-large", file_unique_id: "l", file_size: 88000, width: 1280, height: 853 }
  ],
  caption: "the cat @bob",
  caption_entities: [{ type: "mention", offset: 8, length: 4 }]
})

export const pdf = inTopic(115, 65, {
  document: { file_id: "BQAC-pdf", file_unique_id: "p", file_name: "report.pdf", mime_type: "application/pdf" }
})

export const userPoll = inTopic(120, 70, {
  poll: {
    id: "5400000000000000001",
    question: "Lunch?",
    options: [{ text: "Pizza", voter_count: 0 }, { text: "Sushi", voter_count: 0 }],
    total_voter_count: 0,
    is_closed: false,
    is_anonymous: true,
    type: "regular",
    allows_multiple_answers: false
  }
})

export const hugeText = inTopic(300, 99, { text: "x".repeat(600_000) })
