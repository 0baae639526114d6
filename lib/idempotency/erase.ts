import { BatchWriteItemCommand, type DynamoDBClient, QueryCommand, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { IDEMPOTENCY_ATTRIBUTES as ATTR, TABLES } from '../store/tables';

const BATCH = 25; // BatchWriteItem's limit

/**
 * Deletes every idempotency record of one tenant (for example on an erasure request), found through
 * the keys-only `by-tenant` index. Returns how many records were deleted. Receipts stored on domain
 * items (an invoice's refund) are the domain's to erase.
 */
export async function eraseTenantRecords(client: DynamoDBClient, tableName: string, tenant: string): Promise<number> {
  const index = TABLES.idempotency.globalSecondaryIndexes[0];
  let deleted = 0;
  let startKey: QueryCommand['input']['ExclusiveStartKey'];
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: index.indexName,
        KeyConditionExpression: '#tenant = :tenant',
        ExpressionAttributeNames: { '#tenant': ATTR.tenant },
        ExpressionAttributeValues: { ':tenant': { S: tenant } },
        ExclusiveStartKey: startKey,
      }),
    );
    const keys = (page.Items ?? []).map((item) => ({ [ATTR.key]: item[ATTR.key]! }));
    for (let i = 0; i < keys.length; i += BATCH) {
      let requests: WriteRequest[] = keys.slice(i, i + BATCH).map((Key) => ({ DeleteRequest: { Key } }));
      for (let attempt = 0; requests.length > 0; attempt++) {
        // Unprocessed items mean throttling: back off before sending them again.
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * 2 ** attempt)));
        const result = await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: requests } }));
        const unprocessed = result.UnprocessedItems?.[tableName] ?? [];
        deleted += requests.length - unprocessed.length;
        requests = unprocessed.flatMap((r) =>
          r.DeleteRequest?.Key ? [{ DeleteRequest: { Key: r.DeleteRequest.Key } }] : [],
        );
      }
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return deleted;
}
