// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 31 of 2d4e9c8, at the schedule's rules (lib/idempotency/backoff.ts); the same findings end to end
 * in test/integration/liveness-review31.test.ts. The slowest completer retrysafe ships, `retrysafe complete`
 * from cron, may look LATEST_LOOK_AFTER_DUE_MS (a minute) after a look is due: a look scheduled later than a
 * minute before the TTL lets the record expire unreported under it.
 */
import {
  completerLooksAtMs,
  dueAfterParkMs,
  LATEST_LOOK_AFTER_DUE_MS,
  lastLookMs,
  latestParkEndMs,
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

describe('review31 F1 (rule): a park whose lock ends at the record’s last lock end (TTL − 10 s: `settle`’s cut of a provider’s wait) is looked at then (`seenAtMs`: max(lockEnd, lastLook)) — a minute-late completer (cron) comes past the TTL', () => {
  it.each([1, 2, 5, 9])(
    'attempt %i: a park before the last look ends its lock by it (`latestParkEndMs`), looked at by the last look — a minute late still before the TTL',
    (attempt) => {
      for (const nowMs of [NOW, LAST_LOOK - 30_000, LAST_LOOK - 10_000, LAST_LOOK - 1]) {
        const look = completerLooksAtMs(parkedAt(latestParkEndMs({ expiresAtS: EXPIRES_AT_S }, nowMs), attempt));
        expect([nowMs - LAST_LOOK, look <= LAST_LOOK, look + LATEST_LOOK_AFTER_DUE_MS < TTL_MS]).toEqual([
          nowMs - LAST_LOOK,
          true,
          true,
        ]);
      }
      // At or past the last look: its last lock end, the call given up by the park's own write (`park`) — no
      // completer's look is needed before the TTL (review 34, F3; review 35, F4: to that look, a lock already
      // ended, it answered 100 ms and its resend ran the tool again).
      expect(latestParkEndMs({ expiresAtS: EXPIRES_AT_S }, LAST_LOOK)).toBe(latestLockEndMs(EXPIRES_AT_S));
      expect(latestParkEndMs({ expiresAtS: EXPIRES_AT_S }, LAST_LOOK + 30_000)).toBe(latestLockEndMs(EXPIRES_AT_S));
    },
  );
});

describe('review31 F3 (rule): a waiter re-run at its wait look 51–60 s late (cron, within LATEST_LOOK_AFTER_DUE_MS) and parked again behind a movable call falls through `parkLimitMs`’s last-look branch (lastLook − 10 s, already past) to its last lock end, looked at TTL − 10 s', () => {
  it.each([
    [1, 52_000],
    [2, 55_000],
    [4, 59_000],
    [9, 59_999],
  ])(
    'attempt %i, re-run %i ms after its wait look: parked so that it is looked at by its last look',
    (attempt, lateMs) => {
      const now = LAST_LOOK - WAIT_LOOK_BEFORE_LAST_LOOK_MS + lateMs;
      const limit = parkLimitMs({ expiresAtS: EXPIRES_AT_S }, now, true, dueAfterParkMs(attempt));
      const look = completerLooksAtMs(parkedAt(limit, attempt));
      // Was: the limit TTL − 10 s, and so the look (70 s past the last look). Now: a lock ending now at the
      // earliest (the park's wait is at least MIN_RETRY_AFTER_MS past it), seen at the last look.
      expect({ limitAfterNow: limit >= now, lookAtOrBeforeLastLook: look <= LAST_LOOK }).toEqual({
        limitAfterNow: true,
        lookAtOrBeforeLastLook: true,
      });
    },
  );
});
