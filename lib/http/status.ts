import { type NextStep, nextAfterError, nextAfterRead, nextAfterWrite, type ReadResult } from '../api/next-step';
import { HTTP_STATUS, type HttpErrorCode } from '../api/status';
import type { ToolResult } from '../idempotency/types';

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
 * Headers that follow from an answer's next step: `Retry-After` on a 202 and a 503, the same wait as
 * `next.after_ms` (whole seconds, at least 1); `Idempotent-Replayed` on a replayed outcome.
 */
function headersOf(statusCode: number, next: NextStep, replayed: boolean): Record<string, string> {
  const headers: Record<string, string> = replayed ? { 'idempotent-replayed': 'true' } : {};
  if ((statusCode === 202 || statusCode === 503) && next.after_ms !== undefined) {
    headers['retry-after'] = String(Math.max(1, Math.ceil(next.after_ms / 1000)));
  }
  return headers;
}

/** An answer with its next step, at `statusCode`: the one way every answer becomes an HTTP response. */
function answered(statusCode: number, body: { readonly ok: boolean }, next: NextStep): HttpResponse {
  const replayed = 'idempotent' in body && body.idempotent === true;
  return json(statusCode, { ...body, next }, headersOf(statusCode, next, replayed));
}

/**
 * A tool result as an HTTP response: 200 (first or replay), 202 (pending), or the error's status. The body
 * is the result with its next step (`next`).
 */
export function toHttpResponse(tool: string, result: ToolResult, listedAs?: string): HttpResponse {
  const next = nextAfterWrite(tool, result, listedAs);
  if (result.ok) return answered(200, result, next);
  if ('status' in result) return answered(202, result, next);
  return answered(HTTP_STATUS[result.error.code], result, next);
}

/** A read's answer as an HTTP response: 200 with what it found, or its error's status. */
export function toReadResponse(answer: ReadResult & object): HttpResponse {
  return answered(answer.ok ? 200 : HTTP_STATUS[answer.error.code], answer, nextAfterRead(answer));
}

/**
 * An error answered without a tool result, in the same body shape as every other error, with its next step.
 * `retryAfterMs` replaces a retried code's usual wait, in `next` and in `Retry-After` alike.
 */
export function errorResponse(code: HttpErrorCode, message: string, retryAfterMs?: number): HttpResponse {
  const body = { ok: false, error: { code, message } };
  return answered(HTTP_STATUS[code], body, nextAfterError(code, retryAfterMs));
}
