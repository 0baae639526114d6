import { type AttributeValue, type DynamoDBClient, QueryCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { TableAccess } from '../api/access';
import {
  callInFlight,
  deleteOnStampsRead,
  eraseItem,
  type IdempotencyTableOptions,
  type KeptCall,
  unattributedItem,
} from '../idempotency';
import { DEFAULT_RECORD_ATTRIBUTES as ATTR } from '../idempotency/protocol/record';
import { appTableName, idempotencyTableName, type TableSchema } from '../store/tables';
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

/** What an erase left for later in one table: erase again (`ErasureReport.retryAfter`) to finish it. */
export interface DeferredErasure {
  /** `idempotency`, or an app table by its name in the tools' `access`. */
  readonly table: string;
  /**
   * `calls_in_flight`: an app table not searched at all — a call in flight whose tool's `access` names it
   * (or whose tool erase cannot tell) may still commit to it; `items_kept`: the table was searched and
   * items were kept — idempotency records of calls in flight (and the intents they hold), an app item
   * stamped by a call in flight, or one written while erase deleted it.
   */
  readonly reason: 'calls_in_flight' | 'items_kept';
  /** The calls in flight that hold it back. */
  readonly calls: number;
  /** The items kept; undefined for a table not searched. */
  readonly items?: number;
}

export interface ErasureReport {
  readonly tenant: string;
  readonly dryRun: boolean;
  /** By table: `idempotency`, then the app's tables by their names in the tools' `access`. */
  readonly tables: Readonly<Record<string, TableErasure>>;
  /** The app's tables not erased, and why (kept on purpose, no tenant attribute, calls in flight). */
  readonly kept: Readonly<Record<string, string>>;
  /**
   * Nothing was left for later: every item of the tenant asked for is erased (a dry run: would be).
   * False when `deferred` names a table — erase again.
   */
  readonly complete: boolean;
  /** What was left for later, by table. Empty when `complete`. */
  readonly deferred: readonly DeferredErasure[];
  /**
   * Idempotency records with no tenant, which erase cannot tell whose they are (Powertools' handler wrote
   * them: its layer writes no tenant, its key names none) and so never writes to — rule 6: assumed to be
   * the tenant's. `inFlight`: calls that may still commit anywhere, so every app table waits (counted in
   * `callsInFlight` too); `completed`: results kept until their TTL. Either makes the erase not `complete`:
   * erase again at `retryAfter`, once they settled or expired (or the Powertools handler left the table).
   */
  readonly unattributed: { readonly inFlight: number; readonly completed: number };
  /** The tenant's calls in flight erase kept, by state (`KeptCall.state`). */
  readonly callsInFlight: Readonly<Partial<Record<KeptCall['state'], number>>>;
  /**
   * When to erase again (ISO 8601, UTC): the earliest time a call that holds something back can change
   * by itself — a live call's lock end, the completer's next look at an abandoned one. Undefined when
   * `complete`, or when no call that holds something back will change by itself (a stalled one: a resend
   * with its key, or erase with `includeDomain`, settles it; a record erase cannot read).
   */
  readonly retryAfter?: string;
}

/**
 * The tools erase knows, each with the tables its code may write: its `access` (what the stack grants
 * it). A call in flight of a tool not listed (a tool a deploy dropped), of a tool without `access`, or
 * whose record erase cannot read, may commit anywhere: every app table waits for it.
 */
export type ErasingTools = readonly { readonly name: string; readonly access?: TableAccess }[];

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
 * retry run beside that call) and reported — rule 6 of docs/state-machine.md. An app table waits only for
 * the calls in flight that may still commit to it: those whose tool's `access` names it (`tools`), and
 * every call whose tool erase cannot tell. The report says what was left and when to erase again.
 *
 * How it finds the idempotency records, by cost: a parallel, paginated Scan filtered on the tenant — or no
 * tenant (a Powertools handler's records, which may be the tenant's: `unattributed`, never written). It
 * reads the whole table either way (records live 24 h), a few read units per thousand records, a few times a year —
 * instead of a `by-tenant` index that would add a write unit to every call. Measured in docs/operations.md.
 */
