/**
 * The state of a call, decided in one place. `docs/state-machine.md` is the table this module
 * implements: every record kind, every state, and which write moves a record from one to the next.
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
 * | `completed` | COMPLETED                                        | gets its outcome (`idempotent: true`)     |
 * | `erased`    | ERASED (a tombstone, until its TTL)              | is answered `not_found`                   |
 *
 * An abandoned record's effect may have happened: it is never deleted (only a business error on a
 * record's first attempt releases it), and whoever takes it over names the exact claim it read. No lock
 * ends after its record's TTL (a takeover that would outlive it is refused), so `expired` is never a
 * call that still runs.
 *
 * Plain data and functions only (no SDK): the runtime, the completer, the poll and erase all read
 * state through {@link classify}, and every stored format is read and written here.
 */
import type { ErrorCode } from './errors';
import type { JsonObject } from './types';

/** The `status` values a call record can hold. Powertools writes the first two; erase the third. */
export const STATUS = {
  inProgress: 'INPROGRESS',
  completed: 'COMPLETED',
  erased: 'ERASED',
} as const;

export type CallState = 'absent' | 'expired' | 'live' | 'abandoned' | 'stalled' | 'completed' | 'erased';

/** A call whose lock ended without an outcome: a takeover (a retry, or the completer unless stalled) finishes it. */
export function isAbandoned(state: CallState): state is 'abandoned' | 'stalled' {
  return state === 'abandoned' || state === 'stalled';
}

/** The states of a call that may still commit its effect: its lock is live, or a takeover can finish it. */
export function isInFlight(state: CallState): state is 'live' | 'abandoned' | 'stalled' {
  return state === 'live' || state === 'abandoned' || state === 'stalled';
}

/** A call record as read from the table, every attribute typed. */
export interface CallRecord {
  readonly key: string;
  readonly status: string | undefined;
  /** The claim that wrote the record: only its holder may store, park or release it. */
  readonly claim: string | undefined;
  /** Epoch ms after which an INPROGRESS record is abandoned. */
  readonly lockEndsMs: number | undefined;
  /** Epoch s: the TTL. */
  readonly expiresAt: number | undefined;
  /** Hash of the arguments' fingerprint. */
  readonly validation: string | undefined;
  readonly tenant: string | undefined;
  readonly tool: string | undefined;
  /** While in flight: what it takes to finish the call. */
  readonly call: StoredCall | undefined;
  /** The downstream key the call's effect runs under, when it is not the one derived from the call. */
  readonly downstreamKey: string | undefined;
  /** Attempts that claimed this record: 1 for the first, +1 for each takeover. */
  readonly attempt: number;
  /** The call's id (`<record key>@<instance>`): what tools stamp their commits with. */
  readonly callId: string;
  /** The stored outcome (COMPLETED). */
  readonly outcome: StoredOutcome | undefined;
  /** The claim the completer gave up on (`stalled` while it is still `claim`). */
  readonly stalledClaim: string | undefined;
}

/** The one rule for "is this record's lock live, abandoned, completed…", at time `nowMs`. */
export function classify(record: CallRecord | undefined, nowMs: number): CallState {
  if (!record) return 'absent';
  if (record.expiresAt !== undefined && record.expiresAt < nowMs / 1000) return 'expired';
  if (record.status === STATUS.erased) return 'erased';
  if (record.status === STATUS.completed) return 'completed';
  // An in-flight record without a lock deadline is never written (the claim refuses it); read as
  // abandoned so that it can be finished rather than hold its key until the TTL.
  if (record.lockEndsMs !== undefined && record.lockEndsMs >= nowMs) return 'live';
  // Given up on by the completer: only while the claim it gave up on is still the record's.
  return record.stalledClaim !== undefined && record.stalledClaim === record.claim ? 'stalled' : 'abandoned';
}

/** A call's id: the record key and the instance its first claim started (records from before: the key). */
export function callIdOf(key: string, instance: string | undefined): string {
  return instance === undefined ? key : `${key}@${instance}`;
}

/** The record key a call id names. */
export function recordKeyOfCallId(callId: string): string {
  const at = callId.lastIndexOf('@');
  return at < 0 ? callId : callId.slice(0, at);
}

/** A key of the idempotency table that names a call record (not an intent, not anything else). */
export function isCallRecordKey(key: string): boolean {
  return !key.includes('#intent#') && key.includes('#');
}

/** What a claim carries while in flight, so that anyone can finish the call. */
export interface StoredCall {
  readonly user: string;
  readonly key: string;
  readonly args: JsonObject;
}

/** The `call` attribute, or undefined when it is not one (never throws: a bad item must not stop the completer). */
export function decodeCall(text: unknown): StoredCall | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const call = JSON.parse(text) as { user?: unknown; key?: unknown; args?: unknown };
    if (typeof call.user !== 'string' || typeof call.key !== 'string') return undefined;
    if (call.args === null || typeof call.args !== 'object' || Array.isArray(call.args)) return undefined;
    return call as StoredCall;
  } catch {
    return undefined;
  }
}

/**
 * The outcome a completed record holds — what Powertools stores as the wrapped function's result:
 * strings, a boolean and an optional failure only.
 */
export interface StoredOutcome {
  /** The receipt as canonical JSON text; absent when the outcome is a failure. */
  readonly receipt?: string;
  /**
   * True when this call did not commit the effect itself: another call had (a natural key's earlier
   * refund, a dedupe window's owner, a commit made by another key). Exactly one stored outcome per
   * effect says false: the one that committed it.
   */
  readonly replayed: boolean;
  /**
   * The call's outcome is a failure, stored so that every retry gets the same answer instead of a
   * second run: `internal` for a receipt that cannot be stored after the effect ran; a business error
   * raised by a later attempt (the first may have made the effect, so the claim is not released).
   */
  readonly failure?: ErrorCode;
  /** The failure's message, when it may be shown. */
  readonly message?: string;
}

/** A stored outcome, or undefined when the item holds none. */
export function decodeOutcome(data: unknown): StoredOutcome | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  const outcome = data as Record<string, unknown>;
  if (typeof outcome.replayed !== 'boolean') return undefined;
  return outcome as unknown as StoredOutcome;
}
