// Rule 6 (docs/state-machine.md): erase is final and keeps what is in flight.

import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DeleteTableCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Context } from 'aws-lambda';
import { TABLES, type TableId, tableName } from '../../app/tables';
import { TOOLS } from '../../app/tools';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { markStalled } from '../../lib/idempotency/protocol/completer';
import { eraseEntry } from '../../lib/lambda/erase';
import { createTableInput } from '../../lib/store/create-tables';
import { IDEMPOTENCY_TABLE } from '../../lib/store/tables';
import { claimInFlight } from '../helpers/call-records';
import { createWorld, deadline, identity, newTenant, type World } from '../helpers/world';

/**
 * Rule 6 of docs/state-machine.md, what erase waits for: an app table waits only for the calls in flight
 * whose tools' `access` names it — and for every call whose tool erase cannot tell (not among the tools it
 * was given, no `access`, a record it cannot read). The report says what was left and when to erase
 * again (`complete`, `deferred`, `retryAfter`), on DynamoDB Local with the example's tables and tools;
 * the CLI's exit code and text are in test/cli/erase-command.test.ts.
 */
// An idempotency table of its own: a tenant's erase waits on every record with no tenant (a Powertools
// handler's; rule 6), and other suites write such records on the shared one.
const IDEMPOTENCY = `erase-deferral-records-${randomUUID().slice(0, 8)}`;
let world: World;
beforeAll(async () => {
  process.env[IDEMPOTENCY_TABLE.envVar] = IDEMPOTENCY;
  world = createWorld();
  await world.client.send(new CreateTableCommand(createTableInput(IDEMPOTENCY_TABLE, IDEMPOTENCY)));
});
afterAll(async () => {
  await world.client.send(new DeleteTableCommand({ TableName: IDEMPOTENCY }));
  world.destroy();
});

/** A call of `tool` for `tenant` claimed now, its lock ending at `lockEndsMs` (default: in a minute). */
const inFlight = (tenant: string, tool: string, lockEndsMs?: number) => claimInFlight(world, tenant, tool, lockEndsMs);

/** A tenant with one invoice, one ticket and one email: an item in each erasable table of the example. */
async function populate(tenant: string): Promise<void> {
  const caller = identity(tenant, 'ada');
  await world.seedInvoice(tenant);
  await world.runtime.invoke(
    world.tools.create_ticket!,
    caller,
    { idempotency_key: 't1', title: 'broken' },
    deadline(),
  );
  await world.runtime.invoke(
    world.tools.send_email!,
    caller,
    { idempotency_key: 'e1', to: 'ada@example.com', subject: 's', body: 'personal words' },
    deadline(),
  );
}

/** How many items `tenant` has in each of the example's erasable tables (a consistent Query each). */
async function countsOf(tenant: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const id of ['invoices', 'tickets', 'outbox'] as TableId[]) {
    const { Count } = await world.client.send(
      new QueryCommand({
        TableName: tableName(id),
        KeyConditionExpression: 'tenant = :tenant',
        ExpressionAttributeValues: { ':tenant': { S: tenant } },
        ConsistentRead: true,
        Select: 'COUNT',
      }),
    );
    counts[id] = Count ?? 0;
  }
  return counts;
}

