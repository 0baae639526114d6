// Erase's writes to call records (docs/state-machine.md, rule 6), one function per transition, each
// answering what it did or `changed` (the item moved on since it was read: a rerun decides).
import { type AttributeValue, DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { STATUS } from '../call-state';
import { conditionally, type IdempotencyTable } from './table';

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
 * completer gave up on is closed (`toTombstone`), on the claim it was given up on and read with (a retry
 * that took it over meanwhile is live: it stays). Nothing would finish it but that retry, and its domain
 * items go with the tenant. Without the app's tables a stalled call is kept, like every call in flight:
 * the kept domain may still come to show its effect.
 */
export function closeStalled(
  table: IdempotencyTable,
  recordKey: string,
  claimId: string,
): Promise<'erased' | 'changed'> {
  return toTombstone(table, recordKey, '#status = :inProgress AND #claim = :claim AND #stalled = :claim', {
    ':inProgress': { S: STATUS.inProgress },
    ':claim': { S: claimId },
  });
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
