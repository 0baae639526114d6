/**
 * The completer's schedule, written once (docs/state-machine.md, "Liveness"): when it looks at a call in
 * flight again follows from the call's record alone — its lock's end and its attempts — never from when
 * a process happened to read it. So the stack's completer (an SQS recheck), `retrysafe dev`'s loop and a
 * `retrysafe complete` run every minute from cron re-run a call at the same time, and every answer about
 * the call (a poll, a task's `pollInterval`, `Retry-After`) can say when that is.
 */
import { LAST_LOOK_BEFORE_TTL_MS, lastLookMs, latestLockEndMs } from './call-state';

export { LAST_LOOK_BEFORE_TTL_MS, lastLookMs };

/**
 * Backoff between the completer's re-runs of one call, by attempt: 30 s, 60 s, … at most 15 min (SQS's
 * longest delay).
 */
export function backoffSeconds(attempt: number): number {
  return Math.min(900, 30 * 2 ** Math.max(0, attempt - 1));
}

/** What the schedule reads of a call record. */
export interface ScheduledRecord {
  /** Epoch ms: the lock's end (an attempt that failed sets it to when it failed). */
  readonly lockEndsMs: number;
  /** Attempts that claimed the record: 1 for the first, +1 for each takeover. */
  readonly attempt: number;
  /** Epoch s: the record's TTL. */
  readonly expiresAtS: number;
  /** Attempts of them that were queued (`CallRecord.queuedAttempts`): they count in the backoff, not in `maxAttempts`. */
  readonly queuedAttempts?: number | undefined;
  /** The claim that holds it (`CallRecord.claimId`). */
  readonly claimId?: string | undefined;
  /** The claim that parked it (`CallRecord.parkedClaimId`): its lock's end was written by that park. */
  readonly parkedClaimId?: string | undefined;
}

/** The least wait an answer about an abandoned call gives (`nextLookAtMs`): its re-run is due, but not this instant. */
export const LEAST_WAIT_MS = 1_000;

/**
 * How late after a call is due the slowest completer retrysafe ships may look at it: `retrysafe complete`
 * run from cron once a minute (the stack's recheck comes within a second of it — its delay is whole seconds
 * — and `retrysafe dev` passes every 5 s). A re-run due less than this before the call's last look is given
 * up by the record alone (`expiresBeforeRerun`), so every completer decides it alike (review 27, F1: dev's
 * pass and cron's run came after the last look and gave up a call told it is re-run).
 */
export const LATEST_LOOK_AFTER_DUE_MS = 60_000;

/**
 * The longest lock a completer retrysafe ships takes for a re-run: the stack's completer's timeout
 * (`COMPLETER_DEFAULTS.timeoutSeconds`, this number) and a `retrysafe complete` pass (`retrysafe dev`'s is
 * 10 s). A re-run's lock ends by the call's last look (`ttlLookedAtFor`), so one due less than this and
 * `LATEST_LOOK_AFTER_DUE_MS` before it is given up by the record alone (`expiresBeforeRerun`).
 */
export const RERUN_LOCK_MS = 60_000;

/**
 * When the completer looks at a call in flight, epoch ms: when it is due (`completerDueAtMs`: never before
 * every completer can see a park's lock end), but no later than its last look before its TTL (`lastLookMs`),
 * and never while an attempt holds it (its lock's end: past the last look only for a takeover that gave its
 * call up in advance, which is stalled then by its record alone).
 */
export function completerLooksAtMs(record: ScheduledRecord): number {
  return Math.max(record.lockEndsMs, Math.min(completerDueAtMs(record), lastLookMs(record.expiresAtS)));
}

/**
 * How long before its last look a call parked to wait for an abandoned or stalled call in its way (a dedupe
 * window's, or an old window's held back) is looked at first (`parkLimitMs`): a re-run then finds that call
 * settled by its resend (it replays its outcome, or runs) — or not, and parks again, due past the last look,
 * which gives it up. A second before the latest a re-run may be due (`expiresBeforeRerun`): every completer,
 * cron's a minute late too, still comes before the last look (review 28, F1), and a re-run's lock
 * (`RERUN_LOCK_MS`) still ends by it (review 32, F3).
 */
