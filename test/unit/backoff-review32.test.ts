// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 32 of 593dd32, at the schedule's rules (lib/idempotency/backoff.ts): `latestParkEndMs` kept every
 * park before the last look ending its lock by that look, but a claim's lock — a completer's re-run that
 * `tooLateToRerun` allowed — could still end up to a minute past it (rule 2's `lastRerunStartMs` only kept it
 * by TTL − 10 s). Fixed by one rule for every lock (`latestLockEndMs`: no lock ends past the last look). The
 * same class end to end for a caller's resend: test/integration/liveness-review32.test.ts, F1.
 */
import {
  completerLooksAtMs,
  dueAfterParkMs,
  givesUpAtNextLook,
  LATEST_LOOK_AFTER_DUE_MS,
  lastLookMs,
  nextLookAtMs,
  type ScheduledRecord,
  tooLateToRerun,
} from '../../lib/idempotency/backoff';

const NOW = 1_800_000_000_000;
const EXPIRES_AT_S = NOW / 1000 + 3_600;
const LAST_LOOK = lastLookMs(EXPIRES_AT_S);
const TTL_MS = EXPIRES_AT_S * 1000;
/** The stack's and `retrysafe complete`'s lock for a re-run. */
const LOCK_MS = 60_000;

describe('review32 F3 (rule): a completer’s re-run due a minute and a second before the last look, run by cron within its minute (`tooLateToRerun`: not at or past the last look, not past `lastRerunStartMs`), took the call over with a lock ending up to a minute past the last look; its worker died, and the completer looked at that lock’s end — cron, a minute late, past the TTL', () => {
  it.each([1, 2, 3, 5, 8])(
    'attempt %i: every re-run tooLateToRerun allows, due near the last look and run up to a minute late, ends its lock by the last look, so a minute-late look at its crash is still before the TTL',
    (attempt) => {
      const allowed: string[] = [];
      const late: string[] = [];
      for (const beforeLastLookMs of [61_000, 119_999, 120_000, 120_001, 121_000, 150_000, 200_000]) {
        const dueMs = LAST_LOOK - beforeLastLookMs;
        const lockEndsMs = dueMs - dueAfterParkMs(attempt);
        const parked: ScheduledRecord = {
          lockEndsMs,
          attempt,
          expiresAtS: EXPIRES_AT_S,
          claimId: `c${attempt}`,
          parkedClaimId: `c${attempt}`,
        };
        for (const lateMs of [0, 1_000, 30_000, 59_000, 60_000]) {
          const atMs = dueMs + lateMs;
          if (tooLateToRerun(parked, atMs, LOCK_MS)) continue;
          allowed.push(`${beforeLastLookMs}+${lateMs}`);
          // The re-run's claim (attempt + 1), its worker dead before it stores: a claim's lock, not a park's.
          const taken: ScheduledRecord = {
            lockEndsMs: atMs + LOCK_MS,
            attempt: attempt + 1,
            expiresAtS: EXPIRES_AT_S,
            claimId: 'rerun',
          };
          const look = completerLooksAtMs(taken);
          if (!(taken.lockEndsMs <= LAST_LOOK && look <= LAST_LOOK && look + LATEST_LOOK_AFTER_DUE_MS < TTL_MS)) {
            late.push(
              `due ${beforeLastLookMs} ms before the last look, run ${lateMs} ms late: look at TTL − ${(TTL_MS - look) / 1000} s`,
            );
          }
          // Its poll after its lock's end says the next look gives it up, or re-runs it in time.
          const says = givesUpAtNextLook(taken, taken.lockEndsMs + 1);
          if (says === undefined && nextLookAtMs(taken, taken.lockEndsMs + 1) + LOCK_MS > LAST_LOOK) {
            late.push(
              `due ${beforeLastLookMs} ms before, run ${lateMs} ms late: told re-run, too late for a minute's lock`,
            );
          }
        }
      }
      // Re-runs due more than two minutes before the last look are run, however late within cron's minute.
      expect(allowed).toEqual(expect.arrayContaining(['120001+60000', '150000+59000', '200000+0']));
      expect(allowed.filter((a) => a.startsWith('120000+') || a.startsWith('61000+'))).toEqual([]);
      expect(late).toEqual([]);
    },
  );
});
