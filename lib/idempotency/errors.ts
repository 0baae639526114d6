/**
 * The closed set of error codes a tool call can end with. The mapping to HTTP lives in one place
 * (`lib/http/status.ts`); nothing else decides a status.
 */
export type ErrorCode = 'invalid_args' | 'not_found' | 'conflict' | 'unavailable' | 'internal';

/**
 * Base of every error retrysafe returns to a caller. `expose` says whether `message` may reach the
 * caller: only `internal` hides it (the caller sees a generic message; the cause goes to the log).
 */
export abstract class ToolError extends Error {
  abstract readonly code: ErrorCode;
  readonly expose: boolean = true;
}

/** The arguments are wrong: a field is missing, malformed, or disagrees with the world (wrong amount). */
export class InvalidArgsError extends ToolError {
  readonly code = 'invalid_args';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'InvalidArgsError';
  }
}

/** The object the arguments name does not exist for this tenant. */
export class NotFoundError extends ToolError {
  readonly code = 'not_found';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'NotFoundError';
  }
}

/** The idempotency key was used before with other arguments: never executed, never the new amount. */
export class ConflictError extends ToolError {
  readonly code = 'conflict';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ConflictError';
  }
}

/** The store could not be reached. Nothing ran without a successful claim; the call may be retried. */
export class UnavailableError extends ToolError {
  readonly code = 'unavailable';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UnavailableError';
  }
}

/** A bug or a broken contract (for example a receipt that is not plain JSON). Never shown verbatim. */
export class InternalError extends ToolError {
  readonly code = 'internal';
  override readonly expose = false;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'InternalError';
  }
}

/** What a caller is told for an `internal` error. */
export const INTERNAL_MESSAGE = 'internal error';

/** Network failures, throttling and server-side faults of an AWS SDK call: worth a retry, not a bug. */
export function isTransientAwsError(error: unknown): boolean {
  // Not `instanceof Error`: Node's network errors may come from another realm (a VM context, Jest).
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: string; $fault?: string; code?: string; message?: string };
  if (e.$fault === 'server') return true;
  if (typeof e.name === 'string' && TRANSIENT_ERROR_NAMES.has(e.name)) return true;
  if (typeof e.code === 'string' && TRANSIENT_NETWORK_CODES.has(e.code)) return true;
  // The SDK turns an error it cannot recognise as an Error (one from another realm) into a bare
  // "AWS SDK error wrapper for <error>": only the message still says what happened.
  const wrapped = typeof e.message === 'string' ? /^AWS SDK error wrapper for .*\b(E[A-Z_]+)\b/.exec(e.message) : null;
  return wrapped !== null && TRANSIENT_NETWORK_CODES.has(wrapped[1]!);
}

const TRANSIENT_ERROR_NAMES = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'TimeoutError',
]);
const TRANSIENT_NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
