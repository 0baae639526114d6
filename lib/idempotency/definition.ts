// What a tool author needs — defining a tool, its errors and ids — without the runtime (the protocol's
// writes, the AWS SDK): a listing or a schema export bundles only this. Re-exported by index.ts.
export { clientKeySchema, fieldProblem, IDEMPOTENCY_KEY_FIELD } from './arguments';
export {
  ConflictError,
  type ErrorCode,
  INTERNAL_MESSAGE,
  InFlightError,
  InternalError,
  InvalidArgsError,
  isTransientAwsError,
  NotFoundError,
  ToolError,
  UnavailableError,
} from './errors';
export { derivedId, downstreamKey, fingerprint } from './fingerprint';
export { MAX_RECEIPT_BYTES } from './receipt';
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
