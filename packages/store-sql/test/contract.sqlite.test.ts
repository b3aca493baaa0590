import { historyStoreContract } from "@deixis/chathistory/HistoryStoreTesting"
import { contextStoreContract, replacedTtl } from "@deixis/core/ContextStoreTesting"
import { conversationStateStoreContract } from "@deixis/core/ConversationStateTesting"
import { sqliteLayer } from "./helpers.js"

// The very cases the memory adapters pass (contract.memory.test.ts), against a SQLite file.
contextStoreContract("sqlite", sqliteLayer())
// The same cases under a replaced TTL policy: the store keeps what the policy wrote.
contextStoreContract("sqlite", sqliteLayer(), { ttl: replacedTtl })
historyStoreContract("sqlite", sqliteLayer())
conversationStateStoreContract("sqlite", sqliteLayer())
