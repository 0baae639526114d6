/**
 * A call in flight as an operator reads it (`retrysafe calls`), from an item of the idempotency table a
 * scan found — the scan itself is the caller's; the state is `classify`'s.
 */
import { givesUpAtNextLook } from './backoff';
import { allQueued, classify, createdAtOf, isInFlight } from './call-state';
import { callRecordOf, type RecordAttributes, recordAttributes } from './protocol/record';

/** A call whose record may still commit its effect. */
export interface InFlightCall {
  /** `live`: its lock has not ended (an attempt runs, or it was parked); `abandoned`: a retry or the completer finishes it; `stalled`: the completer gave up on it. */
  readonly state: 'live' | 'abandoned' | 'stalled';
  readonly recordKey: string;
  readonly tool: string | undefined;
  /** The caller, and the client key it sent, while the record carries the call. */
  readonly user: string | undefined;
  readonly clientKey: string | undefined;
  /** Attempts that claimed it: 1, then +1 per takeover. */
  readonly attempt: number;
  /** Every attempt of it was queued (`allQueued`: a hand-off, a dedupe window's holder in the way): none ran, nothing happened. */
  readonly queued: boolean;
  /**
   * Abandoned, and the completer's next look gives it up (then `stalled`) rather than re-run it
   * (`givesUpAtNextLook`): its attempts are used up, or its re-run would be due past its last look before
   * its TTL. Only a retry with its key finishes it.
   */
  readonly givesUp: 'attempts' | 'expiring' | undefined;
  /** The record's TTL (epoch s): its first claim's time plus the tool's `ttlSeconds` (or more: `ttlLookedAtFor`). */
  readonly expiresAtS: number;
  /** When it was first claimed (epoch ms, its record's `created_at`); undefined on a record an earlier version claimed. */
  readonly createdAtMs: number | undefined;
  /** When its lock ends (epoch ms). */
  readonly lockEndsMs: number;
}

/** The call an item (unmarshalled) records, if it is in flight at `nowMs`; undefined otherwise (expired: no call any more). */
export function inFlightCallOf(
  item: Record<string, unknown>,
  nowMs: number,
  attributes: Partial<RecordAttributes> = {},
  /** The runtime's `maxAttempts` (`ToolRuntimeOptions.maxAttempts`). @default MAX_ATTEMPTS */
  maxAttempts?: number,
): InFlightCall | undefined {
  const record = callRecordOf(item, recordAttributes(attributes));
  const state = classify(record, nowMs);
  if (!record || !isInFlight(state)) return undefined;
  return {
    state,
    recordKey: record.recordKey,
    tool: record.tool,
    user: record.call?.user,
    clientKey: record.call?.clientKey,
    attempt: record.attempt,
    queued: allQueued(record),
    givesUp: state === 'abandoned' ? givesUpAtNextLook(record, nowMs, maxAttempts) : undefined,
    expiresAtS: record.expiresAtS,
    createdAtMs: record.createdAtMs,
    lockEndsMs: record.lockEndsMs,
  };
}

/**
 * How old a call in flight is at `nowMs`, in whole seconds: from its `created_at` (a first claim may have
 * lengthened its TTL: review 33, F3), or, a record an earlier version claimed, its TTL less the tool's.
 */
export function inFlightAgeSeconds(call: InFlightCall, nowMs: number, ttlSeconds: number): number {
  return Math.max(0, Math.round((nowMs - createdAtOf(call, ttlSeconds)) / 1000));
}
