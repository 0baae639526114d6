// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
import {
  backoffSeconds,
  completerDueAtMs,
  completerLooksAtMs,
  dueAfterParkMs,
  expiresBeforeRerun,
  givesUpAtNextLook,
  LATEST_LOOK_AFTER_DUE_MS,
  LEAST_WAIT_MS,
  lastLookMs,
  lastRerunStartMs,
  nextLookAtMs,
  parkLimitMs,
  RERUN_LOCK_MS,
  recheckDelaySeconds,
  tooLateToRerun,
  WAIT_LOOK_BEFORE_LAST_LOOK_MS,
} from '../../lib/idempotency/backoff';

/**
 * The completer's schedule (backoff.ts) against docs/state-machine.md's Liveness table, whose numbers are
 * written here as the doc states them: 0 after attempt 1, then 30 s, 60 s, … 15 min; stalled ≈ 61 min of
 * backoff after the first failure; a last look 60 s before the record's last 10 s.
 */
const NOW = 1_800_000_000_000;
const DAY_S = 86_400;

describe('backoffSeconds', () => {
  it.each([
    [1, 30],
    [2, 60],
    [3, 120],
    [4, 240],
    [5, 480],
    [6, 900],
    [7, 900],
    [30, 900],
  ])('after attempt %i: %i s (doubling from 30 s, at most 15 min)', (attempt, seconds) => {
    expect(backoffSeconds(attempt)).toBe(seconds);
  });

  it('adds up to about 61 min over the 8 attempts before a call is stalled', () => {
    const total = [1, 2, 3, 4, 5, 6, 7, 8].reduce((sum, attempt) => sum + backoffSeconds(attempt), 0);

    expect(total).toBe(3_630); // 60.5 min
  });
});

describe('completerDueAtMs', () => {
  it('is the lock’s end after the first attempt, and the backoff of the one before after later ones', () => {
    const record = { lockEndsMs: NOW, expiresAtS: NOW / 1000 + DAY_S };

    expect(completerDueAtMs({ ...record, attempt: 1 })).toBe(NOW);
    expect(completerDueAtMs({ ...record, attempt: 2 })).toBe(NOW + 30_000);
    expect(completerDueAtMs({ ...record, attempt: 3 })).toBe(NOW + 60_000);
    expect(completerDueAtMs({ ...record, attempt: 9 })).toBe(NOW + 900_000);
  });

  it('after a park (its claim parked it), no sooner than the stream’s batching window after the lock’s end: the stack may see the park only then (review 27 F3, review 29 F1)', () => {
    const parked = { lockEndsMs: NOW, expiresAtS: NOW / 1000 + DAY_S, claimId: 'c', parkedClaimId: 'c' };

    expect(completerDueAtMs({ ...parked, attempt: 1 })).toBe(NOW + 10_000);
    expect(completerDueAtMs({ ...parked, attempt: 2 })).toBe(NOW + 30_000);
    // Parked by an earlier claim, since taken over: the lock is the takeover's claim.
    expect(completerDueAtMs({ ...parked, attempt: 1, claimId: 'd' })).toBe(NOW);
    expect([1, 2, 3].map(dueAfterParkMs)).toEqual([10_000, 30_000, 60_000]);
  });
});

describe('completerLooksAtMs', () => {
  it('is the due time while it comes before the last look, 60 s before the record’s last 10 s', () => {
    const expiresAtS = NOW / 1000 + 600; // the TTL 10 min away: the last look 70 s before it

    expect(completerLooksAtMs({ lockEndsMs: NOW, attempt: 2, expiresAtS })).toBe(NOW + 30_000);
    expect(completerLooksAtMs({ lockEndsMs: NOW, attempt: 7, expiresAtS })).toBe(NOW + 600_000 - 70_000);
  });

  it('is never before the lock’s end: nothing is to be done while an attempt holds it', () => {
    const lockEndsMs = NOW + 600_000;

    expect(completerLooksAtMs({ lockEndsMs, attempt: 1, expiresAtS: NOW / 1000 + 300 })).toBe(lockEndsMs);
  });
});

describe('lastRerunStartMs', () => {
  it('leaves a re-run’s whole lock before the last look, a minute and 10 s before the TTL (rules 2 and 8)', () => {
    expect(lastRerunStartMs({ lockEndsMs: NOW, attempt: 1, expiresAtS: NOW / 1000 + 3_600 }, 60_000)).toBe(
      NOW + 3_600_000 - 10_000 - 60_000 - 60_000,
    );
  });
});

