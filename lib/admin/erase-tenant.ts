import { IdempotencyRecordStatus } from '@aws-lambda-powertools/idempotency';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { IDEMPOTENCY_ATTRIBUTES as ATTR, type DomainTableId, TABLES, type TableId, tableName } from '../store/tables';

/** What an erase asks for. */
export interface EraseRequest {
  readonly tenant: string;
  /**
   * Also erase the tenant's invoices, tickets and outbox items (email bodies are personal data). The
   * ledger — money movements — is kept: it is the record of what the provider did.
   * @default false
   */
  readonly includeDomain?: boolean;
  /**
   * Count only: nothing is deleted.
   * @default false
   */
  readonly dryRun?: boolean;
  /**
   * Parallel segments of the idempotency table's Scan.
   * @default 4
   */
  readonly segments?: number;
}

/** What an erase did to one table. */
export interface TableErasure {
  /** The tenant's items found. */
  readonly found: number;
  /** Deleted now (0 on a dry run, and on a second run). */
  readonly deleted: number;
  /**
   * Idempotency records left because their call still runs (a live lock), or a dedupe window's intent
   * is still open (at most its window): erase again later.
   */
  readonly inFlight: number;
  /** Read capacity units the search consumed (a Scan of the idempotency table, a Query of the others). */
  readonly readUnits: number;
}

export interface ErasureReport {
  readonly tenant: string;
  readonly dryRun: boolean;
  readonly tables: Partial<Record<TableId, TableErasure>>;
  /** Tables never erased, and why. */
  readonly kept: Partial<Record<TableId, string>>;
}

/** The domain tables an erase may empty for a tenant (keyed by tenant, so one Query finds them). */
const ERASABLE_DOMAIN_TABLES = ['invoices', 'tickets', 'outbox'] as const satisfies readonly DomainTableId[];

/**
 * Admin operation: erases one tenant's data, as an erasure request asks — its idempotency records (the
 * arguments a claim carries in flight included) and, with `includeDomain`, its invoices, tickets and
 * outbox items. Safe to run again: what is gone stays gone, a second run finds nothing, and a record
 * whose call is still running is left (deleting it would let a retry run beside that call) and reported.
 *
 * How it finds the idempotency records, by cost: a parallel, paginated Scan filtered on the tenant. It
 * reads the whole table (records live 24 h), a few read units per thousand records, a few times a year —
 * instead of a `by-tenant` index that would add a write unit to every call. Measured in the README.
 */
