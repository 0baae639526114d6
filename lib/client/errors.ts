import type { AnswerErrorCode } from './types';

/**
 * Base of every error the client throws for a call it could not settle. `tool` and `key` name the
 * intent, so a caller can always come back to it (`operation(tool, key)`, or the same call again).
 */
export abstract class RetrysafeClientError extends Error {
  constructor(
    message: string,
    /** The tool called. */
    readonly tool: string,
    /** The idempotency key of the intent: reuse it to retry or poll, never mint another. Empty for the tool listing. */
    readonly key: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The server answered with a refusal that a retry cannot change (400, 401, 403, 404, 413, 422, or a
 * retrysafe `internal` error): the client sent it once and did not retry. `code` and `detail` are the
 * server's `error.code` and `error.message`.
 */
export class ToolCallError extends RetrysafeClientError {
  constructor(
    tool: string,
    key: string,
    /** The error code: the server's `error.code`, or one derived from the HTTP status when the body has none. */
    readonly code: AnswerErrorCode,
    /** The server's message, naming the field to fix. */
    readonly detail: string,
    /** The HTTP status of the answer. */
    readonly status: number,
    options?: ErrorOptions,
  ) {
    super(`${tool}: ${code}: ${detail}`, tool, key, options);
    this.name = 'ToolCallError';
  }
}

/**
 * No retrysafe attempt can finish the call before its record expires (a 202 `pending` with `runs_anew: true`:
 * a Powertools handler on the same table started it, and may still run or have stopped; or too little time is
 * left before its TTL for an attempt to run it): the client does not resend it, because once its record
 * expires a resend runs it anew, which can act twice. Check with a read whether it acted, then call again with
 * `key` only if it did not.
 */
export class MayRunAnewError extends RetrysafeClientError {
  constructor(
    tool: string,
    key: string,
    /** When its record can next change (ms): until then a resend is answered the same. */
    readonly retryAfterMs: number | undefined,
  ) {
    super(
      `${tool}: no retrysafe attempt can finish it before its record expires (a Powertools handler started it, or too little time is left); a resend${retryAfterMs === undefined ? '' : ` after ${retryAfterMs} ms`} runs it anew and can act twice: check whether it acted first`,
      tool,
      key,
    );
    this.name = 'MayRunAnewError';
  }
}

/** Why the last attempt before giving up did not settle the call. */
export type LastOutcome =
  /** The first call with this key was still running (202). */
  | 'pending'
  /** The server or a gateway answered 429, 502, 503, 504, or a 5xx that is not a retrysafe answer. */
  | 'unavailable'
  /** The request or its answer was lost: connection refused, reset or closed, body cut short. */
  | 'network'
  /** The deadline ended while a request was in flight. */
  | 'timeout';

/**
 * No final answer within the deadline: only `pending` or transient failures. The call may still
 * complete (or have completed) on the server; poll `operation(tool, key)` or call again with `key`.
 */
export class GaveUpError extends RetrysafeClientError {
  constructor(
    tool: string,
    key: string,
    /** Requests sent for this call. */
    readonly attempts: number,
    /** Time spent, in milliseconds. */
    readonly elapsedMs: number,
    /** What the last attempt ended with. */
    readonly last: LastOutcome,
    options?: ErrorOptions & {
      /** The server's last hint of when to ask again (`retry_after_ms`, `Retry-After`), if it gave one. */
      readonly retryAfterMs?: number;
    },
  ) {
    const comeBack =
      key === ''
        ? ''
        : `; it may still complete: poll operation(${JSON.stringify(tool)}, ${JSON.stringify(key)}) or call again with the same key`;
    super(
      `${tool}: gave up after ${attempts} attempt(s) in ${elapsedMs} ms (last: ${last})${comeBack}`,
      tool,
      key,
      options,
    );
    this.name = 'GaveUpError';
    this.retryAfterMs = options?.retryAfterMs;
  }

  /** The server's last hint of when asking again is worth it (ms), if it gave one: the wait to pass on. */
  readonly retryAfterMs: number | undefined;
}

/**
 * The server answered something that is not a retrysafe answer where one was due (say, HTML from a
 * wrong `baseUrl`). Not retried: more of the same would not help.
 */
export class UnexpectedAnswerError extends RetrysafeClientError {
  constructor(
    tool: string,
    key: string,
    /** The HTTP status of the answer. */
    readonly status: number,
    /** The start of the body, for the log. */
    readonly excerpt: string,
    options?: ErrorOptions,
  ) {
    super(`${tool}: unexpected answer (HTTP ${status}): ${excerpt}`, tool, key, options);
    this.name = 'UnexpectedAnswerError';
  }
}