describe('recheckDelaySeconds', () => {
  it.each([
    ['due now', 0, 0],
    ['due in the past', -5_000, 0],
    ['due in 1.2 s', 1_200, 2],
    ['due in 15 min', 900_000, 900],
    ['due in an hour (SQS’s cap: it looks again then)', 3_600_000, 900],
  ])('%s: %i ms → %i s', (_label, inMs, seconds) => {
    expect(recheckDelaySeconds(NOW + inMs, NOW)).toBe(seconds);
  });
});

describe('the look an answer points at, and what it does (reviews 26 and 27, F1)', () => {
  const expiresAtS = NOW / 1000 + 3_600;
  const lastLook = lastLookMs(expiresAtS);
  const due = (atMs: number, attempt = 2) => ({ lockEndsMs: atMs - 30_000, attempt, expiresAtS });

  it('a re-run due a minute (cron’s pace) and a re-run’s lock or less before the last look is given up by the record alone; a ms more before is not (review 28, F1; review 32, F3)', () => {
    expect(LATEST_LOOK_AFTER_DUE_MS).toBe(60_000);
    expect(RERUN_LOCK_MS).toBe(60_000);
    expect(expiresBeforeRerun(due(lastLook - 120_000))).toBe(true);
    expect(expiresBeforeRerun(due(lastLook - 120_001))).toBe(false);
    // Every shipped completer re-runs such a call with its lock ending by the last look: the stack's recheck
    // (whole seconds), dev's pass every 5 s, cron's run within the minute — each a lock of a minute at most.
    const sentAt = lastLook - 160_500;
    expect(sentAt + recheckDelaySeconds(lastLook - 120_001, sentAt) * 1000 + RERUN_LOCK_MS).toBeLessThanOrEqual(
      lastLook,
    );
    expect(lastLook - 120_001 + 60_000 + RERUN_LOCK_MS).toBeLessThan(lastLook);
    expect(tooLateToRerun(due(lastLook - 120_001), lastLook - 120_001 + 60_000, RERUN_LOCK_MS)).toBe(false);
  });

  it('the next look is the due time, no sooner than the stream delivers the image of its lock’s end, and at least a second from now', () => {
    expect(LEAST_WAIT_MS).toBe(1_000);
    expect(nextLookAtMs(due(NOW + 30_000), NOW)).toBe(NOW + 30_000);
    expect(nextLookAtMs(due(NOW - 30_000), NOW)).toBe(NOW + 1_000);
    // A call parked 5 s ago, its lock ended by the park (queued, handed off, or its first attempt failed):
    // the stack sees the park up to 10 s after it, whether its tool ran or not (review 27, F3). A crashed
    // claim's lock outlasts the window: its end itself.
    const first = { lockEndsMs: NOW - 5_000, attempt: 1, expiresAtS };
    expect(nextLookAtMs({ ...first, claimId: 'c', parkedClaimId: 'c' }, NOW)).toBe(NOW + 5_000);
    expect(nextLookAtMs({ ...first, claimId: 'c' }, NOW)).toBe(NOW + 1_000);
  });

  it('a poll of a call due well before says `expiring` once the look at its least wait leaves less than a re-run’s lock before the last look', () => {
    const record = due(lastLook - 150_000);
    expect(nextLookAtMs(record, lastLook - 61_000)).toBe(lastLook - 60_000);
    expect(givesUpAtNextLook(record, lastLook - 61_000)).toBeUndefined();
    expect(givesUpAtNextLook(record, lastLook - 60_999)).toBe('expiring');
    expect(givesUpAtNextLook(record, lastLook - 1_000)).toBe('expiring');
  });

  it('an answer says `expiring` exactly when the look at the wait it gives is too late to re-run it under a minute’s lock; a shorter lock re-runs what it says is re-run', () => {
    for (const [dueMs, nowMs] of [
      [lastLook - 150_000, lastLook - 160_000], // due well before, asked before: re-run
      [lastLook - 150_000, lastLook + 1_000], // due well before, asked past the last look (no completer looked)
      [lastLook - 150_000, lastLook - 500], // asked half a second before the last look: its wait ends past it
      [lastLook - 150_000, lastLook - 61_000], // its wait ends a re-run's lock before the last look: re-run
      [lastLook - 150_000, lastLook - 60_999], // a ms later: that lock would end past the last look
      [lastLook - 30_000, lastLook - 40_000], // due 30 s before the last look: given up
      [lastLook - 120_000, lastLook - 121_000], // due two minutes before: given up (a look a minute late, a minute's lock)
      [lastLook - 121_000, lastLook - 122_000], // due two minutes and a second before: re-run
    ] as const) {
      const record = due(dueMs);
      const lookAt = nextLookAtMs(record, nowMs);
      const says = givesUpAtNextLook(record, nowMs) === 'expiring';
      // The stack's and cron's lock: exactly; dev's shorter one re-runs whatever the answer says is re-run (it
      // may also re-run a call the answer gave up on: never the other way round).
      expect([dueMs, nowMs, tooLateToRerun(record, lookAt, RERUN_LOCK_MS)]).toEqual([dueMs, nowMs, says]);
      if (!says) expect([dueMs, nowMs, tooLateToRerun(record, lookAt, 10_000)]).toEqual([dueMs, nowMs, false]);
    }
  });
});