describe('erase waits only on what it must (rule 6)', () => {
  it('defers only the table a call in flight’s tool accesses: the others are erased, the report says what is left and until when', async () => {
    // prepare: close_ticket's access names tickets only
    const tenant = newTenant('defer');
    await populate(tenant);
    const lockEndsMs = Date.now() + 90_000;
    await inFlight(tenant, 'close_ticket', lockEndsMs);

    // act
    const report = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES, TOOLS);

    // assess
    expect(await countsOf(tenant)).toEqual({ invoices: 0, tickets: 1, outbox: 0 });
    expect(report.tables).toMatchObject({
      invoices: { found: 1, deleted: 1, inFlight: 0 },
      outbox: { found: 1, deleted: 1, inFlight: 0 },
    });
    expect(report.tables).not.toHaveProperty('tickets');
    expect(report.kept.tickets).toMatch(/^deferred: 1 call\(s\) in flight/);
    expect(report).toMatchObject({
      complete: false,
      deferred: [
        { table: 'idempotency', reason: 'items_kept', calls: 1, items: 1 },
        { table: 'tickets', reason: 'calls_in_flight', calls: 1 },
      ],
      callsInFlight: { live: 1 },
      // a live call can change at its lock's end: erase again then
      retryAfter: new Date(lockEndsMs).toISOString(),
    });
  });

  it.each([
    ['a tool erase was not given (dropped by a deploy)', 'retired_tool', TOOLS],
    ['a tool that declares no access', 'bare_tool', [...TOOLS, { name: 'bare_tool' }]],
    ['any tool, when erase was given no tools', 'close_ticket', undefined],
  ])('defers every app table for a call in flight of %s: it may commit anywhere', async (_, tool, tools) => {
    const tenant = newTenant('defer-all');
    await populate(tenant);
    await inFlight(tenant, tool);

    const report = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES, tools);

    expect(await countsOf(tenant)).toEqual({ invoices: 1, tickets: 1, outbox: 1 });
    expect(report.complete).toBe(false);
    expect(report.deferred.map((left) => [left.table, left.reason])).toEqual([
      ['idempotency', 'items_kept'],
      ['invoices', 'calls_in_flight'],
      ['tickets', 'calls_in_flight'],
      ['outbox', 'calls_in_flight'],
    ]);
  });

  it('defers every app table for an in-progress item it cannot read as a call, with no time to come back (nothing it knows will move it)', async () => {
    const tenant = newTenant('defer-unreadable');
    await populate(tenant);
    await world.client.send(
      new PutItemCommand({
        TableName: tableName('idempotency'),
        Item: marshall({ id: `refund#${randomUUID()}`, tenant, status: 'INPROGRESS', tool: 'refund' }),
      }),
    );

    const report = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES, TOOLS);

    expect(await countsOf(tenant)).toEqual({ invoices: 1, tickets: 1, outbox: 1 });
    expect(report).toMatchObject({ complete: false, callsInFlight: { unreadable: 1 } });
    expect(report.deferred.map((left) => left.table)).toEqual(['idempotency', 'invoices', 'tickets', 'outbox']);
    expect(report.retryAfter).toBeUndefined();
  });

  it('says to come back when the completer next looks at an abandoned call: its lock end plus the backoff of its attempts', async () => {
    // prepare: an abandoned create_invoice call at its third attempt (lock ended a second ago)
    const tenant = newTenant('defer-abandoned');
    await populate(tenant);
    const lockEndsMs = Date.now() - 1_000;
    const call = await inFlight(tenant, 'create_invoice', lockEndsMs);
    await world.client.send(
      new UpdateItemCommand({
        TableName: tableName('idempotency'),
        Key: { id: { S: call.recordKey } },
        UpdateExpression: 'SET attempt = :three',
        ExpressionAttributeValues: { ':three': { N: '3' } },
      }),
    );

    const report = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES, TOOLS);

    expect(await countsOf(tenant)).toEqual({ invoices: 1, tickets: 0, outbox: 0 });
    expect(report).toMatchObject({
      complete: false,
      callsInFlight: { abandoned: 1 },
      // the completer re-runs a call after attempt 2 60 s after its lock ended (30 s, 60 s, … 15 min)
      retryAfter: new Date(lockEndsMs + 60_000).toISOString(),
    });
    expect(report.deferred.map((left) => left.table)).toEqual(['idempotency', 'invoices']);
  });

  it('without the app tables, keeps a stalled call and gives no time: only a resend or erase with them settles it', async () => {
    const tenant = newTenant('defer-stalled');
    const call = await inFlight(tenant, 'refund', Date.now() - 1_000);
    expect(await markStalled(world.idempotencyTable, call.recordKey, call.claimId, Date.now(), 'attempts')).toBe(
      'stalled',
    );

    const recordsOnly = await eraseTenant(world.client, { tenant }, process.env, TABLES, TOOLS);
    const withDomain = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES, TOOLS);

    expect(recordsOnly).toMatchObject({
      complete: false,
      deferred: [{ table: 'idempotency', reason: 'items_kept', calls: 1, items: 1 }],
      callsInFlight: { stalled: 1 },
    });
    expect(recordsOnly.retryAfter).toBeUndefined();
    expect(withDomain).toMatchObject({ complete: true, deferred: [], callsInFlight: {} });
    expect(withDomain.retryAfter).toBeUndefined();
  });

  it('reports an erase that left nothing complete, with nothing deferred and no time', async () => {
    const tenant = newTenant('complete');
    await populate(tenant);

    const report = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES, TOOLS);

    expect(report).toMatchObject({ complete: true, deferred: [], callsInFlight: {} });
    expect(report.retryAfter).toBeUndefined();
    expect(await countsOf(tenant)).toEqual({ invoices: 0, tickets: 0, outbox: 0 });
  });
});

describe('the stack’s erase function', () => {
  it('answers the same report as its payload: complete false, what is deferred, and when to invoke it again', async () => {
    // prepare: a create_invoice call in flight (access: invoices only)
    const tenant = newTenant('defer-lambda');
    await populate(tenant);
    const lockEndsMs = Date.now() + 120_000;
    const call = await inFlight(tenant, 'create_invoice', lockEndsMs);
    const handler = eraseEntry(TABLES, process.env, TOOLS);

    // act: the payload as the Lambda service serialises it
    const payload = JSON.parse(
      JSON.stringify(await handler({ tenant, includeDomain: true }, deadline() as unknown as Context)),
    );

    // assess
    expect(payload).toMatchObject({
      tenant,
      complete: false,
      deferred: [
        { table: 'idempotency', reason: 'items_kept', calls: 1, items: 1 },
        { table: 'invoices', reason: 'calls_in_flight', calls: 1 },
      ],
      retryAfter: new Date(lockEndsMs).toISOString(),
      tables: { tickets: { deleted: 1 }, outbox: { deleted: 1 } },
    });
    expect(await countsOf(tenant)).toEqual({ invoices: 1, tickets: 0, outbox: 0 });
    const { Item } = await world.client.send(
      new GetItemCommand({
        TableName: tableName('idempotency'),
        Key: { id: { S: call.recordKey } },
        ConsistentRead: true,
      }),
    );
    expect(Item?.status).toEqual({ S: 'INPROGRESS' }); // the call in flight is kept
  });
});
