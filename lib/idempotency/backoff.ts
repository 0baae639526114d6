/**
 * The completer's schedule, written once (docs/state-machine.md, "Liveness"): when it looks at a call in
 * flight again follows from the call's record alone — its lock's end and its attempts — never from when
 * a process happened to read it. So the stack's completer (an SQS recheck), `retrysafe dev`'s loop and a
 * `retrysafe complete` run every minute from cron re-run a call at the same time, and every answer about
 * the call (a poll, a task's `pollInterval`, `Retry-After`) can say when that is.
 */

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
}

/**
 * When the completer re-runs a call in flight, epoch ms: at its lock's end after the first attempt, and
 * `backoffSeconds(attempt − 1)` after it after later ones (a failed attempt parks its lock at the moment
 * it failed, so the backoff counts from that failure). Until then an abandoned call changes only if its
 * caller resends it; a live one may be stored by its holder at any moment, and is abandoned by this time.
 */
export function completerDueAtMs(record: ScheduledRecord): number {
  return record.lockEndsMs + (record.attempt > 1 ? backoffSeconds(record.attempt - 1) * 1000 : 0);
}

/** SQS's longest `DelaySeconds`: a recheck due later is delivered then, and schedules itself again. */
export const MAX_RECHECK_DELAY_SECONDS = 900;

/** A recheck's `DelaySeconds` for a call due at `dueAtMs`: whole seconds from `nowMs`, 0–900. */
export function recheckDelaySeconds(dueAtMs: number, nowMs: number): number {
  return Math.min(MAX_RECHECK_DELAY_SECONDS, Math.max(0, Math.ceil((dueAtMs - nowMs) / 1000)));
}
