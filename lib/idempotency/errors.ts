import { isServerError, isThrottlingError, isTransientError } from '@smithy/service-error-classification';

/**
 * The closed set of error codes a tool call can end with. The mapping to HTTP lives in one place
 * (`lib/http/status.ts`); nothing else decides a status.
 */
export type ErrorCode = 'invalid_args' | 'not_found' | 'conflict' | 'unavailable' | 'internal';

/**
 * The codes of a tool's business errors: it refused before any effect, so a first run's frees its claim (and
 * the dedupe window's intent it created: rule 1).
 */
export const RELEASING_CODES: ReadonlySet<ErrorCode> = new Set(['invalid_args', 'not_found', 'conflict']);

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

/**
 * A call's outcome that is a failure, read back from its record (the poll): the call ended with it,
 * and its key answers the same until the record expires. Not a refusal of this request.
 */
export class StoredFailureError extends ToolError {
  readonly code: ErrorCode;
  override readonly expose: boolean;
  constructor(failure: { readonly code: ErrorCode; readonly message: string }) {
    super(failure.message);
    this.name = 'StoredFailureError';
    this.code = failure.code;
    this.expose = failure.code !== 'internal';
  }
}

/**
 * Not an error code but an answer: the effect is still being made elsewhere (a payment provider says
 * the same idempotency key is in use by a request still running). A tool throws it; the call's record
 * is kept, parked until `retryAfterMs` from now (pollable), and the caller is answered `pending`, to
 * retry with the same key then.
 */
export class InFlightError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'InFlightError';
  }
}

/** What a caller is told for an `internal` error. */
export const INTERNAL_MESSAGE = 'internal error';

/**
 * Worth a retry, not a bug: throttling, timeouts, network failures and 5xx faults of an AWS SDK call,
 * classified by the SDK's own retry classification (`@smithy/service-error-classification`, what its
 * retry strategy uses).
 * Everything else — a missing table, `AccessDeniedException`, a `ValidationException` — is a deployment
 * mistake or a bug: `internal`, never "retry later".
 */
export function isTransientAwsError(error: unknown): boolean {
  // Not `instanceof Error`: Node's network errors may come from another realm (a VM context, Jest).
  if (typeof error !== 'object' || error === null) return false;
  const sdkError = error as SdkError;
  if (isThrottlingError(sdkError) || isTransientError(sdkError) || isServerError(sdkError)) return true;
  // A transaction cancelled by a write in flight on one of its items, or by throttling: it changed nothing.
  if (sdkError.name === 'TransactionConflictException') return true;
  const reasons = (error as { CancellationReasons?: ReadonlyArray<{ Code?: string }> }).CancellationReasons;
  if (sdkError.name === 'TransactionCanceledException' && reasons?.some(({ Code }) => Code !== 'None')) {
    return reasons.every(({ Code }) => Code === undefined || TRANSIENT_CANCELLATIONS.has(Code));
  }
  // The SDK turns an error it cannot recognise as an Error (one from another realm) into a bare
  // "AWS SDK error wrapper for <error>": only the message still says what happened.
  const message = (error as { message?: unknown }).message;
  const wrapped = typeof message === 'string' ? /^AWS SDK error wrapper for .*\b(E[A-Z_]+)\b/.exec(message) : null;
  return wrapped !== null && isTransientError({ name: 'Error', message: '', code: wrapped[1] } as SdkError);
}

type SdkError = Parameters<typeof isTransientError>[0];

/** A transaction item's cancellation reasons that say nothing about its condition: try again. */
const TRANSIENT_CANCELLATIONS = new Set([
  'None',
  'TransactionConflict',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
  'RequestLimitExceeded',
]);
