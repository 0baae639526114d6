/**
 * The state of a call, decided in one place. `docs/state-machine.md` is the table this module
 * implements: every record kind, every state, and which write moves a record from one to the next
 * (the writes themselves are in `protocol/`, one function per transition).
 *
 * A **call record** (`<tool>#<sha256 of tenant, user, client key>`) is in exactly one of:
 *
 * | state       | stored as                                        | a claim with its key…                     |
 * |-------------|--------------------------------------------------|-------------------------------------------|
 * | `absent`    | no item                                          | claims it (PutItem)                       |
 * | `expired`   | any status, `expiration` < now (TTL passed)      | claims it anew (PutItem)                  |
 * | `live`      | INPROGRESS, lock ≥ now                           | is answered `pending` (or `conflict`)     |
 * | `abandoned` | INPROGRESS, lock < now                           | takes it over (same arguments), else `conflict` |
 * | `stalled`   | abandoned, and the completer gave up on its claim | takes it over (same arguments), else `conflict` |
 * |             | or abandoned with no claim (Powertools' handler)  | `pending` until its TTL, else `conflict`  |
 * | `completed` | COMPLETED                                        | gets its outcome (`idempotent: true`)     |
 * | `erased`    | ERASED (a tombstone, until its TTL)              | is answered `not_found`                   |
 *
 * An abandoned record's effect may have happened: it is never deleted (only a business error on a
 * record's first attempt releases it), and whoever takes it over names the exact claim it read. No lock
 * ends after its record's TTL (a takeover that would outlive it is refused), so `expired` is never a
 * call that still runs.
 *
 * Plain data and functions only (no SDK): the runtime, the completer, the poll and erase all read
 * state through {@link classify}; the record they classify is read from its item in `protocol/record.ts`,
 * the one home of what is on disk.
 */
import type { IntentHolder } from './protocol/intent-record';
import { type CallRecord, STATUS } from './protocol/record';

export type CallState = 'absent' | 'expired' | 'live' | 'abandoned' | 'stalled' | 'completed' | 'erased';

/** A call whose lock ended without an outcome: a takeover (a retry, or the completer unless stalled) finishes it. */
export function isAbandoned(state: CallState): state is 'abandoned' | 'stalled' {
  return state === 'abandoned' || state === 'stalled';
}

/** The states of a call that may still commit its effect: its lock is live, or a takeover can finish it. */
export type InFlightState = 'live' | 'abandoned' | 'stalled';

/** Whether `state` is one of {@link InFlightState}. */
export function isInFlight(state: CallState): state is InFlightState {
  return state === 'live' || state === 'abandoned' || state === 'stalled';
}

/**
 * How far apart two workers' clocks may be, ms. A lock is epoch ms on its claimer's clock, a TTL epoch s
 * on the first claimer's, and every other worker reads both on its own: a record a worker ahead of the
 * lock's holder counts as expired may be claimed anew while that holder, by its own clock, still runs.
 * So a takeover's lock must end this long before the record's TTL (`ttlNeededFor`), and so must a first
 * claim's (the runtime checks its deadline; a tool's TTL is at least the 15 min lock plus this, `MIN_TTL_SECONDS`). Locks themselves need
 * no margin: a holder still running past its lock is safe (its store is conditioned on its claim, and
 * every attempt runs under the call's one downstream key).
 */
export const CLOCK_SKEW_TOLERANCE_MS = 10_000;

/**
 * The longest `ttlSeconds` a tool with a dedupe window may have, and how long its window's intent lives
 * past the window's end, whatever the TTL of the call that created it: a call asked in the window lives
 * at most its own TTL past it — under any TTL a deploy gives the tool — so DynamoDB's sweep (or an erase,
 * which deletes an intent past its TTL) never takes an intent a call of its window still needs (review 22,
 * R22-1: living its creator's TTL, an intent expired before a call asked in its window after a deploy had
 * raised the TTL, and that call created it anew under its own key — a second effect). 7 days.
 */
export const MAX_WINDOWED_TTL_SECONDS = 7 * 24 * 60 * 60;

/**
 * The earliest TTL (epoch s) a record may have for a lock that ends at `lockEndsMs` to be taken: the lock
 * ends `CLOCK_SKEW_TOLERANCE_MS` before it (rule 2: no lock ends after its record's TTL, on any worker's
 * clock). `lockEndedOn`'s `notBeforeAtS` for a takeover that gives its call up in advance (`lastLookMs`),
 * and what decides that a refused one is pending.
 */
export function ttlNeededFor(lockEndsMs: number): number {
  return Math.ceil((lockEndsMs + CLOCK_SKEW_TOLERANCE_MS) / 1000);
}

/** The latest a lock may end on a record expiring at `expiresAtS` (rule 2; `ttlNeededFor`'s inverse). */
export function latestLockEndMs(expiresAtS: number): number {
  return expiresAtS * 1000 - CLOCK_SKEW_TOLERANCE_MS;
}

/**
 * How long before a record's last `CLOCK_SKEW_TOLERANCE_MS` the completer last looks at a call in flight
 * (`lastLookMs`): time to give it up (`stalled`, `expiring`) while the record still exists, rather than let
 * it expire unfinished and unreported — a completer that looks a minute late (cron) still comes before the
 * TTL.
 */
export const LAST_LOOK_BEFORE_TTL_MS = 60_000;

/** The completer's last look at a call in flight whose record expires at `expiresAtS` (epoch ms). */
export function lastLookMs(expiresAtS: number): number {
  return latestLockEndMs(expiresAtS) - LAST_LOOK_BEFORE_TTL_MS;
}

