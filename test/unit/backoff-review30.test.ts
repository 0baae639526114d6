// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 30 of 03e5fed, at the schedule's rules (lib/idempotency/backoff.ts); the same findings end to end
 * in test/integration/liveness-review30.test.ts.
 */
import {
  completerLooksAtMs,
  dueAfterParkMs,
  lastLookMs,
  parkLimitMs,
  type ScheduledRecord,
  WAIT_LOOK_BEFORE_LAST_LOOK_MS,
} from '../../lib/idempotency/backoff';
import { latestLockEndMs } from '../../lib/idempotency/call-state';

const NOW = 1_800_000_000_000;
const EXPIRES_AT_S = NOW / 1000 + 3_600;
const LAST_LOOK = lastLookMs(EXPIRES_AT_S);
const TTL_MS = EXPIRES_AT_S * 1000;

/** The record a park by `attempt`'s claim leaves, its lock ending at `lockEndsMs`. */
const parkedAt = (lockEndsMs: number, attempt: number): ScheduledRecord => ({
  lockEndsMs,
  attempt,
  expiresAtS: EXPIRES_AT_S,
  queuedAttempts: attempt,
  claimId: `c${attempt}`,
  parkedClaimId: `c${attempt}`,
});

describe('review30 F1 (rule): a park whose lock ends at the record’s last lock end (TTL − 10 s: rule 2’s cut of a provider’s wait, `parkLimitMs`’s last branch) is looked at by `completerLooksAtMs` the window after it — at the TTL itself, when the record has expired', () => {
  it.each([1, 2, 5, 9])('attempt %i: the look is before the TTL (on 36c5533: TTL − 10 s)', (attempt) => {
    const look = completerLooksAtMs(parkedAt(latestLockEndMs(EXPIRES_AT_S), attempt));
    // Received: 0 (the TTL itself); the record is expired for every reader past it.
    expect(look - TTL_MS).toBeLessThan(0);
  });
});

describe('review30 F2 (rule): `parkLimitMs` subtracts the park’s whole due offset (its backoff) from the last look as well as from the wait look, so a waiter parked again at its wait look (61 s before its last look) at attempt 4 or later — at attempt 3 a second late (SQS’s whole-second delay), at attempt 2 under cron (up to a minute late) — falls through to its last lock end — looked at its TTL — where a lock ending the window before its last look was still ahead', () => {
  it.each([4, 5, 6, 9])(
    'a waiter re-run at its wait look at attempt %i, still held back by a movable call: its next look is by its last look',
    (attempt) => {
      const now = LAST_LOOK - WAIT_LOOK_BEFORE_LAST_LOOK_MS;
      const limit = parkLimitMs({ expiresAtS: EXPIRES_AT_S }, now, true, dueAfterParkMs(attempt));
      const look = completerLooksAtMs(parkedAt(limit, attempt));
      // Any lock ending by LAST_LOOK − 10 s (later than now) is due past the last look and looked at there.
      expect({ limitAfterNow: limit > now, lookAtOrBeforeLastLook: look <= LAST_LOOK }).toEqual({
        limitAfterNow: true,
        lookAtOrBeforeLastLook: true,
      });
    },
  );

  it.each([
    [3, 1_000, 'the stack’s recheck, a second late (whole-second delay)'],
    [2, 40_000, '`retrysafe complete` from cron, 40 s late (within its minute)'],
  ])(
    'a waiter re-run at its wait look at attempt %i, %i ms late — %s: its next look is by its last look',
    (attempt, lateMs) => {
      const now = LAST_LOOK - WAIT_LOOK_BEFORE_LAST_LOOK_MS + lateMs;
      const limit = parkLimitMs({ expiresAtS: EXPIRES_AT_S }, now, true, dueAfterParkMs(attempt));
      const look = completerLooksAtMs(parkedAt(limit, attempt));
      expect({ limitAfterNow: limit > now, lookAtOrBeforeLastLook: look <= LAST_LOOK }).toEqual({
        limitAfterNow: true,
        lookAtOrBeforeLastLook: true,
      });
    },
  );

  it('a resend 20 s before its last look, attempt 2 (30 s backoff), queued behind a parked holder: parked so that it is looked at its last look (on 36c5533: parked to the last look and given up there)', () => {
    const now = LAST_LOOK - 20_000;
    const limit = parkLimitMs({ expiresAtS: EXPIRES_AT_S }, now, false, dueAfterParkMs(2));
    expect(completerLooksAtMs(parkedAt(limit, 2)) - LAST_LOOK).toBeLessThanOrEqual(0);
  });
});
