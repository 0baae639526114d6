// Rule 6 (docs/state-machine.md): erase is final and keeps what is in flight.

import { nextChangeAtMs } from '../../lib/idempotency/protocol/erase';
import type { CallRecord } from '../../lib/idempotency/protocol/record';

/**
 * When erase says to come back for a call it kept (rule 6 of docs/state-machine.md, `retryAfter`): when the
 * call can next change by itself — a live call at its lock's end, an abandoned one when the completer
 * next looks at it (docs/state-machine.md, "Liveness": at the lock's end after attempt 1, then 30 s, 60 s,
 * … at most 15 min after it, before its TTL), a stalled one never.
 */
const LOCK_ENDS_MS = 1_700_000_000_000;

function record(attempt: number): CallRecord {
  return {
    recordKey: 'refund#h',
    callId: 'refund#h@c1',
    status: 'INPROGRESS',
    claimId: 'c1',
    lockEndsMs: LOCK_ENDS_MS,
    expiresAtS: LOCK_ENDS_MS / 1000 + 86_400,
    validation: 'v',
    tenant: 'acme',
    tool: 'refund',
    call: undefined,
    downstreamKey: undefined,
    attempt,
    outcome: undefined,
    stalledClaimId: undefined,
    createdAtMs: undefined,
    completedAtMs: undefined,
  };
}

describe('nextChangeAtMs', () => {
  it.each([
    ['live: its lock’s end', 'live', 1, 0],
    ['live on attempt 3: its lock’s end, not the completer’s next look (60 s after it)', 'live', 3, 0],
    ['abandoned on attempt 1: when its lock ended (the completer’s due time)', 'abandoned', 1, 0],
    ['abandoned on attempt 2: 30 s after', 'abandoned', 2, 30_000],
    ['abandoned on attempt 3: 60 s after', 'abandoned', 3, 60_000],
    ['abandoned on attempt 7: 15 min after, the longest', 'abandoned', 7, 900_000],
  ] as const)('%s', (_, state, attempt, afterLockMs) => {
    expect(nextChangeAtMs(record(attempt), state)).toBe(LOCK_ENDS_MS + afterLockMs);
  });

  it('stalled: never by itself (a resend with its key, or erase with the app tables, settles it)', () => {
    expect(nextChangeAtMs(record(4), 'stalled')).toBeUndefined();
  });
});
