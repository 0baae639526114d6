/**
 * How an attempt ends (`Ending`) and what the caller is told: the stored outcome's answer, the one
 * `pending` answer, and every failure in the closed set of error codes (`toToolError`).
 */
import { nextLookAtMs } from './backoff';
import { isParked } from './call-state';
import {
  ConflictError,
  type ErrorCode,
  INTERNAL_MESSAGE,
  InternalError,
  isTransientAwsError,
  NotFoundError,
  ToolError,
  UnavailableError,
} from './errors';
import type { CallRecord, StoredOutcome } from './protocol/record';
import { decodeReceipt } from './receipt';
import type { JsonObject, ToolResult } from './types';

/** Longest `retry_after_ms` suggested for a call still in flight: most writes finish well within it. */
export const MAX_RETRY_AFTER_MS = 1_000;
/** Shortest `retry_after_ms`: polling faster than this only adds load. */
export const MIN_RETRY_AFTER_MS = 100;

/** What answered a replay: the key's stored record, the tool's natural key, or a dedupe window's intent. */
export type ReplayKind = 'client_key' | 'natural_key' | 'dedupe_window';

/**
 * When a pending call is worth asking again: at an instant (a lock's end), or a while after the answer.
 * `runsAnew`: no claim of retrysafe's holds it — Powertools' handler wrote it, running or left behind
 * (`CallRecord.writtenBy`) — so once its record expires a resend runs it anew, under retrysafe's
 * downstream key, not the one Powertools' function used: nothing promises one effect.
 */
export type PendingUntil =
  | { readonly atMs: number | undefined; readonly runsAnew?: true }
  /** `queued`: a hand-off's — nothing ran yet; the completer starts it. */
  | { readonly afterMs: number; readonly runsAnew?: true; readonly queued?: true };

/** How one attempt of a call ends. */
export type Ending =
  /** An outcome: stored now, or found stored (a replay, and what answered it). */
  (
    | { readonly kind: 'outcome'; readonly outcome: StoredOutcome; readonly replay?: ReplayKind }
    /** The call is in flight (here or elsewhere), and its record is pollable: ask again later. */
    | { readonly kind: 'pending'; readonly until: PendingUntil }
    /** Refused or failed: a `ToolError`, or anything else that `toToolError` words. */
    | { readonly kind: 'failed'; readonly error: unknown }
  ) &
    EndingCall;

/** The call an ending is about — what an MCP task of this request is (`CallTask`). */
export interface EndingCall {
  /**
   * This call's record as the attempt left it — written by it, or read when it refused the claim (a
   * replay, `pending`). Undefined when the answer is about no call of these arguments under the key
   * (refused before a claim, other arguments, erased, a released first attempt) or its state is not
   * known (the claim was lost to another attempt).
   */
  readonly call?: CallRecord;
  /** This request's attempt made the call's first claim: the call began with it. */
  readonly fresh?: boolean;
}

export function failed(error: unknown): Ending {
  return { kind: 'failed', error };
}

/** The answer a stored outcome gives, first time or replayed. */
export function answerOf<R extends JsonObject>(stored: StoredOutcome, clientKey: string): ToolResult<R> {
  if (stored.receipt === undefined) return { ok: false, idempotent: stored.replayed, error: failureOf(stored) };
  return { ok: true, idempotent: stored.replayed, key: clientKey, receipt: decodeReceipt<R>(stored.receipt) };
}

/** A stored failure as the caller may see it: `internal` never shows its message. */
export function failureOf(stored: StoredOutcome): { code: ErrorCode; message: string } {
  const code = stored.failure ?? 'internal';
  return { code, message: code === 'internal' ? INTERNAL_MESSAGE : (stored.message ?? code) };
}

/**
 * The `pending` answer, the only place one is built. A call this attempt parked until a later time (a
 * provider still running the key) changes at that time and no sooner — nobody runs it until then — so the
 * answer says all of it; a call found running elsewhere may be stored at any moment (`retryAfterMs`).
 */
export function pendingAnswer(clientKey: string, until: PendingUntil): ToolResult<never> {
  const wait = 'atMs' in until ? retryAfterMs(until.atMs) : Math.max(MIN_RETRY_AFTER_MS, Math.ceil(until.afterMs));
  return {
    ok: false,
    status: 'pending',
    key: clientKey,
    retry_after_ms: wait,
    ...(until.runsAnew ? { runs_anew: true } : {}),
    ...('queued' in until && until.queued ? { queued: true } : {}),
  };
}

/** When to poll a call that runs elsewhere again: soon (its holder may store at any moment), never past its lock. */
export function retryAfterMs(lockEndsMs: number | undefined, nowMs: number = Date.now()): number {
  const untilLockEnds = lockEndsMs === undefined ? MAX_RETRY_AFTER_MS : lockEndsMs - nowMs;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(MIN_RETRY_AFTER_MS, Math.ceil(untilLockEnds)));
}

