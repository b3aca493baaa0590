import { historyStoreContract } from "@deixis/chathistory/HistoryStoreTesting"
import { contextStoreContract, contractObjectRetention, replacedTtl } from "@deixis/core/ContextStoreTesting"
import { conversationStateStoreContract } from "@deixis/core/ConversationStateTesting"
import { pgLayer } from "./helpers.js"

// The very cases the memory adapters pass, against PostgreSQL, each suite in a schema of its own.
contextStoreContract("postgres", pgLayer({ object_retention: contractObjectRetention }))
// The same cases under a replaced TTL policy: the store keeps what the policy wrote.
contextStoreContract("postgres", pgLayer({ object_retention: contractObjectRetention }), { ttl: replacedTtl })
historyStoreContract("postgres", pgLayer())
conversationStateStoreContract("postgres", pgLayer())
