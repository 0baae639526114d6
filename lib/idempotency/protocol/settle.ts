// The writes that end an attempt (docs/state-machine.md, "Call record"): each only while the attempt still
// holds its claim, and each answering `claim_lost` when it does not (taken over after its lock ended, or
// erased) — Powertools stores and deletes unconditionally, so a worker that stalled past its lock could
// overwrite the record of the call that took the key over, or re-create an erased one.
import { DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { lastLookMs } from '../call-state';
import type { Claim } from './claim-writes';
import { STATUS, type StoredOutcome } from './record';
import { conditionally, givingUp, type IdempotencyTable, ownClaim } from './table';

/**
 * store: live (own claim) ──▶ completed. An UpdateItem on this attempt's claim that sets the outcome
 * and the TTL from now, and removes the call's key and arguments: a completed record keeps only their
 * hashes. `intentFreed`: this attempt freed the intent it created first (rule 1), and says so (`intent_freed`):
 * a call that waited on it is then not answered this outcome but runs as a fresh call (review 16, R16-1).
 */
export async function store(
  table: IdempotencyTable,
  claim: Claim,
  outcome: StoredOutcome,
  {
    expiresAtS,
    completedAtMs,
    intentFreed = false,
  }: { readonly expiresAtS: number; readonly completedAtMs: number; readonly intentFreed?: boolean },
): Promise<'stored' | 'claim_lost'> {
  const attr = table.attributes;
  const held = ownClaim(attr, claim.claimId);
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: marshall({ [attr.key]: claim.recordKey }),
      UpdateExpression: `SET #expiry = :expiry, #status = :status, #data = :data, #completed = :completed${intentFreed ? ', #freed = :freed' : ''} REMOVE #call`,
      ConditionExpression: held.expression,
      ExpressionAttributeNames: {
        '#expiry': attr.expiry,
        '#status': attr.status,
        '#data': attr.data,
        '#call': attr.call,
        '#completed': attr.completedAt,
        ...(intentFreed ? { '#freed': attr.intentFreed } : {}),
        ...held.names,
      },
      ExpressionAttributeValues: {
        ...marshall(
          {
            ':expiry': expiresAtS,
            ':status': STATUS.completed,
            ':data': outcome,
            ':completed': completedAtMs,
            ...(intentFreed ? { ':freed': true } : {}),
          },
          { removeUndefinedValues: true },
        ),
        ...held.values,
      },
    }),
  );
  return written.passed ? 'stored' : 'claim_lost';
}

/**
 * park: live (own claim, in progress) ──▶ abandoned (`untilMs` now) | live until `untilMs`. The record
 * is kept — its effect may have happened — with its lock set: to now, so that a retry or the completer
 * finishes it; or to when to look again (a provider still runs the key, an intent's holder still runs).
 * It names the claim that parked it (`parkedClaim`): while that claim holds the record, no attempt runs
 * it, so a poll's wait is its lock's end, not a holder's "any moment" (`askAgainAfterMs`).
 */
export async function park(
  table: IdempotencyTable,
  claim: Claim,
  untilMs: number,
  /**
   * `unrunAttempts`: this attempt made no effect, and none before it ran (`CallRecord.unrunAttempts`);
   * `queued`: it parks queued, by no failure (`CallRecord.queuedAttempts`, added to — from the claim's
   * `queuedBefore` where an earlier version's park left it absent); `waitedOn`: queued behind this dedupe
   * window holder's call (`CallRecord.waitedOn`).
   */
  {
    unrunAttempts,
    queued = false,
    waitedOn,
  }: { readonly unrunAttempts?: number; readonly queued?: boolean; readonly waitedOn?: string } = {},
): Promise<'parked' | 'claim_lost'> {
  const attr = table.attributes;
  const held = ownClaim(attr, claim.claimId, true);
  const sets = [
    '#lockEnd = :until',
    '#parked = :claim',
    ...(unrunAttempts === undefined ? [] : ['#unrun = :unrun']),
    ...(waitedOn === undefined ? [] : ['#waited = :waited']),
    '#queued = if_not_exists(#queued, :queuedBefore) + :queued',
  ];
  // Whether the call is given up follows from the lock's end (rule 2). One past the last look, which no
  // completer's look comes before, gives it up in this write — stalled by its record once it ends (review 34,
  // F3; review 35, F4), as a takeover's does (`TakeOver.givesUpInAdvance`); one that ends by it is the
  // completer's to look at: a give-up in advance is withdrawn, so a park well before that look (a failure, a
  // queue) is re-run by the schedule's rules, not stalled at once (review 34, F4).
  const pastLastLook = untilMs > lastLookMs(claim.expiresAtS);
  const givesUp = pastLastLook && claim.givenUpInAdvance !== true;
  const withdrawn = !pastLastLook && claim.givenUpInAdvance === true;
  const gaveUp = givesUp ? givingUp(attr, ':claim') : { sets: [], names: {}, values: {} };
  sets.push(...gaveUp.sets);
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: marshall({ [attr.key]: claim.recordKey }),
      // `queued_attempts` on every park, + 0 when not queued; absent (an earlier version parked it), from the
      // count the claim read of it (`Claim.queuedBefore`), so that count is kept (review 8, R8-3).
      UpdateExpression: `SET ${sets.join(', ')}${withdrawn ? ' REMOVE #stalled, #reason' : ''}`,
      ConditionExpression: held.expression,
      ExpressionAttributeNames: {
        '#lockEnd': attr.lockEnd,
        '#parked': attr.parkedClaim,
        ...(withdrawn ? { '#stalled': attr.stalledClaim, '#reason': attr.stalledReason } : gaveUp.names),
        ...(unrunAttempts === undefined ? {} : { '#unrun': attr.unrunAttempts }),
        ...(waitedOn === undefined ? {} : { '#waited': attr.waitedOn }),
        '#queued': attr.queuedAttempts,
        ...held.names,
      },
      ExpressionAttributeValues: {
        ':until': { N: String(untilMs) },
        ...(unrunAttempts === undefined ? {} : { ':unrun': { N: String(unrunAttempts) } }),
        ...(waitedOn === undefined ? {} : { ':waited': { S: waitedOn } }),
        ':queued': { N: queued ? '1' : '0' },
        ':queuedBefore': { N: String(claim.queuedBefore) },
        ...gaveUp.values,
        ...held.values,
      },
    }),
  );
  return written.passed ? 'parked' : 'claim_lost';
}

/**
 * release: live (own claim, in progress, attempt 1) ──▶ absent. A DeleteItem on this attempt's claim,
 * after a business error on a first attempt: nothing happened, the key is free again.
 */
export async function release(table: IdempotencyTable, claim: Claim): Promise<'released' | 'claim_lost'> {
  const attr = table.attributes;
  const held = ownClaim(attr, claim.claimId, true);
  const written = await conditionally(
    table.client,
    new DeleteItemCommand({
      TableName: table.tableName,
      Key: marshall({ [attr.key]: claim.recordKey }),
      ConditionExpression: held.expression,
      ExpressionAttributeNames: held.names,
      ExpressionAttributeValues: held.values,
    }),
  );
  return written.passed ? 'released' : 'claim_lost';
}
