import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { TABLES, type TableId, tableName } from '../../app/tables';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { UnavailableError } from '../../lib/idempotency/errors';
import { markStalled } from '../../lib/idempotency/protocol/completer';
import { readCallRecord } from '../../lib/idempotency/protocol/table';
import { advanceClock } from '../helpers/clock';
import { gate, noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, newTenant, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

/** Every item of one tenant in every table, as DynamoDB returns it (attribute values untouched). */
async function itemsOf(tenant: string): Promise<Record<string, unknown[]>> {
  const tables: Array<TableId | 'idempotency'> = ['idempotency', 'invoices', 'tickets', 'outbox', 'ledger'];
  const found: Record<string, unknown[]> = {};
  for (const id of tables) {
    const { Items = [] } = await world.client.send(
      new ScanCommand({
        TableName: tableName(id),
        FilterExpression: 'tenant = :tenant',
        ExpressionAttributeValues: { ':tenant': { S: tenant } },
        ConsistentRead: true,
      }),
    );
    found[id] = Items.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }
  return found;
}

/** A tenant with records of every kind: idempotency records of two users, an invoice refunded, a ticket, an email. */
async function populate(tenant: string): Promise<void> {
  const caller = identity(tenant, 'ada');
  const invoice = await world.runtime.invoke(
    world.tools.create_invoice!,
    caller,
    { idempotency_key: 'i1', customer: 'c', amount: 300 },
    deadline(),
  );
  const invoiceId = invoice.ok ? (invoice.receipt.invoice_id as string) : '';
  await world.runtime.invoke(
    world.refund,
    identity(tenant, 'bob'),
    { idempotency_key: 'r1', invoice_id: invoiceId, amount: 300 },
    deadline(),
  );
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

describe('eraseTenant', () => {
  it("erases one tenant's records and, with includeDomain, its invoices, tickets and emails — the other tenant's stay byte for byte", async () => {
    const tenant = newTenant('erase');
    const other = newTenant('keep');
    await populate(tenant);
    await populate(other);
    const otherBefore = await itemsOf(other);

    const report = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES);
    const after = await itemsOf(tenant);

    expect(report.tables).toMatchObject({
      // 4 calls (now tombstones) and the intents of create_ticket and send_email (their holders settled)
      idempotency: { found: 6, deleted: 6, inFlight: 0 },
      invoices: { found: 1, deleted: 1 },
      tickets: { found: 1, deleted: 1 },
      outbox: { found: 1, deleted: 1 },
    });
    expect(report.kept).toEqual({ ledger: expect.stringMatching(/money movements are kept/) });
    expect(after).toMatchObject({ invoices: [], tickets: [], outbox: [] });
    // Left: the four tombstones — no outcome, no arguments, no hashes — that keep an erased key from
    // running again until its TTL.
    expect(after.idempotency).toHaveLength(4);
    for (const tombstone of after.idempotency as Record<string, unknown>[]) {
      expect(Object.keys(tombstone).sort()).toEqual(
        [
          'attempt',
          'call_id',
          'claim_id',
          'completed_at',
          'created_at',
          'expiration',
          'id',
          'in_progress_expiration',
          'status',
          'tenant',
          'tool',
        ].filter((name) => name in tombstone),
      );
      expect(tombstone.status).toEqual({ S: 'ERASED' });
    }
    expect(JSON.stringify(after.idempotency)).not.toMatch(/personal words|broken|ada@example/);
    expect(after.ledger).toHaveLength(1); // the money movement is kept, and said so
    expect(await itemsOf(other)).toEqual(otherBefore);
  });

  it('only counts on a dry run, and a second run erases nothing more and says so', async () => {
    const tenant = newTenant('erase');
    await populate(tenant);
    const before = await itemsOf(tenant);

    const dry = await eraseTenant(world.client, { tenant, includeDomain: true, dryRun: true }, process.env, TABLES);
    const unchanged = await itemsOf(tenant);
    const first = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES);
    const second = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES);

    expect(dry).toMatchObject({
      dryRun: true,
      tables: { idempotency: { found: 6, deleted: 0 }, outbox: { found: 1, deleted: 0 } },
    });
    expect(unchanged).toEqual(before);
    expect(dry.tables.idempotency).toMatchObject({ inFlight: 0 });
    expect(first.tables.idempotency).toMatchObject({ found: 6, deleted: 6, inFlight: 0 });
    expect(second.tables).toMatchObject({
      idempotency: { found: 4, deleted: 0, inFlight: 0 }, // the tombstones, until their TTL
      invoices: { found: 0, deleted: 0 },
      tickets: { found: 0, deleted: 0 },
      outbox: { found: 0, deleted: 0 },
    });
    expect(second.tables.idempotency!.readUnits).toBeGreaterThan(0); // the Scan is what an erase costs
  });

  it('skips a record whose call is still running and reports it; that call cannot re-create what was erased', async () => {
    const caller = identity();
    const hold = gate();
    const started = gate();
    const { tool } = noteTool('send_note', async (args) => {
      started.open();
      await hold.opened;
      return { receipt: { text: args.text }, replayed: false };
    });
    const running = world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'secret' }, deadline());
    await started.opened;

    const whileRunning = await eraseTenant(world.client, { tenant: caller.tenant }, process.env, TABLES);
    hold.open();
    await running;
    const afterwards = await eraseTenant(world.client, { tenant: caller.tenant }, process.env, TABLES);

    const retried = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'secret' }, deadline());

    expect(whileRunning.tables.idempotency).toMatchObject({ found: 1, deleted: 0, inFlight: 1 });
    expect(afterwards.tables.idempotency).toMatchObject({ found: 1, deleted: 1, inFlight: 0 });
    // The erased call's key answers not_found until its TTL: nothing it erased runs or reappears.
    expect(retried).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(await world.runtime.lookup('send_note', caller, 'k1')).toBeUndefined();
  });

  it('waits for an abandoned call before the app tables, but closes a stalled one (the completer gave up) and erases them', async () => {
    // Prepare: a tenant with data, and a note call whose every attempt fails — abandoned, then stalled.
    const tenant = newTenant();
    await populate(tenant);
    const caller = identity(tenant, 'ada');
    const { tool } = noteTool('send_note', async () => {
      throw new UnavailableError('the note service is down');
    });
    const failed = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'secret' }, deadline());
    advanceClock(1_000);
    const whileAbandoned = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES);
    const table = world.idempotencyTable;
    const key = (await itemsOf(tenant))
      .idempotency!.map((item) => (item as { id: { S: string } }).id.S)
      .find((id) => id.startsWith('send_note#'))!;
    const abandoned = (await readCallRecord(table, key))!;
    const gaveUp = await markStalled(table, key, abandoned.claimId!, Date.now(), 'attempts');
    const polledStalled = await world.runtime.lookup('send_note', caller, 'k1');

    // Act
    const recordsOnly = await eraseTenant(world.client, { tenant }, process.env, TABLES);
    const withDomain = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES);
    const retried = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'secret' }, deadline());
    const left = await itemsOf(tenant);

    // Assess
    expect(failed).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    // An abandoned call may still be finished by the completer: the app tables wait for it.
    expect(whileAbandoned.tables.idempotency).toMatchObject({ inFlight: 1 });
    expect(whileAbandoned.kept.invoices).toMatch(/^deferred: 1 call\(s\) in flight/);
    expect(gaveUp).toBe('stalled');
    expect(polledStalled).toEqual({ status: 'stalled', reason: 'attempts' });
    // Without the app tables a stalled call is kept (the kept domain may still come to show it)…
    expect(recordsOnly.tables.idempotency).toMatchObject({ deleted: 0, inFlight: 1 });
    // …with them it is closed, and nothing is deferred.
    expect(withDomain.tables.idempotency).toMatchObject({ deleted: 1, inFlight: 0 });
    expect(withDomain.kept.invoices).toBeUndefined();
    expect(withDomain.tables.invoices).toMatchObject({ deleted: 1, inFlight: 0 });
    expect(left).toMatchObject({ invoices: [], tickets: [], outbox: [] });
    expect((await readCallRecord(table, key))?.status).toBe('ERASED');
    expect(retried).toMatchObject({ ok: false, error: { code: 'not_found' } });
  });
});
