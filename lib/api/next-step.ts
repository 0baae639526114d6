// What the caller should do after an answer, as data. Clients such as Claude Code, and OpenAI Agents JS with
// `useStructuredContent`, show the model an MCP result's `structuredContent`, not its text: whatever an answer
// asks of the caller must be in the object itself. Every answer — the HTTP body, MCP `structuredContent`, the
// agent client's answer — carries `next`, built here and nowhere else. Types only from the server: the agent
// client imports this file.

import type { ToolResult } from '../idempotency/types';
import type { HttpErrorCode } from './status';

/**
 * - `none`: nothing more to do; for a write, it is done and must not be repeated.
 * - `call_again`: call the same tool again with the same arguments (for a write, the same `idempotency_key`),
 *   after `after_ms`. It cannot act twice — except where the message says to check the effect first: a
 *   call a Powertools handler left unfinished, which a call after `after_ms` (its record's TTL) runs anew.
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
  /** The same read on the HTTP API (none for a key `.` or `..`, which no URL can carry as a segment). */
  readonly path?: string;
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

/** The next step after a refusal, by its code (what the code means, whichever surface sent it). */
const AFTER_REFUSAL: Readonly<Record<Exclude<HttpErrorCode, RetriedCode>, NextStep>> = {
  invalid_args: { action: 'fix_arguments', message: 'Nothing was done. Fix the field the error names and call again.' },
  payload_too_large: { action: 'fix_arguments', message: 'Nothing was done. Send smaller arguments.' },
  method_not_allowed: { action: 'fix_arguments', message: 'Nothing was done. Use the method this path answers.' },
  // Not "nothing was done": a key whose record was erased or expired names a call that may have acted.
  not_found: {
    action: 'fix_arguments',
    message:
      'Not found for this caller: what the error names does not exist, or no longer does. Check it with a read before acting again.',
  },
  conflict: {
    action: 'use_original_arguments',
    message:
      'Nothing was done now: this conflicts with what was done before (this idempotency_key with other arguments, or the object already changed, as the error says). The original arguments with this key return the first result; a new intent needs a new key.',
  },
  unauthorized: {
    action: 'stop',
    message: 'Nothing was done: the request carried no valid credentials. Calling again as is fails the same way.',
  },
  forbidden: {
    action: 'stop',
    message: 'Nothing was done: these credentials may not do this. Calling again as is fails the same way.',
  },
};

/** The codes a caller retries as they are, after a wait. */
type RetriedCode = 'unavailable' | 'internal' | 'timeout';

const RETRIED: Readonly<Record<RetriedCode, { afterMs: number; said: string }>> = {
  unavailable: { afterMs: UNAVAILABLE_RETRY_AFTER_MS, said: 'A store or service is unavailable.' },
  internal: { afterMs: INTERNAL_RETRY_AFTER_MS, said: 'Something failed on the server.' },
  timeout: { afterMs: UNAVAILABLE_RETRY_AFTER_MS, said: 'No answer in time; it may still complete.' },
};

function isRetried(code: HttpErrorCode): code is RetriedCode {
  return Object.hasOwn(RETRIED, code);
}

/**
 * The next step after an error that refused this request, by its code. A retried code waits
 * `retryAfterMs` when the answer says so (its `Retry-After`): the header and `next` say one value.
 */
export function nextAfterError(code: HttpErrorCode, retryAfterMs?: number): NextStep {
  if (!isRetried(code)) return AFTER_REFUSAL[code];
  const { afterMs, said } = RETRIED[code];
  const wait = retryAfterMs ?? afterMs;
  return { action: 'call_again', after_ms: wait, message: `${said} After ${wait} ms, call again ${SAME_KEY}.` };
}

/**
 * The next step after an error that is a call's stored outcome (`idempotent` set): the call ended with
 * it. Calling again with its key answers the same, so the model is told to stop, not to loop.
 */
