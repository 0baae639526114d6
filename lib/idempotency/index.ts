// The core's public surface. The DynamoDB persistence layer is reached through ToolRuntime; it is
// exported for tests and for users who wire Powertools themselves.
export { clientKeySchema, IDEMPOTENCY_KEY_FIELD, parseCall } from './arguments';
export { type ErasureReport, eraseTenantRecords } from './erase';
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
export { ClaimLostError, ScopedDynamoDBPersistenceLayer } from './persistence/scoped-dynamodb';
export { decodeReceipt, encodeReceipt, MAX_RECEIPT_BYTES } from './receipt';
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
