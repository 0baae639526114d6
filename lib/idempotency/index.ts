// The core's public surface: what a project that lifts this folder builds on, and the only module the
// rest of retrysafe imports it through. Internals (argument parsing, receipt encoding, the Powertools
// persistence subclass) stay inside; tests reach them by path.
export { clientKeySchema, IDEMPOTENCY_KEY_FIELD } from './arguments';
export {
  ConflictError,
  type ErrorCode,
  INTERNAL_MESSAGE,
  InternalError,
  InvalidArgsError,
  isTransientAwsError,
  NotFoundError,
  ToolError,
  UnavailableError,
} from './errors';
export { derivedId, downstreamKey, fingerprint } from './fingerprint';
export { MAX_RECEIPT_BYTES } from './receipt';
export { DEFAULT_IDEMPOTENCY_TABLE_NAME, DEFAULT_RECORD_ATTRIBUTES, type RecordAttributes } from './record';
export {
  MAX_RETRY_AFTER_MS,
  MIN_RETRY_AFTER_MS,
  type Operation,
  ToolRuntime,
  type ToolRuntimeOptions,
} from './runtime';
export {
  DEFAULT_TTL_SECONDS,
  defineTool,
  type Execution,
  MAX_LOCK_SECONDS,
  type ToolAnnotations,
  type ToolContext,
  type ToolDefinition,
} from './tool';
export type { Identity, InvocationDeadline, JsonObject, JsonValue, ToolResult } from './types';
