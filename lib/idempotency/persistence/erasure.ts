// Erase's writes to the idempotency table (docs/state-machine.md, rule 6), one function per transition,
// each answering 'erased' or 'changed' (the item moved on since it was read: a rerun decides). A module of
// their own, so that the functions that never erase do not bundle them.
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { STATUS } from '../call-state';
import type { RecordAttributes } from '../record';
import { stillHeldBy } from './intents';

export type Erased = 'erased' | 'changed';

/** Where erase writes: the idempotency table and its attribute names. */
export interface ErasureTable {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly attr: RecordAttributes;
}

async function conditionally(client: DynamoDBClient, command: UpdateItemCommand | DeleteItemCommand): Promise<Erased> {
  try {
    await client.send(command as UpdateItemCommand);
    return 'erased';
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return 'changed';
    throw error;
  }
}

/**
 * completed → erased: the outcome, the arguments, the hashes and the claim go (no write conditioned on a
 * claim — a late store, a park — can touch a tombstone, and no claim or takeover passes it until its TTL).
 * `changed` when the record is no longer completed (deleted by its TTL, or claimed again).
 */
export function tombstone({ client, tableName, attr }: ErasureTable, key: string): Promise<Erased> {
  return conditionally(
    client,
    new UpdateItemCommand({
      TableName: tableName,
      Key: { [attr.key]: { S: key } },
      UpdateExpression: 'SET #status = :erased REMOVE #data, #call, #validation, #downstream, #claim',
      ConditionExpression: '#status = :completed',
      ExpressionAttributeNames: {
        '#status': attr.status,
        '#data': attr.data,
        '#call': attr.call,
        '#validation': attr.validation,
        '#downstream': attr.downstreamKey,
        '#claim': attr.claim,
      },
      ExpressionAttributeValues: { ':erased': { S: STATUS.erased }, ':completed': { S: STATUS.completed } },
    }),
  );
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
