// The wire contract's statuses, codes and limits: what every transport (REST, MCP, the OpenAPI document, the
// client) answers and expects, as plain data. No handler code: the HTTP edge (lib/http) and the next steps
// (next-step.ts) read it, never the other way round.
import type { ErrorCode } from '../idempotency/errors';

/** Codes that only the HTTP edge produces, before a call reaches the runtime. */
export type EdgeErrorCode = 'unauthorized' | 'forbidden' | 'method_not_allowed' | 'payload_too_large' | 'timeout';
export type HttpErrorCode = ErrorCode | EdgeErrorCode;

/**
 * The one place where an answer becomes an HTTP status. `conflict` is 422, as the IETF
 * Idempotency-Key draft asks, so clients that know the draft do not retry it.
 */
export const HTTP_STATUS: Readonly<Record<HttpErrorCode, number>> = {
  invalid_args: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  conflict: 422,
  internal: 500,
  unavailable: 503,
  timeout: 504,
};

/** Largest request body accepted, in bytes; larger is `413 payload_too_large`. */
export const MAX_BODY_BYTES = 64 * 1024;