export async function eraseTenant(
  client: DynamoDBClient,
  request: EraseRequest,
  env: NodeJS.ProcessEnv = process.env,
  domainTables: ErasableTables = {},
  tools?: ErasingTools,
): Promise<ErasureReport> {
  const dryRun = request.dryRun ?? false;
  const idempotency = {
    client,
    tableName: idempotencyTableName(env),
    attributes: ATTR,
  } satisfies IdempotencyTableOptions;
  const records = await eraseIdempotencyRecords(idempotency, request.tenant, {
    dryRun,
    segments: request.segments ?? 4,
    closeStalled: request.includeDomain ?? false,
  });
  const tables: Record<string, TableErasure> = { idempotency: records.totals };
  const kept: Record<string, string> = {};
  const erasable: Array<[string, TableSchema & { readonly tenantAttribute: string }]> = [];
  for (const [name, schema] of Object.entries(domainTables)) {
    if (schema.keptByErase !== undefined) kept[name] = schema.keptByErase;
    else if (schema.tenantAttribute === undefined) kept[name] = NO_TENANT_ATTRIBUTE;
    else erasable.push([name, { ...schema, tenantAttribute: schema.tenantAttribute }]);
  }
  const deferred: DeferredErasure[] = [];
  const holding = new Map(records.kept);
  let changedMeanwhile = false;
  const unattributed = records.unattributed;
  const keptItems = records.totals.inFlight + unattributed.inFlight + unattributed.completed;
  if (keptItems > 0) {
    deferred.push({ table: 'idempotency', reason: 'items_kept', calls: records.kept.size, items: keptItems });
  }
  if (request.includeDomain) {
    const accessByTool = tools && new Map(tools.map((tool) => [tool.name, tool.access]));
    for (const [name, schema] of erasable) {
      // A call in flight may still commit to the items of the tables its tool accesses (the invoice it
      // refunds, the ticket its retry creates): those wait until it settled; the others are erased now.
      const waitsFor = [...records.kept.values()].filter((call) => mayWrite(call, name, accessByTool));
      if (waitsFor.length > 0) {
        kept[name] = `deferred: ${waitsFor.length} call(s) in flight; erase again once they settled`;
        deferred.push({ table: name, reason: 'calls_in_flight', calls: waitsFor.length });
        continue;
      }
      const items = await eraseDomainItems(client, schema, appTableName(name, schema, env), request.tenant, {
        dryRun,
        idempotency,
      });
      tables[name] = items.totals;
      if (items.totals.inFlight > 0) {
        deferred.push({ table: name, reason: 'items_kept', calls: items.stampedBy.size, items: items.totals.inFlight });
      }
      for (const [key, call] of items.stampedBy) holding.set(key, call);
      changedMeanwhile ||= items.changed > 0;
    }
  }
  const nowMs = Date.now();
  const times = [...holding.values()].flatMap((call) => (call.changesAtMs === undefined ? [] : [call.changesAtMs]));
  if (changedMeanwhile) times.push(nowMs); // written while erase deleted it: a rerun decides, at once
  times.push(...unattributed.completedUntilMs);
  const callsInFlight: Partial<Record<KeptCall['state'], number>> = {};
  for (const call of records.kept.values()) callsInFlight[call.state] = (callsInFlight[call.state] ?? 0) + 1;
  const retryAfterMs = deferred.length > 0 && times.length > 0 ? Math.max(nowMs, Math.min(...times)) : undefined;
  return {
    tenant: request.tenant,
    dryRun,
    tables,
    kept,
    complete: deferred.length === 0,
    deferred,
    unattributed: { inFlight: unattributed.inFlight, completed: unattributed.completed },
    callsInFlight,
    ...(retryAfterMs === undefined ? {} : { retryAfter: new Date(retryAfterMs).toISOString() }),
  };
}

/**
 * Whether a call in flight may still commit to the app table `name`: its tool's `access` names it — or
 * erase cannot tell (no tools given, a tool not among them or without `access`, a record it cannot read).
 */
