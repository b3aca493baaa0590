/**
 * @since 0.1.0
 */
export * as PeopleRef from "./PeopleRef.js"
export * as Mentions from "./Mentions.js"
export * as HistoryItem from "./HistoryItem.js"
export * as WritePolicy from "./WritePolicy.js"
export * as HistoryRenderer from "./HistoryRenderer.js"
export * as HistoryStore from "./HistoryStore.js"
export * as ContextLoader from "./ContextLoader.js"
export * as PromptAssembler from "./PromptAssembler.js"
export * as DeixisServices from "./DeixisServices.js"
