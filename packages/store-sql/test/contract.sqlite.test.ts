import { historyStoreContract } from "@deixis/chathistory/HistoryStoreTesting"
import { contextStoreContract, contractObjectRetention, replacedTtl } from "@deixis/core/ContextStoreTesting"
import { conversationStateStoreContract } from "@deixis/core/ConversationStateTesting"
import { sqliteLayer } from "./helpers.js"

// The very cases the memory adapters pass (contract.memory.test.ts), against a SQLite file.
contextStoreContract("sqlite", sqliteLayer({ object_retention: contractObjectRetention }))
// The same cases under a replaced TTL policy: the store keeps what the policy wrote.
contextStoreContract("sqlite", sqliteLayer({ object_retention: contractObjectRetention }), { ttl: replacedTtl })
historyStoreContract("sqlite", sqliteLayer())
conversationStateStoreContract("sqlite", sqliteLayer())
