// The core's public surface: what a project that lifts this folder builds on, and the only module the
// rest of retrysafe imports it through (besides two light subpaths: `definition`, for tool authors, and
// `errors`). Internals (argument parsing, receipt encoding, the Powertools persistence subclass, intents)
// stay inside; tests reach them by path.
export {
  type CallRecord,
  type CallState,
  classify,
  isInFlight,
  recordKeyOfCallId,
  STATUS,
} from './call-state';
export {
  Completer,
  type CompleterOptions,
  type Recheck,
  type RecheckOutcome,
  type RecheckQueue,
  type StreamChange,
  type StreamReport,
} from './completer';
export * from './definition';
export { CallRecords } from './persistence/call-records';
export { closeStalled, deleteExpired, deleteIntent, type ErasureTable, tombstone } from './persistence/erasure';
export { IntentStore } from './persistence/intents';
export { DEFAULT_IDEMPOTENCY_TABLE_NAME, DEFAULT_RECORD_ATTRIBUTES, type RecordAttributes } from './record';
export {
  type CallContext,
  type CallOutcome,
  type InvokeOptions,
  MAX_RETRY_AFTER_MS,
  MIN_RETRY_AFTER_MS,
  type Operation,
  outcomeOf,
  type ReplayKind,
  ToolRuntime,
  type ToolRuntimeOptions,
} from './runtime';
