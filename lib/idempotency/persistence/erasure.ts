// Erase's writes to the idempotency table (docs/state-machine.md, rule 6), one function per transition,
// each answering 'erased' or 'changed' (the item moved on since it was read: a rerun decides). A module of
// their own, so that the functions that never erase do not bundle them.
import { type AttributeValue, DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { STATUS } from '../call-state';
import { type RecordTable, conditionally as write } from './conditional-write';
import { stillHeldBy } from './intents';

export type Erased = 'erased' | 'changed';

/** Where erase writes: the idempotency table and its attribute names. */
export type ErasureTable = RecordTable;

async function conditionally(
  client: RecordTable['client'],
  command: UpdateItemCommand | DeleteItemCommand,
): Promise<Erased> {
  return (await write(client, command)) === 'done' ? 'erased' : 'changed';
}

/**
 * The tombstone's write, on `condition`: the outcome, the arguments, the hashes and the claims go (no
 * write conditioned on a claim — a late store, a park — can touch a tombstone, and no claim or takeover
 * passes it until its TTL).
 */
function toTombstone(
  { client, tableName, attr }: ErasureTable,
  key: string,
  condition: string,
  values: Record<string, AttributeValue>,
): Promise<Erased> {
  return conditionally(
    client,
    new UpdateItemCommand({
      TableName: tableName,
      Key: { [attr.key]: { S: key } },
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
}

/**
 * completed → erased (`toTombstone`). `changed` when the record is no longer completed (deleted by its
 * TTL, or claimed again).
 */
export function tombstone(table: ErasureTable, key: string): Promise<Erased> {
  return toTombstone(table, key, '#status = :completed', { ':completed': { S: STATUS.completed } });
}

/**
 * stalled → erased, with the app's tables (`--include-domain`): a call the completer gave up on is
 * closed (`toTombstone`), on the claim it was given up on and read with (a retry that took it over
 * meanwhile is live: it stays). Nothing would finish it but that retry, and its domain items go with the
 * tenant. Without the app's tables a stalled call is kept, like every call in flight: the kept domain may
 * still come to show its effect.
 */
export function closeStalled(table: ErasureTable, key: string, claim: string): Promise<Erased> {
  return toTombstone(table, key, '#status = :inProgress AND #claim = :claim AND #stalled = :claim', {
    ':inProgress': { S: STATUS.inProgress },
    ':claim': { S: claim },
  });
}

/** expired → absent, ahead of DynamoDB's TTL sweep; `changed` when its expiry moved on meanwhile. */
export function deleteExpired({ client, tableName, attr }: ErasureTable, key: string, nowMs: number): Promise<Erased> {
  return conditionally(
    client,
    new DeleteItemCommand({
      TableName: tableName,
      Key: { [attr.key]: { S: key } },
      ConditionExpression: '#expiry < :now',
      ExpressionAttributeNames: { '#expiry': attr.expiry },
      ExpressionAttributeValues: { ':now': { N: String(nowMs / 1000) } },
    }),
  );
}

/**
 * A dedupe window's intent deleted unless its holder changed since it was read (`from`): an intent taken
 * over meanwhile stays.
 */
export function deleteIntent(
  { client, tableName, attr }: ErasureTable,
  key: string,
  from: { recordKey: string; claimId: string | undefined },
): Promise<Erased> {
  return conditionally(
    client,
    new DeleteItemCommand({
      TableName: tableName,
      Key: marshall({ [attr.key]: key }),
      ConditionExpression: stillHeldBy(from),
      ExpressionAttributeNames: { '#owner': attr.intentOwner, '#claim': attr.claim },
      ExpressionAttributeValues: marshall(
        { ':from': from.recordKey, ':fromClaim': from.claimId },
        { removeUndefinedValues: true },
      ),
    }),
  );
}
