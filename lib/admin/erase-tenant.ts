import { IdempotencyRecordStatus } from '@aws-lambda-powertools/idempotency';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  QueryCommand,
} from '@aws-sdk/client-dynamodb';
import { IDEMPOTENCY_ATTRIBUTES as ATTR, TENANT_INDEX_NAME } from '../store/tables';

export interface ErasureReport {
  /** Records deleted. */
  readonly deleted: number;
  /** Records left because a call still holds them (its lock has not expired): erase again later. */
  readonly inFlight: number;
}

/**
 * Admin operation: deletes one tenant's idempotency records (for example on an erasure request), found
 * through the keys-only `by-tenant` index. A record whose call is still running is left alone — deleting it would
 * let a retry run beside that call — and counted in `inFlight`; a running call can never re-create an
 * erased record, since storing a result is conditional on its own claim.
 *
 * The index is eventually consistent on DynamoDB: run it again after in-flight calls have finished.
 * Receipts stored on domain items (an invoice's refund) are the domain's to erase.
 */
export async function eraseTenantRecords(
  client: DynamoDBClient,
  tableName: string,
  tenant: string,
): Promise<ErasureReport> {
  let deleted = 0;
  let inFlight = 0;
  let startKey: QueryCommand['input']['ExclusiveStartKey'];
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: TENANT_INDEX_NAME,
        KeyConditionExpression: '#tenant = :tenant',
        ExpressionAttributeNames: { '#tenant': ATTR.tenant },
        ExpressionAttributeValues: { ':tenant': { S: tenant } },
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      try {
        await client.send(
          new DeleteItemCommand({
            TableName: tableName,
            Key: { [ATTR.key]: item[ATTR.key]! },
            ConditionExpression:
              'attribute_exists(#id) AND (#status <> :inprogress OR attribute_not_exists(#lock) OR #lock < :now)',
            ExpressionAttributeNames: { '#id': ATTR.key, '#status': ATTR.status, '#lock': ATTR.inProgressExpiry },
            ExpressionAttributeValues: {
              ':inprogress': { S: IdempotencyRecordStatus.INPROGRESS },
              ':now': { N: String(Date.now()) },
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        deleted += 1;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        if (error.Item) inFlight += 1; // still held; a missing item was already gone
      }
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return { deleted, inFlight };
}
