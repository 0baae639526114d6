// What the caller should do after an answer, as data. Clients such as Claude Code, and OpenAI Agents JS with
// `useStructuredContent`, show the model an MCP result's `structuredContent`, not its text: whatever an answer
// asks of the caller must be in the object itself. Every answer — the HTTP body, MCP `structuredContent`, the
// agent client's answer — carries `next`, built here and nowhere else. Types only from the server: the agent
// client imports this file.
import type { HttpErrorCode } from '../http/status';
import type { ToolResult } from '../idempotency/definition';

/**
 * - `none`: nothing more to do; for a write, it is done and must not be repeated.
 * - `call_again`: call the same tool again with the same arguments (for a write, the same `idempotency_key`),
 *   after `after_ms`. It cannot act twice.
 * - `fix_arguments`: nothing was done; change what the error names, then call again.
 * - `use_original_arguments`: nothing was done; the key belongs to other arguments (a `conflict`).
 * - `stop`: nothing was done, and calling again as is fails the same way (credentials, permissions).
 */
export const NEXT_ACTIONS = ['none', 'call_again', 'fix_arguments', 'use_original_arguments', 'stop'] as const;
export type NextAction = (typeof NEXT_ACTIONS)[number];

/** For a write still in flight: the read that answers the same, without calling the write again. */
export interface PollStep {
  readonly tool: 'get_operation';
  readonly arguments: { readonly tool: string; readonly idempotency_key: string };
  /** The same read on the HTTP API. */
  readonly path: string;
}

/** What to do next, and when, with one sentence a model can follow. */
export interface NextStep {
  readonly action: NextAction;
  /** `call_again` only: wait this long first. */
  readonly after_ms?: number;
  /** A write's `pending` only. */
  readonly poll?: PollStep;
  readonly message: string;
}

/** How long to wait before retrying an outage: every 503 says so (`Retry-After`), so clients back off. */
export const UNAVAILABLE_RETRY_AFTER_MS = 1000;
/** How long to wait after an internal error before the same call again. */
export const INTERNAL_RETRY_AFTER_MS = 2000;

const SAME_KEY = 'with the same idempotency_key and arguments: the retry cannot act twice';

/** The next step after an error, by its code: one table for every surface. */
const AFTER_ERROR: Readonly<Record<HttpErrorCode, NextStep>> = {
  invalid_args: { action: 'fix_arguments', message: 'Nothing was done. Fix the field the error names and call again.' },
  payload_too_large: { action: 'fix_arguments', message: 'Nothing was done. Send smaller arguments.' },
  method_not_allowed: { action: 'fix_arguments', message: 'Nothing was done. Use the method this path answers.' },
  not_found: {
    action: 'fix_arguments',
    message:
      'Nothing was done: what the error names does not exist for this caller. Check the id before calling again.',
  },
  conflict: {
    action: 'use_original_arguments',
    message:
      'Nothing was done: this idempotency_key was already used with other arguments. To get the first result, call again with the original arguments and this key; for a new intent, use a new key.',
  },
  unauthorized: {
    action: 'stop',
    message: 'Nothing was done: the request carried no valid credentials. Calling again as is fails the same way.',
  },
  forbidden: {
    action: 'stop',
    message: 'Nothing was done: these credentials may not do this. Calling again as is fails the same way.',
  },
  unavailable: {
    action: 'call_again',
    after_ms: UNAVAILABLE_RETRY_AFTER_MS,
    message: `A store or service is unavailable. After ${UNAVAILABLE_RETRY_AFTER_MS} ms, call again ${SAME_KEY}.`,
  },
  internal: {
    action: 'call_again',
    after_ms: INTERNAL_RETRY_AFTER_MS,
    message: `Something failed on the server. After ${INTERNAL_RETRY_AFTER_MS} ms, call again ${SAME_KEY}.`,
  },
  timeout: {
    action: 'call_again',
    after_ms: UNAVAILABLE_RETRY_AFTER_MS,
    message: `No answer in time; it may still complete. After ${UNAVAILABLE_RETRY_AFTER_MS} ms, call again ${SAME_KEY}.`,
  },
};

/** The next step after an error answer. */
export function nextAfterError(code: HttpErrorCode): NextStep {
  return AFTER_ERROR[code];
}

/** The poll of a write's key, on MCP (`get_operation`) and on the HTTP API. */
export function pollOf(tool: string, key: string): PollStep {
  return {
    tool: 'get_operation',
    arguments: { tool, idempotency_key: key },
    path: `/tools/${encodeURIComponent(tool)}/operations/${encodeURIComponent(key)}`,
  };
}

/** The next step after a write's answer. */
export function nextAfterWrite(tool: string, result: ToolResult): NextStep {
  if (result.ok) {
    return result.idempotent
      ? {
          action: 'none',
          message: `Already done: ${tool} ran earlier for this intent (this idempotency_key, or the same object or arguments) and nothing was done now. The receipt is the first one. Do not repeat it.`,
        }
      : {
          action: 'none',
          message: `Done, once: the receipt says what ${tool} did. Do not call it again for this intent.`,
        };
  }
  if ('status' in result) {
    return {
      action: 'call_again',
      after_ms: result.retry_after_ms,
      poll: pollOf(tool, result.key),
      message: `Still running under idempotency_key "${result.key}"; it will not run twice. After ${result.retry_after_ms} ms, call ${tool} again with the same idempotency_key and arguments, or call get_operation with tool "${tool}" and this idempotency_key.`,
    };
  }
  return nextAfterError(result.error.code);
}

/** How long to wait before polling an operation still in flight again. */
export const OPERATION_POLL_AFTER_MS = 1000;

/** The next step after `get_operation`'s answer. */
export function nextAfterOperation(status: 'completed' | 'pending' | 'abandoned'): NextStep {
  switch (status) {
    case 'completed':
      return { action: 'none', message: 'This call completed; its receipt is here. Do not repeat it.' };
    case 'pending':
      return {
        action: 'call_again',
        after_ms: OPERATION_POLL_AFTER_MS,
        message: `Still running; it will not run twice. Ask again after ${OPERATION_POLL_AFTER_MS} ms.`,
      };
    case 'abandoned':
      return {
        action: 'call_again',
        after_ms: OPERATION_POLL_AFTER_MS,
        message: `The call stopped before it finished; the server finishes it. Ask again after ${OPERATION_POLL_AFTER_MS} ms, or call the write again now with the same idempotency_key and arguments: neither can act twice.`,
      };
  }
}

/** The next step after a read that found what it names. */
export const AFTER_READ: NextStep = { action: 'none', message: 'This is the current state. Nothing to do.' };

/** A read's answer, whichever read: found, an operation's status, or an error. */
export type ReadResult =
  | { readonly ok: true; readonly status?: 'completed' | 'pending' | 'abandoned' }
  | { readonly ok: false; readonly error: { readonly code: HttpErrorCode } };

/** The next step after a read's answer (`get_operation`, `get_invoice`, `get_ticket`). */
export function nextAfterRead(answer: ReadResult): NextStep {
  if (!answer.ok) return nextAfterError(answer.error.code);
  return answer.status === undefined ? AFTER_READ : nextAfterOperation(answer.status);
}
