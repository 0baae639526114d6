export { clientKeySchema, IDEMPOTENCY_KEY_FIELD, parseCall } from './arguments';
export { eraseTenantRecords } from './erase';
export {
  ConflictError,
  type ErrorCode,
  INTERNAL_MESSAGE,
  InternalError,
  InvalidArgsError,
  NotFoundError,
  ToolError,
  UnavailableError,
} from './errors';
export { downstreamKey, fingerprint } from './fingerprint';
export { encodeReceipt, MAX_RECEIPT_BYTES } from './receipt';
export { ToolRuntime, type ToolRuntimeOptions } from './runtime';
export {
  DEFAULT_TTL_SECONDS,
  defineTool,
  type Execution,
  MAX_LOCK_SECONDS,
  type ToolContext,
  type ToolDefinition,
} from './tool';
export type { Identity, InvocationDeadline, JsonObject, JsonValue, ToolResult } from './types';
