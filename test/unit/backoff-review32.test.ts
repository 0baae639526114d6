// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 32 of 593dd32, at the schedule's rules (lib/idempotency/backoff.ts): `latestParkEndMs` keeps every
 * park before the last look ending its lock by that look, but a claim's lock — a completer's re-run that
 * `tooLateToRerun` allows — may still end up to a minute past it (rule 2's `lastRerunStartMs` only keeps it by
 * TTL − 10 s). The same class end to end for a caller's resend: test/integration/liveness-review32.test.ts, F1.
 */
import {
  completerLooksAtMs,
  dueAfterParkMs,
  givesUpAtNextLook,
  LATEST_LOOK_AFTER_DUE_MS,
  lastLookMs,
  type ScheduledRecord,
  tooLateToRerun,
} from '../../lib/idempotency/backoff';

const NOW = 1_800_000_000_000;
const EXPIRES_AT_S = NOW / 1000 + 3_600;
const LAST_LOOK = lastLookMs(EXPIRES_AT_S);
const TTL_MS = EXPIRES_AT_S * 1000;
/** The stack's and `retrysafe complete`'s lock for a re-run. */
const LOCK_MS = 60_000;

describe('review32 F3 (rule): a completer’s re-run due a minute and a second before the last look, run by cron within its minute (`tooLateToRerun`: not at or past the last look, not past `lastRerunStartMs`), takes the call over with a lock ending up to a minute past the last look; its worker dies, and the completer looks at that lock’s end — cron, a minute late, past the TTL', () => {
  // Left open (docs/state-machine.md, Liveness): see test/integration/liveness-review32.test.ts.
  it.failing.each([1, 2, 3, 5, 8])(
    'attempt %i: the re-run tooLateToRerun allows ends its lock by the last look, so a minute-late look at a crash is still before the TTL',
    (attempt) => {
      const dueMs = LAST_LOOK - LATEST_LOOK_AFTER_DUE_MS - 1_000;
      const lockEndsMs = dueMs - dueAfterParkMs(attempt);
      const parked: ScheduledRecord = {
        lockEndsMs,
        attempt,
        expiresAtS: EXPIRES_AT_S,
        claimId: `c${attempt}`,
        parkedClaimId: `c${attempt}`,
      };
      // Cron's run 59 s after it is due (within LATEST_LOOK_AFTER_DUE_MS): 2 s before the last look.
      const atMs = dueMs + 59_000;
      expect(tooLateToRerun(parked, atMs, LOCK_MS)).toBe(false);
      // The re-run's claim (attempt + 1), its worker dead before it stores: a claim's lock, not a park's.
      const taken: ScheduledRecord = {
        lockEndsMs: atMs + LOCK_MS,
        attempt: attempt + 1,
        expiresAtS: EXPIRES_AT_S,
        claimId: 'rerun',
      };
      const look = completerLooksAtMs(taken);
      // Its poll after its lock's end says the next look gives it up (at `look`).
      expect(givesUpAtNextLook(taken, taken.lockEndsMs + 1)).toBe('expiring');
      const values = `lock ends ${(taken.lockEndsMs - LAST_LOOK) / 1000} s past the last look; look at TTL − ${(TTL_MS - look) / 1000} s`;
      expect({
        lookAtOrBeforeLastLook: look <= LAST_LOOK,
        cronLateBeforeTtl: look + LATEST_LOOK_AFTER_DUE_MS < TTL_MS,
        values,
      }).toEqual({
        lookAtOrBeforeLastLook: true,
        cronLateBeforeTtl: true,
        values,
      });
    },
  );
});
