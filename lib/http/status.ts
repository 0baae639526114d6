import type { ErrorCode } from '../idempotency/errors';
import type { ToolResult } from '../idempotency/types';

/** Codes that only the HTTP edge produces (before a call reaches the runtime). */
export type EdgeErrorCode = 'unauthorized';

/**
 * The one place where an answer becomes an HTTP status. `conflict` is 422, as the IETF
 * Idempotency-Key draft asks, so clients that know the draft do not retry it.
 */
export const HTTP_STATUS: Readonly<Record<ErrorCode | EdgeErrorCode, number>> = {
  invalid_args: 400,
  unauthorized: 401,
  not_found: 404,
  conflict: 422,
  internal: 500,
  unavailable: 503,
};

export interface HttpResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

/** A tool result as an HTTP response: 200 (first or replay), 202 (pending), or the error's status. */
export function toHttpResponse(result: ToolResult): HttpResponse {
  if (result.ok) {
    return {
      statusCode: 200,
      headers: { ...JSON_HEADERS, ...(result.idempotent ? { 'idempotent-replayed': 'true' } : {}) },
      body: JSON.stringify(result),
    };
  }
  if ('status' in result) {
    return {
      statusCode: 202,
      headers: { ...JSON_HEADERS, 'retry-after': String(Math.ceil(result.retry_after_ms / 1000)) },
      body: JSON.stringify(result),
    };
  }
  return { statusCode: HTTP_STATUS[result.error.code], headers: { ...JSON_HEADERS }, body: JSON.stringify(result) };
}

/** An error the edge answers itself, in the same body shape as every other error. */
export function edgeError(code: ErrorCode | EdgeErrorCode, message: string): HttpResponse {
  return {
    statusCode: HTTP_STATUS[code],
    headers: { ...JSON_HEADERS },
    body: JSON.stringify({ ok: false, error: { code, message } }),
  };
}
