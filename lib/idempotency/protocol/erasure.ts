// Erase's writes to call records (docs/state-machine.md, rule 6), one function per transition, each
// answering what it did or `changed` (the item moved on since it was read: a rerun decides).
import { type AttributeValue, DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { STATUS } from './record';
import { conditionally, type IdempotencyTable, lockEndedOn } from './table';

/**
 * The tombstone's write, on `condition`: the outcome, the arguments, the hashes and the claims go (no
 * write conditioned on a claim — a late store, a park — can touch a tombstone, and no claim or takeover
 * passes it until its TTL).
 */
async function toTombstone(
  table: IdempotencyTable,
  recordKey: string,
  condition: string,
  values: Record<string, AttributeValue>,
  conditionNames: Record<string, string> = {},
): Promise<'erased' | 'changed'> {
  const attr = table.attributes;
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: { [attr.key]: { S: recordKey } },
      UpdateExpression: 'SET #status = :erased REMOVE #data, #call, #validation, #downstream, #claim, #stalled',
      ConditionExpression: condition,
      ExpressionAttributeNames: {
        ...conditionNames,
        '#status': attr.status,
        '#data': attr.data,
        '#call': attr.call,
        '#validation': attr.validation,
        '#downstream': attr.downstreamKey,
        '#claim': attr.claim,
        '#stalled': attr.stalledClaim,
      },
      ExpressionAttributeValues: { ':erased': { S: STATUS.erased }, ...values },
    }),
  );
  return written.passed ? 'erased' : 'changed';
}

/**
 * tombstone: completed ──▶ erased (`toTombstone`). `changed` when the record is no longer completed
 * (deleted by its TTL, or claimed again).
 */
export function tombstone(table: IdempotencyTable, recordKey: string): Promise<'erased' | 'changed'> {
  return toTombstone(table, recordKey, '#status = :completed', { ':completed': { S: STATUS.completed } });
}

/**
 * close stalled: stalled (on `claimId`) ──▶ erased, with the app's tables (`--include-domain`): a call the
 * completer gave up on is closed (`toTombstone`), on the claim it was given up on and read with, and only
 * while that claim's lock has ended (`lockEndedOn`, the one condition for it): a retry that took it over
 * meanwhile is live and stays, and so does the attempt given up on if it was still running past its lock
 * and parked itself (its record is live again — classify reads `live` before `stalled`; no write may move
 * a live call to erased). Nothing would finish it but a retry, and its domain items go with the tenant.
 * Without the app's tables a stalled call is kept, like every call in flight: the kept domain may still
 * come to show its effect.
 */
export function closeStalled(
  table: IdempotencyTable,
  recordKey: string,
  claimId: string,
  nowMs: number,
): Promise<'erased' | 'changed'> {
  const ended = lockEndedOn(table.attributes, claimId, { nowMs, notBeforeS: Math.floor(nowMs / 1000) });
  return toTombstone(table, recordKey, `${ended.expression} AND #stalled = :claim`, ended.values, ended.names);
}

/** delete expired: expired ──▶ absent, ahead of DynamoDB's TTL sweep; `changed` when its TTL moved on meanwhile. */
export async function deleteExpired(
  table: IdempotencyTable,
  recordKey: string,
  nowMs: number,
): Promise<'deleted' | 'changed'> {
  const attr = table.attributes;
  const written = await conditionally(
    table.client,
    new DeleteItemCommand({
      TableName: table.tableName,
      Key: { [attr.key]: { S: recordKey } },
      ConditionExpression: '#expiry < :now',
      ExpressionAttributeNames: { '#expiry': attr.expiry },
      ExpressionAttributeValues: { ':now': { N: String(nowMs / 1000) } },
    }),
  );
  return written.passed ? 'deleted' : 'changed';
}
