import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { type ErasedTable, eraseRecord, isCallInFlight } from '../idempotency';
import { IDEMPOTENCY_ATTRIBUTES as ATTR, appTableName, idempotencyTableName, type TableSchema } from '../store/tables';
import { scanTenantRecords } from './tenant-scan';

/** What an erase asks for. */
export interface EraseRequest {
  readonly tenant: string;
  /**
   * Also erase the tenant's items in the app's own tables — those whose schema declares a
   * `tenantAttribute`; a table declared `keptByErase` is kept, and the report says why.
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
  /** By table: `idempotency`, then the app's tables by their names in the tools' `access`. */
  readonly tables: Readonly<Record<string, TableErasure>>;
  /** The app's tables not erased, and why (kept on purpose, no tenant attribute, calls in flight). */
  readonly kept: Readonly<Record<string, string>>;
}

/**
 * The app's own tables as erase sees them: by their names in the tools' `access`, each schema saying
 * where the tenant is (`tenantAttribute`), which attributes stamp the calls that wrote an item
 * (`callStamps`), or why the table is kept (`keptByErase`). The table's name at run time is
 * `<NAME>_TABLE`, else the schema's `defaultName`, else its name.
 */
export type ErasableTables = Readonly<Record<string, TableSchema>>;

/** Why erase passes over a table that declares neither a tenant attribute nor a reason to keep it. */
export const NO_TENANT_ATTRIBUTE = 'not erased: its schema declares no tenantAttribute (nor keptByErase)';

/**
 * Admin operation: erases one tenant's data, as an erasure request asks — its idempotency records (the
 * arguments a claim carries in flight included) and, with `includeDomain`, its items in the app's own
 * tables (`tables`: each schema says where the tenant is). Safe to run again: what is gone stays gone, a
 * second run finds nothing, and a record whose call is still running is left (deleting it would let a
 * retry run beside that call) and reported — rule 6 of docs/state-machine.md.
 *
 * How it finds the idempotency records, by cost: a parallel, paginated Scan filtered on the tenant. It
 * reads the whole table (records live 24 h), a few read units per thousand records, a few times a year —
 * instead of a `by-tenant` index that would add a write unit to every call. Measured in docs/operations.md.
 */
export async function eraseTenant(
  client: DynamoDBClient,
  request: EraseRequest,
  env: NodeJS.ProcessEnv = process.env,
  domainTables: ErasableTables = {},
): Promise<ErasureReport> {
  const dryRun = request.dryRun ?? false;
  const tables: Record<string, TableErasure> = {
    idempotency: await eraseIdempotencyRecords(client, idempotencyTableName(env), request.tenant, {
      dryRun,
      segments: request.segments ?? 4,
      closeStalled: request.includeDomain ?? false,
    }),
  };
  const idempotency: ErasedTable = { client, tableName: idempotencyTableName(env), attributes: ATTR };
  const kept: Record<string, string> = {};
  const erasable: Array<[string, TableSchema & { readonly tenantAttribute: string }]> = [];
  for (const [name, schema] of Object.entries(domainTables)) {
    if (schema.keptByErase !== undefined) kept[name] = schema.keptByErase;
    else if (schema.tenantAttribute === undefined) kept[name] = NO_TENANT_ATTRIBUTE;
    else erasable.push([name, { ...schema, tenantAttribute: schema.tenantAttribute }]);
  }
  const inFlight = tables.idempotency?.inFlight ?? 0;
  if (request.includeDomain && inFlight > 0) {
    // A call in flight may still commit to any of the tenant's items (the invoice it refunds, the
    // ticket its retry creates under a taken-over key): the domain waits until every call settled.
    for (const [name] of erasable)
      kept[name] = `deferred: ${inFlight} call(s) in flight; erase again once they settled`;
  } else if (request.includeDomain) {
    for (const [name, schema] of erasable) {
      tables[name] = await eraseDomainItems(client, schema, appTableName(name, schema, env), request.tenant, {
        dryRun,
        idempotency,
      });
    }
  }
  return { tenant: request.tenant, dryRun, tables, kept };
}

/**
 * The tenant's idempotency records, found by a Scan, each erased by the core (`eraseRecord`: a completed
 * call becomes a tombstone, a call in flight is kept and reported, an intent goes with its settled holder).
 */
