import { type AttributeValue, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { DEFAULT_RECORD_ATTRIBUTES as ATTR } from '../idempotency/protocol/record';

/** A condition the Scan adds to the tenant's (`AND`ed), with its names and values. */
export interface ScanFilter {
  readonly expression: string;
  readonly names: Readonly<Record<string, string>>;
  readonly values: Readonly<Record<string, AttributeValue>>;
}

/**
 * Every item of `tenant` in the idempotency table, by a parallel, paginated, consistent Scan filtered on
 * the tenant (and `filter`), each handed to `onItem` (unmarshalled) in page order — and, `unattributed`,
 * every item with no tenant too (Powertools' handler writes none: it may be any tenant's). The same Scan,
 * the same read units: a filter does not change what a Scan reads. The record key is a
 * hash and an index by tenant would add a write unit to every call, so erase and `retrysafe calls` pay
 * here instead. Every segment runs to its end; the first failure is thrown after (a rerun resumes).
 * Returns the read units the Scan consumed.
 */
export async function scanTenantRecords(
  client: DynamoDBClient,
  table: string,
  tenant: string,
  {
    segments,
    filter,
    unattributed = false,
  }: { readonly segments: number; readonly filter?: ScanFilter; readonly unattributed?: boolean },
  onItem: (item: Record<string, unknown>) => unknown,
): Promise<number> {
  let readUnits = 0;
  const onTenant = unattributed ? '(#tenant = :tenant OR attribute_not_exists(#tenant))' : '#tenant = :tenant';
  async function scanSegment(segment: number): Promise<void> {
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await client.send(
        new ScanCommand({
          TableName: table,
          Segment: segment,
          TotalSegments: segments,
          FilterExpression: filter ? `${onTenant} AND ${filter.expression}` : onTenant,
          ExpressionAttributeNames: { '#tenant': ATTR.tenant, ...filter?.names },
          ExpressionAttributeValues: { ':tenant': { S: tenant }, ...filter?.values },
          ExclusiveStartKey: startKey,
          ConsistentRead: true,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      readUnits += page.ConsumedCapacity?.CapacityUnits ?? 0;
      for (const raw of page.Items ?? []) await onItem(unmarshall(raw));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }
  const settled = await Promise.allSettled(Array.from({ length: segments }, (_, segment) => scanSegment(segment)));
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  return readUnits;
}