describe('parkLimitMs', () => {
  const expiresAtS = NOW / 1000 + 3_600;
  const lastLook = lastLookMs(expiresAtS);
  const parkedAt = (lockEndsMs: number, attempt: number) => ({
    lockEndsMs,
    attempt,
    expiresAtS,
    claimId: 'c',
    parkedClaimId: 'c',
  });

  it('a wait on what may change is due at the wait look, two minutes before the last look; then at the last look; at or past it, its last lock end — the park gives the call up in that write (review 34, F3; review 35, F4)', () => {
    expect(WAIT_LOOK_BEFORE_LAST_LOOK_MS).toBe(121_000);
    const after = dueAfterParkMs(1);
    expect(parkLimitMs({ expiresAtS }, NOW, true, after)).toBe(lastLook - 121_000 - after);
    expect(parkLimitMs({ expiresAtS }, lastLook - 121_000 - after, true, after)).toBe(lastLook - after);
    // The wait look's re-run is due two minutes and a second before the last look: run, under every completer.
    const waitPark = parkedAt(parkLimitMs({ expiresAtS }, NOW, true, after), 1);
    expect(completerLooksAtMs(waitPark)).toBe(lastLook - 121_000);
    expect(expiresBeforeRerun(waitPark)).toBe(false);
    expect(parkLimitMs({ expiresAtS }, lastLook - 1, true, after)).toBe(lastLook);
    // At or past the last look: its last lock end (review 18, R18-4: not again and again at a look already
    // past; review 35, F4: not a lock already ended, answered 100 ms) — `park` gives the call up then.
    expect(parkLimitMs({ expiresAtS }, lastLook, true, after)).toBe(expiresAtS * 1000 - 10_000);
    expect(parkLimitMs({ expiresAtS }, lastLook + 30_000, true, after)).toBe(expiresAtS * 1000 - 10_000);
    expect(lastLook).toBe(expiresAtS * 1000 - 70_000);
  });

  it('at every attempt: a waiter parked by its later attempts is due at the wait look too, its backoff counted (review 29, F2)', () => {
    for (const attempt of [1, 2, 3, 5, 8]) {
      const park = parkedAt(parkLimitMs({ expiresAtS }, NOW, true, dueAfterParkMs(attempt)), attempt);
      expect([attempt, completerLooksAtMs(park), expiresBeforeRerun(park)]).toEqual([
        attempt,
        lastLook - 121_000,
        false,
      ]);
      const last = parkedAt(parkLimitMs({ expiresAtS }, NOW, false, dueAfterParkMs(attempt)), attempt);
      expect([attempt, completerLooksAtMs(last), givesUpAtNextLook(last, NOW)]).toEqual([
        attempt,
        lastLook,
        'expiring',
      ]);
    }
  });

  it('a wait on nothing that changes (a window nothing remembers) takes no wait look', () => {
    expect(parkLimitMs({ expiresAtS }, NOW, false, 10_000)).toBe(lastLook - 10_000);
    expect(parkLimitMs({ expiresAtS }, lastLook - 1, false, 10_000)).toBe(lastLook);
    expect(parkLimitMs({ expiresAtS }, lastLook, false, 10_000)).toBe(expiresAtS * 1000 - 10_000);
  });
});
