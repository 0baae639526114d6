// Rule 6 (docs/state-machine.md): erase is final and keeps what is in flight.
import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DeleteTableCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { eraseTenant, NO_TENANT_ATTRIBUTE } from '../../lib/admin/erase-tenant';
import { type Claim, claim } from '../../lib/idempotency/protocol/claim-writes';
import { createTableInput } from '../../lib/store/create-tables';
import type { TableSchema } from '../../lib/store/tables';
import { IDEMPOTENCY_TABLE } from '../../lib/store/tables';
import { beforeNext as beforeNextCommand } from '../helpers/intercept';
import { createProtocolWorld, type ProtocolWorld } from '../helpers/protocol-world';

/**
 * Tenant erase over an app's own table (lib/admin/erase-tenant.ts), on DynamoDB Local, where the races
 * are: rule 6's deferral while a call of the tenant is in flight, a call claimed after the idempotency
 * records were scanned whose stamp is on an item, and a commit that re-stamps an item between its read
 * and its delete. erase-example.test.ts erases the example app whole.
 */
const TABLE = `erase-tickets-${randomUUID().slice(0, 8)}`;
const SCHEMA: TableSchema = {
  partitionKey: { name: 'org', type: 'S' },
  sortKey: { name: 'ticket_id', type: 'S' },
  tenantAttribute: 'org',
  callStamps: ['created_by'],
};
const TABLES = { tickets: SCHEMA };

let world: ProtocolWorld;
let env: NodeJS.ProcessEnv;
// An idempotency table of its own: a tenant's erase waits on every record with no tenant (a Powertools
// handler's; rule 6), and other suites write such records on the shared one.
const IDEMPOTENCY = `erase-tenant-records-${randomUUID().slice(0, 8)}`;
beforeAll(async () => {
  process.env[IDEMPOTENCY_TABLE.envVar] = IDEMPOTENCY;
  world = createProtocolWorld();
  env = { ...process.env, TICKETS_TABLE: TABLE };
  await world.client.send(new CreateTableCommand(createTableInput(IDEMPOTENCY_TABLE, IDEMPOTENCY)));
  await world.client.send(new CreateTableCommand(createTableInput(SCHEMA, TABLE)));
});
afterAll(async () => {
  await world.client.send(new DeleteTableCommand({ TableName: TABLE }));
  await world.client.send(new DeleteTableCommand({ TableName: IDEMPOTENCY }));
  world.destroy();
});

/** A call of `tenant` claimed now (its record in the idempotency table), its lock ending `lockInMs` from now. */
async function callOf(tenant: string, lockInMs = 10_000): Promise<Claim> {
  const now = Date.now();
  const result = await claim(
    world.idempotencyTable,
    {
      recordKey: `open_ticket#${randomUUID()}`,
      tenant,
      tool: 'open_ticket',
      validation: 'v1',
      expiresAtS: Math.floor(now / 1000) + 3_600,
      lockEndsMs: now + lockInMs,
      call: '{"args":{},"key":"k","user":"ada"}',
    },
    now,
  );
  if (result.kind !== 'claimed') throw new Error('the seed claim was refused');
  return result.claim;
}

async function ticket(tenant: string, id: string, createdBy?: string): Promise<void> {
  await world.client.send(
    new PutItemCommand({
      TableName: TABLE,
      Item: marshall({ org: tenant, ticket_id: id, ...(createdBy ? { created_by: createdBy } : {}) }),
    }),
  );
}

async function hasTicket(tenant: string, id: string): Promise<boolean> {
  const { Item } = await world.client.send(
    new GetItemCommand({ TableName: TABLE, Key: marshall({ org: tenant, ticket_id: id }), ConsistentRead: true }),
  );
  return Item !== undefined;
}

/** Runs `change` just before the next `command` to the app's table is sent. */
function beforeNext(command: string, change: () => Promise<unknown>): void {
  beforeNextCommand(world.client, command, change, (input) => input.TableName === TABLE);
}

