import { noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, newTenant, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

describe('scope: tenant, user and tool each separate records', () => {
  it("never replays tenant A's k1 to tenant B", async () => {
    const ada = identity(newTenant('a'), 'ada');
    const bob = identity(newTenant('b'), 'ada');
    const invoiceA = await world.seedInvoice(ada.tenant, { invoice_id: 'inv_1', amount: 100 });
    const invoiceB = await world.seedInvoice(bob.tenant, { invoice_id: 'inv_1', amount: 100 });

    const a = await world.runtime.invoke(
      world.refund,
      ada,
      { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 100 },
      deadline(),
    );
    const b = await world.runtime.invoke(
      world.refund,
      bob,
      { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 100 },
      deadline(),
    );

    expect(a).toMatchObject({ ok: true, idempotent: false });
    expect(b).toMatchObject({ ok: true, idempotent: false });
    if (!a.ok || !b.ok) throw new Error('unreachable');
    expect(a.receipt.refund_id).not.toEqual(b.receipt.refund_id);
    expect((await world.invoices.get(ada.tenant, invoiceA.invoice_id))?.refund).toEqual(a.receipt);
    expect((await world.invoices.get(bob.tenant, invoiceB.invoice_id))?.refund).toEqual(b.receipt);
    expect(await world.ledgerRows(ada.tenant)).toHaveLength(1);
    expect(await world.ledgerRows(bob.tenant)).toHaveLength(1);
  });

  it("never replays Ada's k1 to her colleague Carol", async () => {
    const tenant = newTenant();
    const { tool, execute } = noteTool();

    const ada = await world.runtime.invoke(
      tool,
      identity(tenant, 'ada'),
      { idempotency_key: 'k1', text: 'hi' },
      deadline(),
    );
    const carol = await world.runtime.invoke(
      tool,
      identity(tenant, 'carol'),
      { idempotency_key: 'k1', text: 'hi' },
      deadline(),
    );
    const carolOther = await world.runtime.invoke(
      tool,
      identity(tenant, 'carol'),
      { idempotency_key: 'k1', text: 'other' },
      deadline(),
    );

    expect(ada).toMatchObject({ ok: true, idempotent: false });
    expect(carol).toMatchObject({ ok: true, idempotent: false });
    if (!ada.ok || !carol.ok) throw new Error('unreachable');
    expect(carol.receipt).not.toEqual(ada.receipt);
    // Carol's own record now holds k1: her different arguments are her conflict, not Ada's.
    expect(carolOther).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(execute).toHaveBeenCalledTimes(2);
  });

  it("keeps one natural key per tenant whoever calls: Carol gets the receipt of Ada's refund", async () => {
    const tenant = newTenant();
    const invoice = await world.seedInvoice(tenant);
    const args = { invoice_id: invoice.invoice_id, amount: invoice.amount };

    const ada = await world.runtime.invoke(
      world.refund,
      identity(tenant, 'ada'),
      { idempotency_key: 'k1', ...args },
      deadline(),
    );
    const carol = await world.runtime.invoke(
      world.refund,
      identity(tenant, 'carol'),
      { idempotency_key: 'k9', ...args },
      deadline(),
    );

    expect(ada).toMatchObject({ ok: true, idempotent: false });
    if (!ada.ok) throw new Error('unreachable');
    expect(carol).toEqual({ ok: true, idempotent: true, key: 'k9', receipt: ada.receipt });
    expect(await world.ledgerRows(tenant)).toHaveLength(1);
  });

  it("keeps refund's k1 apart from another tool's k1, even with identical arguments", async () => {
    const caller = identity();
    const first = noteTool('send_note');
    const second = noteTool('send_reminder');

    const a = await world.runtime.invoke(first.tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const b = await world.runtime.invoke(second.tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(a).toMatchObject({ ok: true, idempotent: false });
    expect(b).toMatchObject({ ok: true, idempotent: false });
    expect(first.execute).toHaveBeenCalledTimes(1);
    expect(second.execute).toHaveBeenCalledTimes(1);
    expect((await world.idempotencyRecordKeys(caller.tenant)).map((r) => r.tool).sort()).toEqual([
      'send_note',
      'send_reminder',
    ]);
  });

  it.each([
    ['an empty tenant', { tenant: '', user: 'ada' }],
    ['an empty user', { tenant: 'acme', user: '' }],
    ['a missing user', { tenant: 'acme' }],
    ['a null tenant', { tenant: null, user: 'ada' }],
  ])('refuses %s before anything is hashed or written', async (_label, partial) => {
    const { tool, execute } = noteTool();

    const result = await world.runtime.invoke(
      tool,
      partial as never,
      { idempotency_key: 'k1', text: 'hi' },
      deadline(),
    );

    expect(result).toEqual({ ok: false, error: { code: 'internal', message: 'internal error' } });
    expect(execute).not.toHaveBeenCalled();
  });
});
