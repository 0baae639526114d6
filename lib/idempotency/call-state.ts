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
 * | `completed` | COMPLETED                                        | gets its outcome (`idempotent: true`)     |
 * | `erased`    | ERASED (a tombstone, until its TTL)              | is answered `not_found`                   |
 *
 * An abandoned record's effect may have happened: it is never deleted (only a business error on a
 * record's first attempt releases it), and whoever takes it over names the exact claim it read. No lock
 * ends after its record's TTL (a takeover that would outlive it is refused), so `expired` is never a
 * call that still runs.
 *
 * Plain data and functions only (no SDK): the runtime, the completer, the poll and erase all read
 * state through {@link classify}, and every stored format is read here ({@link callRecordOf},
 * {@link intentOf}, the `call` and `data` attributes).
 */
import canonicalize from 'canonicalize';
import type { ErrorCode } from './errors';
import type { RecordAttributes } from './record';
import type { JsonObject } from './types';

/** The `status` values a call record can hold: a claim writes the first, a store the second, erase the third. */
export const STATUS = {
  inProgress: 'INPROGRESS',
  completed: 'COMPLETED',
  erased: 'ERASED',
} as const;

export type CallState = 'absent' | 'expired' | 'live' | 'abandoned' | 'stalled' | 'completed' | 'erased';

/**
 * Why the completer gave up on a call (`stalled`): it failed every one of `maxAttempts` attempts; its tool
 * is not one the completer serves (a deploy dropped or renamed it); its stored call cannot be read (or the
 * tool as deployed now refuses it); its record expires before its next re-run could run (`expiring`).
 */
export type StalledReason = 'attempts' | 'unknown_tool' | 'unreadable_call' | 'expiring';

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
  readonly recordKey: string;
  readonly status: string;
  /** The claim that holds the record: only it may store, park or release it. None on a tombstone. */
  readonly claimId: string | undefined;
  /** Epoch ms after which an INPROGRESS record is abandoned. */
  readonly lockEndsMs: number;
  /** Epoch s: the TTL. */
  readonly expiresAtS: number;
  /** Hash of the arguments' fingerprint. None on a tombstone. */
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
  /** The claim the completer gave up on (`stalled` while it is still `claimId`). */
  readonly stalledClaimId: string | undefined;
  /** Why the completer gave up on it (written with `stalledClaimId`); undefined on a record an earlier version stalled. */
  readonly stalledReason?: StalledReason | undefined;
  /**
   * When the call's first claim was written (epoch ms): when its caller asked. Undefined on a record an
   * earlier version claimed (a deployment's old functions may still write them): readers derive it from
   * the TTL the first claim set (`createdAtOf`).
   */
  readonly createdAtMs: number | undefined;
  /** When its outcome was stored (epoch ms); undefined in flight, and on a record an earlier version stored. */
  readonly completedAtMs: number | undefined;
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
 * The earliest TTL (epoch s) a record may have for a lock that ends at `lockEndsMs` to be taken: the lock
 * ends `CLOCK_SKEW_TOLERANCE_MS` before it (rule 2: no lock ends after its record's TTL, on any worker's
 * clock). `lockEndedOn`'s `notBeforeS` for a takeover, and what decides that a refused one is pending.
 */
export function ttlNeededFor(lockEndsMs: number): number {
  return Math.ceil((lockEndsMs + CLOCK_SKEW_TOLERANCE_MS) / 1000);
}

/** The one rule for "is this record's lock live, abandoned, completed…", at time `nowMs`. */
export function classify(record: CallRecord | undefined, nowMs: number): CallState {
  if (!record) return 'absent';
  if (record.expiresAtS < nowMs / 1000) return 'expired';
  if (record.status === STATUS.erased) return 'erased';
  if (record.status === STATUS.completed) return 'completed';
  if (record.lockEndsMs >= nowMs) return 'live';
  // Given up on by the completer: only while the claim it gave up on is still the record's.
  return record.stalledClaimId !== undefined && record.stalledClaimId === record.claimId ? 'stalled' : 'abandoned';
}

/**
 * When a call was first claimed (epoch ms): its record's `created_at`, or — on a record an earlier version
 * claimed, which has none — its TTL less the tool's TTL, as the first claim set it (a takeover keeps it;
 * only a stored outcome moves it, so a completed record's is its completion instead).
 */
export function createdAtOf(record: Pick<CallRecord, 'createdAtMs' | 'expiresAtS'>, ttlSeconds: number): number {
  return record.createdAtMs ?? (record.expiresAtS - ttlSeconds) * 1000;
}

/** A call's id: the record key and the instance its first claim started. */
export function callIdOf(recordKey: string, instance: string): string {
  return `${recordKey}@${instance}`;
}

/** The record key a call id names, or undefined when it names none (not `<record key>@<instance>`). */
export function recordKeyOfCallId(callId: string): string | undefined {
  const at = callId.lastIndexOf('@');
  return at < 0 ? undefined : callId.slice(0, at);
}

/** A key of the idempotency table that names a call record (not an intent, not anything else). */
export function isCallRecordKey(key: string): boolean {
  return !key.includes('#intent#') && key.includes('#');
}

