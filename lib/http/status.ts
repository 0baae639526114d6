import { nextAfterError, nextAfterWrite, UNAVAILABLE_RETRY_AFTER_MS } from '../api/next-step';
import type { ErrorCode, ToolResult } from '../idempotency';

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

export interface HttpResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

/** A JSON response. */
export function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { statusCode, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

/**
 * A tool result as an HTTP response: 200 (first or replay), 202 (pending), or the error's status. The body
 * is the result with its next step (`next`).
 */
export function toHttpResponse(tool: string, result: ToolResult): HttpResponse {
  const body = { ...result, next: nextAfterWrite(tool, result) };
  if (result.ok) return json(200, body, result.idempotent ? { 'idempotent-replayed': 'true' } : {});
  if ('status' in result) {
    return json(202, body, { 'retry-after': String(Math.max(1, Math.ceil(result.retry_after_ms / 1000))) });
  }
  return json(HTTP_STATUS[result.error.code], body, retryHeaders(result.error.code));
}

/** How long to wait before retrying an outage: a 503 always says, so clients back off. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = UNAVAILABLE_RETRY_AFTER_MS / 1000;

function retryHeaders(code: HttpErrorCode): Record<string, string> {
  return code === 'unavailable' ? { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) } : {};
}

/** An error answered without a tool result, in the same body shape as every other error, with its next step. */
export function errorResponse(code: HttpErrorCode, message: string): HttpResponse {
  return json(
    HTTP_STATUS[code],
    { ok: false, error: { code, message }, next: nextAfterError(code) },
    retryHeaders(code),
  );
}