/**
 * The earliest TTL (epoch s) under which a lock that ends at `lockEndsMs` ends by the record's last look
 * (`lastLookMs`): a first claim's TTL is at least this, and so is a takeover's that does not give its call up
 * in advance — the completer's re-run, a caller's resend whose lock ends by that look (rule 2; review 32, F1
 * and F3: a lock past the last look whose attempt died was looked at there, and cron, a minute late, came
 * past the TTL: the call expired unreported).
 */
export function ttlLookedAtFor(lockEndsMs: number): number {
  return Math.ceil((lockEndsMs + CLOCK_SKEW_TOLERANCE_MS + LAST_LOOK_BEFORE_TTL_MS) / 1000);
}

/**
 * The earliest TTL (epoch s) under which a takeover's lock, ending at `lockEndsMs`, may be taken: by the
 * last look (`ttlLookedAtFor`) — or, a takeover that gives its call up in advance, the clock skew before it
 * (`ttlNeededFor`). The takeover's condition and its refusal's answer (pending to the TTL) both read it.
 */
export function ttlTakenOverFor(lockEndsMs: number, givesUpInAdvance: boolean): number {
  return (givesUpInAdvance ? ttlNeededFor : ttlLookedAtFor)(lockEndsMs);
}

/**
 * The first instant (epoch ms) every reader counts a record expiring at `expiresAtS` expired (`classify`,
 * and a claim's `#expiry < :now`, count a record alive at its TTL): a wait to the TTL stated as this, so the
 * caller who comes back then finds it gone, not `pending` again (review 33, F4).
 */
export function expiredFromMs(expiresAtS: number): number {
  return expiresAtS * 1000 + 1_000;
}

/** The one rule for "is this record's lock live, abandoned, completed…", at time `nowMs`. */
export function classify(record: CallRecord | undefined, nowMs: number): CallState {
  if (!record) return 'absent';
  if (record.expiresAtS < nowMs / 1000) return 'expired';
  if (record.status === STATUS.erased) return 'erased';
  if (record.status === STATUS.completed) return 'completed';
  if (record.lockEndsMs >= nowMs) return 'live';
  // Given up on by the completer: only while the claim it gave up on is still the record's. Or one that
  // names no claim at all (Powertools' handler wrote it, `callRecordOf`): no takeover can name it (rule 2),
  // it holds no call to re-run, and its effect may have happened (rule 1) — nobody retrysafe runs finishes it.
  return record.stalledClaimId === record.claimId ? 'stalled' : 'abandoned';
}

/**
 * A call none of whose attempts made an effect (`CallRecord.unrunAttempts`): queued, failed before its tool
 * ran, or met a business error — nothing happened.
 */
export function neverRan(record: { readonly attempt: number; readonly unrunAttempts?: number | undefined }): boolean {
  return (record.unrunAttempts ?? 0) >= record.attempt;
}

/**
 * A call every attempt of which was queued (`CallRecord.queuedAttempts`: a hand-off, a dedupe window's
 * holder in the way): none has run or failed — it waits for the server to start it.
 */
export function allQueued(record: CallRecord): boolean {
  return (record.queuedAttempts ?? 0) >= record.attempt;
}

/** A live call parked (the claim that parked it still holds it): no holder runs it before its lock ends. */
export function isParked(record: Pick<CallRecord, 'claimId' | 'parkedClaimId'>): boolean {
  return record.parkedClaimId !== undefined && record.parkedClaimId === record.claimId;
}

/**
 * When a stalled call can next change by anything retrysafe runs (epoch ms), or undefined when nothing
 * scheduled moves it. One the completer gave up on: only a resend moves it, at once (undefined). One
 * Powertools' handler left in flight (no claim, `callRecordOf`): nothing before its TTL — a resend is
 * `pending` until then (`expiredFromMs`) — and past it a fresh claim runs it anew, under retrysafe's downstream key, not the
 * one Powertools' function used: it may act twice. Every answer about it waits for this (the poll's
 * `retry_after_ms` and `next`, a resend's `pending`, erase's `retryAfter`).
 */
export function stalledChangesAtMs(
  record: Pick<CallRecord, 'claimId' | 'expiresAtS'>,
  /**
   * Now, for the answers of a call the completer gave up on: from its last lock end on (TTL − 10 s) no resend
   * can take it over either (rule 2: its lock would end past it), so nothing moves it before its TTL (review
   * 34, F2: its poll said "resend to run it again", no wait, while the resend was `pending` to the TTL).
   */
  nowMs: number,
): number | undefined {
  if (!record.claimId) return expiredFromMs(record.expiresAtS);
  return nowMs >= latestLockEndMs(record.expiresAtS) ? expiredFromMs(record.expiresAtS) : undefined;
}

/**
 * When a call was first claimed (epoch ms): its record's `created_at`, or — on a record an earlier version
 * claimed, which has none — its TTL less the tool's TTL, as the first claim set it (a takeover keeps it;
 * only a stored outcome moves it, so a completed record's is its completion instead).
 */
export function createdAtOf(record: Pick<CallRecord, 'createdAtMs' | 'expiresAtS'>, ttlSeconds: number): number {
  return record.createdAtMs ?? (record.expiresAtS - ttlSeconds) * 1000;
}

/** Whether `record` is still the call that holds an intent (whichever of its attempts holds the record now). */
export function holdsIntent(record: CallRecord | undefined, holder: IntentHolder): record is CallRecord {
  return record !== undefined && record.callId === holder.callId;
}