export const AFTER_STORED_FAILURE: NextStep = {
  action: 'stop',
  message:
    'This call ended with this error, stored as its outcome: the same idempotency_key answers the same from now on. Do not call again with it; check the state with a read before starting a new intent with a new key.',
};

/** An error answer, refusal or stored outcome. */
export interface ErrorResult {
  readonly ok: false;
  readonly idempotent?: boolean;
  readonly error: { readonly code: HttpErrorCode };
}

/** The next step after any error answer. */
export function nextAfterFailure(answer: ErrorResult, retryAfterMs?: number): NextStep {
  return answer.idempotent === undefined ? nextAfterError(answer.error.code, retryAfterMs) : AFTER_STORED_FAILURE;
}

/**
 * The poll of a write's key, on MCP (`get_operation`) and on the HTTP API. A key that is a dot segment
 * (`.`, `..`) has no path: URL parsers fold it away, encoded or not (WHATWG URL), so only MCP polls it.
 */
export function pollOf(tool: string, key: string): PollStep {
  const poll = { tool: 'get_operation', arguments: { tool, idempotency_key: key } } as const;
  if (key === '.' || key === '..') return poll;
  return { ...poll, path: `/tools/${encodeURIComponent(tool)}/operations/${encodeURIComponent(key)}` };
}

/**
 * The next step after a write's answer. `listedAs` is the name the write is called by where no
 * `get_operation` is served (an AgentCore Gateway lists `<target>___<tool>`): a pending answer then names no
 * poll, and asks for the same call again under that name — the same key reads the call, it cannot run twice.
 */
export function nextAfterWrite(tool: string, result: ToolResult, listedAs?: string): NextStep {
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
    // No claim holds it (a call Powertools' handler left): as the poll says, no promise of one effect.
    if (result.runs_anew) return runsAnewStep(result.retry_after_ms);
    if (result.queued) {
      return {
        action: 'call_again',
        after_ms: result.retry_after_ms,
        message: `Queued under idempotency_key "${result.key}" (nothing ran yet): the server starts it within ${secondsOf(result.retry_after_ms)}. Then call ${listedAs ?? tool} again with the same idempotency_key and arguments to read its result — or now, to run it at once: neither can act twice.`,
      };
    }
    const again = `After ${result.retry_after_ms} ms, call ${listedAs ?? tool} again with the same idempotency_key and arguments`;
    return {
      action: 'call_again',
      after_ms: result.retry_after_ms,
      ...(listedAs === undefined ? { poll: pollOf(tool, result.key) } : {}),
      message: `Still running under idempotency_key "${result.key}"; it will not run twice. ${again}${listedAs === undefined ? `, or call get_operation with tool "${tool}" and this idempotency_key` : ''}.`,
    };
  }
  return nextAfterFailure(result);
}

/** What `get_operation` says of a call it finds (docs/state-machine.md's states, as the caller reads them). */
export type OperationStatus = 'completed' | 'pending' | 'abandoned' | 'stalled';

/**
 * The next step after `get_operation`'s answer. `afterMs` is the answer's `retry_after_ms`: when the call
 * can next change (`askAgainAfterMs`) — soon for a running call, the completer's re-run for an abandoned one.
 */