export async function eraseTenant(
  client: DynamoDBClient,
  request: EraseRequest,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ErasureReport> {
  const dryRun = request.dryRun ?? false;
  const tables: Partial<Record<TableId, TableErasure>> = {
    idempotency: await eraseIdempotencyRecords(client, tableName('idempotency', env), request.tenant, {
      dryRun,
      segments: request.segments ?? 4,
    }),
  };
  if (request.includeDomain) {
    for (const id of ERASABLE_DOMAIN_TABLES) {
      tables[id] = await eraseDomainItems(client, id, tableName(id, env), request.tenant, dryRun);
    }
  }
  return { tenant: request.tenant, dryRun, tables, kept: { ledger: 'money movements are kept: the provider record' } };
}

async function eraseIdempotencyRecords(
  client: DynamoDBClient,
  table: string,
  tenant: string,
  { dryRun, segments }: { dryRun: boolean; segments: number },
): Promise<TableErasure> {
  const totals = { found: 0, deleted: 0, inFlight: 0, readUnits: 0 };
  async function scanSegment(segment: number): Promise<void> {
    let startKey: ScanCommand['input']['ExclusiveStartKey'];
    do {
      const page = await client.send(
        new ScanCommand({
          TableName: table,
          Segment: segment,
          TotalSegments: segments,
          FilterExpression: '#tenant = :tenant',
          ProjectionExpression: '#id, #status, #lock, #owner, #expiry',
          ExpressionAttributeNames: {
            '#tenant': ATTR.tenant,
            '#id': ATTR.key,
            '#status': ATTR.status,
            '#lock': ATTR.inProgressExpiry,
            '#owner': ATTR.intentOwner,
            '#expiry': ATTR.expiry,
          },
          ExpressionAttributeValues: { ':tenant': { S: tenant } },
          ExclusiveStartKey: startKey,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      totals.readUnits += page.ConsumedCapacity?.CapacityUnits ?? 0;
      for (const item of page.Items ?? []) {
        totals.found += 1;
        const running =
          (item[ATTR.status]?.S === IdempotencyRecordStatus.INPROGRESS &&
            Number(item[ATTR.inProgressExpiry]?.N ?? 0) >= Date.now()) ||
          (item[ATTR.intentOwner] !== undefined && Number(item[ATTR.expiry]?.N ?? 0) >= Date.now() / 1000);
        if (dryRun) {
          if (running) totals.inFlight += 1;
          continue;
        }
        const outcome = await deleteUnlessRunning(client, table, item[ATTR.key]!.S!);
        if (outcome === 'deleted') totals.deleted += 1;
        if (outcome === 'running') totals.inFlight += 1;
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }
  // Every segment runs to its end; the first failure is reported after (a rerun resumes).
  const settled = await Promise.allSettled(Array.from({ length: segments }, (_, segment) => scanSegment(segment)));
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  return totals;
}

/** Deletes a record unless a call still holds it; a record already gone counts as neither. */
async function deleteUnlessRunning(
  client: DynamoDBClient,
  table: string,
  key: string,
): Promise<'deleted' | 'running' | 'gone'> {
  try {
    await client.send(
      new DeleteItemCommand({
        TableName: table,
        Key: { [ATTR.key]: { S: key } },
        // Not a claim whose call still runs, nor a dedupe window's intent still open (a fresh key inside
        // the window would otherwise run beside the call that owns it).
        ConditionExpression:
          'attribute_exists(#id) AND (#status <> :inprogress OR attribute_not_exists(#lock) OR #lock < :now)' +
          ' AND (attribute_not_exists(#owner) OR #expiry < :nowSeconds)',
        ExpressionAttributeNames: {
          '#id': ATTR.key,
          '#status': ATTR.status,
          '#lock': ATTR.inProgressExpiry,
          '#owner': ATTR.intentOwner,
          '#expiry': ATTR.expiry,
        },
        ExpressionAttributeValues: {
          ':inprogress': { S: IdempotencyRecordStatus.INPROGRESS },
          ':now': { N: String(Date.now()) },
          ':nowSeconds': { N: String(Math.floor(Date.now() / 1000)) },
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return 'deleted';
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return error.Item ? 'running' : 'gone';
  }
}

/** A domain table is keyed by (tenant, id): one Query finds the tenant's items. */
async function eraseDomainItems(
  client: DynamoDBClient,
  id: DomainTableId,
  table: string,
  tenant: string,
  dryRun: boolean,
): Promise<TableErasure> {
  const definition = TABLES[id] as { partitionKey: { name: string }; sortKey?: { name: string } };
  const sortKey = definition.sortKey!.name;
  const totals = { found: 0, deleted: 0, inFlight: 0, readUnits: 0 };
  let startKey: QueryCommand['input']['ExclusiveStartKey'];
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: '#tenant = :tenant',
        ProjectionExpression: '#tenant, #sort',
        ExpressionAttributeNames: { '#tenant': definition.partitionKey.name, '#sort': sortKey },
        ExpressionAttributeValues: { ':tenant': { S: tenant } },
        ExclusiveStartKey: startKey,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    totals.readUnits += page.ConsumedCapacity?.CapacityUnits ?? 0;
    for (const item of page.Items ?? []) {
      totals.found += 1;
      if (dryRun) continue;
      await client.send(new DeleteItemCommand({ TableName: table, Key: item }));
      totals.deleted += 1;
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return totals;
}