/**
 * When asking about a call in flight again is worth it, ms after `nowMs` — the one rule every surface's
 * hint follows (a poll's `next.after_ms`, `Retry-After`, an MCP task's `pollInterval`; docs/state-machine.md,
 * "Liveness"): a live call may be stored by its holder at any moment, so soon, never past its lock
 * (`retryAfterMs`) — unless it is parked (`parkedClaimId` is its claim): no holder, nothing runs it before
 * its lock ends, so exactly then; an abandoned call changes only when the completer looks at it (`completerLooksAtMs`:
 * its re-run when due, or its give-up before its TTL) —
 * or when its caller resends it, which it may do at once — so exactly then, at least a second from now.
 * No other state has a scheduled change (settled, gone, or stalled: only a resend moves it).
 */
export function askAgainAfterMs(record: CallRecord, state: 'live' | 'abandoned', nowMs: number): number {
  // Parked (the claim that parked it still holds it): nobody runs it before its lock ends, so all of it.
  if (state === 'live' && isParked(record)) {
    return Math.max(MIN_RETRY_AFTER_MS, Math.ceil(record.lockEndsMs - nowMs));
  }
  if (state === 'live') return retryAfterMs(record.lockEndsMs, nowMs);
  // The completer's next look (`nextLookAtMs`): a lock's end a park wrote no sooner than the stream's
  // batching window after it, when every completer looks at it (`dueAfterParkMs`).
  return Math.ceil(nextLookAtMs(record, nowMs) - nowMs);
}

/** The message of a call whose effect may have run but whose outcome is not stored (or not its own). */
const MAY_HAVE_BEEN_APPLIED = 'the write may have been applied; retry with the same key to read its result';

/** Why a claim or an attempt is refused, as the caller is told. */
export const REFUSED = {
  /** The key's record holds other arguments (Powertools' `IdempotencyValidationError`). */
  conflict: () => new ConflictError('idempotency_key: already used with different arguments'),
  /** The key's record is a tombstone: no claim passes it until its TTL. */
  erased: () => new NotFoundError('idempotency_key: the call under this key was erased'),
  /** The attempt has no time left for a lock that ends in the future: nothing was written. */
  noTimeLeft: () => new UnavailableError('no time was left for this call; retry with the same key'),
  /** A resume (the completer) found no longer the claim it came for: nothing to finish. */
  nothingToResume: () => new NotFoundError('idempotency_key: nothing to resume under this key'),
  /** The record in the way kept expiring as it was read (Powertools' `IdempotencyInconsistentStateError`). */
  changedWhileRead: () => new UnavailableError('the idempotency record changed while it was read; retry'),
  /**
   * The claim was lost to a takeover or an erase by the time the outcome was stored: the effect ran, and
   * another call holds the key now, under the same downstream key.
   */
  claimLostAfterEffect: () => new UnavailableError(MAY_HAVE_BEEN_APPLIED),
  /**
   * The claim was lost before the attempt ran (while it fixed a dedupe window's downstream key): another
   * attempt holds the call now, and nothing of this one happened — a retry with the key reads its outcome.
   */
  claimLostBeforeRun: () =>
    new UnavailableError('another attempt holds this call now; retry with the same key to read its result'),
  /** The item under the key is not a call record as claims write it (or DynamoDB returned none). */
  notACallRecord: (recordKey: string) =>
    new InternalError(`the item under ${recordKey} is not a call record a claim wrote`),
};

/**
 * A write of the idempotency store failed — the store itself, not the write's condition: the claim,
 * the store of the outcome (after the effect ran), or the park or release that settles a failed attempt.
 * Worded by {@link toToolError} (Powertools' `IdempotencyPersistenceLayerError`).
 */
export class StoreWriteError extends Error {
  constructor(
    readonly write: 'claim' | 'store' | 'settle',
    options: ErrorOptions,
  ) {
    super(`the idempotency store failed the ${write} write`, options);
    this.name = 'StoreWriteError';
  }
}

/**
 * Every failure becomes one of the closed set of codes; a business error thrown by a tool passes through
 * as it is. Transient causes are told from deployment mistakes by the SDK's own retry classification.
 */
export function toToolError(error: unknown): ToolError {
  if (error instanceof ToolError) return error;
  if (error instanceof StoreWriteError) {
    // A missing table, a denied action, a malformed request: a deployment mistake, not an outage.
    if (!isTransientAwsError(error.cause))
      return new InternalError('the idempotency store refused the request', { cause: error });
    // The side effect ran; its outcome could not be stored. The retry (after the lock) runs the tool again
    // under the same downstream key, and the tool finds its own effect.
    if (error.write === 'store') return new UnavailableError(MAY_HAVE_BEEN_APPLIED, { cause: error });
    return new UnavailableError('the idempotency store is unavailable; retry later', { cause: error });
  }
  if (isTransientAwsError(error)) {
    return new UnavailableError('a store is unavailable; retry with the same key', { cause: error });
  }
  return new InternalError(error instanceof Error ? error.message : 'unknown failure', { cause: error });
}
