/**
 * @since 0.1.0
 */
export * as Ids from "./Ids.js"
export * as ObjectKind from "./ObjectKind.js"
export * as ContextObject from "./ContextObject.js"
export * as ContextEvent from "./ContextEvent.js"
export * as Errors from "./Errors.js"
export * as TtlPolicy from "./TtlPolicy.js"
export * as Scoring from "./Scoring.js"
export * as ReasonCodes from "./ReasonCodes.js"
export * as ContextStore from "./ContextStore.js"
export * as ContextIngest from "./ContextIngest.js"
export * as ReferenceResolver from "./ReferenceResolver.js"
export * as ActiveContext from "./ActiveContext.js"
export * as Deixis from "./Deixis.js"
export * as ConversationState from "./ConversationState.js"
export * as ContextReducer from "./ContextReducer.js"
export * as ConfigKeys from "./ConfigKeys.js"
