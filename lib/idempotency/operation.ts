/**
 * What a caller's poll reads of its own call (`ToolRuntime.lookup`, `get_operation`): the call record as an
 * operation — its state, when it can next change, and what the completer does then.
 */
import { askAgainAfterMs, failureOf, MIN_RETRY_AFTER_MS } from './answers';
import { givesUpAtNextLook } from './backoff';
import { allQueued, classify, neverRan, stalledChangesAtMs } from './call-state';
import { StoredFailureError } from './errors';
import type { CallRecord, StalledReason } from './protocol/record';
import { decodeReceipt } from './receipt';
import type { JsonObject } from './types';

/**
 * A client key's record as its caller may read it: completed with its receipt; pending while its call
 * holds a live lock; abandoned when the lock expired without a result (its worker died) — a resend
 * with the same key, or the completer, finishes it.
 */
export type Operation<R extends JsonObject> =
  | { status: 'completed'; receipt: R }
  /**
   * `retryAfterMs`: when asking again is worth it (`askAgainAfterMs`: soon, never past its lock). `runsAnew`:
   * Powertools' handler holds it, not a claim of retrysafe's — past its TTL a resend runs it anew.
   */
  | { status: 'pending'; retryAfterMs: number; runsAnew?: true }
  /**
   * `retryAfterMs`: when the completer next looks at it — to re-run it, or (`givesUp`, `givesUpAtNextLook`:
   * its attempts are used up, or its re-run would be due past its last look before its TTL) to give up on
   * it, which leaves it `stalled` with that reason (a resend with its key runs it either way). `queued`: every attempt of it was queued, none ran or failed (`allQueued`: a hand-off, a dedupe
   * window's holder in the way).
   */
  | { status: 'abandoned'; retryAfterMs: number; queued?: true; givesUp?: 'attempts' | 'expiring' }
  /**
   * Abandoned, and the completer gave up on it (`reason`: after its attempts, or it cannot re-run it):
   * only a resend with its key finishes it. `retryAfterMs` when nothing retrysafe runs moves it before
   * then (`stalledChangesAtMs`: one Powertools' handler left, or no resend fits, until its TTL) — then
   * `runsAnew`: past it a resend runs it anew, with no promise of one effect (the record is gone).
   */
  | { status: 'stalled'; reason: StalledReason; retryAfterMs?: number | undefined; neverRan?: true; runsAnew?: true };

/**
 * The operation `record` is at `nowMs` (undefined: none — never called, expired, released, erased), its
 * abandoned call's next look judged against `maxAttempts` (the runtime's). A stored failure throws
 * `StoredFailureError`: the poll answers it as the call was answered.
 */
export function operationOf(
  record: CallRecord | undefined,
  nowMs: number,
  maxAttempts: number,
): Operation<JsonObject> | undefined {
  if (!record) return undefined;
  const state = classify(record, nowMs);
  switch (state) {
    case 'live':
      return {
        status: 'pending',
        retryAfterMs: askAgainAfterMs(record, state, nowMs),
        ...(record.writtenBy === 'powertools' ? { runsAnew: true as const } : {}),
      };
    case 'abandoned': {
      const givesUp = givesUpAtNextLook(record, nowMs, maxAttempts);
      return {
        status: 'abandoned',
        retryAfterMs: askAgainAfterMs(record, state, nowMs),
        ...(allQueued(record) ? { queued: true as const } : {}),
        ...(givesUp ? { givesUp } : {}),
      };
    }
    case 'stalled': {
      const atMs = stalledChangesAtMs(record, nowMs);
      const retryAfterMs = atMs && Math.max(MIN_RETRY_AFTER_MS, Math.ceil(atMs - nowMs));
      const never = neverRan(record) ? { neverRan: true as const } : {};
      const anew = atMs === undefined ? {} : { runsAnew: true as const };
      return { status: 'stalled', reason: record.stalledReason ?? 'attempts', retryAfterMs, ...never, ...anew };
    }
    case 'completed': {
      const outcome = record.outcome;
      // A stored failure answers the poll as it answered the call.
      if (outcome?.receipt === undefined) throw new StoredFailureError(failureOf(outcome ?? { replayed: false }));
      return { status: 'completed', receipt: decodeReceipt(outcome.receipt) };
    }
    default:
      return undefined;
  }
}
