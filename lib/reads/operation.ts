import type { OperationStatus } from '../api/next-step';
import type { Identity, JsonObject, StalledReason, ToolRuntime } from '../idempotency';
import { INTERNAL_MESSAGE, StoredFailureError, ToolError } from '../idempotency/errors';
import { clip, readFailure as failure, type ReadAnswer } from '../tools/read-module';

/** The longest client key a write accepts (`clientKeySchema`). */
const MAX_CLIENT_KEY_LENGTH = 255;

/** What the operations poll reads: the runtime's records, for the tools the API serves. */
export interface OperationSource {
  readonly runtime: ToolRuntime;
  readonly toolNames: readonly string[];
}

/** What an abandoned call's poll says: who finishes it and when, and that the caller may resend it now. */
export const ABANDONED_HINT =
  'the call stopped before it finished (its worker died, or its attempt failed): the server re-runs it once the wait this answer gives is over, or resend the same arguments with the same key now to run it at once — neither can act twice';

/**
 * What an abandoned call the server's next look gives up on rather than re-run (`givesUpAtNextLook`) is, by
 * why — `queued`: one none of whose attempts ran (nothing happened), its record expiring first: only a
 * resend finishes it, while an attempt still fits before its record expires.
 */
export const GIVES_UP_HINTS: Readonly<Record<'attempts' | 'expiring' | 'queued', string>> = {
  attempts:
    'the call stopped before it finished and its attempts are used up: the server stops retrying it once the wait this answer gives is over (it is then stalled) — resend the same arguments with the same key to run it again, now or then; it cannot act twice',
  expiring:
    'the call stopped before it finished and its record expires before the server could re-run it: the server stops retrying it once the wait this answer gives is over (it is then stalled) — resend the same arguments with the same key to run it again while an attempt still fits before its record expires (it cannot act twice); after that it stays unfinished until its record expires',
  queued:
    'the call is queued and none of its attempts has run (nothing happened), but its record expires before the server could start it: the server gives it up once the wait this answer gives is over (it is then stalled) — resend the same arguments with the same key to run it while an attempt still fits before its record expires (it cannot act twice)',
};

/** Which of `GIVES_UP_HINTS` an abandoned call's next look is (`givesUp`; `queued`: none of its attempts ran). */
export function givesUpWording(givesUp: 'attempts' | 'expiring', queued: boolean): keyof typeof GIVES_UP_HINTS {
  return queued ? 'queued' : givesUp;
}

/** What an abandoned call every attempt of which was queued is (`allQueued`: a hand-off, a window's holder in the way). */
export const QUEUED_HINT =
  'the call is queued: none of its attempts has run yet (nothing happened); the server starts it once the wait this answer gives is over, or resend the same arguments with the same key now to run it at once — neither can act twice';

/** What a call Powertools' handler holds with its lock live (or none, to its TTL) is: no promise of one effect. */
export const POWERTOOLS_LIVE_HINT =
  'a Powertools handler on the same table holds this call (it may still be running, or have stopped): ask again after the wait this answer gives; once its record expires, a resend with the same key runs it anew, which can act twice: check the effect first';

/**
 * A stalled call no resend can run before its record expires (its last seconds: a resend's lock would end past
 * its TTL − 10 s) — and past its TTL retrysafe's record, and its promise, are gone (`runs_anew`).
 */
export const EXPIRING_NOW_HINT =
  'no attempt can run this call before its record expires (its effect may or may not have happened): ask again after the wait this answer gives; once its record expires, a resend with the same key runs it anew, which can act twice: check the effect first';

/** What a resend does for a stalled call, and what happens without one. */
const RESEND =
  'resend the same arguments with the same key to run it again — it cannot act twice — otherwise it stays unfinished until its record expires';

/**
 * What a stalled call's poll says, by why the server gave up on it: only a resend finishes it — or, for a
 * call Powertools' handler left, nothing here before its record's TTL, and a resend after it runs it anew.
 */
export const STALLED_HINTS: Readonly<Record<StalledReason, string>> = stalledHints(
  '(its effect may or may not have happened)',
);

/** The same, for a call none of whose attempts made an effect (`neverRan`): nothing happened. */
export const NEVER_RAN_STALLED_HINTS = stalledHints('(none of its attempts ran: nothing happened)');

