import { lastLookMs, latestLockEndMs } from '../../lib/idempotency/call-state';
import { DEFAULT_RECORD_ATTRIBUTES as ATTR, STATUS } from '../../lib/idempotency/protocol/record';
import { EXPIRING_VALUE } from '../../lib/idempotency/protocol/table';
import type { ObservedWrite } from './world';

/**
 * Rule 2 of docs/state-machine.md read back from the writes the explorer saw succeed: every attempt's
 * lease on a call record — from its claim or takeover to the end of its lock, or to its own store, park
 * or release if that came first — and every claim of the record anew.
 *
 * - **No lock ends after its record's TTL, nor after its last look unless its call was given up in
 *   advance**, as written: every lock ends at least the clock skew the protocol tolerates before the TTL the
 *   record holds then (`latestLockEndMs`: the conditions' promise, in the writer's own clock); a claim's, a
 *   takeover's or a park's ends by the completer's last look (`lastLookMs`) — a completer a minute late at
 *   its end still gives the call up before its TTL — unless it is a takeover that gave the call up in the
 *   same write (`:expiring`: stalled on its own claim; review 32, F1 and F3; review 33, F1 and F2), or a
 *   park by such a takeover's claim (review 34, F3: a park by any other past the last look).
 * - **A record is claimed anew only once every attempt on it has ended**: no fresh claim (a PutItem over
 *   an expired or deleted record) while an earlier attempt's lock is still live by that attempt's own
 *   clock. Times are compared as the simulation's (each write's time less its writer's clock offset), so
 *   two workers whose clocks disagree are held to one timeline: the second attempt would be another call
 *   instance running beside the first (nobody told `idempotent: false`, erase counting it gone).
 *
 * A park is not a lease: the attempt that parks has stopped (its lock says when to look again); its lock ends
 * as a lease's does all the same.
 */
export function leaseViolations(writes: readonly ObservedWrite[], offsetOf: (actor: string) => number): string[] {
  const violations: string[] = [];
  const records = new Map<string, RecordLeases>();
  for (const write of writes) {
    if (write.table !== 'idempotency') continue;
    const key = keyOf(write.input);
    if (key === undefined || key.includes('#intent#')) continue;
    const simulatedAt = write.at - offsetOf(write.actor);
    const record = records.get(key) ?? { expiryS: undefined, attempts: [], claims: 0, givenUp: new Set<string>() };
    records.set(key, record);
    const values = (write.input.ExpressionAttributeValues ?? {}) as Record<string, Attribute>;
    const label = `${key.slice(0, 14)}…`;
    if (write.command === 'PutItem') {
      const item = write.input.Item as Record<string, Attribute> | undefined;
      const claimId = text(item?.[ATTR.claim]);
      const lockMs = number(item?.[ATTR.lockEnd]);
      const expiryS = number(item?.[ATTR.expiry]);
      if (claimId === undefined || lockMs === undefined || expiryS === undefined) continue;
      if (record.claims > 0) {
        for (const attempt of record.attempts) {
          if (attempt.endsAt > simulatedAt) {
            violations.push(
              `2 claimed anew under a live lock: ${write.actor} claimed record ${label} afresh at +${simulatedAt - attempt.startedAt} ms after ${attempt.actor}'s attempt began, whose lock ran ${attempt.endsAt - simulatedAt} ms longer`,
            );
          }
        }
        record.attempts = [];
      }
      record.claims += 1;
      record.expiryS = expiryS;
      violations.push(...pastLimits(`${write.actor}'s claim of ${label}`, lockMs, expiryS, false));
      record.attempts.push(leaseOf(write.actor, claimId, simulatedAt, lockMs, offsetOf(write.actor)));
    } else if (write.command === 'UpdateItem' && values[':lockEnd'] !== undefined && values[':id'] !== undefined) {
      // A takeover: the new claim and its lock, the TTL kept.
      const claimId = text(values[':id']);
      const lockMs = number(values[':lockEnd']);
      if (claimId === undefined || lockMs === undefined) continue;
      const givenUp = values[EXPIRING_VALUE] !== undefined;
      if (givenUp) record.givenUp.add(claimId);
      violations.push(...pastLimits(`${write.actor}'s takeover of ${label}`, lockMs, record.expiryS, givenUp));
      record.attempts.push(leaseOf(write.actor, claimId, simulatedAt, lockMs, offsetOf(write.actor)));
    } else if (values[':claim'] !== undefined && (values[':until'] !== undefined || values[':status'] !== undefined)) {
      // Its own park or store: the attempt is over. A park's lock ends by the last look too (rule 2).
      const untilMs = number(values[':until']);
      // A park ends by the last look, unless its claim's takeover gave the call up in advance (review 34, F3),
      // or the park itself gives it up (review 35, F4).
      if (untilMs !== undefined) {
        const givenUp = record.givenUp.has(text(values[':claim']) ?? '') || values[EXPIRING_VALUE] !== undefined;
        violations.push(...pastLimits(`${write.actor}'s park of ${label}`, untilMs, record.expiryS, givenUp));
      }
      endAttempt(record, text(values[':claim']), simulatedAt);
      if (text(values[':status']) === STATUS.completed) record.expiryS = number(values[':expiry']) ?? record.expiryS;
    } else if (write.command === 'DeleteItem' && values[':claim'] !== undefined) {
      endAttempt(record, text(values[':claim']), simulatedAt); // released
    } else if (values[':erased'] !== undefined || write.command === 'DeleteItem') {
      // A tombstone (no claim can store any more) or the record deleted.
      for (const attempt of record.attempts) attempt.endsAt = Math.min(attempt.endsAt, simulatedAt);
    }
  }
  return violations;
}

interface Lease {
  readonly actor: string;
  readonly claimId: string;
  readonly startedAt: number;
  /** When the lease ends on the simulation's clock. */
  endsAt: number;
}

interface RecordLeases {
  expiryS: number | undefined;
  attempts: Lease[];
  claims: number;
  /** The claims whose takeover gave the call up in advance: their locks may end past the last look. */
  givenUp: Set<string>;
}

/** Rule 2's limits for a lock `what` writes, ending at `lockMs` on a record expiring at `expiryS`. */
function pastLimits(what: string, lockMs: number, expiryS: number | undefined, givenUp: boolean): string[] {
  if (expiryS === undefined) return [];
  if (lockMs > latestLockEndMs(expiryS)) {
    return [`2 lock outlives the TTL: ${what} locks until ${expiryS * 1000 - lockMs} ms before it`];
  }
  if (!givenUp && lockMs > lastLookMs(expiryS)) {
    return [
      `2 lock outlives the last look: ${what} locks ${lockMs - lastLookMs(expiryS)} ms past it, its call not given up`,
    ];
  }
  return [];
}

type Attribute = { S?: string; N?: string } | undefined;

function leaseOf(actor: string, claimId: string, at: number, lockMs: number, offsetMs: number): Lease {
  return { actor, claimId, startedAt: at, endsAt: lockMs - offsetMs };
}

function endAttempt(record: RecordLeases, claimId: string | undefined, at: number): void {
  for (const attempt of record.attempts) {
    if (attempt.claimId === claimId) attempt.endsAt = Math.min(attempt.endsAt, at);
  }
}

function keyOf(input: Record<string, unknown>): string | undefined {
  const key = (input.Key ?? input.Item) as Record<string, Attribute> | undefined;
  return text(key?.[ATTR.key]);
}

function text(value: Attribute): string | undefined {
  return value?.S;
}

function number(value: Attribute): number | undefined {
  return value?.N === undefined ? undefined : Number(value.N);
}
