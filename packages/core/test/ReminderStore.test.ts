import * as ReminderStore from "../src/ReminderStore.js"
import { reminderStoreContract } from "../src/ReminderStoreTesting.js"
import * as UpdateInbox from "../src/UpdateInbox.js"
import { updateInboxContract } from "../src/UpdateInboxTesting.js"

reminderStoreContract("memory", ReminderStore.layerMemory)
updateInboxContract("memory", UpdateInbox.layerMemory)