function stalledHints(effect: string): Readonly<Record<StalledReason, string>> {
  return {
    attempts: `the server stopped retrying this call after its attempts failed ${effect}: ${RESEND}`,
    unknown_tool: `the server no longer serves this tool (a deployment removed or renamed it) and will not finish this call ${effect}: once it is served again, ${RESEND}`,
    unreadable_call: `the server cannot read what this call asked, or the tool no longer accepts it, and will not finish it ${effect}: ${RESEND}`,
    expiring: `the server will not re-run this call again: its record expires before another attempt could end ${effect}: resend the same arguments with the same key to run it again while an attempt still fits before its record expires — it cannot act twice — otherwise it stays unfinished until its record expires`,
    powertools: `a Powertools handler on the same table started this call and stopped before it finished (its effect may or may not have happened): nothing here re-runs it — a resend with the same key waits until its record expires (retry_after_ms), then runs it anew, which can act twice: check the effect first`,
  };
}

/** The stalled hint of a call the completer gave up on after its attempts (the most common reason). */
export const STALLED_HINT = STALLED_HINTS.attempts;

/**
 * The caller's own record of a client key: completed with its receipt, or pending. The record is keyed
 * by tool, tenant, user and key, so another's key or an expired one is `not_found`; so is an unknown
 * tool, without a read.
 */
export async function readOperation(
  { runtime, toolNames }: OperationSource,
  caller: Identity,
  tool: string,
  key: string,
): Promise<
  ReadAnswer<{
    status: OperationStatus;
    key: string;
    receipt?: JsonObject;
    retry_after_ms?: number;
    runs_anew?: true;
    queued?: true;
    gives_up?: 'attempts' | 'expiring';
    hint?: string;
  }>
> {
  if (!toolNames.includes(tool)) return failure('not_found', `tool: no tool ${clip(tool)}`);
  // A key no write could have used (over 255 characters) names no operation: no read is sent.
  if (key.length > MAX_CLIENT_KEY_LENGTH) return failure('not_found', `key: no operation ${clip(key)} for ${tool}`);
  let operation: Awaited<ReturnType<ToolRuntime['lookup']>>;
  try {
    operation = await runtime.lookup(tool, caller, key);
  } catch (error) {
    const message = error instanceof ToolError && error.expose ? error.message : INTERNAL_MESSAGE;
    // The call ended with this error: its outcome, as the call answered it.
    if (error instanceof StoredFailureError)
      return { ok: false, idempotent: true, error: { code: error.code, message } };
    // The runtime classified and logged it: an outage is `unavailable`, anything else `internal`.
    if (error instanceof ToolError) return failure(error.code, message);
    throw error;
  }
  if (!operation) return failure('not_found', `key: no operation ${key} for ${tool}`);
  if (operation.status === 'completed') return { ok: true, status: 'completed', key, receipt: operation.receipt };
  if (operation.status === 'pending') {
    const anew = operation.runsAnew ? { runs_anew: true as const, hint: POWERTOOLS_LIVE_HINT } : {};
    return { ok: true, status: 'pending', key, retry_after_ms: operation.retryAfterMs, ...anew };
  }
  if (operation.status === 'stalled') {
    const stalled = (operation.neverRan ? NEVER_RAN_STALLED_HINTS : STALLED_HINTS)[operation.reason] ?? STALLED_HINT;
    // Nothing moves it before then (a Powertools handler's call, or no resend fits: until its TTL), and past it a
    // resend runs it anew: `runs_anew`, and the hint and `next` say so, as a resend's answer then does (review 35, F2).
    const hint = operation.runsAnew && operation.reason !== 'powertools' ? EXPIRING_NOW_HINT : stalled;
    const wait = operation.retryAfterMs === undefined ? {} : { retry_after_ms: operation.retryAfterMs };
    const anew = operation.runsAnew ? { runs_anew: true as const } : {};
    return { ok: true, status: 'stalled', key, ...wait, ...anew, hint };
  }
  // What happens at its wait comes first: a queued call the server gives up on is not started then.
  const hint = operation.givesUp
    ? GIVES_UP_HINTS[givesUpWording(operation.givesUp, operation.queued === true)]
    : operation.queued
      ? QUEUED_HINT
      : ABANDONED_HINT;
  return {
    ok: true,
    status: 'abandoned',
    key,
    retry_after_ms: operation.retryAfterMs,
    hint,
    ...(operation.queued ? { queued: true as const } : {}),
    ...(operation.givesUp ? { gives_up: operation.givesUp } : {}),
  };
}