async function eraseIdempotencyRecords(
  client: DynamoDBClient,
  table: string,
  tenant: string,
  { dryRun, segments, closeStalled }: { dryRun: boolean; segments: number; closeStalled: boolean },
): Promise<TableErasure> {
  const totals = { found: 0, deleted: 0, inFlight: 0, readUnits: 0 };
  const idempotency: ErasedTable = { client, tableName: table, attributes: ATTR };
  totals.readUnits = await scanTenantRecords(client, table, tenant, { segments }, async (item) => {
    totals.found += 1;
    const outcome = await eraseRecord(idempotency, item, { dryRun, closeStalled });
    if (outcome === 'erased') totals.deleted += 1;
    if (outcome === 'in_flight') totals.inFlight += 1;
  });
  return totals;
}

/**
 * An app table's items of one tenant — one Query when the tenant is its partition key, else a Scan
 * filtered on the tenant attribute. An item a call still in flight stamped is kept and reported (that
 * call would write it again, or deliver it); every other item is deleted — on the stamps it was read
 * with, so a commit that lands meanwhile keeps it.
 */
async function eraseDomainItems(
  client: DynamoDBClient,
  schema: TableSchema & { readonly tenantAttribute: string },
  table: string,
  tenant: string,
  { dryRun, idempotency }: { readonly dryRun: boolean; readonly idempotency: ErasedTable },
): Promise<TableErasure> {
  const keyNames = [schema.partitionKey.name, ...(schema.sortKey ? [schema.sortKey.name] : [])];
  const stamps = schema.callStamps ?? [];
  const byQuery = schema.tenantAttribute === schema.partitionKey.name;
  const totals = { found: 0, deleted: 0, inFlight: 0, readUnits: 0 };
  const inFlightByCall = new Map<string, Promise<boolean>>();
  function inFlightCall(callId: string): Promise<boolean> {
    let inFlight = inFlightByCall.get(callId);
    if (inFlight === undefined) {
      inFlight = isCallInFlight(idempotency, callId);
      inFlightByCall.set(callId, inFlight);
    }
    return inFlight;
  }
  // Each attribute read once (the tenant attribute is often the partition key too).
  const read = [...new Set([schema.tenantAttribute, ...keyNames, ...stamps])];
  const placeholder = (name: string) => `#a${read.indexOf(name)}`;
  const search = {
    TableName: table,
    ProjectionExpression: read.map(placeholder).join(', '),
    ExpressionAttributeNames: Object.fromEntries(read.map((name) => [placeholder(name), name])),
    ExpressionAttributeValues: { ':tenant': { S: tenant } },
    ConsistentRead: true,
    ReturnConsumedCapacity: 'TOTAL' as const,
  };
  const onTenant = `${placeholder(schema.tenantAttribute)} = :tenant`;
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = byQuery
      ? await client.send(
          new QueryCommand({ ...search, KeyConditionExpression: onTenant, ExclusiveStartKey: startKey }),
        )
      : await client.send(new ScanCommand({ ...search, FilterExpression: onTenant, ExclusiveStartKey: startKey }));
    totals.readUnits += page.ConsumedCapacity?.CapacityUnits ?? 0;
    for (const item of page.Items ?? []) {
      totals.found += 1;
      const writers = stamps.map((name) => item[name]?.S);
      let inFlight = false;
      for (const writer of writers) {
        if (writer !== undefined && (await inFlightCall(writer))) inFlight = true;
      }
      if (inFlight) {
        totals.inFlight += 1;
        continue;
      }
      if (dryRun) continue;
      const values: Record<string, AttributeValue> = {};
      const conditions = stamps.map((_, i) => {
        if (writers[i] === undefined) return `attribute_not_exists(#by${i})`;
        values[`:by${i}`] = { S: writers[i]! };
        return `#by${i} = :by${i}`;
      });
      try {
        await client.send(
          new DeleteItemCommand({
            TableName: table,
            Key: Object.fromEntries(keyNames.map((name) => [name, item[name]!])),
            ...(conditions.length > 0
              ? {
                  ConditionExpression: conditions.join(' AND '),
                  ExpressionAttributeNames: Object.fromEntries(stamps.map((name, i) => [`#by${i}`, name])),
                  ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
                }
              : {}),
          }),
        );
        totals.deleted += 1;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        totals.inFlight += 1; // written meanwhile: a rerun decides
      }
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return totals;
}