export const WAIT_LOOK_BEFORE_LAST_LOOK_MS = LATEST_LOOK_AFTER_DUE_MS + RERUN_LOCK_MS + 1_000;

/**
 * The latest lock's end a call parked to wait (queued behind a call that changes later, or whose window
 * nothing remembers) may be given, for a park after which it is due `dueAfterMs` past its lock's end
 * (`dueAfterParkMs`: its backoff, the stream's window): while a resend may move what it waits for sooner
 * than the wait's end (`mayChange`: an abandoned or stalled call in its way), so that it is due at its wait
 * look (`WAIT_LOOK_BEFORE_LAST_LOOK_MS`) and a look can still run it once that changed (review 26, F2; at any
 * attempt: review 29, F2); after that look, or for a wait that ends at a set time and no sooner (a parked
 * holder's lock, an intent's TTL, a window nothing remembers: review 28, F2), so that it is due at its last
 * look, where the completer can still give it up before its TTL (`latestParkEndMs`: no lock ends later, rule
 * 2; a wait ending sooner would only be asked about again and again: review 18, R18-4).
 */
export function parkLimitMs(
  parking: ParkingClaim,
  nowMs: number,
  mayChange: boolean | undefined,
  dueAfterMs: number,
): number {
  const waitLook = lastLookMs(parking.expiresAtS) - WAIT_LOOK_BEFORE_LAST_LOOK_MS - dueAfterMs;
  if (mayChange && waitLook > nowMs) return waitLook;
  return latestParkEndMs(parking, nowMs);
}

/** What a park's limit reads of the claim that parks (`Claim`). */
export interface ParkingClaim {
  /** Epoch s: the record's TTL. */
  readonly expiresAtS: number;
}

/**
 * The latest lock's end a park at `nowMs` may write (`settle`'s cut of a provider's wait, `parkLimitMs`'s
 * last branch): one every completer sees by the call's last look — the stream's window before it — whatever
 * its backoff (a look due past the last look comes at it: review 30, F2), however late the look that parks
 * it (review 31, F3), and so that cron, a minute late, still gives it up before its TTL (review 31, F1: a
 * provider's wait cut to the TTL − 10 s was looked at there, a minute late past the TTL); within that window,
 * the last look itself, not now (review 32, F2: a provider's wait cut to now answered 100 ms, and the resend
 * took the call over and ran its tool again); at or past its last look, its last lock end (rule 2): pending
 * until then, as its answers say — not parked again and again at a look already past (review 18, R18-4;
 * review 35, F4: a holder run past its own lock parked to that look answered 100 ms, and its resend ran the
 * tool again) — and stalled by its record alone after it: a park whose lock ends past the last look gives the
 * call up in the same write (`park`; review 34, F3: parked there without, it was looked at past the TTL).
 */
export function latestParkEndMs(parking: ParkingClaim, nowMs: number): number {
  const lastLook = lastLookMs(parking.expiresAtS);
  if (nowMs >= lastLook) return latestLockEndMs(parking.expiresAtS);
  const windowBefore = lastLook - STREAM_BATCHING_WINDOW_SECONDS * 1000;
  return nowMs < windowBefore ? windowBefore : lastLook;
}

/**
 * The latest a re-run may start and still take the call over (rules 2 and 8: its lock, `lockMs` long, must
 * end by the call's last look, `ttlLookedAtFor`): a call not due by then is given up on, not left to expire.
 */
export function lastRerunStartMs(record: ScheduledRecord, lockMs: number): number {
  return lastLookMs(record.expiresAtS) - lockMs;
}

/**
 * How long the stack's stream mapping gathers changes before the completer sees them (the stack's
 * default, `COMPLETER_DEFAULTS.streamBatchingWindowSeconds`, is this number).
 */
