import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { tableName } from '../../app/tables';
import { createWorld, deadline, identity, newTenant, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

describe('refund, end to end on DynamoDB Local', () => {
  it('runs once, then replays the same receipt for the same key and for a new key', async () => {
    // Prepare
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const args = { invoice_id: invoice.invoice_id, amount: invoice.amount };

    // Act
    const first = await world.runtime.invoke(world.refund, caller, { idempotency_key: 'k1', ...args }, deadline());
    const retry = await world.runtime.invoke(world.refund, caller, { idempotency_key: 'k1', ...args }, deadline());
    const newKey = await world.runtime.invoke(world.refund, caller, { idempotency_key: 'k2', ...args }, deadline());

    // Assess
    expect(first).toEqual({
      ok: true,
      idempotent: false,
      key: 'k1',
      receipt: {
        refund_id: expect.stringMatching(/^re_/),
        invoice_id: invoice.invoice_id,
        amount: 4_200,
        currency: 'usd',
      },
    });
    if (!first.ok) throw new Error('unreachable');
    expect(retry).toEqual({ ok: true, idempotent: true, key: 'k1', receipt: first.receipt });
    expect(newKey).toEqual({ ok: true, idempotent: true, key: 'k2', receipt: first.receipt });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
    expect((await world.invoices.get(caller.tenant, invoice.invoice_id))?.refund).toEqual(first.receipt);
  });

  it('refuses a wrong amount before the refund, and changes nothing', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);

    const result = await world.runtime.invoke(
      world.refund,
      caller,
      { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount - 1 },
      deadline(),
    );

    expect(result).toEqual({ ok: false, error: { code: 'invalid_args', message: expect.stringMatching(/^amount: /) } });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(0);
    expect(await world.idempotencyRecordKeys(caller.tenant)).toEqual([]);
  });

  it('lets a corrected retry with the same key run after a business error (the claim was released)', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const key = { idempotency_key: 'k1', invoice_id: invoice.invoice_id };

    const wrong = await world.runtime.invoke(world.refund, caller, { ...key, amount: 1 }, deadline());
    const right = await world.runtime.invoke(world.refund, caller, { ...key, amount: invoice.amount }, deadline());

    expect(wrong).toMatchObject({ ok: false, error: { code: 'invalid_args' } });
    expect(right).toMatchObject({ ok: true, idempotent: false });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it('refuses a wrong amount after the refund, with any key, and never moves money again', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    await world.runtime.invoke(
      world.refund,
      caller,
      { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount },
      deadline(),
    );

    const sameKey = await world.runtime.invoke(
      world.refund,
      caller,
      { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: 1 },
      deadline(),
    );
    const newKey = await world.runtime.invoke(
      world.refund,
      caller,
      { idempotency_key: 'k2', invoice_id: invoice.invoice_id, amount: 1 },
      deadline(),
    );

    expect(sameKey).toEqual({
      ok: false,
      error: { code: 'conflict', message: 'idempotency_key: already used with different arguments' },
    });
    expect(newKey).toEqual({ ok: false, error: { code: 'invalid_args', message: expect.stringMatching(/^amount: /) } });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it("answers not_found for a missing invoice, and for another tenant's invoice", async () => {
    const owner = identity();
    const invoice = await world.seedInvoice(owner.tenant);
    const stranger = identity(newTenant());

    const missing = await world.runtime.invoke(
      world.refund,
      owner,
      { idempotency_key: 'k1', invoice_id: 'inv_missing', amount: 100 },
      deadline(),
    );
    const foreign = await world.runtime.invoke(
      world.refund,
      stranger,
      { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount },
      deadline(),
    );

    expect(missing).toEqual({ ok: false, error: { code: 'not_found', message: 'invoice_id: no invoice inv_missing' } });
    expect(foreign).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(await world.ledgerRows(owner.tenant)).toHaveLength(0);
    expect(await world.ledgerRows(stranger.tenant)).toHaveLength(0);
  });

  it('refunds two invoices into two receipts', async () => {
    const caller = identity();
    const a = await world.seedInvoice(caller.tenant);
    const b = await world.seedInvoice(caller.tenant);

    const first = await world.runtime.invoke(
      world.refund,
      caller,
      { idempotency_key: 'ka', invoice_id: a.invoice_id, amount: a.amount },
      deadline(),
    );
    const second = await world.runtime.invoke(
      world.refund,
      caller,
      { idempotency_key: 'kb', invoice_id: b.invoice_id, amount: b.amount },
      deadline(),
    );

    expect(first).toMatchObject({ ok: true, idempotent: false, receipt: { invoice_id: a.invoice_id } });
    expect(second).toMatchObject({ ok: true, idempotent: false, receipt: { invoice_id: b.invoice_id } });
    if (!first.ok || !second.ok) throw new Error('unreachable');
    expect(first.receipt.refund_id).not.toEqual(second.receipt.refund_id);
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(2);
  });

  it('treats reordered fields as the same request', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);

    const first = await world.runtime.invoke(
      world.refund,
      caller,
      { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount },
      deadline(),
    );
    const reordered = await world.runtime.invoke(
      world.refund,
      caller,
      { amount: invoice.amount, invoice_id: invoice.invoice_id, idempotency_key: 'k1' },
      deadline(),
    );

    expect(first).toMatchObject({ ok: true, idempotent: false });
    expect(reordered).toMatchObject({ ok: true, idempotent: true });
  });

  it('stores the record under its tenant and tool, with the client key hashed and no arguments', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);

    await world.runtime.invoke(
      world.refund,
      caller,
      { idempotency_key: 'secret-key-1', invoice_id: invoice.invoice_id, amount: invoice.amount },
      deadline(),
    );

    const keys = await world.idempotencyRecordKeys(caller.tenant);
    expect(keys).toEqual([{ id: expect.stringMatching(/^refund#/), tenant: caller.tenant, tool: 'refund' }]);
    const { Item } = await world.client.send(
      new GetItemCommand({ TableName: tableName('idempotency'), Key: { id: { S: keys[0]!.id } } }),
    );
    expect(JSON.stringify(Item)).not.toContain('secret-key-1');
    expect(Object.keys(Item ?? {}).sort()).toEqual(
      [
        'attempt',
        'call_id',
        'claim_id',
        'completed_at',
        'created_at',
        'data',
        'expiration',
        'id',
        'in_progress_expiration',
        'status',
        'tenant',
        'tool',
        'validation',
      ].sort(),
    );
    expect(Item?.status).toEqual({ S: 'COMPLETED' });
  });
});
