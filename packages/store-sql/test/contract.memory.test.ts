import * as HistoryStore from "@deixis/chathistory/HistoryStore"
import { historyStoreContract } from "@deixis/chathistory/HistoryStoreTesting"
import * as ContextStore from "@deixis/core/ContextStore"
import { contextStoreContract, contractObjectRetention, replacedTtl } from "@deixis/core/ContextStoreTesting"
import * as ConversationState from "@deixis/core/ConversationState"
import { conversationStateStoreContract } from "@deixis/core/ConversationStateTesting"

// The memory adapters in the same run, so parity with SQLite and PostgreSQL is visible in one report.
contextStoreContract("memory", ContextStore.layerMemory({ sweep_interval: 0, object_retention: contractObjectRetention }))
// The same cases under a replaced TTL policy: the store keeps what the policy wrote.
contextStoreContract("memory", ContextStore.layerMemory({ sweep_interval: 0, object_retention: contractObjectRetention }), { ttl: replacedTtl })
historyStoreContract("memory", HistoryStore.layerMemory())
conversationStateStoreContract("memory", ConversationState.layerMemory)