export const STREAM_BATCHING_WINDOW_SECONDS = 10;

/** Whether the call's lock's end was written by a park (the claim that parked it still holds it). */
function parked(record: ScheduledRecord): boolean {
  return record.parkedClaimId !== undefined && record.parkedClaimId === record.claimId;
}

/** The backoff before a re-run of a call `attempt` attempts have claimed: none after the first. */
function backoffMs(attempt: number): number {
  return attempt > 1 ? backoffSeconds(attempt - 1) * 1000 : 0;
}

/**
 * How long after the lock's end a park writes a call is due (`completerDueAtMs`), for a park by its
 * `attempt`-th attempt: its backoff, and no sooner than every completer sees the park — a park may end the
 * lock the moment it writes it (a hand-off, a queue, a failed attempt's, a provider's wait), and the stack's
 * stream delivers that write up to its batching window later, whenever the park was written (review 27, F3;
 * review 29, F1: the record does not say when); a claim's lock (a minute on the stack) outlasts the window.
 * A park that means the call to be due by a time subtracts this (`parkLimitMs`).
 */
export function dueAfterParkMs(attempt: number): number {
  return Math.max(backoffMs(attempt), STREAM_BATCHING_WINDOW_SECONDS * 1000);
}

/**
 * When the completer re-runs a call in flight, epoch ms: `backoffSeconds(attempt − 1)` after its lock's end
 * after later attempts (a failed attempt parks its lock at the moment it failed, so the backoff counts from
 * that failure), and no sooner than every completer can see a park's lock end (`dueAfterParkMs`).
 * Until then an abandoned call changes only if its caller resends it; a live one may be stored by its holder
 * at any moment, and is abandoned by this time. The same for every completer: each schedules its looks by
 * it (`completerLooksAtMs`), and every answer states it (`nextLookAtMs`).
 */
export function completerDueAtMs(record: ScheduledRecord): number {
  return record.lockEndsMs + (parked(record) ? dueAfterParkMs(record.attempt) : backoffMs(record.attempt));
}

/**
 * When the completer next looks at an abandoned call, as every answer about it states it (epoch ms; the
 * answer's wait is this less `nowMs`): when the schedule says (`completerLooksAtMs`: its re-run when due,
 * or its last look) — the time every completer schedules its look by, the stack's stream included
 * (`dueAfterParkMs`) — and never sooner than `LEAST_WAIT_MS` from now. A completer that looks later
 * (`retrysafe dev`'s pass, cron's run: `LATEST_LOOK_AFTER_DUE_MS`) decides it alike (`expiresBeforeRerun`).
 */
export function nextLookAtMs(record: ScheduledRecord, nowMs: number): number {
  return Math.max(nowMs + LEAST_WAIT_MS, completerLooksAtMs(record));
}

/** SQS's longest `DelaySeconds`: a recheck due later is delivered then, and schedules itself again. */
export const MAX_RECHECK_DELAY_SECONDS = 900;

/** A recheck's `DelaySeconds` for a call due at `dueAtMs`: whole seconds from `nowMs`, 0–900. */
export function recheckDelaySeconds(dueAtMs: number, nowMs: number): number {
  return Math.min(MAX_RECHECK_DELAY_SECONDS, Math.max(0, Math.ceil((dueAtMs - nowMs) / 1000)));
}

/**
 * How many attempts of one call the completer runs before it gives up on it (`stalled`, `attempts`): those
 * that ran or failed, not the queued ones (`ToolRuntimeOptions.maxAttempts`, whose default this is — the
 * stack, `retrysafe dev` and `retrysafe complete` all run with it).
 */
export const MAX_ATTEMPTS = 8;

/**
 * A call whose attempts that ran or failed (not those queued: `CallRecord.queuedAttempts`) are over
 * `maxAttempts`: abandoned, the completer gives up on it when it next looks at it, rather than re-run it —
 * the one rule the completer decides by and every answer about the call says (docs/state-machine.md,
 * Liveness). A record an earlier version queued counts its hand-off: one run less, never one more.
 */