function mayWrite(
  call: KeptCall,
  name: string,
  accessByTool: ReadonlyMap<string, TableAccess | undefined> | undefined,
): boolean {
  const access = call.tool === undefined ? undefined : accessByTool?.get(call.tool);
  return access === undefined || Object.hasOwn(access, name);
}

/**
 * The tenant's idempotency records, found by a Scan, each erased by the core (`eraseItem`: a completed
 * call becomes a tombstone, a call in flight is kept and reported, an intent goes with its settled holder),
 * and the calls in flight kept, by record key (an intent's holder once). The same Scan finds the records
 * with no tenant (`unattributedItem`): never written to, each in flight kept as the tenant's (its tool
 * unknown), each completed one counted with its TTL.
 */
async function eraseIdempotencyRecords(
  idempotency: IdempotencyTableOptions & { readonly tableName: string },
  tenant: string,
  { dryRun, segments, closeStalled }: { dryRun: boolean; segments: number; closeStalled: boolean },
): Promise<{
  readonly totals: TableErasure;
  readonly kept: ReadonlyMap<string, KeptCall>;
  readonly unattributed: { inFlight: number; completed: number; completedUntilMs: number[] };
}> {
  const totals = { found: 0, deleted: 0, inFlight: 0, readUnits: 0 };
  const kept = new Map<string, KeptCall>();
  const unattributed = { inFlight: 0, completed: 0, completedUntilMs: [] as number[] };
  totals.readUnits = await scanTenantRecords(
    idempotency.client,
    idempotency.tableName,
    tenant,
    { segments, unattributed: true },
    async (item) => {
      if (item[ATTR.tenant] === undefined) {
        const found = unattributedItem(idempotency, item);
        if (found === undefined) return;
        if ('untilMs' in found) {
          unattributed.completed += 1;
          unattributed.completedUntilMs.push(found.untilMs);
          return;
        }
        unattributed.inFlight += 1;
        kept.set(found.kept.recordKey, found.kept);
        return;
      }
      totals.found += 1;
      const erased = await eraseItem(idempotency, item, { dryRun, closeStalled });
      if (erased.outcome === 'erased') totals.deleted += 1;
      if (erased.outcome === 'in_flight') totals.inFlight += 1;
      if (erased.kept) kept.set(erased.kept.recordKey, erased.kept);
    },
  );
  return { totals, kept, unattributed };
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
  { dryRun, idempotency }: { readonly dryRun: boolean; readonly idempotency: IdempotencyTableOptions },
): Promise<{
  readonly totals: TableErasure;
  /** The calls in flight whose stamps kept items, by record key. */
  readonly stampedBy: ReadonlyMap<string, KeptCall>;
  /** Items kept because they were written between their read and their delete. */
  readonly changed: number;
}> {
  const keyNames = [schema.partitionKey.name, ...(schema.sortKey ? [schema.sortKey.name] : [])];
  const stamps = schema.callStamps ?? [];
  const byQuery = schema.tenantAttribute === schema.partitionKey.name;
  const totals = { found: 0, deleted: 0, inFlight: 0, readUnits: 0 };
  const stampedBy = new Map<string, KeptCall>();
  let changed = 0;
  const inFlightByCall = new Map<string, Promise<KeptCall | undefined>>();
  function inFlightCall(callId: string): Promise<KeptCall | undefined> {
    let inFlight = inFlightByCall.get(callId);
    if (inFlight === undefined) {
      inFlight = callInFlight(idempotency, callId);
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
        const call = writer === undefined ? undefined : await inFlightCall(writer);
        if (call === undefined) continue;
        inFlight = true;
        stampedBy.set(call.recordKey, call);
      }
      if (inFlight) {
        totals.inFlight += 1;
        continue;
      }
      if (dryRun) continue;
      const key = Object.fromEntries(keyNames.map((name) => [name, item[name]!]));
      const read = stamps.map((attribute, i) => ({ attribute, callId: writers[i] }));
      if ((await deleteOnStampsRead(client, table, key, read)) === 'deleted') {
        totals.deleted += 1;
      } else {
        totals.inFlight += 1; // written meanwhile: a rerun decides
        changed += 1;
      }
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return { totals, stampedBy, changed };
}
