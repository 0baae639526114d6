import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  type PutItemCommand,
  type UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { RecordAttributes } from './record';
import { type CallRecord, callRecordOf, STATUS } from './record';

/** Where the protocol reads and writes: the idempotency table, its client and its attribute names. */
export interface IdempotencyTable {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly attributes: RecordAttributes;
}

/** The call record under `recordKey`, read consistently, or undefined (none, or not a call record). */
export async function readCallRecord(table: IdempotencyTable, recordKey: string): Promise<CallRecord | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({
      TableName: table.tableName,
      Key: { [table.attributes.key]: { S: recordKey } },
      ConsistentRead: true,
    }),
  );
  return Item ? callRecordOf(unmarshall(Item), table.attributes) : undefined;
}

/**
 * One conditional write: `passed` (with the item after it, when the command asks for it), or `failed`
 * when its condition did not hold — with the item as it was, when the command asks for it
 * (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`: the refusal and the item in one round trip). Any
 * other failure throws: the caller decides what an outage means where it is.
 */
export async function conditionally(
  client: DynamoDBClient,
  command: PutItemCommand | UpdateItemCommand | DeleteItemCommand,
): Promise<{ readonly passed: boolean; readonly item: Record<string, unknown> | undefined }> {
  try {
    const output = await client.send(command as UpdateItemCommand);
    return { passed: true, item: output?.Attributes ? unmarshall(output.Attributes) : undefined };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return { passed: false, item: error.Item ? unmarshall(error.Item) : undefined };
  }
}

/** A condition with the names and values it uses. */
export interface Condition {
  readonly expression: string;
  readonly names: Record<string, string>;
  readonly values: Record<string, AttributeValue>;
}

/**
 * The one DynamoDB condition for "this claim's attempt is over" — `classify`'s `abandoned` (or
 * `stalled`), on the claim that was read:
 *
 *   INPROGRESS, held by `claimId` ──▶ its lock ended before `nowMs` ──▶ and its TTL is not before `notBeforeS`
 *
 * A takeover asks `notBeforeS` = its own lock's end (no lock may end after its record's TTL); the
 * completer giving up asks now (the record has not expired).
 */
export function lockEndedOn(
  attr: RecordAttributes,
  claimId: string,
  { nowMs, notBeforeS }: { readonly nowMs: number; readonly notBeforeS: number },
): Condition {
  return {
    expression: '#status = :inProgress AND #claim = :claim AND #lock < :nowMs AND #expiry >= :notBeforeS',
    names: { '#status': attr.status, '#claim': attr.claim, '#lock': attr.inProgressExpiry, '#expiry': attr.expiry },
    values: {
      ':inProgress': { S: STATUS.inProgress },
      ':claim': { S: claimId },
      ':nowMs': { N: String(nowMs) },
      ':notBeforeS': { N: String(notBeforeS) },
    },
  };
}