export function retriesExhausted(record: ScheduledRecord, maxAttempts: number = MAX_ATTEMPTS): boolean {
  return record.attempt - (record.queuedAttempts ?? 0) > maxAttempts;
}

/**
 * A call whose re-run is due `LATEST_LOOK_AFTER_DUE_MS` and a re-run's lock (`RERUN_LOCK_MS`) or less before
 * the completer's last look before its TTL (`lastLookMs`), or after it: a completer looking as late as any
 * shipped one may would come at or past that look (review 28, F1), or take a lock ending past it, which no
 * re-run may (`ttlLookedAtFor`; review 32, F3) — so every completer gives it up (`stalled`, `expiring`)
 * when it looks, rather than re-run it or let it expire unfinished, whatever its pace — the record alone says
 * so (`tooLateToRerun`; a call parked to wait until its last look, `parkLimitMs`, is given up there).
 */
export function expiresBeforeRerun(record: ScheduledRecord): boolean {
  return completerDueAtMs(record) + LATEST_LOOK_AFTER_DUE_MS + RERUN_LOCK_MS >= lastLookMs(record.expiresAtS);
}

/**
 * Whether a look at an abandoned call at `nowMs`, whose re-run would hold a lock `lockMs` long, is too late
 * to re-run it: its record says so (`expiresBeforeRerun`), or this look is past the last start that lock
 * allows (`lastRerunStartMs`: it would end past the call's last look, which no takeover may) — so at or past
 * its last look (no completer looked while it was due: a late recheck, a dev pass or a cron run after it),
 * the same for every completer (the stack's and `retrysafe complete`'s 60 s, `retrysafe dev`'s 10 s), and
 * what the answers say of the look at the wait they give (`givesUpAtNextLook`).
 */
export function tooLateToRerun(record: ScheduledRecord, nowMs: number, lockMs: number): boolean {
  if (expiresBeforeRerun(record)) return true;
  return Math.max(completerDueAtMs(record), nowMs) > lastRerunStartMs(record, lockMs);
}

/** `maxAttempts` as given, or `MAX_ATTEMPTS`; a value below 1 or not whole is refused naming the field. */
export function maxAttemptsOf(maxAttempts: number | undefined): number {
  if (maxAttempts === undefined) return MAX_ATTEMPTS;
  // 0 would give up every handed-off call unrun, NaN never give up (review 3, H1).
  if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1)) {
    throw new TypeError(`maxAttempts (${maxAttempts}) must be a whole number, at least 1`);
  }
  return maxAttempts;
}

/**
 * What the completer's next look at an abandoned call (`nextLookAtMs`: at the wait the answer at `nowMs`
 * gives) does instead of re-running it: gives it up because its record expires before a re-run (`expiring`:
 * `tooLateToRerun` at that look, under the longest lock a shipped completer takes, `RERUN_LOCK_MS`), or because its attempts are used up
 * (`attempts`, against the runtime's `maxAttempts`); undefined: it re-runs it (if its tool is served and its
 * call readable). The rule the completer decides by (`tooLateToRerun`, `retriesExhausted`), and what every
 * answer about the call says in advance (`lookup`, a task, `retrysafe calls`; docs/state-machine.md,
 * Liveness). A look sooner than that wait (a recheck due before it, a dev pass) may still re-run a call
 * due before its last look that this says is given up — never the other way round.
 */
export function givesUpAtNextLook(
  record: ScheduledRecord,
  nowMs: number,
  maxAttempts: number = MAX_ATTEMPTS,
): 'expiring' | 'attempts' | undefined {
  if (tooLateToRerun(record, nextLookAtMs(record, nowMs), RERUN_LOCK_MS)) return 'expiring';
  return retriesExhausted(record, maxAttempts) ? 'attempts' : undefined;
}
