// The core's public surface: what a project that lifts this folder builds on, and the only module the
// rest of retrysafe imports it through (besides light subpaths: `definition`, for tool authors, `errors`,
// `record` and `types`). Internals (the call's states, the protocol's transitions, the attempt's phases,
// argument parsing, receipt encoding) stay inside; tests reach them by path.

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
export { type InFlightCall, inFlightAgeSeconds, inFlightCallOf } from './in-flight';
export { powertoolsResponseHook } from './powertools';
export {
  callInFlight,
  deleteOnStampsRead,
  type EraseRecordOptions,
  eraseItem,
  eraseRecord,
  type ItemErasure,
  isCallInFlight,
  type KeptCall,
  type RecordErasure,
  type StampRead,
  unattributedItem,
} from './protocol/erase';
export type { StalledReason } from './protocol/record';
export { DEFAULT_IDEMPOTENCY_TABLE_NAME, DEFAULT_RECORD_ATTRIBUTES, type RecordAttributes } from './protocol/record';
export { type IdempotencyTableOptions, inFlightFilter } from './protocol/table';
export {
  type AttachOptions,
  type CallContext,
  type CalledAnswer,
  type CallOutcome,
  DEFAULT_ATTACH_MAX_WAIT_MS,
  type InvokeOptions,
  MAX_RETRY_AFTER_MS,
  MIN_RETRY_AFTER_MS,
  type Operation,
  outcomeOf,
  type ReplayKind,
  ToolRuntime,
  type ToolRuntimeOptions,
} from './runtime';
export { type CallTask, callAsTask, readTask, STALLED_POLL_MS, type TaskAnswer } from './task';