export function nextAfterOperation(
  status: OperationStatus,
  afterMs?: number,
  /**
   * `runsAnew`: Powertools' handler holds it; `queued`: abandoned, none of its attempts ran yet;
   * `givesUp`: abandoned, and the server gives up on it then rather than re-run it — its attempts are used
   * up, or its record expires before the server could re-run it.
   */
  {
    runsAnew = false,
    queued = false,
    givesUp,
  }: {
    readonly runsAnew?: boolean;
    readonly queued?: boolean;
    readonly givesUp?: 'attempts' | 'expiring' | undefined;
  } = {},
): NextStep {
  switch (status) {
    case 'completed':
      return { action: 'none', message: 'This call completed; its receipt is here. Do not repeat it.' };
    case 'pending': {
      const wait = afterMs ?? MIN_POLL_AFTER_MS;
      if (runsAnew) return runsAnewStep(wait);
      return {
        action: 'call_again',
        after_ms: wait,
        message: `Still running; it will not run twice. Ask again after ${wait} ms.`,
      };
    }
    case 'abandoned': {
      const wait = afterMs ?? MIN_POLL_AFTER_MS;
      return {
        action: 'call_again',
        after_ms: wait,
        message: givesUp
          ? givesUpMessage(givesUp, queued, secondsOf(wait))
          : `${queued ? `The call is queued (nothing ran yet): the server starts it within ${secondsOf(wait)}` : `The call stopped before it finished; the server re-runs it in ${secondsOf(wait)}`}: ask again then. Or call the write again now with the same idempotency_key and arguments to run it at once: neither can act twice.`,
      };
    }
    case 'stalled':
      if (afterMs !== undefined) return runsAnewStep(afterMs);
      return {
        action: 'call_again',
        message:
          'The server stopped retrying this call. Call the write again with the same idempotency_key and arguments to run it again (it cannot act twice), or tell the user it did not finish. Polling will not change this answer.',
      };
  }
}

/** What a poll says of an abandoned call the server gives up on at its wait (`gives_up`) rather than run. */
function givesUpMessage(givesUp: 'attempts' | 'expiring', queued: boolean, wait: string): string {
  const why = queued
    ? 'The call is queued and nothing ran yet, but its record expires before the server could start it'
    : `The call stopped before it finished and ${givesUp === 'attempts' ? 'its attempts are used up' : 'its record expires before the server could re-run it'}`;
  const when = givesUp === 'attempts' ? 'now or then' : 'while an attempt still fits before its record expires';
  return `${why}: the server ${queued ? 'gives it up' : 'stops retrying it'} in ${wait} (it is then stalled). Call the write again with the same idempotency_key and arguments to run it, ${when} (it cannot act twice), or tell the user it did not finish.`;
}

/**
 * A call Powertools' handler holds (`runs_anew`): running under its lock, or left behind (stalled, until its
 * TTL: `stalledChangesAtMs`) — past its TTL a resend runs it anew, and no promise of one effect holds. A
 * poll's and a resend's step alike.
 */
export function runsAnewStep(afterMs: number): NextStep {
  return {
    action: 'call_again',
    after_ms: afterMs,
    message: `No retrysafe attempt can finish this call before its record expires (a Powertools handler holds it, or too little time is left), and it may have acted. Ask again in ${secondsOf(afterMs)}; once its record expires, calling again runs it anew and can act twice: first check with a read whether it acted.`,
  };
}

/** The wait when an answer carries none (an older server's poll): a second. */
const MIN_POLL_AFTER_MS = 1000;

/** A wait in words a model reads: "45 s", "4 min 30 s". */
function secondsOf(ms: number): string {
  const seconds = Math.ceil(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const rest = seconds % 60;
  return `${Math.floor(seconds / 60)} min${rest === 0 ? '' : ` ${rest} s`}`;
}

/** The next step after a read that found what it names. */
export const AFTER_READ: NextStep = { action: 'none', message: 'This is the current state. Nothing to do.' };

/** A read's answer, whichever read: found, an operation's status (and when to ask again), or an error. */
export type ReadResult =
  | {
      readonly ok: true;
      readonly status?: OperationStatus;
      readonly retry_after_ms?: number;
      readonly runs_anew?: boolean;
      readonly queued?: boolean;
      readonly gives_up?: 'attempts' | 'expiring';
    }
  | ErrorResult;

/** The next step after a read's answer (`get_operation`, `get_invoice`, `get_ticket`). */
export function nextAfterRead(answer: ReadResult): NextStep {
  if (!answer.ok) return nextAfterFailure(answer);
  return answer.status === undefined
    ? AFTER_READ
    : nextAfterOperation(answer.status, answer.retry_after_ms, {
        runsAnew: answer.runs_anew === true,
        queued: answer.queued === true,
        givesUp: answer.gives_up,
      });
}