describe('tenant erase of an app table', () => {
  it('defers the app’s tables while a call of the tenant is in flight: nothing of them deleted, the report says why', async () => {
    const tenant = `t-${randomUUID()}`;
    await callOf(tenant);
    await ticket(tenant, 'T-1');

    const report = await eraseTenant(world.client, { tenant, includeDomain: true, segments: 1 }, env, TABLES);

    expect(report.tables.idempotency).toMatchObject({ inFlight: 1 });
    expect(report.tables).not.toHaveProperty('tickets');
    expect(report.kept).toEqual({ tickets: 'deferred: 1 call(s) in flight; erase again once they settled' });
    expect(await hasTicket(tenant, 'T-1')).toBe(true);
  });

  it('counts an app table’s items on a dry run, deleting none; passes over a table that declares no tenant', async () => {
    const tenant = `t-${randomUUID()}`;
    await ticket(tenant, 'T-1');
    await ticket(tenant, 'T-2');
    const tables = { ...TABLES, audit: { partitionKey: { name: 'id', type: 'S' as const } } };

    const report = await eraseTenant(
      world.client,
      { tenant, includeDomain: true, dryRun: true, segments: 1 },
      env,
      tables,
    );

    expect(report.tables.tickets).toMatchObject({ found: 2, deleted: 0, inFlight: 0 });
    expect(report.kept).toEqual({ audit: NO_TENANT_ATTRIBUTE });
    expect(report.tables).not.toHaveProperty('audit');
    expect(await hasTicket(tenant, 'T-1')).toBe(true);
    expect(await hasTicket(tenant, 'T-2')).toBe(true);
  });

  it('keeps an item stamped by a call claimed after the idempotency scan, and erases the rest', async () => {
    const tenant = `t-${randomUUID()}`;
    const late = `open_ticket#late@${randomUUID()}`;
    await ticket(tenant, 'T-1');
    await ticket(tenant, 'T-2', late);
    // The call that stamped T-2 is claimed between the idempotency records' scan and the tickets' query.
    beforeNext('QueryCommand', async () => {
      const call = await callOf(tenant);
      await world.client.send(
        new UpdateItemCommand({
          TableName: TABLE,
          Key: marshall({ org: tenant, ticket_id: 'T-2' }),
          UpdateExpression: 'SET created_by = :call',
          ExpressionAttributeValues: marshall({ ':call': call.callId }),
        }),
      );
    });

    const report = await eraseTenant(world.client, { tenant, includeDomain: true, segments: 1 }, env, TABLES);

    expect(report.tables.tickets).toMatchObject({ found: 2, deleted: 1, inFlight: 1 });
    expect(await hasTicket(tenant, 'T-1')).toBe(false);
    expect(await hasTicket(tenant, 'T-2')).toBe(true);
  });

  it('keeps an item a commit re-stamps between its read and its delete (a rerun decides)', async () => {
    const tenant = `t-${randomUUID()}`;
    await ticket(tenant, 'T-1');
    beforeNext('DeleteItemCommand', () =>
      world.client.send(
        new UpdateItemCommand({
          TableName: TABLE,
          Key: marshall({ org: tenant, ticket_id: 'T-1' }),
          UpdateExpression: 'SET created_by = :call',
          ExpressionAttributeValues: marshall({ ':call': 'open_ticket#x@y' }),
        }),
      ),
    );

    const report = await eraseTenant(world.client, { tenant, includeDomain: true, segments: 1 }, env, TABLES);

    expect(report.tables.tickets).toMatchObject({ found: 1, deleted: 0, inFlight: 1 });
    expect(await hasTicket(tenant, 'T-1')).toBe(true);
  });

  it('fails on a delete the store refuses for another reason than its condition', async () => {
    const tenant = `t-${randomUUID()}`;
    await ticket(tenant, 'T-1');
    beforeNext('DeleteItemCommand', async () => {
      throw Object.assign(new Error('not allowed'), { name: 'AccessDeniedException' });
    });

    await expect(eraseTenant(world.client, { tenant, includeDomain: true, segments: 1 }, env, TABLES)).rejects.toThrow(
      'not allowed',
    );
    expect(await hasTicket(tenant, 'T-1')).toBe(true);
  });
});