/** An attribute of an unmarshalled item, if it is a string. */
function text(item: Record<string, unknown>, name: string): string | undefined {
  const value = item[name];
  return typeof value === 'string' ? value : undefined;
}

/** An attribute of an unmarshalled item, if it is a number. */
function number(item: Record<string, unknown>, name: string): number | undefined {
  const value = item[name];
  return typeof value === 'number' ? value : undefined;
}

/**
 * A table item (unmarshalled) as a typed call record, or undefined when it is not one as every claim
 * writes it (key, status, call instance, attempt, TTL and lock; a tombstone keeps them all).
 */
export function callRecordOf(item: Record<string, unknown>, attr: RecordAttributes): CallRecord | undefined {
  const recordKey = text(item, attr.key);
  const status = text(item, attr.status);
  const instance = text(item, attr.callInstance);
  const attempt = number(item, attr.attempt);
  const expiresAtS = number(item, attr.expiry);
  const lockEndsMs = number(item, attr.inProgressExpiry);
  if (recordKey === undefined || status === undefined || instance === undefined) return undefined;
  if (attempt === undefined || expiresAtS === undefined || lockEndsMs === undefined) return undefined;
  return {
    recordKey,
    callId: callIdOf(recordKey, instance),
    status,
    claimId: text(item, attr.claim),
    lockEndsMs,
    expiresAtS,
    validation: text(item, attr.validation),
    tenant: text(item, attr.tenant),
    tool: text(item, attr.tool),
    call: decodeCall(item[attr.call]),
    downstreamKey: text(item, attr.downstreamKey),
    attempt,
    outcome: decodeOutcome(item[attr.data]),
    stalledClaimId: text(item, attr.stalledClaim),
    // Written only by `markStalled` (one of the three); a reader that meets another falls back to `attempts`.
    stalledReason: text(item, attr.stalledReason) as StalledReason | undefined,
    createdAtMs: number(item, attr.createdAt),
    completedAtMs: number(item, attr.completedAt),
  };
}

/** The call that holds a dedupe window's intent: its record, the claim it held it with, and the call itself. */
export interface IntentHolder {
  readonly recordKey: string;
  readonly claimId: string;
  /** The call (`<record key>@<instance>`): the holder is the call, whichever of its attempts runs. */
  readonly callId: string;
}

/** A dedupe window's intent item as read from the table. */
export interface Intent {
  readonly intentKey: string;
  readonly holder: IntentHolder;
  /** The key its effect runs under, fixed when it was created. */
  readonly downstreamKey: string;
  /** The end of its dedupe window (epoch s). */
  readonly windowEndS: number;
}

/** A table item (unmarshalled) as an intent, or undefined when it is not one as every intent write leaves it. */
export function intentOf(item: Record<string, unknown>, attr: RecordAttributes): Intent | undefined {
  const intentKey = text(item, attr.key);
  const recordKey = text(item, attr.intentHolder);
  const claimId = text(item, attr.claim);
  const callId = text(item, attr.callInstance);
  const downstreamKey = text(item, attr.downstreamKey);
  const windowEndS = number(item, attr.windowEnd);
  if (intentKey === undefined || recordKey === undefined || claimId === undefined || callId === undefined) {
    return undefined;
  }
  if (downstreamKey === undefined || windowEndS === undefined) return undefined;
  return { intentKey, holder: { recordKey, claimId, callId }, downstreamKey, windowEndS };
}

/** Whether `record` is still the call that holds an intent (whichever of its attempts holds the record now). */
export function holdsIntent(record: CallRecord | undefined, holder: IntentHolder): record is CallRecord {
  return record !== undefined && record.callId === holder.callId;
}

/** What a claim carries while in flight, so that anyone can finish the call. */
export interface StoredCall {
  readonly user: string;
  readonly clientKey: string;
  readonly args: JsonObject;
}

/** The `call` attribute as a claim writes it: canonical JSON of `{ user, key, args }`. */
export function encodeCall(call: StoredCall): string {
  return canonicalize({ user: call.user, key: call.clientKey, args: call.args }) as string;
}

/** The `call` attribute, or undefined when it is not one (never throws: a bad item must not stop the completer). */
export function decodeCall(text: unknown): StoredCall | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const call = JSON.parse(text) as { user?: unknown; key?: unknown; args?: unknown };
    if (typeof call.user !== 'string' || typeof call.key !== 'string') return undefined;
    if (call.args === null || typeof call.args !== 'object' || Array.isArray(call.args)) return undefined;
    return { user: call.user, clientKey: call.key, args: call.args as JsonObject };
  } catch {
    return undefined;
  }
}

/**
 * The outcome a completed record holds (its `data` attribute): strings, a boolean and an optional
 * failure only.
 */
export interface StoredOutcome {
  /** The receipt as canonical JSON text; absent when the outcome is a failure. */
  readonly receipt?: string;
  /**
   * True when this call did not commit the effect itself: another call had (a natural key's earlier
   * refund, a dedupe window's holder, a commit made by another key). Exactly one stored outcome per
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
