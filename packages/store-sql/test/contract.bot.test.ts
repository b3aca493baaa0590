import * as ReminderStore from "@deixis/core/ReminderStore"
import { reminderStoreContract } from "@deixis/core/ReminderStoreTesting"
import * as UpdateInbox from "@deixis/core/UpdateInbox"
import { updateInboxContract } from "@deixis/core/UpdateInboxTesting"
import * as Layer from "effect/Layer"
import { pgLayer, sqliteLayer } from "./helpers.js"

// Claims reach across chats, so every case gets an empty store: a fresh SQLite file, a fresh
// PostgreSQL schema (Layer.suspend picks a new schema name per build).
reminderStoreContract("memory", ReminderStore.layerMemory)
reminderStoreContract("sqlite", Layer.suspend(() => sqliteLayer()))
reminderStoreContract("postgres", Layer.suspend(() => pgLayer()))
updateInboxContract("memory", UpdateInbox.layerMemory)
updateInboxContract("sqlite", Layer.suspend(() => sqliteLayer()))
updateInboxContract("postgres", Layer.suspend(() => pgLayer()))
