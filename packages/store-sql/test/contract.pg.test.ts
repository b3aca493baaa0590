import { historyStoreContract } from "@deixis/chathistory/HistoryStoreTesting"
import { contextStoreContract } from "@deixis/core/ContextStoreTesting"
import { conversationStateStoreContract } from "@deixis/core/ConversationStateTesting"
import { pgLayer } from "./helpers.js"

// The very cases the memory adapters pass, against PostgreSQL, each suite in a schema of its own.
contextStoreContract("postgres", pgLayer())
historyStoreContract("postgres", pgLayer())
conversationStateStoreContract("postgres", pgLayer())
