import { historyStoreContract } from "@deixis/chathistory/HistoryStoreTesting"
import { contextStoreContract } from "@deixis/core/ContextStoreTesting"
import { conversationStateStoreContract } from "@deixis/core/ConversationStateTesting"
import { sqliteLayer } from "./helpers.js"

// The very cases the memory adapters pass (contract.memory.test.ts), against a SQLite file.
contextStoreContract("sqlite", sqliteLayer())
historyStoreContract("sqlite", sqliteLayer())
conversationStateStoreContract("sqlite", sqliteLayer())
